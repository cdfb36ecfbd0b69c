"""Secret references and their resolution at launch: the one place that reads ``${VAR}``,
``${VAR:-default}``, ``$VAR`` and ``keyring:service/user``.

Profiles hold references only; the resolved values go to the engine and are never logged or stored.

The secret flags of ``vllm serve`` never reach an argument list (argv is readable by every user in
/proc, and docker shows a container's command to anyone who asks): :func:`split_secret_flags`
takes them out, in every spelling vLLM's parser accepts (``--api-key=…``, ``--api_key``, the
abbreviation ``--api-ke``), and hands their references to the environment variable vLLM reads
instead (``VLLM_API_KEY``, ``HF_TOKEN``); a secret reference in any other argument is refused
(:func:`secret_argument`), since no environment variable would carry it. :func:`require_secrets`
refuses a launch whose secret reference points at an unset variable: ``--api-key ${VLLM_API_KEY}``
with the variable unset would start a server with no authentication at all.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from llm_dyno.core.errors import DynoError

# secret flag -> the variable vLLM (or huggingface_hub) reads when the flag is absent
SECRET_FLAG_ENV: dict[str, str] = {"api-key": "VLLM_API_KEY", "hf-token": "HF_TOKEN"}
# the shortest abbreviation argparse would take for each (vLLM has --api-server-count, --hf-config-path)
_SHORTEST = {"api-key": "api-k", "hf-token": "hf-t"}
_SECRET_NAME_RE = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY)", re.IGNORECASE)

_REF = re.compile(
    r"^\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::?-(?P<default>[^}]*))?\}$|^\$(?P<bare>[A-Za-z_]\w*)$"
)
KEYRING_PREFIX = "keyring:"


class SecretMissing(DynoError):
    """A secret reference points at nothing: the launch is refused. ``server_key`` is the variable
    named when the missing secret is the server's own API key (what every client request would need
    too), else None."""

    server_key: str | None = None


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret (token, key, password)."""
    return bool(_SECRET_NAME_RE.search(name))


def secret_flag(name: str) -> str | None:
    """The secret flag a canonical flag name spells (``api-key``, or its abbreviation ``api-ke``), or None."""
    for flag, shortest in _SHORTEST.items():
        if name == flag or (name.startswith(shortest) and flag.startswith(name)):
            return flag
    return None


def reference_default(value: str) -> str | None:
    """The literal default of ``${VAR:-default}`` / ``${VAR-default}`` (None when there is none)."""
    m = _REF.match(value.strip())
    return m.group("default") if m and m.group("default") else None


def secret_value_problem(value: str) -> str | None:
    """Why ``value`` may not stand for a secret in a profile (None: a plain reference)."""
    if not is_reference(value):
        return "holds a secret value"
    if reference_default(value) is not None:
        return "has a literal default (the secret itself, stored in the profile)"
    return None


def _canonical(token: str) -> str:
    return token.lstrip("-").replace("_", "-")


def _split(args: Sequence[str]) -> tuple[list[tuple[int, str]], dict[str, str]]:
    """The arguments that stay (with their index in ``args``) and the secret flags' environment."""
    out: list[tuple[int, str]] = []
    env: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        flag = secret_flag(_canonical(name)) if name.startswith("--") else None
        if flag is None:
            out.append((i, arg))
            i += 1
            continue
        if eq:
            env[SECRET_FLAG_ENV[flag]] = value
            i += 1
        elif i + 1 < len(args) and not args[i + 1].startswith("--"):
            env[SECRET_FLAG_ENV[flag]] = args[i + 1]
            i += 2
        else:
            out.append((i, arg))  # a bare --hf-token: huggingface_hub's own login
            i += 1
    return out, env


