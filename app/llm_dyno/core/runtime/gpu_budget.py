"""The GPU memory budget across running servers: will a new server fit beside those already on its GPUs?

For each GPU of the new server's plan, the budget puts side by side what each running server on the
same machine holds there (its :class:`~llm_dyno.core.runtime.gpu_hold.GpuHold`: recorded at launch, else
worked out from its profile), what the GPU's live memory says (NVML: used / total, where this machine
has an NVIDIA driver; else "live memory unknown" and the records alone), and what the new server would
take (vLLM's ``--gpu-memory-utilization`` × the whole GPU, or the estimate's figure with
``--kv-cache-memory-bytes``). What is taken is the larger of the records' sum and the live use: a
server still loading may not have allocated yet, and memory that no record explains belongs to some
other program. vLLM itself refuses to start when less than its share is free, so the new share must
fit in what is left. Where the GPU's size is not known at all, the budget adds the fractions (each
server's share of a whole GPU: their sum must not pass 1).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from llm_dyno.core.runtime.gpu_budget_report import GpuBudget, GpuLine, Holder, LiveMemory
from llm_dyno.core.runtime.gpu_hold import GpuHold
from llm_dyno.core.runtime.memory_report import fmt_bytes

if TYPE_CHECKING:
    from llm_dyno.core.runtime.base import LaunchPlan

DEFAULT_GPU_UTIL = 0.9  # vLLM's default --gpu-memory-utilization (as memory_budget.py)

__all__ = ["GpuBudget", "GpuLine", "Holder", "LiveMemory", "budget_for", "hold_of", "nvml_live"]

LiveReader = Callable[[int], "LiveMemory | str"]  # a reading, or why there is none


def nvml_live(index: int) -> LiveMemory | str:
    """GPU ``index`` of this machine through NVML, or why it cannot be read (no driver, no such GPU)."""
    from llm_dyno.core.telemetry.nvml import NvmlUnavailable, nvml

    try:
        reading = nvml().read(index)
    except NvmlUnavailable as exc:
        return exc.reason
    except Exception as exc:  # an NVML error for this index (NVMLError_InvalidArgument, ...)
        return f"GPU {index}: {type(exc).__name__}: {exc}"
    if reading.mem_used_bytes is None or reading.mem_total_bytes is None:
        return f"GPU {index}: NVML gives no memory figures"
    return LiveMemory(reading.mem_used_bytes, reading.mem_total_bytes, reading.name or "", "NVML")


def hold_of(plan: LaunchPlan) -> GpuHold | None:
    """What the plan's server takes on each of its GPUs; None when it uses none (or runs on the CPU)."""
    from llm_dyno.core.runtime.gpu_source import plan_gpus
    from llm_dyno.core.runtime.memory import is_cpu_profile
    from llm_dyno.core.runtime.memory_budget import kv_memory_flag

    gpus = plan_gpus(plan)
    if not gpus or is_cpu_profile(plan.profile):
        return None
    asked = plan.engine.gpu_memory_utilization
    fraction = asked or DEFAULT_GPU_UTIL
    flag = "--gpu-memory-utilization" + ("" if asked else " default")
    memory = plan.memory
    total = memory.gpu_total_bytes if memory is not None else None
    if memory is None or total is None:
        return GpuHold(gpus, fraction, None, f"{fraction:g} of each GPU ({flag})")
    if kv_memory_flag(plan.profile) is not None and memory.parts:
        # vLLM skips its profiling and holds what it is told: weights, reserves and that KV cache
        held = sum(p.bytes or 0 for p in memory.parts)
        return GpuHold(gpus, min(1.0, held / total), held, "the estimate's parts (--kv-cache-memory-bytes)")
    return GpuHold(
        gpus,
        fraction,
        int(total * fraction),
        f"{fraction:g} ({flag}) × {fmt_bytes(total)} ({memory.gpu_name})",
    )


def budget_for(
    plan: LaunchPlan,
    running: Sequence[tuple[str, str, LaunchPlan]],
    live: LiveReader | None,
    live_reason: str = "",
) -> GpuBudget | None:
    """The budget of ``plan``'s GPUs beside ``running`` (profile name, state, plan of each server live on
    the same machine); ``live`` reads a GPU's memory now (None: not readable, ``live_reason`` says why).
    None when the plan uses no GPU."""
    hold = plan.hold if plan.hold is not None else hold_of(plan)
    if hold is None:
        return None
    lines: list[GpuLine] = []
    for gpu in hold.gpus:
        reading = live(gpu) if live is not None else live_reason or "no GPU reader"
        reading_ok = reading if isinstance(reading, LiveMemory) else None
        memory = plan.memory
        if reading_ok is not None:
            total: int | None = reading_ok.total_bytes
            total_source = f"{reading_ok.source}{', ' + reading_ok.name if reading_ok.name else ''}"
        elif memory is not None and memory.gpu_total_bytes is not None:
            total, total_source = memory.gpu_total_bytes, memory.gpu_total_source or "the estimate"
        else:
            total, total_source = None, ""
        holders = []
        for name, state, other in running:
            other_hold = other.hold if other.hold is not None else hold_of(other)
            if other_hold is None or gpu not in other_hold.gpus:
                continue
            src = other_hold.source + (" (recorded at launch)" if other.hold is not None else "")
            holders.append(Holder(name, state, other_hold.fraction, other_hold.bytes_per_gpu, src))
        this_bytes = hold.bytes_per_gpu
        if total is not None and this_bytes is None:
            this_bytes = int(total * hold.fraction)
        note = "" if reading_ok is not None else str(reading)
        lines.append(
            GpuLine(gpu, total, total_source, reading_ok, note, tuple(holders), hold.fraction, this_bytes)
        )
    return GpuBudget(plan.profile.name, tuple(lines))
