"""Log-line parsing on recorded real vLLM output (tests/fixtures/logs; each file names its source)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_dyno.core.runtime.base import FailureDetails, FailureKind, ServerState
from llm_dyno.core.runtime.lines import LineSplitter
from llm_dyno.core.runtime.logformats import (
    EventKind,
    PhaseTracker,
    classify_failure,
    line_level,
    parse_event,
    parse_events,
    strip_prefix,
)

LOGS = Path(__file__).parents[2] / "fixtures" / "logs"


def load(name: str) -> list[str]:
    """A fixture's lines as a LineSplitter yields them, without the '# ' note at the top."""
    splitter = LineSplitter()
    lines = splitter.feed((LOGS / name).read_bytes()) + splitter.flush()
    while lines and lines[0].startswith("# "):
        lines.pop(0)
    return lines


def blocks(name: str) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    for line in (LOGS / name).read_text().splitlines():
        if line.startswith("# ---- "):
            out.append((line.removeprefix("# ---- "), []))
        elif out and line and not line.startswith("# "):
            out[-1][1].append(line)
    return out


# ---- levels and prefixes ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("line", "level", "message"),
    [
        (
            "(EngineCore pid=167) INFO 05-03 18:41:34 [kv_cache_utils.py:1711] "
            "GPU KV cache size: 1,581,104 tokens",
            "INFO",
            "GPU KV cache size: 1,581,104 tokens",
        ),
        (
            "(EngineCore_DP0 pid=268) ERROR 10-21 00:35:03 [core.py:708] ValueError: To serve",
            "ERROR",
            "ValueError: To serve",
        ),
        (
            "(APIServer pid=1) INFO:     Application startup complete.",
            "INFO",
            "Application startup complete.",
        ),
        ("INFO:     Started server process [6188]", "INFO", "Started server process [6188]"),
        (
            "(APIServer pid=6188) WARNING 11-30 04:22:12 [cpu.py:224] Triton is not installed.",
            "WARNING",
            "Triton is not installed.",
        ),
        (
            "W1130 04:21:59.774000 6188 torch/_library/triton.py:53] Triton not available",
            "WARNING",
            "Triton not available",
        ),
        ("(Worker pid=6770) DEBUG 11-30 04:22:33 [x.py:1] detail", "DEBUG", "detail"),
        (
            "ValueError: No available memory for the cache blocks.",
            None,
            "ValueError: No available memory for the cache blocks.",
        ),
        (
            "Loading safetensors checkpoint shards:  33% Completed | 1/3",
            None,
            "Loading safetensors checkpoint shards:  33% Completed | 1/3",
        ),
    ],
)
def test_level_and_message(line: str, level: str | None, message: str) -> None:
    assert line_level(line) == level
    assert strip_prefix(line) == message.strip()


def test_every_line_of_a_real_cpu_start_has_a_level_or_is_known_unprefixed() -> None:
    lines = load("vllm_cpu_startup_ready_sigterm.log")
    levels = {line_level(line) for line in lines}
    assert {"INFO", "WARNING"} <= levels
    assert line_level(next(x for x in lines if "Application startup complete" in x)) == "INFO"


# ---- events ----------------------------------------------------------------------------------------
def test_events_from_a_real_gpu_start_with_mtp() -> None:
    events = [ev for line in load("ref_gpu_startup_mtp.log") for ev in parse_events(line)]
    by_kind: dict[EventKind, list[dict[str, float | str]]] = {}
    for ev in events:
        by_kind.setdefault(ev.kind, []).append(ev.values)
    assert by_kind[EventKind.WEIGHTS_PROGRESS][0] == {"fraction": 0.0, "done": 0, "total": 3}
    assert by_kind[EventKind.WEIGHTS_PROGRESS][-1]["fraction"] == 1.0
    assert [v["seconds"] for v in by_kind[EventKind.WEIGHTS_LOADED]] == [126.70, 15.12]
    assert by_kind[EventKind.MODEL_LOADED] == [{"gib": 23.43, "unit": "GiB", "seconds": 145.657922}]
    assert by_kind[EventKind.COMPILE_FINISHED][0]["seconds"] == 63.26
    assert by_kind[EventKind.KV_CACHE_SIZE] == [{"tokens": 1581104}]
    assert by_kind[EventKind.MAX_CONCURRENCY] == [{"tokens": 262144, "factor": 21.86}]
    assert by_kind[EventKind.GRAPHS_PROGRESS][0]["fraction"] == 1.0
    assert by_kind[EventKind.GRAPHS_CAPTURED] == [{"seconds": 1, "gib": 0.05}]
    assert by_kind[EventKind.CUDAGRAPH_DOWNGRADE][0]["mode"] == "PIECEWISE"
    assert by_kind[EventKind.SERVER_STARTING] == [{"url": "http://0.0.0.0:8000"}]
    assert EventKind.STARTUP_COMPLETE in by_kind


