"""One compose service read into profile fields, with Compose's meaning of each key.

The project-level semantics (interpolation, ``.env``, project name, relative paths, prefixes) live in
:mod:`~llm_dyno.core.profiles.compose_project`; this module knows the service keys.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llm_dyno.core.errors import ImportFormatError, Location
from llm_dyno.core.profiles.compose_devices import read_gpus
from llm_dyno.core.profiles.compose_dotenv import is_inside
from llm_dyno.core.profiles.compose_extends import Origin
from llm_dyno.core.profiles.compose_project import ComposeContext, is_path_source, read_env_file
from llm_dyno.core.profiles.compose_volumes import (
    driver_volume,
    image_volume,
    local_bind,
    long_volume_options,
    refuse_unmountable,
    warn_host_access,
    warn_host_network,
)
from llm_dyno.core.profiles.import_common import Draft, checked_env_name
from llm_dyno.core.profiles.yamlio import Path_, line_for
from llm_dyno.core.secrets import escape_literal, is_secret_name


def _zero_size(size: Any) -> bool:
    """Whether a tmpfs ``size`` is zero (``0``, ``"0"``, ``0m``): Compose passes no size then."""
    text = str(size).strip().lower()
    return bool(re.fullmatch(r"0+(\.0*)?\s*[kmgtb]?i?b?", text))


def _field(path: tuple[str | int, ...]) -> str:
    """``services.vllm.ports[0]``: a path as error messages name a field."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


