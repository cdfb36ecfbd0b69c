"""The physical decode ceiling attached to a benchmark result, and the share of it each prompt reached.

The ceiling itself is :mod:`llm_dyno.core.bench.roofline`'s: memory bandwidth / bytes read per
pass × tokens per pass, the tokens per pass being the prompt's mean acceptance length from /metrics
deltas, else the server log's SpecDecoding lines, else 1 (assumed, and said so, when the profile
speculates). Here it is stored in the result's context as a :class:`StoredCeiling` (an optional key,
so old JSON still reads and old readers ignore it)::

    "roofline": {"weights_bytes": …, "bandwidth_bytes_s": …, "bandwidth_source": "RTX 3090 datasheet",
                 "prompts": {"narrative": {"mean_acceptance_length": 3.55, "tokens_source": "/metrics …",
                                           "tokens_assumed": false, "ceiling_tps": 183.4,
                                           "achieved_tps": 62.0, "share": 0.338, "problem": null,
                                           "engine_bytes_per_token": null}, …}}

A share above 1 is stored as it is, with ``problem`` saying which input is wrong; readers show that
instead of the share.

The achieved figure is the prompt's mean measured decode TPS (tokens after the first / time after it):
the closest a single-stream benchmark gets to the per-pass speed the ceiling bounds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from llm_dyno.core.bench.result import BenchResult, PromptResult
from llm_dyno.core.bench.roofline import (
    PassTokens,
    Roofline,
    bandwidth_for,
    decode_ceiling,
    separate_draft_bytes,
    tokens_per_pass,
    weights_bytes_from_log,
)
from llm_dyno.core.bench.run_context import PromptCeiling, StoredCeiling
from llm_dyno.core.profiles.model import Profile, Runtime
from llm_dyno.core.telemetry.nvml import GpuReading, nvml

_LOG_TAIL_BYTES = 4_000_000


def missing_inputs(weights_bytes: float | None, bandwidth: tuple[float, str] | None) -> str | None:
    """What keeps the ceiling from being computed, in words (None when both inputs are known)."""
    missing = []
    if weights_bytes is None:
        missing.append("the model size (no 'Model loading took … GiB' line in the server's log)")
    if bandwidth is None:
        missing.append("the GPU's memory bandwidth (no NVIDIA GPU reading and no known GPU name)")
    return "unknown: " + "; ".join(missing) if missing else None


def prompt_tokens_per_pass(
    prompt: PromptResult, lines: Sequence[str] = (), speculative_tokens: int | None = None
) -> PassTokens:
    """Tokens per pass for one prompt: its runs' /metrics acceptance, else the log's, else 1."""
    acc = prompt.acceptance
    return tokens_per_pass(
        acc.mean_length if acc is not None else None,
        lines,
        measured_source="/metrics deltas over the measured runs",
        speculative_tokens=speculative_tokens,
    )


def prompt_roofline(
    prompt: PromptResult,
    weights_bytes: float,
    bandwidth_bytes_s: float,
    bandwidth_source: str = "given",
    tokens: PassTokens | None = None,
    draft_bytes_per_pass: float = 0.0,
) -> Roofline:
    """The ceiling for one prompt and its mean decode TPS against it (``tokens``: its tokens per pass)."""
    tokens = tokens or prompt_tokens_per_pass(prompt)
    decode = prompt.summary("decode_tps")
    return decode_ceiling(
        weights_bytes=weights_bytes,
        bandwidth_bytes_s=bandwidth_bytes_s,
        mean_acceptance_length=tokens.value,
        achieved_tps=decode.mean if decode is not None else None,
        bandwidth_source=bandwidth_source,
        tokens_source=tokens.source,
        tokens_assumed=tokens.assumed,
        draft_bytes_per_pass=draft_bytes_per_pass,
        engine_bytes_per_token=prompt.engine_bytes_per_token(),
    )


def attach_roofline(
    result: BenchResult,
    lines: Iterable[str],
    *,
    gpu_name: str | None = None,
    readings: Sequence[GpuReading] = (),
    speculative_tokens: int | None = None,
    draft_bytes_per_pass: float = 0.0,
) -> BenchResult:
    """The result with its ceiling per prompt in ``context.roofline`` (a new, frozen result).

    ``lines`` are the server's log lines (the weights; SpecDecoding lines when /metrics had no
    acceptance), ``gpu_name`` defaults to the context's GPU, ``speculative_tokens`` is the profile's k
    (0: no speculative decoding; None: unknown). The result comes back as it was when the weights or
    the bandwidth are unknown.
    """
    lines = list(lines)
    weights = weights_bytes_from_log(lines)
    bandwidth = bandwidth_for(gpu_name or result.context.gpu, readings)
    if weights is None or bandwidth is None:
        return result
    prompts: dict[str, PromptCeiling] = {}
    for prompt in result.prompts:
        tokens = prompt_tokens_per_pass(prompt, lines, speculative_tokens)
        r = prompt_roofline(prompt, weights, bandwidth[0], bandwidth[1], tokens, draft_bytes_per_pass)
        prompts[prompt.name] = PromptCeiling(
            mean_acceptance_length=r.mean_acceptance_length,
            tokens_source=r.tokens_source,
            tokens_assumed=r.tokens_assumed,
            ceiling_tps=r.ceiling_tps,
            achieved_tps=r.achieved_tps,
            share=r.achieved_share,
            problem=r.problem,
            engine_bytes_per_token=r.engine_bytes_per_token,
            engine_ceiling_tps=r.engine_ceiling_tps,
        )
    stored = StoredCeiling(
        weights_bytes=weights,
        draft_bytes_per_pass=draft_bytes_per_pass,
        bandwidth_bytes_s=bandwidth[0],
        bandwidth_source=bandwidth[1],
        prompts=prompts,
    )
    return result.with_context(roofline=stored)


def result_rooflines(result: BenchResult) -> dict[str, Roofline]:
    """Per-prompt ceilings recomputed from a result's stored inputs (empty when none: old JSON)."""
    stored = result.context.roofline
    if stored is None:
        return {}
    out: dict[str, Roofline] = {}
    for p in result.prompts:
        tokens = prompt_tokens_per_pass(p)
        kept = stored.prompts.get(p.name)
        # tokens per pass that came from the log (or were assumed) are not in the runs: take the stored
        if kept is not None and kept.tokens_source and tokens.source.startswith("assumed"):
            tokens = PassTokens(kept.mean_acceptance_length, kept.tokens_source, kept.tokens_assumed)
        out[p.name] = prompt_roofline(
            p, stored.weights_bytes, stored.bandwidth_bytes_s, stored.bandwidth_source, tokens,
            stored.draft_bytes_per_pass,
        )  # fmt: skip
    return out