@pytest.mark.parametrize(
    ("message", "gib", "unit"),
    [
        ("Model loading took 14.9595 GiB and 10.221330 seconds", 14.9595, "GiB"),
        ("Model loading took 23.43 GiB memory and 145.657922 seconds", 23.43, "GiB"),
        ("Loading model weights took 14.9595 GB", 14.9595, "GB"),
    ],
)
def test_model_loading_variants_keep_the_unit(message: str, gib: float, unit: str) -> None:
    ev = parse_event(f"(EngineCore_DP0 pid=9) INFO 01-01 00:00:00 [gpu_model_runner.py:1] {message}")
    assert ev is not None and ev.kind is EventKind.MODEL_LOADED
    assert ev.values["gib"] == gib and ev.values["unit"] == unit


def test_older_spellings() -> None:
    assert parse_event("torch.compile takes 12.5 s in total").values == {"seconds": 12.5}  # type: ignore[union-attr]
    ev = parse_event(
        "(APIServer pid=1) INFO 01-01 00:00:00 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000"
    )
    assert ev is not None and ev.values["url"] == "http://0.0.0.0:8000"


def test_cudagraph_downgrade_variants_are_events() -> None:
    lines = load("ref_cudagraph_downgrade.log")
    modes = [
        ev.values["mode"]
        for line in lines
        if (ev := parse_event(line)) and ev.kind is EventKind.CUDAGRAPH_DOWNGRADE
    ]
    assert modes == ["PIECEWISE", "NONE"]
    assert classify_failure(lines).kind is FailureKind.EXITED  # a warning, never a failure


def test_cpu_kv_cache_size_and_concurrency_on_one_line() -> None:
    line = next(x for x in load("vllm_cpu_startup_ready_sigterm.log") if "KV cache size" in x)
    kinds = {ev.kind: ev.values for ev in parse_events(line)}
    assert kinds[EventKind.KV_CACHE_SIZE] == {"tokens": 1048576}
    assert kinds[EventKind.MAX_CONCURRENCY] == {"tokens": 2048, "factor": 512.0}


# ---- phase tracking --------------------------------------------------------------------------------
def _track(lines: list[str]) -> tuple[PhaseTracker, list[ServerState]]:
    tracker = PhaseTracker()
    states: list[ServerState] = []
    for line in lines:
        update = tracker.feed(line)
        if update is not None and (not states or states[-1] is not update.state):
            states.append(update.state)
    return tracker, states


def test_phases_of_a_real_gpu_start_move_forward_only() -> None:
    tracker, states = _track(load("ref_gpu_startup_mtp.log"))
    assert states == [ServerState.LOADING_WEIGHTS, ServerState.COMPILING, ServerState.CAPTURING_GRAPHS]
    assert tracker.model_gib == 23.43
    assert tracker.kv_cache_tokens == 1581104
    assert tracker.startup_complete and tracker.server_url == "http://0.0.0.0:8000"
    assert len(tracker.warnings) == 1


def test_phases_of_a_real_cpu_start() -> None:
    tracker, states = _track(load("vllm_cpu_startup_ready_sigterm.log"))
    assert states == [ServerState.LOADING_WEIGHTS]  # --enforce-eager: no compile, no graphs
    assert tracker.kv_cache_tokens == 1048576
    assert tracker.startup_complete