class ServiceReader:
    """One compose service being read, with the helpers that know its lines and paths."""

    def __init__(
        self,
        name: str,
        svc: dict[str, Any],
        lines: dict[Path_, int],
        draft: Draft,
        ctx: ComposeContext,
        top: dict[str, Any],
        chain: Sequence[Origin] = (),
    ) -> None:
        """``top``: the whole compose document (for its ``volumes:`` and ``networks:`` declarations);
        ``chain``: the services it extends, nearest first (where the keys they brought are written)."""
        self.name, self.svc, self.lines, self.draft, self.ctx, self.top = name, svc, lines, draft, ctx, top
        self.chain = chain
        self.interp = ctx.interpolate
        self.tmpfs_mounts: list[str] = []  # volumes of type tmpfs, as docker.tmpfs entries
        self.devices: list[dict[str, Any]] = []  # device requests besides the NVIDIA GPUs (docker.devices)
        self.image_volumes: list[dict[str, Any]] = []  # volumes of type image (docker.image_volumes)
        self.driver_volumes: dict[str, dict[str, Any]] = {}  # volumes the launch creates, by engine name

    def at(self, *path: str | int) -> Location:
        """Where a key of the service is written: in this file, or, for a key ``extends`` brought from
        another service (of this file or another), in that service's file and line."""
        full = ("services", self.name, *path)
        if full not in self.lines and path:
            for origin in self.chain:  # the nearest service that writes it (the key itself, or the key
                theirs = ("services", origin.service, *path)  # when this file does not write it)
                mine = ("services", self.name, path[0]) in self.lines
                if theirs in origin.file.lines or (not mine and theirs[:3] in origin.file.lines):
                    return Location(origin.file.source, line_for(origin.file.lines, theirs), _field(theirs))
        return Location(self.draft.source, line_for(self.lines, full), _field(full))

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

    def value(self, value: Any, *path: str | int) -> str:
        """:meth:`text` for a value the launch resolves (environment, command, image): a literal that
        reads like a reference (``$${foo}``) is kept escaped (see ``ComposeContext.interpolate_value``)."""
        self.text(value, *path)  # its checks
        if isinstance(value, bool):
            value = "true" if value else "false"
        return self.ctx.interpolate_value(str(value), self.at(*path))

    def tokens(self, key: str) -> tuple[list[str], list[Location]]:
        value = self.svc.get(key)
        if value is None:
            return [], []
        read = self.value if key == "command" else self.text
        if isinstance(value, list):
            return [read(v, key, i) for i, v in enumerate(value)], [
                self.at(key, i) for i in range(len(value))
            ]
        self.text(value, key)  # its checks
        text, kept = self.ctx.interpolate_counted(str(value), self.at(key))
        try:
            words = shlex.split(text)
        except ValueError as exc:
            raise ImportFormatError(
                f"cannot split {key}: {exc} (unbalanced quotes?)", where=self.at(key)
            ) from None
        if key == "command" and not kept:
            words = [escape_literal(w) for w in words]  # no secret reference kept: every ${…} is literal
        return words, [self.at(key)] * len(words)

    def ports(self, item: Any, i: int) -> list[str]:
        """One ``ports:`` entry as mappings, a range (``80-82:8080-8082``) as one mapping per port, as
        Compose publishes it."""
        text = self.port(item, i)
        spec, slash, proto = text.partition("/")
        head, _, ctr = spec.rpartition(":")
        host_ip, _, host = head.rpartition(":") if head.count(":") >= 1 else ("", "", head)
        if "-" not in ctr and "-" not in host:
            return [text]
        where = self.at("ports", i)
        try:
            c0, _, c1 = ctr.partition("-")
            ctrs = list(range(int(c0), int(c1 or c0) + 1))
            h0, _, h1 = host.partition("-")
            hosts = list(range(int(h0), int(h1 or h0) + 1)) if host else []
        except ValueError:
            raise ImportFormatError(f"port range {text!r}: expected numbers", where=where) from None
        if not ctrs or len(ctrs) > 1024 or (hosts and len(ctrs) > 1 and len(hosts) != len(ctrs)):
            raise ImportFormatError(
                f"port range {text!r}: the host and container ranges differ in size (or exceed 1024 ports)",
                where=where,
                hint="write two ranges of the same length, e.g. 8000-8001:8000-8001",
            )
        ip = f"{host_ip}:" if host_ip else ""
        suffix = f"{slash}{proto}"
        if len(ctrs) == 1 and len(hosts) > 1:
            return [text]  # a host range for one container port: Docker picks a free port in it
        return [
            (f"{ip}{hosts[k]}:{c}" if hosts else (f"{ip}:{c}" if ip else str(c))) + suffix
            for k, c in enumerate(ctrs)
        ]

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
        """``src:dst[:mode]`` with Compose's reading of the source: a path resolved against the project
        folder, or a named volume under its engine name (``<project>_<name>``)."""
        where = self.at("volumes", i)
        if isinstance(item, dict):
            kind = item.get("type", "volume")
            refuse_unmountable(item, kind, where)
            if kind == "image":  # kept with the image mounts (docker.image_volumes)
                self.image_volumes.append(image_volume(item, self.ctx, where))
                return None
            if kind == "tmpfs":  # kept with the tmpfs mounts (docker.tmpfs), as Docker mounts them
                opts: dict[str, Any] = item["tmpfs"] if isinstance(item.get("tmpfs"), dict) else {}
                # size 0 is no size: Compose leaves it out (the kernel's default, half the RAM)
                written = [f"size={opts['size']}"] if "size" in opts and not _zero_size(opts["size"]) else []
                if isinstance(opts.get("mode"), int):
                    written.append(f"mode={opts['mode']:o}")  # YAML's 01777 is the number 1023
                target = self.interp(str(item["target"]), where)
                self.tmpfs_mounts.append(":".join([target, ",".join(written)]) if written else target)
                return None
            source = self.interp(str(item["source"]), where) if item.get("source") else ""
            target = self.interp(str(item["target"]), where)
            mode = ",".join(long_volume_options(item, kind, self.draft.warnings, self.at("volumes")))
        else:
            text = self.text(item, "volumes", i)
            parts = text.split(":")
            if len(parts) > 2 and len(parts[0]) == 1 and parts[0].isalpha() and parts[1][:1] in ("\\", "/"):
                parts = [f"{parts[0]}:{parts[1]}", *parts[2:]]  # C:\models:/models (a Windows host)
                self.draft.warnings.append(
                    f"{where}: {parts[0]} is a Windows path, which a Linux Docker engine cannot mount; "
                    "replace it with a folder on the machine that runs the server"
                )
            if len(parts) > 1 and not parts[0]:
                raise ImportFormatError(
                    f"volume {text!r} has an empty source (an unset variable?)" + self.draft.unset_note(),
                    where=where,
                    hint="set the variable, or write the folder or volume to mount",
                )
            if len(parts) == 1:
                source, target, mode = "", parts[0], ""
            else:
                source, target, mode = parts[0], parts[1], ":".join(parts[2:])
        if not source:
            # an anonymous volume, as Compose makes it: Docker creates a new one for each container
            return ":".join([target, *([mode] if mode else [])]) if mode else target
        if is_path_source(source):
            source = self.ctx.resolve_path(source, where)
        else:
            declared = (self.top.get("volumes") or {}) if isinstance(self.top.get("volumes"), dict) else {}
            if source not in declared:
                self.draft.warnings.append(
                    f"{where}: volume '{source}' is not declared under the top-level volumes: (Docker "
                    "Compose refuses such a file); read as a volume of this project"
                )
            folder = local_bind(source, declared.get(source), self.ctx, self.draft.source, self.lines)
            if folder is not None and folder.read_only and "ro" not in mode.split(","):
                # the local driver mounts the folder with its o: options: bind,ro is read-only
                mode = ",".join(["ro", *(m for m in mode.split(",") if m and m != "rw")])
            key = source
            source = folder.path if folder else self.ctx.scoped(source, declared.get(source), "volume", where)
            made = (
                None
                if folder
                else driver_volume(key, source, declared.get(key), self.ctx, self.draft.source, self.lines)
            )
            if made is not None:
                self.driver_volumes[source] = made  # created by the launch, once for every mount of it
        volume = ":".join([source, target, *([mode] if mode else [])])
        return warn_host_access(volume, self.draft.warnings, where)

    def env_files(self) -> dict[str, str]:
        """The variables of ``env_file:`` (later files win), read against the project folder."""
        raw = self.svc.get("env_file")
        if raw is None:
            return {}
        entries = raw if isinstance(raw, list) else [raw]
        out: dict[str, str] = {}
        for i, entry in enumerate(entries):
            where = self.at("env_file", i) if isinstance(raw, list) else self.at("env_file")
            required, raw = True, False
            if isinstance(entry, dict):
                required = entry.get("required", True) is not False
                raw = entry.get("format") == "raw"  # values as written: quotes kept, nothing filled in
                entry = entry.get("path", "")
            name = self.interp(str(entry), where)
            base = self.ctx.base_dir
            if base is None:
                self.draft.warnings.append(
                    f"{where}: env_file {name} is not read: pasted text has no project folder, and an "
                    "imported file may not make the app read files elsewhere (import the compose file itself)"
                )
                continue
            path = Path(name) if Path(name).is_absolute() else base / name
            if not os.path.lexists(path):
                if not required:
                    continue
                raise ImportFormatError(
                    f"env_file {name} not found ({path})",
                    where=where,
                    hint="create it, or mark it optional with required: false",
                )
            # outside the folder only when the user allowed it; the other bounds hold all the same
            outside = self.ctx.env_files_anywhere and not is_inside(path, base)
            out.update(
                read_env_file(
                    path,
                    self.ctx.variables,
                    self.draft.warnings,
                    project=None if outside else base,
                    where=where,
                    escaped=True,
                    raw=raw,
                )
            )
            if outside:
                self.draft.warnings.append(
                    f"{where}: env_file {name} lies outside the project folder; read because you allowed "
                    "it (--allow-env-file-outside)"
                )
        return out

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
        # env_file first: environment: overrides it, as in Compose
        env: dict[str, str] = self.env_files()
        for key, value, where in pairs:
            checked_env_name(key, where)
            if value is None:  # "NAME" alone: passed through from the host at run time
                if is_secret_name(key):
                    env[key] = f"${{{key}}}"
                elif key in self.ctx.variables:
                    env[key] = self.ctx.variables[key]
                else:
                    self.draft.warnings.append(f"{where}: {key} is passed through but not set here; left out")
                continue
            if isinstance(value, bool):
                value = "true" if value else "false"
            # a secret's value is kept as written: the reference text, never what it points to
            env[key] = str(value) if is_secret_name(key) else self.ctx.interpolate_value(str(value), where)
        return env

    def mapping(self, key: str) -> dict[str, str]:
        """A ``labels:`` / ``logging.options``-style mapping or ``K=V`` list, interpolated."""
        raw = self.svc.get(key)
        if raw is None:
            return {}
        if isinstance(raw, list):
            return {
                str(item).partition("=")[0]: self.interp(str(item).partition("=")[2], self.at(key, i))
                for i, item in enumerate(raw)
            }
        if not isinstance(raw, dict):
            raise ImportFormatError(f"'{key}' must be a list or a mapping", where=self.at(key))
        return {str(k): self.text("" if v is None else v, key, str(k)) for k, v in raw.items()}

    def logging(self) -> dict[str, Any] | None:
        """``logging: {driver, options}`` (log rotation: ``max-size``, ``max-file``)."""
        raw = self.svc.get("logging")
        if raw is None:
            return None
        if not isinstance(raw, dict):
            raise ImportFormatError(
                "'logging' must be a mapping (driver:, options:)", where=self.at("logging")
            )
        out: dict[str, Any] = {}
        if raw.get("driver"):
            out["driver"] = self.text(raw["driver"], "logging", "driver")
        options = raw.get("options") or {}
        if not isinstance(options, dict):
            raise ImportFormatError(
                "'logging.options' must be a mapping", where=self.at("logging", "options")
            )
        out["options"] = {str(k): self.text(v, "logging", "options", str(k)) for k, v in options.items()}
        return out

    def ulimits(self) -> dict[str, str]:
        """``ulimits:`` as ``name → 'N'`` or ``'soft:hard'``."""
        raw = self.svc.get("ulimits")
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            raise ImportFormatError("'ulimits' must be a mapping", where=self.at("ulimits"))
        out: dict[str, str] = {}
        for name, value in raw.items():
            if isinstance(value, dict):
                soft = self.text(value.get("soft", ""), "ulimits", str(name), "soft")
                hard = self.text(value.get("hard", ""), "ulimits", str(name), "hard")
                out[str(name)] = f"{soft}:{hard}"
            else:
                out[str(name)] = self.text(value, "ulimits", str(name))
        return out

    def network(self) -> tuple[str | None, tuple[str, ...]]:
        """The network the container joins and its aliases there, as Compose would attach it.

        Without ``networks:`` or ``network_mode:`` that is the project's default network
        (``<project>_default``), where sibling services reach the container by its service name.
        """
        mode = self.svc.get("network_mode")
        if mode is not None:
            text = self.text(mode, "network_mode")
            if text.startswith("service:"):
                self.draft.warnings.append(
                    f"{self.at('network_mode')}: network_mode {text} is not supported (LLM Dyno starts one "
                    "service); the container joins Docker's default bridge network"
                )
                return None, ()
            if text == "host":
                warn_host_network(self.svc.get("ports"), self.draft.warnings, self.at("network_mode"))
            return (None if text in ("bridge", "default") else text), ()
        declared = self.top.get("networks") if isinstance(self.top.get("networks"), dict) else {}
        raw = self.svc.get("networks")
        if raw is None:
            names: list[str] = ["default"]
            aliases: list[str] = []
        elif isinstance(raw, list):
            names, aliases = [str(n) for n in raw], []
        elif isinstance(raw, dict):
            names = [str(n) for n in raw]
            first = raw[names[0]] if names else None
            aliases = [str(a) for a in (first or {}).get("aliases") or []] if isinstance(first, dict) else []
        else:
            raise ImportFormatError("'networks' must be a list or a mapping", where=self.at("networks"))
        if not names:
            return None, ()
        if len(names) > 1:
            self.draft.warnings.append(
                f"{self.at('networks')}: only the first network ({names[0]}) is joined; "
                f"not joined: {', '.join(names[1:])}"
            )
        if self.ctx.project is None and names[0] == "default" and "default" not in (declared or {}):
            if len(self.top.get("services") or {}) < 2:
                return None, ()  # no sibling service could look it up by name: nothing is lost
            self.draft.warnings.append(
                f"{self.at('networks') if raw is not None else self.at('image')}: pasted text has no compose "
                "project, so the container joins Docker's default bridge network instead of "
                "<project>_default (import the file from its folder to join the project network)"
            )
            return None, ()
        name = self.ctx.scoped(names[0], (declared or {}).get(names[0]), "network", self.at("networks"))
        return name, tuple(dict.fromkeys([self.name, *aliases]))

    def gpus(self) -> Any:
        """The GPUs of the first NVIDIA request; every other request kept in :attr:`devices`
        (:func:`~llm_dyno.core.profiles.compose_devices.read_gpus`)."""
        return read_gpus(self)
