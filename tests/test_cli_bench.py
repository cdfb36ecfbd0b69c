"""``llm-dyno bench`` / ``history`` end to end against a replaying HTTP server (recorded vLLM streams)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_dyno.cli import run as run_cli
from tests.core.bench.replay import ReplayServer, fixture


def cli(argv: list[str]) -> int:
    """The real entry point, as `llm-dyno ARGV` runs it (user errors become exit code 2)."""
    return run_cli(argv)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LLM_DYNO_HOME", str(tmp_path))
    return tmp_path


def test_bench_saves_and_history_commands(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json, out_csv = home / "r.json", home / "r.csv"
    with ReplayServer(fixture("chat_length.sse")) as server:
        for _ in range(2):
            assert (
                cli(
                    [
                        "bench",
                        "--url",
                        server.url,
                        "--model",
                        "tiny",
                        "--suite",
                        "quick",
                        "--runs",
                        "2",
                        "--warmups",
                        "1",
                        "--json",
                        str(out_json),
                        "--csv",
                        str(out_csv),
                    ]
                )
                == 0
            )
    text = capsys.readouterr().out
    # warm-ups and measured runs are counted apart: 1 warm-up, then runs 1 and 2 of 2
    assert (
        "narrative  warm-up 1/1 " in text and "narrative  run 1/2 " in text and "narrative  run 2/2 " in text
    )
    assert "warm-up 1/3" not in text and "run 3/3" not in text and text.count("saved as #") == 2
    assert "narr " in text and " TPS" in text and "vLLM 0.32.0" in text
    data = json.loads(out_json.read_text())
    assert data["suite"] == "quick" and len(data["prompts"][0]["runs"]) == 3
    assert data["context"]["vllm_version"] == "0.32.0"
    assert len(out_csv.read_text().splitlines()) == 7
    # vllm bench serve's figures beside the community's, per prompt (the recorded stream: 9 events)
    peer = data["prompts"][0]["summary"]["peer"]
    assert peer["requests"] == 2 and peer["itl_ms"]["n"] == 2 * 8
    assert (
        set(peer["tpot_ms"]) == {"n", "mean_ms", "median_ms", "p99_ms"} and peer["output_throughput_tps"] > 0
    )
    assert all(len(r["peer"]["itl_s"]) == 8 for r in data["prompts"][0]["runs"])
    assert "narrative: TTFT " in text and "/ TPOT " in text and "; median " in text and ", p99 " in text
    assert "tpot_s" in out_csv.read_text().splitlines()[0]

    assert cli(["history", "list", "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert [e["id"] for e in entries] == [2, 1]
    assert cli(["history", "tag", "1", "base"]) == 0
    assert cli(["history", "note", "1", "first try"]) == 0
    assert cli(["history", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[1]["tags"] == ["base"]
    assert cli(["history", "show", "1"]) == 0
    assert "wall_tps" in capsys.readouterr().out
    assert cli(["history", "compare", "1", "2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)[0]["rows"]
    assert {r["metric"] for r in rows} >= {"wall_tps", "ttft_s"}  # one burst: no decode time
    assert cli(["history", "delete", "2"]) == 0
    assert cli(["history", "list"]) == 0
    assert "#1" in capsys.readouterr().out


def test_bench_server_dies_reports_and_keeps_runs(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ReplayServer(fixture("chat_length.sse"), die_after=2) as server:
        rc = cli(["bench", "--url", server.url, "--model", "tiny", "--suite", "quick", "--no-save"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "server stopped answering after run 2 of narrative" in err
    assert not (home / "data" / "history.db").exists()
