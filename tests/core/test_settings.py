"""App settings: YAML round trip, atomic writes, malformed files reported with their line."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_dyno.core import settings as settings_mod
from llm_dyno.core.settings import Settings, SettingsError, Theme, load, save


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LLM_DYNO_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_defaults_when_missing(home: Path) -> None:
    assert load() == Settings()
    assert Settings().effective_data_dir() == home / "data"


def test_round_trip(home: Path) -> None:
    s = Settings(theme=Theme.DARK, docker_host="ssh://me@gpubox", sample_interval_s=0.5, data_dir="~/dyno")
    path = save(s)
    assert path == home / "config" / "settings.yaml"
    assert load() == s
    assert "theme: dark" in path.read_text()
    assert s.effective_data_dir() == Path("~/dyno").expanduser()
    assert s.with_changes(theme="light").theme is Theme.LIGHT


def test_save_is_atomic(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    save(Settings(theme=Theme.LIGHT))
    path = settings_mod.default_path()
    before = path.read_text()

    def boom(*_a: object, **_k: object) -> None:
        raise OSError("disk full")

    # a write that fails half-way (in the temp file) leaves the old file whole and no temp behind
    monkeypatch.setattr("os.replace", boom)
    with pytest.raises(SettingsError, match="disk full"):
        save(Settings(theme=Theme.DARK))
    assert path.read_text() == before
    assert [p.name for p in path.parent.iterdir()] == ["settings.yaml"]


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        ("theme: dark\nsample_interval_s: [1\n", 3, None, "not valid YAML"),
        ("theme: dark\ndocker_host: unix:///x\nsample_interval_s: fast\n", 3, "sample_interval_s", "number"),
        ("theme: blue\n", 1, "theme", "expected system, light or dark"),
        ("# comment\n\nsample_interval_s: 0.01\n", 3, "sample_interval_s", "out of range"),
        ("theme: dark\ncolour: red\n", 2, "colour", "unknown setting"),
        ("- a list\n", 1, None, "expected a mapping"),
    ],
)
def test_bad_file_reported_with_line(home: Path, text: str, line: int, field: str | None, words: str) -> None:
    path = settings_mod.default_path()
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(SettingsError) as info:
        load()
    err = info.value
    assert words in err.message
    assert err.where is not None and err.where.file == str(path)
    assert err.where.line == line, str(err)
    if field:
        assert err.where.field == field
    assert f"settings.yaml:{line}" in str(err)
