"""Servers the user attached to by URL (not launched by the app), remembered for next time.

Stored in ``data_dir()/attached.json``, written atomically. The API key itself is never stored:
only the name of the environment variable that holds it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from llm_dyno.core.atomic import atomic_write_text
from llm_dyno.core.errors import DynoError, at
from llm_dyno.core.jsontext import loads_outside
from llm_dyno.core.paths import data_dir
from llm_dyno.core.secrets import strip_credentials


@dataclass(frozen=True)
class AttachedServer:
    """A server to watch: its base URL, and optionally its container, GPU and API-key variable.

    ``gpu_via_container``: read the GPU with nvidia-smi in ``container`` even when this machine's
    NVML works (the server runs on another machine); without NVML the container is used anyway.
    """

    url: str
    container: str | None = None
    gpu_index: int | None = None
    api_key_env: str | None = None
    name: str | None = None
    gpu_via_container: bool = False

    @property
    def label(self) -> str:
        """What to call it in lists."""
        return self.name or self.url


def attached_file() -> Path:
    """Where attached servers are remembered."""
    return data_dir() / "attached.json"


def load_attached(path: Path | None = None) -> list[AttachedServer]:
    """Every remembered server, oldest first (empty when none)."""
    path = path or attached_file()
    try:
        raw = loads_outside(path.read_text(encoding="utf-8"), path.name)
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise DynoError(f"cannot read attached servers: {exc}", where=at(path)) from exc
    fields = set(AttachedServer.__dataclass_fields__)
    out: list[AttachedServer] = []
    for i, item in enumerate(raw.get("servers", []) if isinstance(raw, dict) else []):
        if not isinstance(item, dict) or not isinstance(item.get("url"), str):
            raise DynoError("entry has no url", where=at(path, field=f"servers[{i}]"))
        out.append(AttachedServer(**{k: v for k, v in item.items() if k in fields}))
    return out


def _save(servers: list[AttachedServer], path: Path) -> None:
    # a URL's user:password never reaches the file (use an API-key variable instead)
    clean = [asdict(replace(s, url=strip_credentials(s.url))) for s in servers]
    text = json.dumps({"version": 1, "servers": clean}, indent=2) + "\n"
    atomic_write_text(path, text)


def remember_attached(server: AttachedServer, path: Path | None = None) -> list[AttachedServer]:
    """Add or update (same URL) a server; returns the new list."""
    path = path or attached_file()
    url = strip_credentials(server.url).rstrip("/")
    servers = [s for s in load_attached(path) if s.url.rstrip("/") != url]
    servers.append(server)
    _save(servers, path)
    return servers
