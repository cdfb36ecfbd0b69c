"""Secret references and their resolution at launch: the one place that reads ``${VAR}``,
``${VAR:-default}``, ``$VAR`` and ``keyring:service/user``.

Profiles hold references only; the resolved values go to the engine and are never logged or stored.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from llm_dyno.core.errors import DynoError

_REF = re.compile(
    r"^\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::?-(?P<default>[^}]*))?\}$|^\$(?P<bare>[A-Za-z_]\w*)$"
)
KEYRING_PREFIX = "keyring:"


def is_reference(value: str) -> bool:
    """Whether a value is a reference (environment or keyring) rather than a literal."""
    text = value.strip()
    return text.startswith(KEYRING_PREFIX) or bool(_REF.match(text))


def resolve_reference(
    value: str, environ: Mapping[str, str] | None = None, *, key: str = "value"
) -> str | None:
    """The value a reference points to; a plain value is returned as is.

    An unset variable without a default gives None. ``keyring:`` references are read from the system
    keyring (``key`` names the setting in error messages).
    """
    text = value.strip()
    if text.startswith(KEYRING_PREFIX):
        return _from_keyring(key, text.removeprefix(KEYRING_PREFIX))
    m = _REF.match(text)
    if not m:
        return value
    source = os.environ if environ is None else environ
    found = source.get(m.group("name") or m.group("bare"))
    return found if found else m.group("default")


def resolve_env(env: Mapping[str, str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Resolve every reference of an environment mapping; an unset one becomes "" (as docker compose does).

    The result holds secrets: hand it to the engine, never log or store it.
    """
    return {k: resolve_reference(v, environ, key=k) or "" for k, v in env.items()}


def resolve_command(argv: list[str], environ: Mapping[str, str] | None = None) -> list[str]:
    """The command with reference arguments resolved: ``--hf-token ${HF_TOKEN}`` and the attached
    ``--api-key=${VLLM_API_KEY}``."""
    out: list[str] = []
    for i, a in enumerate(argv):
        flag, eq, value = a.partition("=")
        if is_reference(a):
            out.append(resolve_reference(a, environ, key=f"argument {i}") or "")
        elif eq and flag.startswith("--") and is_reference(value):
            out.append(f"{flag}={resolve_reference(value, environ, key=flag) or ''}")
        else:
            out.append(a)
    return out


def _from_keyring(key: str, ref: str) -> str:
    service, _, user = ref.rpartition("/")
    try:
        import keyring  # optional: only profiles that use keyring: references need it
    except ImportError:
        raise DynoError(
            f"{key} refers to the keyring ({ref}) but the 'keyring' package is not installed",
            hint=f"pip install keyring, or set {key} in the environment and use ${{{key}}}",
        ) from None
    secret = keyring.get_password(service or "llm-dyno", user)
    if secret is None:
        raise DynoError(
            f"{key}: no secret stored in the keyring for service {service!r}, user {user!r}",
            hint=f"store it with: keyring set {service or 'llm-dyno'} {user}",
        )
    return str(secret)
