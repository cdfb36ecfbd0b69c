"""Read the vLLM service of a docker-compose file into a profile draft.

Compose semantics kept: ``${VAR}`` / ``${VAR:-default}`` / ``${VAR-default}`` / ``$$`` interpolation from the
environment at import (secret-looking env values stay as written: a reference, never the value),
anchors and merge keys, list and mapping ``environment``, short and long ``ports`` / ``volumes``,
GPUs from ``deploy.resources.reservations.devices`` or ``gpus:``.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from typing import Any

from llm_dyno.core.errors import ImportFormatError, Location, ProfileError
from llm_dyno.core.profiles.import_common import META_KEY, Draft, split_launch
from llm_dyno.core.profiles.model import is_secret_name
from llm_dyno.core.profiles.yamlio import Path_, line_for, load_with_lines

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACED_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])(.*))?", re.DOTALL)
_HANDLED = frozenset(
    {"image", "container_name", "restart", "ports", "volumes", "environment", "env_file", "shm_size", "ipc"}
    | {"runtime", "gpus", "deploy", "entrypoint", "command"}
)


class _Interpolator:
    """Compose's variable substitution, reading variables from ``env`` (normally ``os.environ``)."""

    def __init__(self, env: Mapping[str, str], warnings: list[str]) -> None:
        self.env = env
        self.warnings = warnings

    def __call__(self, text: str, where: Location) -> str:
        out: list[str] = []
        i = 0
        while i < len(text):
            if text[i] != "$":
                out.append(text[i])
                i += 1
                continue
            nxt = text[i + 1 : i + 2]
            if nxt == "$":
                out.append("$")
                i += 2
            elif nxt == "{":
                end = _closing_brace(text, i + 1)
                if end < 0:
                    raise ImportFormatError(
                        f"'${{' without a closing '}}' in {text!r}",
                        where=where,
                        hint="close the ${…} or write $$",
                    )
                out.append(self._braced(text[i + 2 : end], where))
                i = end + 1
            elif m := _NAME_RE.match(text, i + 1):
                out.append(self._lookup(m.group(), where))
                i = m.end()
            else:
                # "$@", "$1" and friends belong to a shell script inside the file: left as written
                out.append("$")
                i += 1
        return "".join(out)

    def _lookup(self, name: str, where: Location) -> str:
        if name not in self.env:
            self.warnings.append(f"{where}: ${name} is not set; read as an empty string")
        return self.env.get(name, "")

    def _braced(self, body: str, where: Location) -> str:
        m = _BRACED_RE.fullmatch(body)
        if m is None:
            raise ImportFormatError(
                f"invalid variable reference ${{{body}}}", where=where, hint="use ${NAME} or ${NAME:-default}"
            )
        name, op, arg = m.group(1), m.group(2), m.group(3) or ""
        value = self.env.get(name)
        empty = value is None or (value == "" and op is not None and op.startswith(":"))
        if op is None:
            return self._lookup(name, where)
        if op in (":-", "-"):
            return self(arg, where) if empty else str(value)
        if op in (":+", "+"):
            return "" if empty else self(arg, where)
        if empty:
            raise ImportFormatError(
                f"${{{body}}}: {arg or name + ' is required'}", where=where, hint=f"set {name}"
            )
        return str(value)


