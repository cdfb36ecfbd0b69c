"""Inputs checked before they are used: a log or typed figures that contradict the profile.

A log from another setup (other draft count, context, model, or more memory than the GPU has) would
make every other finding wrong without a word, so each contradiction is listed in one finding that
ranks first (:data:`INPUTS_RULE`). Log formats are read through ``runtime.logformats`` (boot facts and
start-up events) and ``bench.spec_log`` (SpecDecoding lines), where they live.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from llm_dyno.core.bench.roofline import GIB, speculative_tokens_from_log
from llm_dyno.core.bench.spec_log import log_acceptance
from llm_dyno.core.diagnose.diagnosis_input import DiagnosisInput
from llm_dyno.core.diagnose.evidence import Evidence, Finding, Impact, LogEvidence, MetricEvidence, Severity
from llm_dyno.core.diagnose.fingerprint import WEIGHTS
from llm_dyno.core.diagnose.registry import THIS_RULE, rule
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.gpu_memory import datasheet_memory
from llm_dyno.core.runtime.logformats import BootFactKind, parse_boot_facts
from llm_dyno.core.runtime.logformats.phases import EventKind, parse_events
from llm_dyno.core.runtime.model_files import find_model_folder, read_weights

INPUTS_RULE = "log-not-from-this-profile"
# memory a log may claim beyond the GPU's total before it cannot be this GPU's (rounding, GiB vs GB)
_MEMORY_SLACK = 1.05
# loaded weights against the checkpoint's size: quantized weights load as stored; a multimodal checkpoint
# served --language-model-only skips its vision tower (the founding post: ~18 GiB on disk, 16.87 in VRAM)
WEIGHTS_TOLERANCE = 0.25


@dataclass(frozen=True)
class Contradiction:
    """One way an input contradicts the profile or the GPU: what, and the line that says so."""

    what: str
    evidence: Evidence


def _log_facts(inp: DiagnosisInput) -> dict[str, tuple[str | float, int]]:
    """The first model / max length and the last weights / KV memory the log states, with line numbers."""
    found: dict[str, tuple[str | float, int]] = {}
    for no, line in inp.log.numbered():
        if "=" in line and "config" in line:
            for fact in parse_boot_facts(line):
                if fact.kind is BootFactKind.MODEL:
                    found.setdefault("model", (str(fact.values["model"]), no))
                    if "served" in fact.values:
                        found.setdefault("served", (str(fact.values["served"]), no))
                elif fact.kind is BootFactKind.MAX_MODEL_LEN:
                    found.setdefault("max_model_len", (float(fact.values["tokens"]), no))
        if "GiB" not in line and "GB" not in line:
            continue
        for ev in parse_events(line):
            if ev.kind is EventKind.MODEL_LOADED and "gib" in ev.values:
                found["weights_gib"] = (float(ev.values["gib"]), no)
            elif ev.kind is EventKind.KV_CACHE_MEMORY:
                found["kv_gib"] = (float(ev.values["gib"]), no)
    return found


def _gpu_memory(inp: DiagnosisInput) -> tuple[float, str] | None:
    """The GPU's memory in GiB and what says so: the environment, a reading, else the datasheet of the
    GPU named by the environment, the readings, a pasted post or the reference (its claim is "the same GPU
    model")."""
    if inp.environment.gpu_mem_total_bytes:
        return inp.environment.gpu_mem_total_bytes / GIB, "the GPU's memory"
    for r in (*inp.gpu_under_load, *inp.gpu_before):
        if r.mem_total_bytes:
            return r.mem_total_bytes / GIB, f"{r.name or 'the GPU'} (NVML)"
    post_gpu = inp.post.gpu.value if inp.post is not None and inp.post.gpu is not None else None
    name = inp.gpu_name() or post_gpu or (inp.reference.hardware.gpu if inp.reference is not None else None)
    sheet = datasheet_memory(name) if name else None
    return (sheet.total_bytes / GIB, sheet.name) if sheet is not None else None


def _same_model(logged: str, names: set[str]) -> bool:
    tail = logged.rstrip("/").rsplit("/", 1)[-1].lower()
    return any(logged == n or tail == n.rstrip("/").rsplit("/", 1)[-1].lower() for n in names if n)


def contradictions(inp: DiagnosisInput) -> list[Contradiction]:
    """Every way the log or the typed acceptance contradicts the profile or the GPU (empty: consistent)."""
    p = inp.profile
    out: list[Contradiction] = []
    k = inp.speculative_tokens()
    typed = inp.measured.acceptance_per_position if inp.measured is not None else ()
    if k and typed and len(typed) != k:
        out.append(Contradiction(
            f"{len(typed)} acceptance rates typed, the profile drafts {k} tokens per step",
            MetricEvidence("acceptance positions", len(typed), reference=k, source="typed vs profile"),
        ))  # fmt: skip
    if not inp.log.lines:
        return out
    acc = log_acceptance(inp.log.lines)
    if k and acc is not None and acc.per_position and len(acc.per_position) != k:
        line = next(((n, t) for n, t in inp.log.numbered() if "SpecDecoding metrics" in t), None)
        ev: Evidence = (
            LogEvidence(line[1], line[0]) if line else MetricEvidence("positions", len(acc.per_position))
        )
        out.append(Contradiction(
            f"the log's SpecDecoding lines have {len(acc.per_position)} draft positions, the profile "
            f"drafts {k}", ev,
        ))  # fmt: skip
    elif k is not None and acc is None:
        logged_k = speculative_tokens_from_log(inp.log.lines)
        if logged_k is not None and logged_k != k:
            out.append(Contradiction(
                f"the log's engine drafts {logged_k} tokens per step, the profile {k}",
                MetricEvidence("num_speculative_tokens", logged_k, reference=k, source="log vs profile"),
            ))  # fmt: skip
    facts = _log_facts(inp)
    engine = p.engine() if p is not None else None
    if engine is not None and engine.max_model_len and "max_model_len" in facts:
        tokens, no = facts["max_model_len"]
        if int(float(tokens)) != engine.max_model_len:
            out.append(Contradiction(
                f"its context is {int(float(tokens)):,} tokens, the profile's --max-model-len "
                f"{engine.max_model_len:,}", inp.log.evidence(no),
            ))  # fmt: skip
    if p is not None and "model" in facts:
        logged, no = facts["model"]
        names = {p.model, p.served_model_name}
        served = str(facts["served"][0]) if "served" in facts else None
        if not _same_model(str(logged), names) and not (served and _same_model(served, names)):
            out.append(Contradiction(
                f"it serves {logged}, the profile serves {p.model}", inp.log.evidence(no)
            ))  # fmt: skip
    other_model = _weights_against_files(inp, facts)
    if other_model is not None:
        out.append(other_model)
    mem = _gpu_memory(inp)
    if mem is not None:
        total, gpu = mem
        kv = facts.get("kv_gib")
        weights = facts.get("weights_gib")
        for key, label in (("kv_gib", "KV cache"), ("weights_gib", "model weights")):
            if key in facts and float(facts[key][0]) > total * _MEMORY_SLACK:
                gib, no = facts[key]
                what = f"{label} {float(gib):g} GiB is more than {gpu} has ({total:.0f} GiB)"
                out.append(Contradiction(what, inp.log.evidence(no)))
        if kv is not None and weights is not None:
            both = float(kv[0]) + float(weights[0])
            if both > total * _MEMORY_SLACK and max(float(kv[0]), float(weights[0])) <= total * _MEMORY_SLACK:
                out.append(Contradiction(
                    f"weights {float(weights[0]):g} GiB + KV cache {float(kv[0]):g} GiB = {both:.1f} GiB, "
                    f"more than {gpu} has ({total:.0f} GiB)", inp.log.evidence(int(kv[1])),
                ))  # fmt: skip
    return out


def _stated_weights(
    inp: DiagnosisInput, facts: dict[str, tuple[str | float, int]]
) -> tuple[float, Evidence] | None:
    """The weights' GiB the input states: the log's "Model loading took", else the post's "Model VRAM"."""
    if "weights_gib" in facts:
        gib, no = facts["weights_gib"]
        return float(gib), inp.log.evidence(int(no))
    stated = inp.post.fingerprint().get(WEIGHTS) if inp.post is not None else None
    found = re.match(r"(\d+(?:\.\d+)?) GiB", stated.value) if stated is not None else None
    if stated is None or found is None:
        return None
    return float(found.group(1)), MetricEvidence("model weights", stated.value, source=stated.where)


def model_files_gib(profile: Profile) -> tuple[float, str] | None:
    """The profile's model files in GiB (the safetensors headers of its local folder) and where they are;
    None when the folder is not on this machine or holds no readable weights."""
    folder, how = find_model_folder(profile)
    if folder is None:
        return None
    try:
        info = read_weights(folder)
    except (OSError, ValueError):
        return None
    return info.total_bytes / GIB, f"{folder} ({info.source}; found by {how})"


def _weights_against_files(
    inp: DiagnosisInput, facts: dict[str, tuple[str | float, int]]
) -> Contradiction | None:
    """Weights loaded that the profile's model files cannot be: quantized weights load as stored, so a
    load far from the checkpoint's size is another model (or another quantization of it)."""
    stated = _stated_weights(inp, facts) if inp.profile is not None else None
    files = model_files_gib(inp.profile) if stated is not None and inp.profile is not None else None
    if stated is None or files is None or files[0] <= 0:
        return None
    gib, evidence = stated
    if abs(gib / files[0] - 1) <= WEIGHTS_TOLERANCE:
        return None
    what = (
        f"its model weights take {gib:g} GiB, the profile's model files {files[0]:.2f} GiB ({files[1]}): "
        f"not this model (a load differs from the checkpoint by at most {WEIGHTS_TOLERANCE:.0%})"
    )
    return Contradiction(what, evidence)


@rule(INPUTS_RULE, "launch log, typed acceptance, profile, GPU memory, model files")
def log_not_from_this_profile(inp: DiagnosisInput) -> list[Finding]:
    """A log (or typed figures) that contradicts the profile or the GPU: listed before anything else,
    since every other finding would read it as this profile's."""
    found = contradictions(inp)
    if not found:
        return []
    source = inp.log.source or "the log"
    gpu = _gpu_memory(inp)
    where = f"this profile ({inp.profile.name})" if inp.profile is not None else "this profile"
    on = f" on {gpu[1]}" if gpu is not None else ""
    return [
        Finding(
            THIS_RULE,
            f"{'This log is' if inp.log.lines else 'The typed figures are'} not from {where}{on}: "
            + "; ".join(c.what for c in found),
            Severity.HIGH,
            Impact(basis="the findings below read this input as the profile's; they hold only if it is"),
            tuple(dict.fromkeys(c.evidence for c in found)),  # one line may say two things
            f"Check that {source} and the typed figures come from this profile's server on this GPU: "
            "launch the profile and diagnose its own log (llm-dyno diagnose NAME), or import the "
            "setup the log came from as a profile and diagnose that.",
        )
    ]
