"""The app's own settings (not a profile's): theme, default Docker host, sampling interval, data folder.

Stored as YAML in ``config_dir()/settings.yaml``, written atomically. A missing file means defaults;
a malformed one raises :class:`SettingsError` with the file, line and field, so the user can fix it.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from llm_dyno.core import paths
from llm_dyno.core.atomic import atomic_write_text
from llm_dyno.core.errors import DynoError, Location, ProfileError
from llm_dyno.core.profiles import yamlio
from llm_dyno.core.profiles.validation import FieldProblem, problem_of
from llm_dyno.core.runtime import docker_contexts

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


class Settings(BaseModel):
    """The user's settings. ``docker_host`` None: DOCKER_HOST / the active docker context;
    ``data_dir`` None: the platform's data folder (or ``LLM_DYNO_HOME``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    theme: Theme = Theme.SYSTEM
    docker_host: str | None = None
    sample_interval_s: float = 1.0
    data_dir: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _known(cls, data: Any) -> Any:
        known = sorted(cls.model_fields)
        for key in data if isinstance(data, dict) else ():
            if key not in known:
                raise FieldProblem(
                    f"unknown setting {key!r}", loc=(str(key),), hint=f"known settings: {', '.join(known)}"
                )
        return data

    @field_validator("theme", mode="before")
    @classmethod
    def _theme(cls, v: Any) -> Any:
        if v is None:
            return Theme.SYSTEM
        try:
            return Theme(str(v).lower())
        except ValueError:
            raise ValueError(f"theme {v!r}: expected system, light or dark") from None

    @field_validator("docker_host", "data_dir", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        if v is not None and not isinstance(v, str):
            raise ValueError(f"must be text, got {type(v).__name__}")
        return (v.strip() or None) if isinstance(v, str) else None

    @field_validator("sample_interval_s", mode="before")
    @classmethod
    def _interval(cls, v: Any) -> Any:
        if v is None:
            return 1.0
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ValueError(f"sample_interval_s must be a number, got {v!r}")
        if not MIN_SAMPLE_S <= float(v) <= MAX_SAMPLE_S:
            raise FieldProblem(
                f"sample_interval_s {v} is out of range",
                loc=(),
                hint=f"choose between {MIN_SAMPLE_S} and {MAX_SAMPLE_S} seconds",
            )
        return float(v)

    def with_changes(self, **changes: Any) -> Settings:
        """A copy with some fields changed (validated like a loaded file)."""
        return settings_from_data({**self.to_dict(), **changes})

    def effective_data_dir(self) -> Path:
        """Where history and logs go: the override, else the default data folder."""
        return Path(self.data_dir).expanduser() if self.data_dir else paths.data_dir()

    def to_dict(self) -> dict[str, Any]:
        """Plain data for YAML (the theme as its string)."""
        return self.model_dump(mode="json")


def default_path() -> Path:
    """``config_dir()/settings.yaml``."""
    return paths.config_dir() / SETTINGS_FILE


def settings_from_data(
    data: Any, *, source: str | None = None, lines: dict[yamlio.Path_, int] | None = None
) -> Settings:
    """Validate loaded YAML data into :class:`Settings`; errors name the file, line and field."""
    if data is None:
        return Settings()
    if not isinstance(data, dict):
        raise SettingsError(
            f"expected a mapping of settings, got {type(data).__name__}",
            where=Location(source, yamlio.line_for(lines or {}, ()) or 1),
        )
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        problem = problem_of(exc, source=source, lines=lines)
        raise SettingsError(problem.message, where=problem.where, hint=problem.hint) from None


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


def apply(settings: Settings) -> None:
    """Make the settings this process's defaults: the Docker host of profiles that name none (a URL
    or a docker context's name) and the data folder (history, logs, servers). Held in the process,
    not in its environment, so the servers and tools it starts do not inherit them; a setting left
    empty gives the user's own DOCKER_HOST / docker context / data folder."""
    docker_contexts.use_default_host(settings.docker_host)
    paths.use_data_dir(Path(settings.data_dir).expanduser() if settings.data_dir else None)
