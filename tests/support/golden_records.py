"""Records as the app stores or sends them, for the golden files of tests/fixtures/golden (see its README).

Each builder starts from a real recording (tests/fixtures/bench, tests/fixtures/nvml) and adds the parts
the recording lacks, so that every optional key of the stored form is written at least once. ``write``
(``python -m tests.support.golden_records``) writes the golden files with the code of the working tree:
run it only when a stored format is meant to change, and say so in the commit.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

from llm_dyno.core.bench.result import IMPOSSIBLE, STOPPED_EARLY, BenchResult
from llm_dyno.core.bench.run_context import PromptCeiling, StoredCeiling
from llm_dyno.core.bench.run_readings import EnergyStats, ThermalState
from llm_dyno.core.bench.stats import compare_samples
from llm_dyno.core.runtime.memory_report import MemoryEstimate, MemoryPart
from llm_dyno.core.telemetry.nvml import reading_from_dict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GOLDEN = FIXTURES / "golden"


def _gpu_lines(name: str = "gpu_sampler.jsonl") -> list[dict[str, object]]:
    lines = (FIXTURES / "nvml" / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def every_part_result() -> BenchResult:
    """The real per-request recording with every optional part: GPUs read before and under load, two
    rounds, a stored ceiling, a key a newer version wrote, energy and a thermal state, a run that
    stopped early and one whose figures cannot be true."""
    recorded = json.loads((FIXTURES / "bench" / "per_request_result.json").read_text(encoding="utf-8"))
    result = BenchResult.from_dict(recorded)
    lines = _gpu_lines()
    before = reading_from_dict(lines[0]["readings"][0])  # type: ignore[index]
    under = reading_from_dict(lines[len(lines) // 2]["readings"][0])  # type: ignore[index]
    ceiling = StoredCeiling(
        weights_bytes=2.0e9,
        bandwidth_bytes_s=4.8e12,
        bandwidth_source="NVML memory clock × bus width",
        draft_bytes_per_pass=1.5e8,
        prompts={
            "narrative": PromptCeiling(
                mean_acceptance_length=1.59,
                tokens_source="measured",
                ceiling_tps=3800.0,
                achieved_tps=99.9,
                share=0.026,
                engine_bytes_per_token=2.1e9,
                engine_ceiling_tps=2280.0,
            ),
            "code": PromptCeiling(
                mean_acceptance_length=2.0, tokens_assumed=True, problem="no bandwidth for this GPU"
            ),
        },
    )
    result = result.with_context(
        gpus="GPU 0",
        gpu_read_from="this machine (NVML)",
        gpu_before=(before,),
        gpu_under_load=(under,),
        rounds=2,
        roofline=ceiling,
        extra={"written_by_newer": {"kept": [1, 2]}},
    )
    energy = EnergyStats(
        energy_j=1500.25, tokens_per_j=0.66, mean_power_w=150.0, peak_power_w=310.5, max_temperature_c=61.0,
        throttle_reasons=("SwPowerCap",), samples=42, sampled_mean_power_w=148.2,
        mean_power_source="energy counter", peak_power_source="instantaneous", span_s=10.0,
    )  # fmt: skip
    thermal = ThermalState(stable=True, settled_c=54.0, waited_s=12.0, start_c=55.0, note="")
    prompts = []
    for p in result.prompts:
        runs = list(p.runs)
        runs[0] = dataclasses.replace(runs[0], energy=energy, thermal=thermal)
        if p.name == "narrative":
            runs.append(
                dataclasses.replace(
                    runs[0], index=len(runs) + 1, warnings=(f"{IMPOSSIBLE}: 1000 tokens in 0.001 s",)
                )
            )
        else:
            runs.append(
                dataclasses.replace(
                    runs[0], index=len(runs) + 1, warnings=(f"{STOPPED_EARLY} (finish_reason stop)",)
                )
            )
        prompts.append(dataclasses.replace(p, runs=tuple(runs)))
    return dataclasses.replace(result, prompts=tuple(prompts))


def gpu_readings_json() -> str:
    """``power show --json``'s list: the recorded readings read back and written again (one of them
    from a driver without the instantaneous power field)."""
    instant = _gpu_lines("power_on_gpu/gpu_sampler_instant.jsonl")[0]["readings"][0]  # type: ignore[index]
    older = _gpu_lines()[0]["readings"][0]  # type: ignore[index]
    return json.dumps([reading_from_dict(r).to_dict() for r in (instant, older)], indent=2)


def memory_estimate_json() -> str:
    """The ``"memory"`` object of ``plan --json`` for an estimate with every part."""
    estimate = MemoryEstimate(
        device="GPU", model_folder="/models/qwen", weights_bytes=16_000_000_000, kv_bytes_per_token=131072,
        kv_budget_bytes=100_000_000_000, kv_cache_tokens=762939, gpu_name="NVIDIA H200",
        gpu_total_bytes=150_000_000_000, gpu_total_source="NVML", gpu_memory_utilization=0.9,
        usable_bytes=135_000_000_000, max_model_len=32768, max_num_seqs=64, tensor_parallel=2, block_size=16,
        fits=True, parts=(MemoryPart(name="weights", bytes=16_000_000_000, source="safetensors headers"),
                          MemoryPart(name="reserve", bytes=None, source="unknown")),
        sources=(("kv_bytes_per_token", "config.json"),), warnings=("a warning",), notes=("a note",),
    )  # fmt: skip
    return json.dumps(estimate.model_dump(mode="json"), indent=2)


def comparisons_json() -> str:
    """``history compare --json``'s verdicts on two recorded results' wall TPS."""
    result = every_part_result()
    base = result.prompts[0].values("wall_tps")
    cand = [v * 1.1 for v in base]
    rows = [compare_samples("wall_tps", base, cand), compare_samples("ttft_s", [], cand)]
    return json.dumps([c.model_dump(mode="json") for c in rows], indent=2)


def tune_export_json() -> str:
    """A tune's JSON export (the record and its analysis) of the two-trial tune of recorded results."""
    from tests.support.result_files import tune_record

    from llm_dyno.core.tune import export
    from llm_dyno.core.tune.analysis import analyse

    record = tune_record()
    return json.dumps(export.to_dict(record, analyse(record)), indent=1, default=str)


BUILDERS: dict[str, Callable[[], str]] = {
    "bench-every-part.stored.json": lambda: every_part_result().to_json() + "\n",
    "gpu-readings.json": lambda: gpu_readings_json() + "\n",
    "memory-estimate.json": lambda: memory_estimate_json() + "\n",
    "comparisons.json": lambda: comparisons_json() + "\n",
    "tune-export.json": lambda: tune_export_json() + "\n",
}


def write() -> None:
    """Write every golden file with the working tree's code."""
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, build in BUILDERS.items():
        (GOLDEN / name).write_text(build(), encoding="utf-8")


if __name__ == "__main__":
    write()
