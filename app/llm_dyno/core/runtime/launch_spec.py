"""What a launch plan holds besides the profile: the backend's launch spec and typed warnings.

A process server's spec is :class:`ProcessSpec` (the argument list, environment overrides, working
folder, listening address). A container's is :class:`ContainerSpec`: the keyword arguments of
docker-py's ``containers.create`` (that library's contract, passed to it as they are), with the parts
the app itself reads as typed properties. Secret references (``${VLLM_API_KEY}``) stay unresolved in
both; launching resolves them into the child's environment only.

Every warning a plan gives is a :class:`PlanWarning` with a :class:`WarningKind`, so the window can
show each kind its own way and code never matches warning text.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from llm_dyno.core.profiles.model import ExecHook, InitHook
from llm_dyno.core.secrets import (
    KEYRING_PREFIX,
    is_secret_name,
    reference_name,
    resolve_command,
    resolve_reference,
)


class WarningKind(StrEnum):
    """What a plan warning is about (in the order the window lists them: what refuses or exposes first)."""

    INVALID = "invalid"  # the plan cannot be built: a launch would be refused
    EXPOSURE = "exposure"  # reachable from the network without a key; a port narrowed to loopback
    UNREACHABLE = "unreachable"  # this machine cannot reach the server as planned
    SECRET = "secret"  # noqa: S105 - a secret reference whose variable is not set here
    IGNORED = "ignored"  # a setting the runtime leaves out or replaces
    PATH = "path"  # a host path docker cannot use as written
    RESTART = "restart"  # docker restarts the server after it dies
    GPU = "gpu"  # the server will see no GPU
    ENGINE = "engine"  # a vLLM flag's value (from the flag table)
    LOGS = "logs"  # the app cannot read the server's log back
    MEMORY = "memory"  # the model and KV cache may not fit
    PORT = "port"  # the host port is Docker's choice, known once the container runs

    @property
    def heading(self) -> str:
        """A short heading for the kind."""
        return _TITLES[self]


_TITLES = {
    WarningKind.INVALID: "Cannot launch",
    WarningKind.EXPOSURE: "Network",
    WarningKind.UNREACHABLE: "Unreachable",
    WarningKind.SECRET: "Secret",
    WarningKind.IGNORED: "Left out",
    WarningKind.PATH: "Path",
    WarningKind.RESTART: "Restart",
    WarningKind.GPU: "GPU",
    WarningKind.ENGINE: "vLLM flag",
    WarningKind.LOGS: "Logs",
    WarningKind.MEMORY: "Memory",
    WarningKind.PORT: "Port",
}
_ORDER = {kind: i for i, kind in enumerate(WarningKind)}


@dataclass(frozen=True)
class PlanWarning:
    """One thing the user must know before launching. ``str()`` is the sentence shown."""

    kind: WarningKind
    text: str

    def __str__(self) -> str:
        return self.text


def warnings_of(kind: WarningKind, texts: Iterable[str]) -> list[PlanWarning]:
    """Sentences of one kind as plan warnings."""
    return [PlanWarning(kind, t) for t in texts]


def by_severity(warnings: Iterable[PlanWarning]) -> list[PlanWarning]:
    """Warnings in the order of :class:`WarningKind` (stable within a kind)."""
    return sorted(warnings, key=lambda w: _ORDER[w.kind])


@dataclass(frozen=True)
class ProcessSpec:
    """A ``vllm serve`` process: its argument list, the environment it adds (references unresolved),
    its working folder and the address it listens on (None: not known, e.g. an adopted server)."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    bind_host: str | None = None

    def lines(self) -> list[str]:
        """The spec as shell lines (``cd``, then assignments and the command), for showing only."""
        import shlex

        out = [f"cd {shlex.quote(self.cwd)}"] if self.cwd else []
        assignments = [f"{k}={shlex.quote(str(v))}" for k, v in self.env.items()]
        return [*out, " ".join([*assignments, shlex.join(self.argv)])]


@dataclass(frozen=True)
class FileFromVariable:
    """A file the launch writes into the created container before starting it (Compose's
    ``environment:`` secrets): ``path`` in the container, its content the value of ``variable`` read at
    launch, from memory (never written on the host)."""

    path: str
    variable: str
    mode: int = 0o444
    uid: int = 0
    gid: int = 0

    def to_dict(self) -> dict[str, Any]:
        """As ``plan --json`` shows it (the variable's name, never its value)."""
        return {"path": self.path, "variable": self.variable, "mode": f"{self.mode:04o}"} | (
            {"uid": self.uid, "gid": self.gid} if self.uid or self.gid else {}
        )


