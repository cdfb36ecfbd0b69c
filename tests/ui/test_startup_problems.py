"""The window always starts: a hostile profile, a broken settings file and a damaged history are
named on its banner (what and where), and nothing is rewritten or lost."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.bench.run_context import RunContext
from llm_dyno.core.history.store import HistoryStore
from llm_dyno.core.paths import config_dir, data_dir
from llm_dyno.core.profiles.store import ProfileStore
from llm_dyno.core.settings import Settings, save
from tests.test_hostile_files import BOMB, RECURSIVE_ALIAS


def _break_everything(store: ProfileStore) -> tuple[Path, Path, Path]:
    (store.folder / "bomb.yaml").write_text(BOMB)
    (store.folder / "loop.yaml").write_text(RECURSIVE_ALIAS)
    settings = config_dir() / "settings.yaml"
    settings.write_text("theme: [dark\n")
    with HistoryStore() as history:
        for i in range(30):
            history.add(
                BenchResult("quick", RunContext(started=f"2026-01-{i % 28 + 1:02d}", model="m" * 3000))
            )
        db = history.path
    with open(db, "r+b") as fh:
        for page in (1, 2, 3):
            fh.seek(4096 * page)
            fh.write(b"\xde\xad" * 2048)
    return settings, db, store.folder


def test_the_window_names_every_broken_file_and_keeps_them(qtbot, store: ProfileStore) -> None:  # type: ignore[no-untyped-def]
    settings, db, _folder = _break_everything(store)
    from llm_dyno.ui.app import startup_problems
    from llm_dyno.ui.main_window import MainWindow

    w = MainWindow()
    w.interactive = False
    qtbot.addWidget(w)
    w.add_startup_problems(startup_problems())
    w.show()
    assert w.banner.isVisibleTo(w)
    assert w.banner.title.text() == "4 files could not be read; nothing was changed"
    lines = w.banner.lines
    assert any(line.startswith(f"{settings}:2: not valid YAML") for line in lines)
    assert any(line.startswith(f"the history database {db} is damaged") for line in lines)
    assert "bomb.yaml:7: refused: aliases that expand to more than 100,000 values (an alias bomb?)" in lines
    assert "loop.yaml:2: refused: an alias that contains itself (a recursive alias)" in lines
    assert len(w.profile_list.names()) >= 1  # the good profiles still load
    assert settings.read_text() == "theme: [dark\n"
    assert list(data_dir().glob("history.db.damaged-*"))
    w.editor.set_profile(None)


def test_saving_settings_over_a_broken_file_keeps_it(store: ProfileStore) -> None:
    settings = config_dir() / "settings.yaml"
    settings.write_text("theme: [dark\n")
    save(Settings())
    assert (config_dir() / "settings.yaml.broken").read_text() == "theme: [dark\n"


def test_the_window_starts_with_everything_broken(tmp_path: Path, store: ProfileStore) -> None:
    _break_everything(store)
    out = tmp_path / "shot.png"
    done = subprocess.run(
        [sys.executable, "-m", "llm_dyno", "--screenshot", str(out), "--size", "1280x500"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert out.stat().st_size > 10_000 and "Traceback" not in done.stderr