def roofline_summary(result: BenchResult) -> str:
    """One line for humans: ``narrative 62.0 of 183 tok/s ceiling (34 %) · …``, or why it is unknown."""
    rooflines = result_rooflines(result)
    if not rooflines:
        return "Roofline: n/a (model size from the server log or GPU bandwidth unknown)"
    parts = []
    for name, r in rooflines.items():
        share = r.plausible_share
        achieved = f"{r.achieved_tps:.1f}" if r.achieved_tps is not None else "—"
        pct = f" ({share:.0%})" if share is not None else ""
        text = (
            f"{name} {achieved} of {r.ceiling_tps:.0f} tok/s{pct}, {r.mean_acceptance_length:.2f} tokens/pass"
        )
        if r.tokens_assumed:
            text += " (assumed)"
        if r.engine_ceiling_tps is not None:
            text += f"; vLLM's estimate {r.engine_ceiling_tps:.0f} tok/s"
        if r.problem is not None:
            text += f" [{r.problem}]"
        parts.append(text)
    first = next(iter(rooflines.values()))
    return (
        "Roofline (decode TPS of ceiling): "
        + " · ".join(parts)
        + f" — {first.bandwidth_bytes_s / 1e9:.0f} GB/s ({first.bandwidth_source}), "
        f"{first.weights_bytes / 1024**3:.2f} GiB read per pass"
    )


def local_gpu(index: int = 0) -> GpuReading | None:
    """One NVML reading of a local GPU, or None where NVML is unavailable."""
    lib = nvml()
    if lib.available() is not None:
        return None
    try:
        return lib.read(index)
    except Exception:  # any NVML trouble only means "no bandwidth reading"
        return None


def latest_log_lines(profile: Profile) -> list[str]:
    """The latest log of a process-runtime profile's server (its tail), or [] when there is none."""
    if profile.runtime is not Runtime.PROCESS:
        return []
    from llm_dyno.core.runtime.logfiles import latest_log

    path = latest_log(profile.name)
    if path is None:
        return []
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - _LOG_TAIL_BYTES))
            data = fh.read()
    except OSError:
        return []
    return data.decode(errors="replace").replace("\r", "\n").splitlines()


def attach_roofline_for(result: BenchResult, profile: Profile | None) -> BenchResult:
    """The result with its ceiling, from the profile's latest server log and the local GPU (as it was
    when they cannot tell)."""
    if profile is None:
        return result
    reading = local_gpu()
    readings = (reading,) if reading is not None else ()
    gpu_name = result.context.gpu or (reading.name if reading is not None else None)
    engine = profile.engine()
    k = (engine.num_speculative_tokens or None) if engine.speculative_config else 0
    return attach_roofline(
        result, latest_log_lines(profile), gpu_name=gpu_name, readings=readings, speculative_tokens=k,
        draft_bytes_per_pass=separate_draft_bytes(engine.speculative_config),
    )  # fmt: skip