def split_secret_flags(args: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """``args`` without their secret flags, and ``{VARIABLE: reference}`` for the environment.

    ``--hf-token`` without a value (use the stored login) is no secret and stays. An argument left
    in the command that refers to a secret (``--served-model-name ${HF_TOKEN}``) refuses the launch
    (:class:`SecretInArgument`): its value would be in the command line, see :func:`secret_argument`."""
    kept, env = _split(args)
    found = _secret_argument(args, kept)
    if found is not None:
        raise SecretInArgument(found.message(), hint=found.hint())
    return [arg for _, arg in kept], env


class SecretInArgument(DynoError):
    """A secret reference in an argument that is not a secret flag: the launch is refused."""


# every reference a word holds, wherever it sits in it ("$$" is an escaped dollar, never one)
_ANY_REF = re.compile(r"\$\$|\$\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class SecretArgument:
    """An argument of ``vllm serve`` (other than a secret flag's value) that refers to a secret."""

    index: int  # in the arguments checked
    flag: str  # the flag it is the value of, as written (``--served-model-name``), or "argument N"
    reference: str  # ``${HF_TOKEN}`` or ``keyring:…``: the reference, never its value

    def message(self) -> str:
        """What the user reads: the flag and the reference, never the secret."""
        moved = " and ".join(f"--{f}" for f in SECRET_FLAG_ENV)
        return (
            f"{self.flag} refers to the secret {self.reference}: only {moved} are passed through the "
            "environment, so its value would be in the server's command line (readable by every user "
            "in /proc, shown by docker inspect and in vLLM's log); refused"
        )

    def hint(self) -> str:
        """What to do about it."""
        return (
            f"remove {self.reference} from {self.flag}, or give the server the secret in the profile's "
            "env: (e.g. HF_TOKEN: ${HF_TOKEN}), which never reaches its command line"
        )


def secret_reference_in(word: str) -> str | None:
    """The secret reference ``word`` (an argument, or a script) holds anywhere (``a${HF_TOKEN}b``,
    ``--x=$API_KEY``, ``--x=keyring:svc/user``), as ``${NAME}`` or the keyring reference; None when
    it holds none."""
    value = word.partition("=")[2] if word.startswith("-") else word
    for text in (word, value):
        if text.strip().startswith(KEYRING_PREFIX):
            return text.strip()
    for m in _ANY_REF.finditer(word):
        name = m.group("braced") or m.group("bare")
        if name and is_secret_name(name):
            return f"${{{name}}}"
    return None


def _secret_argument(args: Sequence[str], kept: Sequence[tuple[int, str]]) -> SecretArgument | None:
    for i, arg in kept:
        ref = secret_reference_in(arg)
        if ref is None:
            continue
        name = arg.partition("=")[0]
        if arg.startswith("-"):
            flag = name
        elif i > 0 and args[i - 1].startswith("-") and "=" not in args[i - 1]:
            flag = args[i - 1]
        elif i == 0:
            flag = "the model"  # vllm serve's positional argument
        else:
            flag = f"argument {i}"
        return SecretArgument(i, flag, ref)
    return None


def secret_argument(args: Sequence[str]) -> SecretArgument | None:
    """The first of the arguments after ``vllm serve`` that refers to a secret and is not the value of
    a flag that :func:`split_secret_flags` moves to the environment (None: there is none).

    A reference counts as a secret's when the name of its variable says so (:func:`is_secret_name`)
    or it is a ``keyring:`` reference, in every spelling: ``--flag ${X}``, ``--flag=${X}``, ``$X``,
    inside a longer word (``a${X}b``). Such a value would be in /proc/PID/cmdline, the registry
    record, the container's command and vLLM's own log, so the app refuses it rather than pass it."""
    return _secret_argument(args, _split(args)[0])


def require_secrets(
    env: Mapping[str, str], required: Sequence[str], environ: Mapping[str, str] | None = None
) -> list[str]:
    """Check the secret references of a launch's environment against ``environ``.

    A variable in ``required`` (what a secret flag such as ``--api-key`` became, and
    ``VLLM_API_KEY``) that refers to an unset variable refuses the launch (:class:`SecretMissing`):
    the server would start without authentication, or the flag's token would be empty. Any other
    secret-named variable that does gives a warning (Compose passes it empty too; public models
    download without a token). Keyring references are not read here (that may prompt)."""
    source = os.environ if environ is None else environ
    warnings: list[str] = []
    for key, value in env.items():
        if not is_secret_name(key):
            continue
        m = _REF.match(value.strip())
        if m is None:
            continue
        name = m.group("name") or m.group("bare")
        if source.get(name) or m.group("default"):
            continue
        flag = next((f for f, v in SECRET_FLAG_ENV.items() if v == key and key in required), None)
        what = f"--{flag}" if flag else key
        if key in required or key == "VLLM_API_KEY":
            effect = (
                "the server would start without authentication"
                if key == "VLLM_API_KEY"
                else "its token would be empty"
            )
            refused = SecretMissing(
                f"{what} refers to ${{{name}}}, which is not set: {effect}; launch refused",
                hint=f"export {name}=… before launching (or remove {what} from the profile)",
            )
            refused.server_key = name if key == "VLLM_API_KEY" else None
            raise refused
        warnings.append(f"{key} refers to ${{{name}}}, which is not set: it is passed empty")
    return warnings


# http(s) only: an ssh:// Docker host's user name is an address, not a credential
_URL_USERINFO = re.compile(r"(?P<scheme>\bhttps?://)[^/\s\"'@]+@", re.IGNORECASE)


def strip_credentials(text: str) -> str:
    """Every URL in ``text`` without its ``user:password@`` (``http://u:pw@host:8000/v1`` →
    ``http://host:8000/v1``): what may be stored or shown (credentials in a URL would end up in
    files, the history and screenshots)."""
    return _URL_USERINFO.sub(r"\g<scheme>", text) if "@" in text else text


# Values that are secrets whatever the variable holding them is called (never shown: only the kind)
_SECRET_VALUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a Hugging Face token (hf_…)", re.compile(r"\bhf_[A-Za-z0-9]{20,}")),
    ("an API key (sk-…)", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]|github_pat)_[A-Za-z0-9_]{20,}")),
    ("a GitLab token (glpat-…)", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("a Slack token (xox…)", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("an AWS access key (AKIA…)", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    ("a password in a URL (user:password@)", re.compile(r"\b[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@", re.I)),
)


def secret_in_text(text: str) -> str | None:
    """What kind of secret ``text`` holds (``"a Hugging Face token (hf_…)"``), None when it holds none
    that can be recognised by its shape. The secret itself is never part of the answer."""
    for kind, pattern in _SECRET_VALUES:
        if pattern.search(text):
            return kind
    return None


# a secret flag (any spelling vLLM takes) and the value written after it in the same text
_FLAG_VALUE = re.compile(r"(--(?:api[-_]k[a-z_-]*|hf[-_]t[a-z_-]*)(?:\s*=\s*|\s+)['\"]?)([^\s'\"]+)", re.I)
_FLAG_NAME = re.compile(r"--(?:api[-_]k|hf[-_]t)", re.I)
_ASSIGNMENT = re.compile(r"(?<![\w.-])([A-Za-z_][\w.-]*)(\s*=\s*)(\S+)")


def redact_values(text: str) -> str:
    """``text`` with every value of a secret's shape and the value of every secret-named ``NAME=``
    replaced by ``…``: what an import's messages may show of the words they quote."""
    text = _ASSIGNMENT.sub(
        lambda m: m.group(1) + m.group(2) + ("…" if is_secret_name(m.group(1)) else m.group(3)), text
    )
    for _, pattern in _SECRET_VALUES:
        text = pattern.sub("…", text)
    return text


def names_secret_flag(text: str) -> bool:
    """Whether ``text`` names a secret flag (``--api-k…``, ``--hf-t…``) anywhere."""
    return bool(_FLAG_NAME.search(text))


def redact_secrets(text: str) -> str:
    """``text`` to show in a warning: the value of a secret-named ``NAME=`` and every value of a
    secret's shape replaced by ``…``; a text that names a secret flag is not shown at all (with odd
    quoting its value may sit before or after the flag, and may only look like a reference)."""
    if _FLAG_NAME.search(text):  # odd quoting can put the value anywhere around the flag: none shown
        return f"(a text of {len(text):,} characters naming a secret flag)"
    text = _ASSIGNMENT.sub(
        lambda m: m.group(1) + m.group(2) + ("…" if is_secret_name(m.group(1)) else m.group(3)), text
    )
    for _, pattern in _SECRET_VALUES:
        text = pattern.sub("…", text)
    return text


def literal_secret_in_word(text: str) -> bool:
    """Whether ``text`` (one word, or a script) holds a secret flag followed by a literal value
    (``--hf-token  hf…`` kept as one word by odd quoting), which no check of flags would see."""
    return any(not is_reference(m.group(2)) for m in _FLAG_VALUE.finditer(text))


def is_reference(value: str) -> bool:
    """Whether a value is a reference (environment or keyring) rather than a literal."""
    text = value.strip()
    return text.startswith(KEYRING_PREFIX) or bool(_REF.match(text))


def escape_literal(value: str) -> str:
    """A literal value as a profile stores it: one that reads like a reference (``${foo}``, which a
    compose file writes ``$${foo}``) gets a second ``$`` so that launch passes it on as written."""
    return "$" + value if is_reference(value) or _is_escaped(value) else value


def _is_escaped(value: str) -> bool:
    rest = value.lstrip("$")
    return len(value) - len(rest) >= 2 and is_reference("$" + rest)


def reference_name(value: str) -> str | None:
    """The variable a ``${VAR}`` / ``$VAR`` reference names (None: not an environment reference)."""
    m = _REF.match(value.strip())
    return (m.group("name") or m.group("bare")) if m else None


def resolve_reference(
    value: str, environ: Mapping[str, str] | None = None, *, key: str = "value"
) -> str | None:
    """The value a reference points to; a plain value is returned as is.

    An unset variable without a default gives None. ``keyring:`` references are read from the system
    keyring (``key`` names the setting in error messages). An escaped literal (``$${foo}``, see
    :func:`escape_literal`) gives ``${foo}``, never resolved again.
    """
    if _is_escaped(value):
        return value[1:]
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


def inherited_env(environ: Mapping[str, str], named: Iterable[str]) -> dict[str, str]:
    """The app's environment as a server it starts may inherit it: without vLLM's own secrets
    (``VLLM_API_KEY``, and any other ``VLLM_…`` secret-named variable) that the launch does not name.

    vLLM reads ``VLLM_API_KEY`` from its environment: inherited from the shell the app was started in,
    it would make the server demand a key that its profile does not name, so no client would send it
    and every request would get 401."""
    keep = set(named)
    return {
        k: v
        for k, v in environ.items()
        if k in keep or not (k.upper().startswith("VLLM_") and is_secret_name(k))
    }


def resolve_command(argv: list[str], environ: Mapping[str, str] | None = None) -> list[str]:
    """The command with reference arguments resolved: ``--tokenizer ${MODEL_DIR}`` and the attached
    ``--tokenizer=${MODEL_DIR}``. A plan's command holds no secret reference (:func:`split_secret_flags`
    refuses one), so what this resolves may be shown and stored."""
    out: list[str] = []
    for i, a in enumerate(argv):
        flag, eq, value = a.partition("=")
        if is_reference(a) or _is_escaped(a):
            out.append(resolve_reference(a, environ, key=f"argument {i}") or "")
        elif eq and flag.startswith("--") and (is_reference(value) or _is_escaped(value)):
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
