"""Result exports through the CLI in a subprocess: every format the registry has for a benchmark and for a
tune is offered (``llm-dyno export … --format``, the ``--NAME FILE`` flags of ``bench``) and writes a file
that parses back (JSON, CSV, Markdown) and holds the stored result."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.exports.registry import ResultKind, formats_for
from llm_dyno.core.history.store import HistoryStore
from tests.core.bench.replay import ReplayServer, fixture
from tests.support.cli import cli
from tests.support.result_files import TUNE_ID, parse_back, recorded, tune_record


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home whose history holds the recorded cpu-tiny result as #1 and whose tunes folder one tune."""
    home = tmp_path / "home"
    monkeypatch.setenv("LLM_DYNO_HOME", str(home))
    monkeypatch.delenv("LLM_DYNO_DATA", raising=False)
    with HistoryStore() as store:
        store.add(recorded("cpu-tiny"))
    tunes = home / "data" / "tunes"
    tunes.mkdir(parents=True)
    tune_record().save(tunes / f"{TUNE_ID}.json")
    return home


def test_every_bench_format_is_offered_and_writes_the_stored_result(home: Path, tmp_path: Path) -> None:
    result = recorded("cpu-tiny")
    formats = formats_for(ResultKind.BENCH)
    assert {"json", "csv", "markdown"} <= set(formats)
    usage = cli(home, "export", "bench", "--help").stdout
    assert all(name in usage for name in formats)
    for name, fmt in formats.items():
        out = tmp_path / f"result{fmt.suffix}"
        done = cli(home, "export", "bench", "1", "--format", name, "--out", str(out))
        assert done.returncode == 0, done.stderr
        back = parse_back(out)
        if name == "json":
            again = BenchResult.from_dict(back)
            assert again.suite == result.suite and len(again.all_runs()) == len(result.all_runs())
        elif name == "csv":
            assert len(back) == len(result.all_runs()) and {r["prompt"] for r in back} == {
                p.name for p in result.prompts
            }
        elif name == "markdown":
            assert [row["prompt"] for row in back[0]] == [p.name for p in result.prompts]
            counted = {row["prompt"]: int(row["counted runs"]) for row in back[0]}
            assert counted == {p.name: len(p.counted) for p in result.prompts}
        out.unlink()
        # standard output gets the same text
        shown = cli(home, "export", "bench", "1", "--format", name)
        assert shown.returncode == 0 and shown.stdout.strip()


def test_every_tune_format_is_offered_and_writes_the_stored_tune(home: Path, tmp_path: Path) -> None:
    record = tune_record()
    formats = formats_for(ResultKind.TUNE)
    assert {"json", "csv", "markdown", "post"} <= set(formats)
    usage = cli(home, "export", "tune", "--help").stdout
    assert all(name in usage for name in formats)
    for name, fmt in formats.items():
        out = tmp_path / f"tune-{name}{fmt.suffix}"
        done = cli(home, "export", "tune", TUNE_ID, "--format", name, "-o", str(out))
        assert done.returncode == 0, done.stderr
        back = parse_back(out)
        text = out.read_text(encoding="utf-8")
        if name == "json":
            assert back["id"] == TUNE_ID and len(back["analysis"]["trials"]) == len(record.trials)
        elif name == "csv":
            assert [r["trial"] for r in back] == [t.label for t in record.trials]
        elif name == "markdown":
            assert [row["trial"] for row in back[0]] == [t.label for t in record.trials]
            assert "tune power=230,290" in text
        elif name == "post":
            assert back == [] and text.count("\n") == 1 and text.startswith("cpu-tiny · tune power=230,290")


def test_bench_writes_every_format_flag_from_a_live_run(home: Path, tmp_path: Path) -> None:
    formats = formats_for(ResultKind.BENCH)
    assert all(f"--{name}" in cli(home, "bench", "--help").stdout for name in formats)
    files = {name: tmp_path / f"live-{name}{fmt.suffix}" for name, fmt in formats.items()}
    flags = [arg for name, path in files.items() for arg in (f"--{name}", str(path))]
    with ReplayServer(fixture("chat_length.sse")) as server:
        done = cli(
            home, "bench", "--url", server.url, "--model", "tiny", "--suite", "quick", "--runs", "1",
            "--warmups", "0", "--no-save", *flags,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    live = BenchResult.from_dict(parse_back(files["json"]))
    assert len(parse_back(files["csv"])) == len(live.all_runs())
    assert [row["prompt"] for row in parse_back(files["markdown"])[0]] == [p.name for p in live.prompts]


def test_a_missing_result_or_tune_or_format_says_what_there_is(home: Path) -> None:
    gone = cli(home, "export", "bench", "7", "--format", "csv")
    assert gone.returncode != 0 and "no result with id 7" in gone.stderr
    tune = cli(home, "export", "tune", "no-such-tune", "--format", "csv")
    assert tune.returncode != 0 and "no tune 'no-such-tune'" in tune.stderr and TUNE_ID in tune.stderr
    escape = cli(home, "export", "tune", "../tunes/" + TUNE_ID, "--format", "csv")
    assert escape.returncode != 0 and "no tune" in escape.stderr
    bad = cli(home, "export", "bench", "1", "--format", "post")  # a tune's format, not a benchmark's
    assert bad.returncode != 0 and "invalid choice" in bad.stderr
