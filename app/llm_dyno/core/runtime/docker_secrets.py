"""A profile's compose secrets in the container, as Docker Compose v2 puts them there.

A ``file:`` secret is a read-only bind mount of the host file at its target (a ``Mount``, not a
``-v`` bind: a missing file is an error, never an empty folder Docker makes, as with Compose's
``CreateHostPath: false``). An ``environment:`` secret is a file written into the *created* container
before it starts, through the engine's archive API, from an in-memory tar: the value is read from the
launching process's environment and written nowhere else (no host file, label, argv or log). A config's
inline ``content:`` is written the same way, with the text the profile holds (Compose's
``injectConfigs``: mode ``0444``, nothing on the host).
"""

from __future__ import annotations

import io
import os
import tarfile
import time
from collections.abc import Mapping
from typing import Any

from llm_dyno.core.profiles.model import DockerSettings
from llm_dyno.core.runtime.launch_spec import (
    FileFromVariable,
    FileWithContent,
    PlanWarning,
    WarningKind,
    WrittenFile,
)
from llm_dyno.core.secrets import SecretMissing


def secret_mounts(settings: DockerSettings) -> list[Any]:
    """The read-only bind mounts of the ``file:`` secrets (docker-py ``Mount`` objects)."""
    found = [s for s in settings.secrets if s.file is not None]
    if not found:
        return []
    from docker.types import Mount  # the docker SDK only where a container needs it

    return [Mount(target=s.target, source=str(s.file), type="bind", read_only=True) for s in found]


def secret_files(settings: DockerSettings, warnings: list[PlanWarning]) -> tuple[WrittenFile, ...]:
    """The ``environment:`` secrets and ``content:`` configs as files the launch writes before the
    container starts (mode ``0444`` unless the entry says otherwise, as Compose writes them)."""
    written = tuple(
        FileWithContent(s.target, s.content, 0o444 if s.mode is None else s.mode, s.uid or 0, s.gid or 0)
        for s in settings.secrets
        if s.content is not None
    )
    if written:
        warnings.append(
            PlanWarning(
                WarningKind.IGNORED,
                "written into the container before it starts, with the config's content (docker run has "
                "no flag for it, so the command above leaves it out): "
                + ", ".join(
                    f"{f.path} ({len(f.content.encode()):,} bytes, mode {f.mode:04o})" for f in written
                ),
            )
        )
    return _from_variables(settings, warnings) + written


def _from_variables(settings: DockerSettings, warnings: list[PlanWarning]) -> tuple[FileFromVariable, ...]:
    out = tuple(
        FileFromVariable(
            s.target,
            str(s.environment),
            0o444 if s.mode is None else s.mode,
            s.uid or 0,
            s.gid or 0,
        )
        for s in settings.secrets
        if s.environment is not None
    )
    for f in out:
        if f.variable not in os.environ:
            warnings.append(
                PlanWarning(
                    WarningKind.SECRET,
                    f"secret {f.path} is read from {f.variable}, which is not set: launch refuses "
                    "(Docker Compose refuses it too)",
                )
            )
    if out:
        warnings.append(
            PlanWarning(
                WarningKind.SECRET,
                "written into the container before it starts, from the launching environment (docker run "
                "has no flag for it, so the command above leaves it out): "
                + ", ".join(f"{f.path} from ${f.variable}" for f in out),
            )
        )
    return out


def secret_archive(files: tuple[WrittenFile, ...], environ: Mapping[str, str] | None = None) -> bytes:
    """The tar the launch copies to ``/`` of the created container, built in memory (a content
    config's text as it is, an environment secret's from ``environ``).

    Raises :class:`SecretMissing` naming the variable when one is unset (Compose: "environment
    variable required by secret is not set"); a variable set to nothing writes no file, as Compose
    skips an empty secret. The result holds secrets: hand it to the engine only.
    """
    source = os.environ if environ is None else environ
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for f in files:
            if isinstance(f, FileWithContent):
                value = f.content.encode()
            elif f.variable not in source:
                raise SecretMissing(
                    f"secret {f.path} needs the environment variable {f.variable}, which is not set; "
                    "launch refused",
                    hint=f"export {f.variable}=… before launching",
                )
            else:
                value = source[f.variable].encode()
            if not value:
                continue
            info = tarfile.TarInfo(f.path.lstrip("/"))
            info.size, info.mode, info.uid, info.gid = len(value), f.mode, f.uid, f.gid
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(value))
    return buffer.getvalue()
