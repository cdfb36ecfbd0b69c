"""The app's own settings (not a profile's): theme, default Docker host, sampling interval, data folder.

Stored as YAML in ``config_dir()/settings.yaml``, written atomically. A missing file means defaults;
a malformed one raises :class:`SettingsError` with the file, line and field, so the user can fix it.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from llm_dyno.core import paths
from llm_dyno.core.atomic import atomic_write_text
from llm_dyno.core.errors import DynoError, Location, ProfileError
from llm_dyno.core.profiles import yamlio

SETTINGS_FILE = "settings.yaml"
MIN_SAMPLE_S = 0.1
MAX_SAMPLE_S = 60.0


class Theme(StrEnum):
    """Light, dark, or whatever the desktop uses."""

    SYSTEM = "system"
    LIGHT = "light"
    DARK = "dark"


class SettingsError(DynoError):
    """The settings file cannot be read or written."""


@dataclass(frozen=True)
class Settings:
    """The user's settings. ``docker_host`` None: DOCKER_HOST / the active docker context;
    ``data_dir`` None: the platform's data folder (or ``LLM_DYNO_HOME``)."""

    theme: Theme = Theme.SYSTEM
    docker_host: str | None = None
    sample_interval_s: float = 1.0
    data_dir: str | None = None

    def with_changes(self, **changes: Any) -> Settings:
        """A copy with some fields changed (validated like a loaded file)."""
        return settings_from_data({**self.to_dict(), **changes})

    def effective_data_dir(self) -> Path:
        """Where history and logs go: the override, else the default data folder."""
        return Path(self.data_dir).expanduser() if self.data_dir else paths.data_dir()

    def to_dict(self) -> dict[str, Any]:
        """Plain data for YAML (the theme as its string)."""
        out = asdict(self)
        out["theme"] = self.theme.value
        return out


def default_path() -> Path:
    """``config_dir()/settings.yaml``."""
    return paths.config_dir() / SETTINGS_FILE


def settings_from_data(
    data: Any, *, source: str | None = None, lines: dict[yamlio.Path_, int] | None = None
) -> Settings:
    """Validate loaded YAML data into :class:`Settings`; errors name the field (and line)."""
    lines = lines or {}

    def fail(field: str, message: str, hint: str | None = None) -> SettingsError:
        line = yamlio.line_for(lines, (field,)) if field else yamlio.line_for(lines, ())
        return SettingsError(message, where=Location(source, line, field or None), hint=hint)

    if data is None:
        return Settings()
    if not isinstance(data, dict):
        raise fail("", f"expected a mapping of settings, got {type(data).__name__}")
    known = {f.name for f in fields(Settings)}
    for key in data:
        if key not in known:
            raise fail(
                str(key), f"unknown setting {key!r}", hint=f"known settings: {', '.join(sorted(known))}"
            )
    out = Settings()
    if data.get("theme") is not None:
        try:
            out = replace(out, theme=Theme(str(data["theme"]).lower()))
        except ValueError:
            raise fail("theme", f"theme {data['theme']!r}: expected system, light or dark") from None
    texts: dict[str, str | None] = {}
    for key in ("docker_host", "data_dir"):
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise fail(key, f"{key} must be text, got {type(value).__name__}")
        texts[key] = (value.strip() or None) if isinstance(value, str) else None
    out = replace(out, docker_host=texts["docker_host"], data_dir=texts["data_dir"])
    interval = data.get("sample_interval_s")
    if interval is not None:
        if isinstance(interval, bool) or not isinstance(interval, int | float):
            raise fail("sample_interval_s", f"sample_interval_s must be a number, got {interval!r}")
        if not MIN_SAMPLE_S <= float(interval) <= MAX_SAMPLE_S:
            raise fail(
                "sample_interval_s",
                f"sample_interval_s {interval} is out of range",
                hint=f"choose between {MIN_SAMPLE_S} and {MAX_SAMPLE_S} seconds",
            )
        out = replace(out, sample_interval_s=float(interval))
    return out


def load(path: Path | None = None) -> Settings:
    """Read the settings file; defaults when it does not exist; :class:`SettingsError` when malformed."""
    path = path or default_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Settings()
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"cannot read settings: {exc}", where=Location(str(path))) from None
    try:
        data, lines = yamlio.load_with_lines(text, str(path))
    except ProfileError as exc:
        raise SettingsError(exc.message, where=exc.where, hint=exc.hint) from None
    return settings_from_data(data, source=str(path), lines=lines)


def save(settings: Settings, path: Path | None = None) -> Path:
    """Write the settings atomically (a kill leaves the old file or the new one, whole). A file that
    does not read (the window used the defaults) is kept as ``settings.yaml.broken`` first."""
    path = path or default_path()
    text = "# LLM Dyno settings (edit in the app: Settings…)\n" + yamlio.dump(settings.to_dict())
    try:
        if path.exists():
            try:
                load(path)
            except SettingsError:
                atomic_write_text(path.with_name(path.name + ".broken"), path.read_text("utf-8", "replace"))
        atomic_write_text(path, text, follow_link=True)
    except OSError as exc:
        raise SettingsError(f"cannot write settings: {exc}", where=Location(str(path))) from None
    return path


# The environment variables apply() changed, with the value each had before (None: unset), so that
# clearing a setting gives the user's own DOCKER_HOST / DOCKER_CONTEXT / data folder back.
_applied: dict[str, str | None] = {}


def apply(settings: Settings) -> None:
    """Make the settings the process's defaults, where the rest of the app (and docker-py, and the
    ``docker`` CLI of a plan's description) reads them: the Docker host of profiles that name none
    (a URL becomes DOCKER_HOST, a context name DOCKER_CONTEXT) and the data folder
    (:data:`paths.DATA_ENV`). A setting left empty changes nothing, and one cleared since the last
    call gives back what the environment said before."""
    wanted: dict[str, str | None] = {}
    if settings.docker_host:
        url = "://" in settings.docker_host
        wanted["DOCKER_HOST"] = settings.docker_host if url else None
        wanted["DOCKER_CONTEXT"] = None if url else settings.docker_host
    if settings.data_dir:
        wanted[paths.DATA_ENV] = str(Path(settings.data_dir).expanduser())
    for key in [k for k in _applied if k not in wanted]:
        _set_env(key, _applied.pop(key))
    for key, value in wanted.items():
        _applied.setdefault(key, os.environ.get(key))
        _set_env(key, value)


def _set_env(key: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(key, None)
    else:
        os.environ[key] = value
