"""What a model folder says about memory: its shape (``config.json``) and its weights (safetensors).

Nothing is loaded: ``config.json`` is read as JSON, and each ``*.safetensors`` file only up to the end
of its header (8 bytes of length, then a JSON table of tensors with their dtypes and byte offsets), so
a 60 GB checkpoint costs a few kilobytes of reading. ``model.safetensors.index.json`` gives the total
checkpoint size when it carries ``metadata.total_size``.

The folder is found without side effects (:func:`find_model_folder`): a local path as written (a
process profile), a container path mapped back through the profile's bind mounts (a Docker profile),
or a Hugging Face hub id in a local hub cache (``models--ORG--NAME/snapshots/REV``).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_dyno.core.bounded_read import open_regular, read_bytes_capped
from llm_dyno.core.errors import DynoError
from llm_dyno.core.jsontext import OutsideJSONError, loads_outside
from llm_dyno.core.profiles.model import Profile, Runtime

# Bytes per element of the dtypes config.json and safetensors headers name.
DTYPE_BYTES: dict[str, float] = {
    "float32": 4, "f32": 4, "float": 4,
    "bfloat16": 2, "bf16": 2, "float16": 2, "f16": 2, "half": 2,
    "float8": 1, "fp8": 1, "f8_e4m3": 1, "f8_e5m2": 1, "float8_e4m3fn": 1, "float8_e5m2": 1,
    "int64": 8, "i64": 8, "int32": 4, "i32": 4, "int16": 2, "i16": 2, "int8": 1, "i8": 1,
    "uint8": 1, "u8": 1, "bool": 1, "f64": 8, "float64": 8,
}  # fmt: skip

_MAX_HEADER = 100 * 1024 * 1024  # the safetensors format's own limit on a header
_MAX_CONFIG = 8 * 1024 * 1024
# Bounds no real model comes near; a config beyond them is damaged or hostile, not a model.
_MAX_LAYERS = 10_000
_MAX_WIDTH = 1 << 20  # heads, hidden size, head dim
_MAX_VOCAB = 100_000_000
_MAX_POS = 1 << 31
_MAX_WEIGHTS = 1 << 50  # a petabyte


@dataclass(frozen=True)
class ModelShape:
    """The figures of ``config.json`` that size the KV cache and the weights' precision.

    ``attention_layers`` counts the layers that keep a KV cache (all of them, except in hybrid models
    whose ``layer_types`` / ``full_attention_interval`` mark linear-attention or Mamba layers, whose
    fixed-size state is not per token). ``mla_dim`` is set for multi-head latent attention (DeepSeek):
    one latent vector of ``kv_lora_rank + qk_rope_head_dim`` per token and layer instead of K and V.
    """

    architecture: str
    layers: int
    attention_layers: int
    kv_heads: int
    head_dim: int
    hidden_size: int
    intermediate_size: int
    vocab_size: int
    max_positions: int | None
    dtype: str | None
    quant_method: str | None
    quant_bits: int | None
    mla_dim: int | None = None

    @property
    def hybrid(self) -> bool:
        """Some layers keep no per-token KV cache (linear attention, Mamba)."""
        return self.attention_layers < self.layers


@dataclass(frozen=True)
class WeightsInfo:
    """The checkpoint's size and where the figure comes from; ``dtype_bytes`` by tensor dtype."""

    total_bytes: int
    source: str
    dtype_bytes: tuple[tuple[str, int], ...] = ()
    files: int = 0


