"""App settings: YAML round trip, atomic writes, malformed files reported with their line."""

from __future__ import annotations

from collections.abc import Iterator
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


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The user's own environment names a Docker host; nothing was applied yet in this process, and
    what the test applies is taken back afterwards."""
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/user/1000/docker.sock")
    for name in ("DOCKER_CONTEXT", "LLM_DYNO_DATA"):
        monkeypatch.delenv(name, raising=False)
    settings_mod.apply(Settings())
    yield
    settings_mod.apply(Settings())


def test_apply_sets_defaults_and_leaves_the_environment_alone(
    home: Path, clean_env: None, tmp_path: Path
) -> None:
    import os

    from llm_dyno.core import paths
    from llm_dyno.core.history.store import HistoryStore
    from llm_dyno.core.runtime.docker_contexts import default_host
    from llm_dyno.core.runtime.docker_spec import remote_engine_host

    before = dict(os.environ)
    settings_mod.apply(Settings(docker_host="ssh://me@gpubox", data_dir=str(tmp_path / "dyno-data")))
    assert default_host() == "ssh://me@gpubox"
    assert remote_engine_host(None) == "gpubox"  # a profile naming no host runs there
    assert paths.data_dir() == tmp_path / "dyno-data"
    with HistoryStore() as history:  # where the history goes follows the setting
        assert Path(history.path).is_relative_to(tmp_path / "dyno-data")
    assert dict(os.environ) == before  # servers and tools started from here do not inherit settings
    settings_mod.apply(Settings(docker_host="gpubox-context"))  # a context name, not a URL
    assert default_host() == "gpubox-context"
    assert paths.data_dir() == home / "data"
    settings_mod.apply(Settings())
    assert default_host() is None and remote_engine_host(None) is None  # the user's own socket again
    assert dict(os.environ) == before


def test_a_context_setting_reaches_the_docker_connection(
    clean_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llm_dyno.core.runtime.docker_errors import DockerError, connect

    monkeypatch.setenv("DOCKER_CONFIG", "/nonexistent-docker-config")
    settings_mod.apply(Settings(docker_host="no-such-context"))
    with pytest.raises(DockerError, match="no docker context named 'no-such-context'"):
        connect(None)
