"""Where a job's server answers and how to authenticate: resolved once, from the registry or a URL.

The one seam between a server and whoever talks to it (jobs, the CLI, the window's views): the key
reference comes from the runtime's own reading of the profile
(:func:`~llm_dyno.core.runtime.base.api_key_reference`), and the value is resolved here, when a
request is about to be sent. Nothing else reads a key from the environment.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.base import LaunchPlan
from llm_dyno.core.runtime.exposure import api_key_reference
from llm_dyno.core.secrets import resolve_reference
from llm_dyno.core.telemetry.attach import AttachedServer

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class MissingSecret(DynoError):
    """A reference to a secret that is not set where the job runs."""


@dataclass(frozen=True)
class Endpoint:
    """A server to talk to: base URL, served model, the API-key *reference* (never its value), and the
    Docker engine it runs on (None: this machine or not a container)."""

    url: str
    model: str
    api_key_ref: str | None = None
    docker_host: str | None = None
    profile_name: str | None = None

    def api_key(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The key to send, resolved now; :class:`MissingSecret` when the reference is unset. Holds a
        secret: never log or store it."""
        if not self.api_key_ref:
            return None
        value = resolve_reference(self.api_key_ref, environ, key="--api-key")
        if not value:
            raise MissingSecret(
                f"the API key {self.api_key_ref} is not set here, so every request would get 401",
                hint=f"set it in the environment that runs llm-dyno ({_variable(self.api_key_ref)}=…)",
            )
        return value

    def check_key(self, environ: Mapping[str, str] | None = None) -> None:
        """Refuse now (before any request) when the key cannot be resolved."""
        self.api_key(environ)

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


def profile_endpoint(profile: Profile, plan: LaunchPlan) -> Endpoint:
    """The endpoint of a profile's server as its (launched or planned) plan says."""
    docker_host = profile.docker.host if plan.runtime == "docker" and profile.docker is not None else None
    return Endpoint(
        url=plan.base_url,
        model=profile.served_model_name,
        api_key_ref=api_key_reference(profile),
        docker_host=docker_host,
        profile_name=profile.name,
    )


def url_endpoint(url: str, model: str, *, api_key_env: str | None = None) -> Endpoint:
    """An endpoint given by URL (an attached server, ``--url``); ``api_key_env`` names the variable
    that holds its key (the key is sent only when asked for). ``model`` may be empty for jobs that
    send no completion (watch)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DynoError(f"{url!r} is not an http(s) URL", hint="e.g. --url http://127.0.0.1:8000")
    ref = _reference(api_key_env) if api_key_env else None
    return Endpoint(url=url.rstrip("/"), model=model, api_key_ref=ref)


def attached_endpoint(server: AttachedServer) -> Endpoint:
    """The endpoint of a server attached by URL, its key in the variable the user named."""
    return url_endpoint(server.url, "", api_key_env=server.api_key_env)


def key_reference_problem(api_key_env: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """Why a key named by its variable cannot be sent (not a variable name, or not set), or None."""
    if not api_key_env:
        return None
    try:
        Endpoint(url="", model="", api_key_ref=_reference(api_key_env)).check_key(environ)
    except DynoError as exc:
        return exc.message
    return None


def _reference(api_key_env: str) -> str:
    if not _ENV_NAME.match(api_key_env):
        raise DynoError(f"{api_key_env!r} is not an environment variable name", hint="e.g. VLLM_API_KEY")
    return f"${{{api_key_env}}}"
