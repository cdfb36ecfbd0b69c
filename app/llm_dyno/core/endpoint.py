"""Where a server answers and how to authenticate: the one :class:`Endpoint` every job, view and
client takes.

The key is held as a :class:`KeyReference` (``${VLLM_API_KEY}``) and resolved here, when a request is
about to be sent: nothing else reads a key from the environment. A profile's server has the endpoint
its launch plan carries (``LaunchPlan.endpoint``, the key as the plan read it); a server given by URL
names the variable that holds its key (:func:`url_endpoint`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from llm_dyno.core.errors import DynoError
from llm_dyno.core.secrets import resolve_reference

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class MissingSecret(DynoError):
    """A reference to a secret that is not set where the job runs."""


@dataclass(frozen=True)
class KeyReference:
    """The key a server wants, as a *reference* (``${VLLM_API_KEY}``, ``keyring:svc/user``), never its
    value: what a plan and an endpoint carry. :meth:`check` tells before any request whether it can be
    sent; :meth:`resolve` reads the value when a request is about to go out, and nothing keeps it."""

    ref: str

    def problem(self, environ: Mapping[str, str] | None = None) -> str | None:
        """Why the key cannot be sent (its variable is unset, the keyring has nothing), or None."""
        try:
            self.check(environ)
        except DynoError as exc:
            return exc.message
        return None

    def check(self, environ: Mapping[str, str] | None = None) -> None:
        """Refuse now (:class:`MissingSecret`), before any request, when the reference is unset; the
        value read is dropped at once."""
        self.resolve(environ)

    def resolve(self, environ: Mapping[str, str] | None = None) -> str:
        """The key to send, read now; :class:`MissingSecret` when the reference is unset. Holds a
        secret: never log or store it."""
        value = resolve_reference(self.ref, environ, key="--api-key")
        if not value:
            raise MissingSecret(
                f"the API key {self.ref} is not set here, so every request would get 401",
                hint=f"set it in the environment that runs llm-dyno ({_variable(self.ref)}=…)",
            )
        return value


def key_reference(ref: str | None) -> KeyReference | None:
    """The reference as a :class:`KeyReference` (None: the server wants no key)."""
    return KeyReference(ref) if ref else None


@dataclass(frozen=True)
class Endpoint:
    """A server to talk to: base URL, served model, the API-key *reference* (never its value), and the
    Docker engine it runs on (None: this machine or not a container). A launched (or planned)
    server's endpoint comes from its plan (``LaunchPlan.endpoint``); a server given by URL from
    :func:`url_endpoint`."""

    url: str
    model: str
    key: KeyReference | None = None
    docker_host: str | None = None
    profile_name: str | None = None

    def api_key(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The key to send, resolved now (:meth:`KeyReference.resolve`); None when the server wants none.
        Holds a secret: never log or store it."""
        return self.key.resolve(environ) if self.key is not None else None

    def check_key(self, environ: Mapping[str, str] | None = None) -> None:
        """Refuse now (before any request) when the key cannot be resolved."""
        if self.key is not None:
            self.key.check(environ)

    def api_key_or_none(self) -> str | None:
        """The key when it resolves, else None: for watchers, whose figures then say the server does
        not answer (401) instead of failing. Holds a secret: never log or store it."""
        try:
            return self.api_key()
        except DynoError:
            return None

    def describe(self) -> str:
        """``cpu-demo · tiny at http://127.0.0.1:8011`` (what progress and errors name)."""
        who = f"{self.profile_name} · " if self.profile_name else ""
        return f"{who}{self.model} at {self.url}"


def _variable(ref: str) -> str:
    m = re.match(r"^\$\{?([A-Za-z_][A-Za-z0-9_]*)", ref.strip())
    return m.group(1) if m else "VLLM_API_KEY"


def url_endpoint(url: str, model: str, *, api_key_env: str | None = None) -> Endpoint:
    """An endpoint given by URL (an attached server, ``--url``); ``api_key_env`` names the variable
    that holds its key (the key is sent only when asked for). ``model`` may be empty for jobs that
    send no completion (watch)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DynoError(f"{url!r} is not an http(s) URL", hint="e.g. --url http://127.0.0.1:8000")
    key = KeyReference(_reference(api_key_env)) if api_key_env else None
    return Endpoint(url=url.rstrip("/"), model=model, key=key)


def key_reference_problem(api_key_env: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """Why a key named by its variable cannot be sent (not a variable name, or not set), or None."""
    if not api_key_env:
        return None
    try:
        return KeyReference(_reference(api_key_env)).problem(environ)
    except DynoError as exc:  # not a variable name
        return exc.message


def _reference(api_key_env: str) -> str:
    if not _ENV_NAME.match(api_key_env):
        raise DynoError(f"{api_key_env!r} is not an environment variable name", hint="e.g. VLLM_API_KEY")
    return f"${{{api_key_env}}}"