def test_weights_progress_detail_and_fraction() -> None:
    tracker = PhaseTracker()
    update = tracker.feed(
        "Loading safetensors checkpoint shards:  33% Completed | 1/3 [01:58<03:57, 118.69s/it]"
    )
    assert update is not None
    assert update.state is ServerState.LOADING_WEIGHTS
    assert update.progress == pytest.approx(1 / 3)
    assert "1/3" in update.detail
    assert (
        tracker.feed("Loading safetensors checkpoint shards:  33% Completed | 1/3 [01:58<03:57, 118.69s/it]")
        is None
    )


# ---- failures --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("kind", "lines"), blocks("ref_failure_lines.log"))
def test_reference_failure_lines(kind: str, lines: list[str]) -> None:
    reason = classify_failure(lines, exit_code=1)
    assert reason.kind.value == kind
    assert reason.summary and reason.hint and reason.excerpt
    assert reason.exit_code == 1


def test_kv_too_small_reads_the_estimate() -> None:
    reason = classify_failure(blocks("ref_failure_lines.log")[0][1])
    assert reason.details == FailureDetails(max_model_len=262144, estimated_max_model_len=87840)
    assert "87840" in reason.hint


def test_gpu_busy_reads_the_numbers() -> None:
    reason = classify_failure(blocks("ref_failure_lines.log")[2][1])
    assert reason.details == FailureDetails(
        free_gib=4.04, total_gib=119.63, wanted_gib=17.94, gpu_memory_utilization=0.15
    )


def test_real_cpu_unrecognized_argument() -> None:
    reason = classify_failure(load("vllm_cpu_unrecognized_argument.log"), 2)
    assert reason.kind is FailureKind.UNRECOGNIZED_ARGUMENTS
    assert reason.details.arguments == ("--no-such-flag",)
    assert reason.excerpt == ("vllm: error: unrecognized arguments: --no-such-flag",)


def test_entrypoint_misuse_hint() -> None:
    reason = classify_failure(["vllm: error: unrecognized arguments: serve"])
    assert "entrypoint" in reason.hint


def test_real_cpu_kv_cache_too_small_found_far_above_the_last_line() -> None:
    lines = load("vllm_cpu_kv_cache_too_small.log")
    assert "Engine core initialization failed" in "".join(lines[-5:])
    reason = classify_failure(lines[-250:], 1)
    assert reason.kind is FailureKind.KV_CACHE_TOO_SMALL
    assert reason.details == FailureDetails(max_model_len=2000000, estimated_max_model_len=1048448)


def test_real_cpu_max_model_len_beyond_the_model() -> None:
    reason = classify_failure(load("vllm_cpu_max_model_len_beyond_model.log"), 1)
    assert reason.kind is FailureKind.MODEL_LEN_EXCEEDS_MODEL
    assert reason.details == FailureDetails(max_model_len=1000000)
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN" in reason.hint


def test_real_cpu_port_in_use() -> None:
    reason = classify_failure(load("vllm_cpu_port_in_use.log"), 1)
    assert reason.kind is FailureKind.PORT_IN_USE
    assert reason.excerpt == ("OSError: [Errno 98] Address already in use",)


def test_uvicorn_bind_error_names_the_port() -> None:
    line = (
        "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): "
        "address already in use"
    )
    reason = classify_failure([line])
    assert reason.kind is FailureKind.PORT_IN_USE and reason.details == FailureDetails(port=8000)


def test_engine_init_failed_finds_the_root_cause_above() -> None:
    # The real KV-too-small run with its known cause reworded, so that only the generic rule applies.
    lines = [
        x.replace("To serve at least one request", "Something new")
        for x in load("vllm_cpu_kv_cache_too_small.log")
    ]
    lines = [x.replace("max seq len", "sequence length") for x in lines]
    reason = classify_failure(lines, 1)
    assert reason.kind is FailureKind.ENGINE_INIT_FAILED
    assert str(reason.details.root_cause).startswith("ValueError: Something new")
    assert "Engine core initialization failed" in reason.excerpt[-1]


def test_clean_exit_without_a_cause() -> None:
    reason = classify_failure(load("vllm_cpu_startup_ready_sigterm.log"), 0)
    assert reason.kind is FailureKind.EXITED and reason.exit_code == 0