def _closing_brace(text: str, start: int) -> int:
    depth = 0
    for j in range(start, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _runs_vllm(svc: Any) -> bool:
    if not isinstance(svc, dict):
        return False
    words = " ".join(
        " ".join(map(str, v)) if isinstance(v, list) else str(v)
        for v in (svc.get("image", ""), svc.get("entrypoint", ""), svc.get("command", ""))
    )
    return "vllm" in str(svc.get("image", "")).lower() or any(
        k in words for k in ("vllm serve", "--model", "vllm.entrypoints")
    )


def _choose_service(services: dict[str, Any], wanted: str | None, where: Location) -> str:
    names = ", ".join(map(str, services)) or "none"
    if wanted is not None:
        if wanted not in services:
            raise ImportFormatError(
                f"no service '{wanted}' in this compose file (services: {names})",
                where=where,
                hint="use --service NAME",
            )
        return wanted
    found = [str(n) for n, s in services.items() if _runs_vllm(s)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise ImportFormatError(
            f"no service runs vLLM (services: {names})",
            where=where,
            hint="name the vLLM service with --service NAME",
        )
    raise ImportFormatError(
        f"several services run vLLM: {', '.join(found)}", where=where, hint="choose one with --service NAME"
    )


class _Service:
    """One compose service being read, with the helpers that know its lines and paths."""

    def __init__(self, name: str, svc: dict[str, Any], lines: dict[Path_, int], draft: Draft) -> None:
        self.name, self.svc, self.lines, self.draft = name, svc, lines, draft
        self.interp = _Interpolator(os.environ, draft.warnings)

    def at(self, *path: str | int) -> Location:
        full = ("services", self.name, *path)
        field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in full).lstrip(".")
        return Location(self.draft.source, line_for(self.lines, full), field)

    def text(self, value: Any, *path: str | int) -> str:
        if isinstance(value, bool):
            value = "true" if value else "false"
        if isinstance(value, dict | list) or value is None:
            raise ImportFormatError("expected a single value here", where=self.at(*path))
        return self.interp(str(value), self.at(*path))

    def items(self, key: str) -> list[tuple[Any, int]]:
        value = self.svc.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise ImportFormatError(f"'{key}' must be a list", where=self.at(key))
        return list(zip(value, range(len(value)), strict=True))

    def tokens(self, key: str) -> tuple[list[str], list[Location]]:
        value = self.svc.get(key)
        if value is None:
            return [], []
        if isinstance(value, list):
            return [self.text(v, key, i) for i, v in enumerate(value)], [
                self.at(key, i) for i in range(len(value))
            ]
        try:
            words = shlex.split(self.text(value, key))
        except ValueError as exc:
            raise ImportFormatError(
                f"cannot split {key}: {exc} (unbalanced quotes?)", where=self.at(key)
            ) from None
        return words, [self.at(key)] * len(words)

    def port(self, item: Any, i: int) -> str:
        if not isinstance(item, dict):
            return self.text(item, "ports", i)
        if "target" not in item:
            raise ImportFormatError("a long-syntax port needs 'target'", where=self.at("ports", i))
        host = ":".join(str(item[k]) for k in ("host_ip", "published") if item.get(k) not in (None, ""))
        text = f"{host}:{item['target']}" if host else str(item["target"])
        return self.interp(
            text + (f"/{item['protocol']}" if item.get("protocol") else ""), self.at("ports", i)
        )

    def volume(self, item: Any, i: int) -> str | None:
        if not isinstance(item, dict):
            return self.text(item, "volumes", i)
        if item.get("type") == "tmpfs" or "target" not in item:
            self.draft.warnings.append(
                f"{self.at('volumes', i)}: this volume is not kept (tmpfs or no target)"
            )
            return None
        parts = [str(item["source"])] if item.get("source") else []
        parts.append(str(item["target"]))
        if item.get("read_only"):
            parts.append("ro")
        return self.interp(":".join(parts), self.at("volumes", i))

    def environment(self) -> dict[str, str]:
        raw = self.svc.get("environment") or {}
        pairs: list[tuple[str, Any, Location]] = []
        if isinstance(raw, dict):
            pairs = [(str(k), v, self.at("environment", str(k))) for k, v in raw.items()]
        elif isinstance(raw, list):
            for i, item in enumerate(raw):
                key, eq, value = str(item).partition("=")
                pairs.append((key, value if eq else None, self.at("environment", i)))
        else:
            raise ImportFormatError("'environment' must be a list or a mapping", where=self.at("environment"))
        env: dict[str, str] = {}
        for key, value, where in pairs:
            if value is None:  # "NAME" alone: passed through from the host at run time
                if is_secret_name(key):
                    env[key] = f"${{{key}}}"
                elif key in os.environ:
                    env[key] = os.environ[key]
                else:
                    self.draft.warnings.append(f"{where}: {key} is passed through but not set here; left out")
                continue
            if isinstance(value, bool):
                value = "true" if value else "false"
            # a secret's value is kept as written: the reference text, never what it points to
            env[key] = str(value) if is_secret_name(key) else self.interp(str(value), where)
        return env

    def gpus(self) -> Any:
        requests: list[tuple[Any, tuple[str | int, ...]]] = []
        gpus = self.svc.get("gpus")
        if gpus is not None:
            if gpus == "all":
                return "all"
            if not isinstance(gpus, list):
                raise ImportFormatError(
                    "'gpus' must be 'all' or a list of device requests", where=self.at("gpus")
                )
            requests += [(g, ("gpus", i)) for i, g in enumerate(gpus)]
        devices: Any = self.svc
        path: tuple[str, ...] = ()
        for key in ("deploy", "resources", "reservations", "devices"):
            if not isinstance(devices, dict):
                raise ImportFormatError(
                    f"'{'.'.join(path)}' must be a mapping", where=self.at(*path)
                )
            devices = devices.get(key) or ([] if key == "devices" else {})
            path = (*path, key)
        if not isinstance(devices, list):
            raise ImportFormatError(
                "'deploy.resources.reservations.devices' must be a list", where=self.at(*path)
            )
        requests += [(d, (*path, i)) for i, d in enumerate(devices)]
        for request, where in requests:
            if not isinstance(request, dict):
                continue
            caps = [
                c
                for group in request.get("capabilities") or []
                for c in (group if isinstance(group, list) else [group])
            ]
            if "gpu" not in caps and request.get("driver") != "nvidia":
                continue
            if request.get("device_ids") is not None:
                try:
                    return tuple(int(str(x)) for x in request["device_ids"])
                except ValueError:
                    raise ImportFormatError(
                        "GPU device_ids must be indices such as ['0', '1'] (UUIDs are not supported)",
                        where=self.at(*where, "device_ids"),
                    ) from None
            count = request.get("count", "all")
            if str(count) == "all" or str(count) == "-1":
                return "all"
            try:
                n = int(str(count))
            except ValueError:
                raise ImportFormatError(
                    f"GPU count {count!r}: expected 'all' or a number", where=self.at(*where, "count")
                ) from None
            self.draft.warnings.append(f"GPU count {n} read as GPUs {', '.join(map(str, range(n)))}")
            return tuple(range(n))
        return None


def read_compose(text: str, *, source: str | None, service: str | None) -> Draft:
    """Parse compose text and read its vLLM service into a :class:`Draft`."""
    try:
        data, lines = load_with_lines(text, source)
    except ProfileError as exc:
        raise ImportFormatError(exc.message, where=exc.where, hint=exc.hint) from None
    services = data.get("services") if isinstance(data, dict) else None
    if not isinstance(services, dict) or not services:
        raise ImportFormatError(
            "not a compose file: no 'services:' mapping with at least one service",
            where=Location(source, line_for(lines, ("services",)) or 1, "services"),
        )
    # a service called 1175872 is read by YAML as a number; compose names are strings
    services = {str(k): v for k, v in services.items()}
    meta = data.get(META_KEY)
    if service is None and isinstance(meta, dict) and meta.get("service") in services:
        service = str(meta["service"])  # our own export names its service
    name = _choose_service(services, service, Location(source, line_for(lines, ("services",)), "services"))
    draft = Draft("compose", source, service=name, name_hint=name)
    svc = services[name]
    s = _Service(name, svc if isinstance(svc, dict) else {}, lines, draft)
    if not isinstance(svc, dict) or "image" not in svc:
        raise ImportFormatError(
            f"service '{name}' has no image",
            where=s.at("image"),
            hint="build the image first and name it in image:",
        )
    if isinstance(meta, dict) and meta.get("service", name) == name:
        draft.meta = meta
    for key in svc:
        if key not in _HANDLED:
            draft.warnings.append(f"{s.at(key)}: not kept by LLM Dyno")
    if svc.get("env_file"):
        draft.warnings.append(
            f"{s.at('env_file')}: env_file is not read; add the variables you need to the profile"
        )

    docker: dict[str, Any] = {"image": s.text(svc["image"], "image")}
    for key in ("container_name", "shm_size", "ipc", "runtime", "restart"):
        if svc.get(key) is not None:
            value = svc[key]
            # YAML reads an unquoted `restart: no` as false
            docker[key] = "no" if key == "restart" and value is False else s.text(value, key)
    docker["ports"] = tuple(s.port(p, i) for p, i in s.items("ports"))
    docker["volumes"] = tuple(v for v in (s.volume(x, i) for x, i in s.items("volumes")) if v is not None)
    entry, entry_where = s.tokens("entrypoint")
    command, command_where = s.tokens("command")
    cut = split_launch(entry, command)
    full, full_where = entry + command, entry_where + command_where
    docker["entrypoint"] = tuple(full[:cut]) if cut else None
    if cut and not entry:
        draft.warnings.append(
            f"{s.at('command')}: the command starts the server itself; kept as the entrypoint"
        )
    draft.argv, draft.argv_where = full[cut:], full_where[cut:]
    if not draft.argv:
        raise ImportFormatError(
            "no vllm serve arguments found in entrypoint/command",
            where=s.at("command"),
            hint='if they sit inside a shell script, end the script with exec vllm serve "$@" '
            "and list the arguments under command:",
        )
    draft.docker = docker
    draft.env = s.environment()
    draft.gpus = s.gpus()
    draft.where = {
        **{f"docker.{k}": s.at(k) for k in docker},
        "docker.image": s.at("image"),
        "env": s.at("environment"),
        "gpus": s.at("gpus") if "gpus" in svc else s.at("deploy"),
        "command": s.at("command"),
        "name": Location(source, None, "name"),
    }
    return draft
