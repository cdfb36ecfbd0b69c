"""Issue 29, class 11, through the CLI in a subprocess: bidirectional controls never reach the terminal
(a name that reads as another), and a 900,000-character field is not printed whole."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.support.cli import cli

BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


def _history_with_note(home: Path, note: str) -> None:
    done = cli(home, "history", "list")  # the CLI makes the database, the attacker fills a row
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(home / "data" / "history.db") as db:
        db.execute(
            "INSERT INTO results (started, profile, suite, json, note) VALUES (?, ?, ?, '{}', ?)",
            ("2026-12-04T00:00:00", "admin\u202eslaer", "quick", note),
        )


def test_bidi_controls_are_removed_from_what_is_printed(tmp_path: Path) -> None:
    _history_with_note(tmp_path, f"evil{BIDI}note")
    done = cli(tmp_path, "history", "list")
    assert done.returncode == 0, done.stderr
    assert "adminslaer" in done.stdout and "evilnote" in done.stdout
    assert not set(BIDI) & set(done.stdout + done.stderr)


def test_bidi_controls_are_removed_from_a_log_streamed_as_bytes(tmp_path: Path) -> None:
    # `logs` copies a stopped server's log file out as bytes (sanitize_bytes)
    profile = tmp_path / "p.yaml"
    profile.write_text(
        "schema: 1\nname: bidi-log\nruntime: process\nprocess:\n  executable: vllm\nmodel: m\n",
        encoding="utf-8",
    )
    done = cli(tmp_path, "profile", "import", str(profile))
    assert done.returncode == 0, done.stderr
    logs = tmp_path / "data" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "bidi-log-20261204-000000.log").write_bytes(f"INFO model{BIDI}name loaded\n".encode())
    done = cli(tmp_path, "logs", "bidi-log")
    assert done.returncode == 0, done.stderr
    assert "INFO modelname loaded" in done.stdout
    assert not set(BIDI) & set(done.stdout)


def test_a_900000_character_field_is_cut_with_its_length(tmp_path: Path) -> None:
    long = "m" * 900_000
    _history_with_note(tmp_path, long)
    done = cli(tmp_path, "history", "list")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout) < 10_000
    assert "… (900,0" in done.stdout and "characters in all)" in done.stdout
    # JSON is for programs: it stays whole and valid
    machine = cli(tmp_path, "history", "list", "--json")
    assert machine.returncode == 0, machine.stderr
    assert json.loads(machine.stdout)[0]["note"] == long


def test_an_export_is_never_cut(tmp_path: Path) -> None:
    # a 10,000-character value is a line past the bound, but an export is pasted: it stays whole
    value = "v" * 10_000
    profile = tmp_path / "long.yaml"
    profile.write_text(
        "schema: 1\nname: long-value\nruntime: process\nprocess:\n  executable: vllm\nmodel: m\n"
        f"env:\n  LONG_VALUE: {value}\n",
        encoding="utf-8",
    )
    done = cli(tmp_path, "profile", "import", str(profile))
    assert done.returncode == 0, done.stderr
    for fmt in ("vllm-serve", "yaml"):
        exported = cli(tmp_path, "profile", "export", "long-value", "--format", fmt)
        assert exported.returncode == 0, exported.stderr
        assert value in exported.stdout and "characters in all" not in exported.stdout