@dataclass(frozen=True)
class FileWithContent:
    """A file the launch writes into the created container before starting it with text the profile
    holds (a compose config's inline ``content:``, no secret), as Compose's ``injectConfigs`` does."""

    path: str
    content: str
    mode: int = 0o444
    uid: int = 0
    gid: int = 0

    def to_dict(self) -> dict[str, Any]:
        """As ``plan --json`` shows it (the text: it is no secret)."""
        return {"path": self.path, "content": self.content, "mode": f"{self.mode:04o}"} | (
            {"uid": self.uid, "gid": self.gid} if self.uid or self.gid else {}
        )


WrittenFile = FileFromVariable | FileWithContent


@dataclass(frozen=True)
class ContainerSpec:
    """A container: docker-py ``containers.create`` keyword arguments (``create``), environment
    references unresolved, and the files the launch writes into it before it starts (``files``).
    The app reads what it needs through the properties."""

    create: Mapping[str, Any]
    files: tuple[WrittenFile, ...] = ()
    pre_start: tuple[InitHook, ...] = ()  # one-off containers run to completion before it starts
    post_start: tuple[ExecHook, ...] = ()  # docker exec'd once the container started (compose hooks)
    pre_stop: tuple[ExecHook, ...] = ()  # docker exec'd before the container is stopped

    @property
    def name(self) -> str:
        """The container's name."""
        return str(self.create["name"])

    @property
    def image(self) -> str:
        """The image reference."""
        return str(self.create["image"])

    @property
    def command(self) -> tuple[str, ...]:
        """The arguments after the entrypoint (``vllm serve``'s, secret flags removed)."""
        return tuple(str(a) for a in self.create.get("command", ()))

    @property
    def environment(self) -> Mapping[str, str]:
        """The container's environment (references unresolved)."""
        return dict(self.create.get("environment") or {})

    @property
    def labels(self) -> Mapping[str, str]:
        """The container's labels (the app's own and the profile's)."""
        return dict(self.create.get("labels") or {})

    @property
    def network(self) -> str | None:
        """The network it joins (None: the engine's default bridge)."""
        net = self.create.get("network")
        return str(net) if net else None

    def for_engine(self, environ: Mapping[str, str] | None = None, *, reveal: bool) -> dict[str, Any]:
        """The ``containers.create`` arguments the launch hands to Docker: the one function that both
        ``launch`` (``reveal=True``) and ``plan`` (``reveal=False``) read, so that the two never differ.

        References in the environment and the command are resolved from ``environ`` (an unset one is
        passed empty, as Compose does); an escaped literal (``$${foo}``) becomes ``${foo}`` and is not
        resolved again. With ``reveal=False`` a value that is a secret (its variable's name, or the name
        it refers to, says so; keyring references) stays its reference: what plan prints and stores.
        The revealed result holds secrets: hand it to the engine only.
        """
        source = os.environ if environ is None else environ
        out = dict(self.create)
        if "environment" in self.create:
            out["environment"] = {k: _value(k, str(v), source, reveal) for k, v in self.environment.items()}
        out["command"] = [
            a if not reveal and _hidden("", a.partition("=")[2] or a) else resolve_command([a], source)[0]
            for a in self.command
        ]
        return out

    def reference_words(self, environ: Mapping[str, str] | None = None) -> frozenset[str]:
        """The words of the plan's ``docker run`` line (``KEY=VALUE`` and command arguments of
        ``for_engine(reveal=False)``) that stay secret references, which a shell running the line fills
        in. Every other word is text (a resolved value, an escaped literal such as ``$${foo}``, now the
        text ``${foo}``) and must be quoted so that the shell passes it as it is, as launch does."""
        source = os.environ if environ is None else environ
        out = {
            f"{k}={v}"
            for k, v in self.environment.items()
            if _value(k, str(v), source, reveal=False) == str(v) and _kept(k, str(v))
        }
        out |= {a for a in self.command if _hidden("", a.partition("=")[2] or a)}
        return frozenset(out)


def _kept(key: str, value: str) -> bool:
    """Whether plan shows ``value`` of ``key`` as it is written: a secret's reference."""
    return _hidden(key, value) or (is_secret_name(key) and value.strip().startswith("$"))


def _hidden(key: str, value: str) -> bool:
    """Whether plan shows ``value`` as its reference (a secret) rather than resolved."""
    if value.strip().startswith(KEYRING_PREFIX):
        return True
    name = reference_name(value)
    return name is not None and (is_secret_name(key) or is_secret_name(name))


def _value(key: str, value: str, environ: Mapping[str, str], reveal: bool) -> str:
    if not reveal and _kept(key, value):
        return value
    return resolve_reference(value, environ, key=key) or ""


LaunchSpec = ProcessSpec | ContainerSpec

__all__ = [
    "ContainerSpec",
    "FileFromVariable",
    "FileWithContent",
    "LaunchSpec",
    "PlanWarning",
    "ProcessSpec",
    "WarningKind",
    "WrittenFile",
    "by_severity",
    "warnings_of",
]
