"""Issue 29, class 8: storage faults, through the CLI in a subprocess. A history database another
process has locked, a read-only data folder, a data folder under a file, a damaged
``power/previous.json``, a 301-digit ``--gpu`` and an index no GPU has: each says what failed and where,
never a traceback; a result is said to be "saved as #N" only when #N holds all of it."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import cli

REPO = Path(__file__).resolve().parents[1]
STREAM = (REPO / "tests" / "fixtures" / "sse" / "chat_length.sse").read_bytes()
SHIM = REPO / "tests" / "support" / "nvml_shim"
RECORDING = REPO / "tests" / "fixtures" / "nvml" / "gpu_sampler.jsonl"  # one recorded H200
HUGE_GPU = "9" * 301


class GatedServer:
    """Answers the first chat request with a recorded vLLM stream at once; later ones wait for
    ``gate`` (the test locks the history meanwhile)."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.posts = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                body = b'{"version": "0.32.0"}' if self.path == "/version" else b""
                self.send_response(200 if body else 404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.posts += 1
                if outer.posts > 1:
                    outer.gate.wait(60)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(STREAM)))
                self.end_headers()
                self.wfile.write(STREAM)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.gate.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def gated() -> Iterator[GatedServer]:
    server = GatedServer()
    yield server
    server.close()


def _no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr + done.stdout, done.stderr[-2000:]


def test_a_locked_history_is_never_said_to_hold_the_result(tmp_path: Path, gated: GatedServer) -> None:
    db = tmp_path / "data" / "history.db"
    # quick: 2 prompts; no warm-ups, 1 run each: 2 runs, the first stored before the second starts
    args = ["bench", "--url", gated.url, "--model", "tiny", "--suite", "quick", "--runs", "1"]
    args += ["--warmups", "0"]
    env = {**os.environ, "LLM_DYNO_HOME": str(tmp_path), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "llm_dyno", *args], env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while gated.posts < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gated.posts >= 2, proc.communicate()
        with sqlite3.connect(db) as check:  # run 1 is stored: #1 holds 1 run
            assert check.execute("SELECT count(*) FROM results").fetchone()[0] == 1
        lock = sqlite3.connect(db, isolation_level=None)
        lock.execute("BEGIN EXCLUSIVE")  # another process holds the database from now on
        gated.gate.set()
        out, err = proc.communicate(timeout=90)
        lock.execute("ROLLBACK")
        lock.close()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "Traceback" not in err
    assert proc.returncode == 1, (out, err)
    assert "saved as #" not in out
    assert "#1 holds 1 of 2 runs" in err and str(db) in err and "busy" in err
    kept = Path(err.split("the whole result is kept in ")[1].split()[0])
    assert kept.is_file()
    whole = json.loads(kept.read_text(encoding="utf-8"))
    assert sum(len(p["runs"]) for p in whole["prompts"]) == 2
    # what the history holds is what was said: #1, one run
    shown = cli(tmp_path, "history", "show", "1", "--json")
    assert shown.returncode == 0, shown.stderr
    assert sum(len(p["runs"]) for p in json.loads(shown.stdout)["prompts"]) == 1
    # the kept file reads where a result file is read
    diag = cli(tmp_path, "diagnose", "--bench", str(kept), "--json")
    _no_traceback(diag)


def _read_only(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``llm-dyno ARGS`` with ``home`` bind-mounted read-only in a mount namespace of its own (nothing
    outside the command sees the mount)."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare: cannot make a read-only folder for root")
    script = f'mount --bind -o ro "{home}" "{home}" && exec "$0" -m llm_dyno "$@"'
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script, sys.executable, *args],
        env={**os.environ, "LLM_DYNO_HOME": str(home), "NO_COLOR": "1"},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    if "mount:" in done.stderr or "unshare:" in done.stderr:
        pytest.skip(f"cannot mount read-only here: {done.stderr.strip()[:200]}")
    return done


@pytest.mark.parametrize("closed", [True, False], ids=["checkpointed", "wal-open"])
def test_a_read_only_data_folder_is_read_and_named(tmp_path: Path, closed: bool) -> None:
    home = tmp_path / "home"
    assert cli(home, "history", "list").returncode == 0
    db = sqlite3.connect(home / "data" / "history.db")  # a result stored earlier
    with db:
        db.execute(
            "INSERT INTO results (started, profile, suite, json, note) VALUES "
            "('2026-12-04T00:00:00', 'kept-profile', 'quick', '{}', 'from before')"
        )
    if closed:  # the WAL is folded in and removed: SQLite cannot open it read-write on a read-only folder
        db.close()
        assert not (home / "data" / "history.db-wal").exists()
    listed = _read_only(home, "history", "list")
    _no_traceback(listed)
    assert listed.returncode == 0, listed.stderr
    assert "kept-profile" in listed.stdout and "from before" in listed.stdout
    tagged = _read_only(home, "history", "tag", "1", "x")
    _no_traceback(tagged)
    assert tagged.returncode == 2
    assert str(home / "data" / "history.db") in tagged.stderr and "cannot be written" in tagged.stderr
    watched = _read_only(home, "watch", "--url", "http://127.0.0.1:9", "--count", "1")
    _no_traceback(watched)
    assert "not remembered" in watched.stderr and "127.0.0.1:9" in watched.stderr
    db.close()


