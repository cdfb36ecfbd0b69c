"""Which containers this installation launched: a per-installation key that the labels must prove.

Docker copies an image's labels to its containers, so a label that says "llm-dyno server" proves
nothing: anyone can write one. Before launching, the app signs the container's ``llm-dyno.*`` labels
and its name with a random key kept in the data folder (created once, mode 0600, never written to a
label or a log) and adds the signature as ``llm-dyno.proof``. Adoption follows only containers whose
proof checks out with that key: a forged or copied label set (another name, another port, another key
variable in the snapshot) is not adopted, and no request, let alone a key, goes to it.

The proof also binds the engine the container was made on (its ``ID``, from ``/info``): labels, name
and proof copied onto a container of another engine do not check out there. And since an engine
can claim any ID, adoption also checks that the container was found on the engine its profile
snapshot names (``docker.host``); see :func:`engine_id` and :func:`host_mismatch`.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llm_dyno.core.errors import DynoError
from llm_dyno.core.paths import data_dir

LABEL_PROOF = "llm-dyno.proof"
NOT_OURS = (
    "it says it is an LLM Dyno server, but this installation did not launch it on this engine (its "
    "labels carry no valid proof for this engine: copied from another, or made by an LLM Dyno older "
    "than the engine-bound proof); it is left alone"
)
KEY_FILE = "installation.key"
_PREFIX = "llm-dyno."
_KEY_BYTES = 32
_MAX_KEY_FILE = 4096
_MAX_ENGINE_ID = 256


def key_path() -> Path:
    """Where this installation's adoption key lives."""
    return data_dir() / KEY_FILE


def _read_key(path: Path) -> bytes:
    """The key in ``path``; refuses a link, a non-regular file, another owner's or a readable one."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise DynoError(
            f"{path}: cannot read the installation key ({exc.strerror or exc})",
            hint="remove the file; a new key is made at the next launch (running servers are then "
            "no longer adopted: stop them with `docker stop`)",
        ) from exc
    try:
        info = os.fstat(fd)
        problem = None
        if not stat.S_ISREG(info.st_mode):
            problem = "it is not a regular file"
        elif info.st_uid != os.geteuid():
            problem = "it belongs to another user"
        elif info.st_mode & 0o077:
            problem = f"others may read it (mode {stat.S_IMODE(info.st_mode):o}, expected 600)"
        if problem:
            raise DynoError(
                f"{path}: the installation key is refused: {problem}",
                hint=f"remove it (`rm {path}`); a new one is made at the next launch",
            )
        text = os.read(fd, _MAX_KEY_FILE).strip()
    finally:
        os.close(fd)
    try:
        key = bytes.fromhex(text.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(key) != _KEY_BYTES:
        raise DynoError(
            f"{path}: the installation key is damaged (expected {_KEY_BYTES * 2} hex digits)",
            hint=f"remove it (`rm {path}`); a new one is made at the next launch",
        )
    return key


def installation_key(*, create: bool) -> bytes | None:
    """This installation's key; made (atomically, mode 0600) when ``create`` and there is none yet.
    None when there is none and ``create`` is false: then no container can prove it is ours."""
    path = key_path()
    if not create and not os.path.lexists(path):
        return None
    if create and not os.path.lexists(path):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, secrets.token_hex(_KEY_BYTES).encode("ascii") + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # never replaces: two first launches at once keep one key
        except FileExistsError:
            pass
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return _read_key(path)


def engine_id(info: Mapping[str, Any]) -> str:
    """The engine's ID in its ``/info`` answer (``docker info``'s ID), which the proof binds; a
    DynoError when the engine gives none (then no proof can say which engine a container is on)."""
    value = info.get("ID") if isinstance(info, Mapping) else None
    if not isinstance(value, str) or not value.strip() or len(value) > _MAX_ENGINE_ID:
        raise DynoError(
            "the Docker engine's /info gives no ID, so a container cannot be proved to be on it",
            hint="use a Docker engine (`docker info` shows its ID); other engines' containers are "
            "not adopted",
        )
    return value.strip()


def _message(labels: Mapping[str, str], name: str, engine: str) -> bytes:
    ours = {k: v for k, v in labels.items() if k.startswith(_PREFIX) and k != LABEL_PROOF}
    text = {"name": name.lstrip("/"), "labels": ours, "engine": engine}
    return json.dumps(text, sort_keys=True).encode("utf-8")


def sign_labels(labels: Mapping[str, str], name: str, key: bytes, engine: str) -> str:
    """The proof for a container's ``llm-dyno.*`` labels and name, on the engine of ID ``engine``."""
    return hmac.new(key, _message(labels, name, engine), hashlib.sha256).hexdigest()


def launched_here(labels: Mapping[str, str], name: str, key: bytes | None, engine: str) -> bool:
    """Whether the labels carry a proof made with this installation's key for exactly these
    ``llm-dyno.*`` labels, this container name and the engine of ID ``engine``."""
    proof = labels.get(LABEL_PROOF, "")
    if key is None or not proof or not engine:
        return False
    return hmac.compare_digest(proof, sign_labels(labels, name, key, engine))


def host_mismatch(named: str | None, found_on: str | None) -> str | None:
    """Why a container whose profile snapshot names the engine ``named`` (its ``docker.host``; None:
    the default engine) must not be followed when it was found on ``found_on``; None when they agree.
    An engine can claim any ID, so the proof alone does not say the container is where it was made."""
    if (named or None) == (found_on or None):
        return None
    through = named or "the default engine"
    return (
        f"it was launched on engine {named or 'default'} (its profile's docker.host) but is listed by "
        f"engine {found_on or 'default'}; it is left alone there (follow it through {through})"
    )


def with_proof(labels: Mapping[str, str], name: str, engine: str) -> dict[str, str]:
    """``labels`` plus the proof for them, the container ``name`` and the engine of ID ``engine``
    (the installation key is made if need be)."""
    key = installation_key(create=True)
    if key is None:  # pragma: no cover - create=True always gives a key or raises
        raise DynoError("no installation key")
    return {**labels, LABEL_PROOF: sign_labels(labels, name, key, engine)}