def _first(cfg: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        value = cfg.get(key)
        if value is not None:
            return value
    return None


def _text_config(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    """Multimodal configs (Qwen-VL, Llava, Gemma 3) keep the language model's figures in a sub-config."""
    for key in ("text_config", "language_config", "llm_config"):
        sub = cfg.get(key)
        if isinstance(sub, dict) and sub.get("num_hidden_layers"):
            return {**{k: v for k, v in cfg.items() if k != key}, **sub}
    return cfg


def _attention_layers(cfg: Mapping[str, Any], layers: int) -> int:
    types = cfg.get("layer_types")
    if isinstance(types, list) and types:
        return sum(1 for t in types if isinstance(t, str) and "attention" in t and "linear" not in t)
    interval = cfg.get("full_attention_interval")
    if isinstance(interval, int) and interval > 0:
        return layers // interval
    return layers


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is no number a model config can hold")


def _load_json(data: bytes, what: str) -> Any:
    """JSON without NaN / Infinity, its nesting bounded (a deep one is refused, never a crash)."""
    try:
        return loads_outside(data, what, parse_constant=_refuse_constant)
    except OutsideJSONError as exc:
        if exc.kind == "depth":
            raise ValueError(f"{what} is nested too deep to be a model config") from None
        if exc.kind == "utf8":
            raise ValueError(f"{what} is {exc.detail}") from None
        raise ValueError(f"{what} is not JSON: {exc.detail}") from None  # and _refuse_constant's


def _whole(path: Path, field: str, value: Any, maximum: int, *, minimum: int = 1) -> int:
    """``value`` as a whole number in [minimum, maximum]; ValueError naming the file and field."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(
            f"{path}: field '{field}' should be a whole number, got {type(value).__name__} {value!r:.40}"
        )
    if not minimum <= value <= maximum:
        raise ValueError(f"{path}: field '{field}' is {value:,}, outside {minimum:,}..{maximum:,}")
    return value


def _optional(path: Path, cfg: Mapping[str, Any], keys: tuple[str, ...], maximum: int) -> int | None:
    value = _first(cfg, *keys)
    return (
        None
        if value is None
        else _whole(path, next(k for k in keys if cfg.get(k) is not None), value, maximum)
    )


def read_shape(folder: Path) -> ModelShape:
    """The :class:`ModelShape` of ``folder/config.json``; ValueError says what is missing, unreadable
    or impossible (NaN, Infinity, negative or absurd sizes, strings, deep nesting, a FIFO)."""
    path = folder / "config.json"
    try:
        raw = _load_json(read_bytes_capped(path, _MAX_CONFIG, "the model config"), str(path))
    except DynoError as exc:
        raise ValueError(str(exc)) from None
    if not isinstance(raw, dict):
        raise ValueError(f"{path} is not a JSON object")
    cfg = _text_config(raw)
    layers = _first(cfg, "num_hidden_layers", "n_layer", "num_layers")
    heads = _first(cfg, "num_attention_heads", "n_head")
    hidden = _first(cfg, "hidden_size", "n_embd", "d_model")
    if any(x is None for x in (layers, heads, hidden)):
        raise ValueError(f"{path} has no num_hidden_layers / num_attention_heads / hidden_size")
    layers = _whole(path, "num_hidden_layers", layers, _MAX_LAYERS)
    heads = _whole(path, "num_attention_heads", heads, _MAX_WIDTH)
    hidden = _whole(path, "hidden_size", hidden, _MAX_WIDTH)
    kv_heads = _optional(path, cfg, ("num_key_value_heads", "num_kv_heads", "n_head_kv"), _MAX_WIDTH) or heads
    head_dim = _optional(path, cfg, ("head_dim",), _MAX_WIDTH) or max(1, hidden // heads)
    inter = _optional(path, cfg, ("intermediate_size", "moe_intermediate_size"), _MAX_WIDTH * 64)
    vocab = _optional(path, cfg, ("vocab_size",), _MAX_VOCAB)
    positions = _optional(
        path, cfg, ("max_position_embeddings", "n_positions", "max_sequence_length"), _MAX_POS
    )
    mla_rank = _optional(path, cfg, ("kv_lora_rank",), _MAX_WIDTH)
    rope_dim = _optional(path, cfg, ("qk_rope_head_dim",), _MAX_WIDTH) if mla_rank else None
    if isinstance(cfg.get("layer_types"), list) and len(cfg["layer_types"]) > _MAX_LAYERS:
        raise ValueError(f"{path}: field 'layer_types' lists more than {_MAX_LAYERS:,} layers")
    quant = raw.get("quantization_config") or cfg.get("quantization_config")
    method = bits = None
    if isinstance(quant, dict):
        method = str(quant.get("quant_method") or quant.get("quant_algo") or "") or None
        b = _first(quant, "bits", "w_bit", "weight_bits")
        bits = b if isinstance(b, int) and not isinstance(b, bool) and 1 <= b <= 64 else None
        if bits is None and method and "fp8" in method.lower():
            bits = 8
    mla = mla_rank + (rope_dim or 0) if mla_rank else None
    dtype = _first(cfg, "torch_dtype", "dtype")
    archs = raw.get("architectures")
    return ModelShape(
        architecture=str(archs[0]) if isinstance(archs, list) and archs else str(raw.get("model_type", "?")),
        layers=layers,
        attention_layers=_attention_layers(cfg, layers),
        kv_heads=kv_heads,
        head_dim=head_dim,
        hidden_size=hidden,
        intermediate_size=inter or 4 * hidden,
        vocab_size=vocab or 0,
        max_positions=positions,
        dtype=str(dtype) if isinstance(dtype, str) else None,
        quant_method=method,
        quant_bits=bits,
        mla_dim=mla,
    )


def _header(path: Path) -> dict[str, Any]:
    """A safetensors file's header (regular files only: a FIFO named ``*.safetensors`` is refused at
    once, never waited on)."""
    try:
        fd = open_regular(path, "the weights")
    except DynoError as exc:
        raise ValueError(exc.message) from None
    with os.fdopen(fd, "rb") as fh:
        head = fh.read(8)
        if len(head) != 8:
            raise ValueError(f"{path.name} is too short to be a safetensors file")
        (length,) = struct.unpack("<Q", head)
        if length > _MAX_HEADER:
            raise ValueError(f"{path.name}: a header of {length:,} bytes is not safetensors")
        raw = fh.read(length)
        if len(raw) != length:
            raise ValueError(f"{path.name}: the header is cut short ({len(raw):,} of {length:,} bytes)")
    data = _load_json(raw, f"{path.name}: the header")
    if not isinstance(data, dict):
        raise ValueError(f"{path.name}: the header is not a JSON object")
    return data


def _tensor_bytes(path: Path, name: str, entry: Mapping[str, Any]) -> int:
    """A tensor's byte count from its ``data_offsets``: two whole numbers 0 <= begin <= end (at most a
    petabyte), or ValueError. (The data part itself is not checked: sparse test checkpoints lack it.)"""
    offsets = entry.get("data_offsets")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
        or not 0 <= offsets[0] <= offsets[1] <= _MAX_WEIGHTS
    ):
        raise ValueError(
            f"{path.name}: tensor {name[:80]!r} has data_offsets {str(offsets)[:60]}, "
            "not two whole numbers 0 <= begin <= end"
        )
    return int(offsets[1] - offsets[0])


def read_weights(folder: Path) -> WeightsInfo:
    """The checkpoint's bytes: the safetensors headers (by dtype), else the index's ``total_size``."""
    files = sorted(folder.glob("*.safetensors"))
    by_dtype: dict[str, int] = {}
    problem = None
    for path in files:
        try:
            header = _header(path)
            for name, entry in header.items():
                if name == "__metadata__" or not isinstance(entry, dict):
                    continue
                dtype = str(entry.get("dtype", "?")).lower()[:32]
                by_dtype[dtype] = by_dtype.get(dtype, 0) + _tensor_bytes(path, name, entry)
        except (OSError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
            problem = str(exc) if str(exc).startswith(path.name) else f"{path.name}: {exc}"
            break
    if files and problem is None:
        return WeightsInfo(
            sum(by_dtype.values()),
            f"safetensors headers of {len(files)} file(s)",
            tuple(sorted(by_dtype.items(), key=lambda kv: -kv[1])),
            len(files),
        )
    index = folder / "model.safetensors.index.json"
    try:
        total = _load_json(read_bytes_capped(index, _MAX_CONFIG, "the index"), str(index))
        total = total.get("metadata", {}).get("total_size")
    except (DynoError, ValueError, AttributeError):
        total = None
    if isinstance(total, int) and not isinstance(total, bool) and 0 < total <= _MAX_WEIGHTS:
        return WeightsInfo(int(total), "model.safetensors.index.json metadata.total_size")
    raise ValueError(problem or f"no *.safetensors files (nor an index with total_size) in {folder}")


def _hub_caches(profile: Profile, environ: Mapping[str, str]) -> list[Path]:
    roots: list[Path] = []
    if environ.get("HF_HUB_CACHE"):
        roots.append(Path(environ["HF_HUB_CACHE"]))
    if environ.get("HF_HOME"):
        roots.append(Path(environ["HF_HOME"]) / "hub")
    roots.append(Path("~/.cache/huggingface/hub").expanduser())
    if profile.runtime is Runtime.DOCKER and profile.docker is not None:
        for host, container in _binds(profile):
            if container.rstrip("/").endswith("huggingface"):
                roots.append(Path(host) / "hub")
    return roots


def _binds(profile: Profile) -> list[tuple[str, str]]:
    out = []
    for volume in profile.docker.volumes if profile.docker is not None else ():
        parts = volume.split(":")
        if len(parts) >= 2 and parts[0].startswith(("/", "~", ".")):
            out.append((os.path.expanduser(parts[0]), parts[1]))
    return out


def find_model_folder(profile: Profile, environ: Mapping[str, str] | None = None) -> tuple[Path | None, str]:
    """The local folder holding the profile's model, and how it was found (or why none was)."""
    env = os.environ if environ is None else environ
    model = profile.model.strip()
    if profile.runtime is Runtime.DOCKER:
        for host, container in sorted(_binds(profile), key=lambda hc: -len(hc[1])):
            c = container.rstrip("/")
            if model == c or model.startswith(c + "/"):
                folder = Path(host) / model[len(c) :].lstrip("/")
                if (folder / "config.json").is_file():
                    return folder, f"bind mount {host}:{container}"
                return None, f"{model} maps to {folder} (bind mount), which has no config.json here"
    else:
        local = Path(model).expanduser()
        if (local / "config.json").is_file():
            return local, "model path"
        if model.startswith(("/", "~", ".")):
            return None, f"{local} has no config.json"
    if model.count("/") == 1 and not model.startswith(("/", "~", ".")):
        org, name = model.split("/")
        for root in _hub_caches(profile, env):
            snapshots = root / f"models--{org}--{name}" / "snapshots"
            found = [p for p in snapshots.glob("*") if (p / "config.json").is_file()]
            if found:
                newest = max(found, key=lambda p: p.stat().st_mtime)
                return newest, f"Hugging Face cache {root}"
        return None, f"{model} is a hub name and no local copy was found (no download is made to check)"
    return None, f"{model}: no local model folder found"