def test_a_data_folder_under_a_file_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n", encoding="utf-8")
    home = blocker / "home"
    for args in (("history", "list"), ("watch", "--url", "http://127.0.0.1:9", "--count", "1")):
        done = cli(home, *args)
        _no_traceback(done)
        assert done.returncode == 2, done.stderr
        assert str(home / "data") in done.stderr


def _power(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LLM_DYNO_POWER_HELPER"} | {
        "PYTHONPATH": f"{SHIM}{os.pathsep}{REPO / 'app'}",
        "LLM_DYNO_TEST_NVML": str(RECORDING),
        "LLM_DYNO_TEST_NVML_SETS": str(home / "nvml-sets.txt"),
    }
    return cli(home, "power", *args, env=env)


@pytest.mark.parametrize(
    "content",
    [
        "garbage{",
        "[" * 20_000 + "]" * 20_000,  # under the size bound, nested past the parser's depth
        "[" * 100_000,
        '{"0": "x"}',
        '{"0": {"watts": "abc"}}',
        '{"0": {"watts": 1e999}}',
        '{"0": {"watts": true}}',
        '{"0": {"watts": 300, "uuid": 5}}',
        '{"not-a-gpu": {"watts": 300}}',
        "[1, 2]",
    ],
    ids=lambda c: c[:12],
)
def test_a_damaged_previous_json_is_named(tmp_path: Path, content: str) -> None:
    previous = tmp_path / "data" / "power" / "previous.json"
    previous.parent.mkdir(parents=True)
    previous.write_text(content, encoding="utf-8")
    for args in (("reset", "--gpu", "0"), ("set", "300", "--gpu", "0")):
        done = _power(tmp_path, *args)
        _no_traceback(done)
        assert done.returncode == 2, done.stdout + done.stderr
        assert str(previous) in done.stderr and "damaged" in done.stderr
    assert previous.read_text(encoding="utf-8") == content  # nothing written over the evidence
    assert not (tmp_path / "nvml-sets.txt").exists()  # and no limit changed on its strength


def test_a_remembered_limit_is_restored(tmp_path: Path) -> None:
    previous = tmp_path / "data" / "power" / "previous.json"
    previous.parent.mkdir(parents=True)
    previous.write_text('{"0": {"watts": 250, "uuid": null}}', encoding="utf-8")
    done = _power(tmp_path, "reset", "--gpu", "0")
    assert done.returncode == 0, done.stderr
    assert "→ 250 W" in done.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("power", "set", "300", "--gpu", HUGE_GPU),
        ("power", "reset", "--gpu", HUGE_GPU),
        ("power", "show", "--gpu", HUGE_GPU),
        ("bench", "--url", "http://127.0.0.1:9", "--model", "m", "--gpu", HUGE_GPU),
        ("watch", "--url", "http://127.0.0.1:9", "--gpu", HUGE_GPU),
        ("power", "set", "300", "--gpu", "-1"),
        ("power", "set", "300", "--gpu", "256"),
    ],
    ids=lambda a: " ".join(x[:8] for x in a[:2]) + " " + a[-1][:6],
)
def test_a_gpu_index_out_of_bounds_is_refused_by_its_flag(tmp_path: Path, args: tuple[str, ...]) -> None:
    done = cli(tmp_path, *args)
    _no_traceback(done)
    assert done.returncode == 2
    assert "argument --gpu" in done.stderr and "0 to 255" in done.stderr
    assert HUGE_GPU not in done.stderr  # the value is shown shortened
    assert not (tmp_path / "data" / "gpu-locks").exists()


def test_no_lock_file_for_a_gpu_that_does_not_exist(tmp_path: Path) -> None:
    done = _power(tmp_path, "set", "300", "--gpu", "7")  # the recorded machine has one GPU
    _no_traceback(done)
    assert done.returncode == 2 and "no GPU 7" in done.stderr
    assert not (tmp_path / "data" / "gpu-locks" / "gpu-7.lock").exists()
    done = _power(tmp_path, "set", "300", "--gpu", "0")
    assert done.returncode == 0, done.stderr
    assert [p.name for p in (tmp_path / "data" / "gpu-locks").iterdir()] == ["gpu-0.lock"]
