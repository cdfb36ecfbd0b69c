"""Gather what a diagnosis of one profile looks at, for ``llm-dyno diagnose`` and the Diagnostics view.

The profile's latest launch log, its latest benchmark result from the history, live metrics when its
server runs, and the reference chosen for it (remembered per profile in
``data_dir()/diagnostics.json``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import httpx

from llm_dyno.core.atomic import atomic_write_text
from llm_dyno.core.bench.ab import PAIR_PREFIX, SIDE_TAGS
from llm_dyno.core.bench.result_file import read_result_file
from llm_dyno.core.bench.run_context import RunContext
from llm_dyno.core.bench.stats import Comparison, compare_samples
from llm_dyno.core.bounded_read import read_log_bounded
from llm_dyno.core.diagnose.diagnosis_input import DiagnosisInput
from llm_dyno.core.diagnose.engine import Diagnosis, diagnose
from llm_dyno.core.diagnose.inputs import Environment, LaunchLog, Measured
from llm_dyno.core.diagnose.post import Post
from llm_dyno.core.diagnose.reference_profile import ReferenceComparison, compare_with_reference
from llm_dyno.core.diagnose.references import Reference, load_references
from llm_dyno.core.diagnose.sources import read_live, reference_from_profile
from llm_dyno.core.diagnose.synthetic import check_profile
from llm_dyno.core.errors import DynoError
from llm_dyno.core.history.store import HistoryStore
from llm_dyno.core.paths import data_dir
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.logfiles import latest_log
from llm_dyno.core.telemetry.metrics import MetricsSnapshot
from llm_dyno.core.telemetry.nvml import GpuReading
from llm_dyno.core.telemetry.rates import MetricsRates


@dataclass(frozen=True)
class DiffLine:
    """One row of the config / environment diff against the reference."""

    group: str
    key: str
    yours: str
    reference: str


@dataclass(frozen=True)
class Gathered:
    """A diagnosis and what it was made from, for the view to show."""

    diagnosis: Diagnosis
    sources: tuple[str, ...]
    diff: tuple[DiffLine, ...] = ()
    notes: tuple[str, ...] = field(default=())
    # the profile against the reference's published compose, each difference judged
    configuration: ReferenceComparison = field(default_factory=ReferenceComparison)


def reference_choices(profile: Profile | None) -> list[Reference]:
    """The profile's own ``reference:`` numbers (when it has them), then shipped and user references."""
    own = reference_from_profile(profile) if profile is not None else None
    return ([own] if own is not None else []) + load_references()


def _choices_file() -> Path:
    return data_dir() / "diagnostics.json"


def remembered_reference(profile_name: str) -> str | None:
    """The reference id last chosen for a profile."""
    try:
        data = json.loads(_choices_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get(profile_name) if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def remember_reference(profile_name: str, reference_id: str | None) -> None:
    """Remember (or forget, with None) the reference chosen for a profile."""
    try:
        data = json.loads(_choices_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    if reference_id is None:
        data.pop(profile_name, None)
    else:
        data[profile_name] = reference_id
    atomic_write_text(_choices_file(), json.dumps(data, indent=2, sort_keys=True) + "\n")


def _typed_file() -> Path:
    return data_dir() / "diagnostics-typed.json"


def remembered_typed(profile_name: str) -> Measured | None:
    """The TPS, acceptance, mean length, power cap and no-spec TPS last typed for a profile in the
    Diagnostics view (None: none)."""
    try:
        data = json.loads(_typed_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    entry = data.get(profile_name) if isinstance(data, dict) else None
    if not isinstance(entry, dict):
        return None
    narr, code = entry.get("narrative_tps"), entry.get("code_tps")
    narr = float(narr) if isinstance(narr, int | float) and narr > 0 else None
    code = float(code) if isinstance(code, int | float) and code > 0 else None
    cap = entry.get("power_cap_w")
    cap = float(cap) if isinstance(cap, int | float) and 0 < cap <= 2000 else None
    raw = entry.get("acceptance_per_position")
    rates: tuple[float, ...] = ()
    if isinstance(raw, list) and all(isinstance(r, int | float) and 0 <= r <= 1 for r in raw):
        rates = tuple(float(r) for r in raw)
    length, no_spec = entry.get("mean_acceptance_length"), entry.get("no_spec_tps")
    length = float(length) if isinstance(length, int | float) and 1 <= length <= 64 else None
    no_spec = float(no_spec) if isinstance(no_spec, int | float) and no_spec > 0 else None
    if narr is None and code is None and cap is None and not rates and length is None and no_spec is None:
        return None
    return Measured(narr, code, rates, length, "typed", power_cap_w=cap, no_spec_tps=no_spec)


def remember_typed(profile_name: str, typed: Measured | None) -> None:
    """Remember (or forget, with None) the numbers typed for a profile."""
    try:
        data = json.loads(_typed_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    if typed is None:
        data.pop(profile_name, None)
    else:
        data[profile_name] = {
            "narrative_tps": typed.narrative_tps,
            "code_tps": typed.code_tps,
            "acceptance_per_position": list(typed.acceptance_per_position),
            "power_cap_w": typed.power_cap_w,
            "mean_acceptance_length": typed.mean_acceptance_length,
            "no_spec_tps": typed.no_spec_tps,
        }
    atomic_write_text(_typed_file(), json.dumps(data, indent=2, sort_keys=True) + "\n")


def _fmt(value: object) -> str:
    if value is None or value == "" or value == ():
        return "—"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple | list):
        return " / ".join(f"{v * 100:.0f} %" if isinstance(v, float) else str(v) for v in value)
    return str(value)


def _short_source(source: str) -> str:
    return "log" if source.startswith("log") else source


def published_rows(reference: Reference | None, references: list[Reference]) -> tuple[Reference, ...]:
    """The other references its source published (same source URL): e.g. a README's table rows."""
    url = reference.source.url if reference is not None else None
    if not url:
        return ()
    return tuple(r for r in references if r.source.url == url and r.id != reference.id)  # type: ignore[union-attr]


def diff_lines(inp: DiagnosisInput) -> list[DiffLine]:
    """Environment rows vs the reference, and for a reference that publishes no configuration its image
    and stated engine flags (a configuration is compared setting by setting by ``reference_profile``)."""
    ref = inp.reference
    if ref is None:
        return []
    out: list[DiffLine] = []
    ref_profile = None
    try:
        ref_profile = ref.load_profile()
    except DynoError:
        ref_profile = None
    if ref_profile is None and ref.image_ref:
        out.append(DiffLine("config", "image", _fmt(inp.image()), ref.image_ref))
    m = inp.measured_numbers()
    limit = inp.profile.power.limit_w if inp.profile is not None and inp.profile.power else None
    if ref_profile is None and ref.engine is not None:  # no published configuration: its stated flags
        ours = inp.profile.engine() if inp.profile is not None else None
        spec = ours.speculative_config if ours is not None else None
        mine = None if ours is None else (
            f"{spec.get('method') or 'draft'}, {ours.num_speculative_tokens} tokens" if spec else "none"
        )  # fmt: skip
        out.append(DiffLine("config", "speculative decoding", _fmt(mine), ref.engine.describe_spec()))
        if ref.engine.kv_cache_dtype:
            out.append(DiffLine("config", "KV cache dtype", _fmt(ours.kv_cache_dtype if ours else None),
                                ref.engine.kv_cache_dtype))  # fmt: skip
    env = [
        ("vLLM version", inp.environment.vllm_version, ref.vllm_version),
        ("GPU", inp.gpu_name(), ref.hardware.gpu),
        ("driver", inp.environment.driver, ref.hardware.driver),
        ("power limit W", limit, ref.hardware.power_limit_w),
        ("narrative TPS", m.narrative_tps if m else None, ref.numbers.narrative_tps),
        ("code TPS", m.code_tps if m else None, ref.numbers.code_tps),
        (
            "acceptance per position",
            m.acceptance_per_position if m else (),
            ref.numbers.acceptance_per_position,
        ),
        (
            "mean acceptance length",
            m.mean_acceptance_length if m else None,
            ref.numbers.mean_acceptance_length,
        ),
    ]
    for key, yours, theirs in env:
        if yours is None and theirs is None:
            continue
        mine = _fmt(yours)
        if key in ("acceptance per position", "mean acceptance length") and m is not None and mine != "—":
            mine += f" ({_short_source(m.acceptance_from)})"  # where "Yours" came from
        out.append(DiffLine("env", key, mine, _fmt(theirs)))
    return out


def gather(
    profile: Profile | None,
    reference: Reference | None,
    *,
    log_path: Path | None = None,
    live_url: str | None = None,
    typed: Measured | None = None,
    history_path: Path | None = None,
    api_key: str | None = None,
    gpu_now: tuple[GpuReading, ...] = (),
    reference_log_path: Path | None = None,
    bench_path: Path | None = None,
    post: Post | None = None,
) -> Gathered:
    """Collect the inputs, run the rules, and build the diff rows.

    GPU readings come from the latest benchmark (taken before and under load while it ran) and from
    ``gpu_now``; the spec-decode verdicts from the profile's latest stored A/B. ``bench_path`` (a result
    written by ``bench --json``) stands in for the latest benchmark."""
    sources: list[str] = []
    notes: list[str] = []
    log = LaunchLog()
    path = log_path or (latest_log(profile.name) if profile is not None else None)
    if path is not None:
        try:
            text, skipped = read_log_bounded(path)  # a log of any size: its head and tail
            log = LaunchLog.from_text(text, str(path))
            more = f"; {skipped:,} bytes in the middle not read" if skipped else ""
            sources.append(f"log {path.name} ({len(log.lines)} lines{more})")
        except DynoError as exc:
            notes.append(exc.message)
    elif post is not None:
        log = post.log  # the post's lines in vLLM's own words are the log there is
        sources.append(f"post {post.source} ({len(post.log.lines)} lines) as the launch log")
    else:
        notes.append("no launch log yet: launch the profile once for the log findings")
    if post is not None and path is not None:
        sources.append(f"post {post.source} ({len(post.log.lines)} lines) for what the log does not say")
    reference_log = None
    if reference_log_path is not None:
        try:
            text = reference_log_path.read_text(encoding="utf-8", errors="replace")
            reference_log = LaunchLog.from_text(text, str(reference_log_path))
            sources.append(f"reference log {reference_log_path.name} ({len(reference_log.lines)} lines)")
        except OSError as exc:
            notes.append(f"cannot read the reference's log {reference_log_path}: {exc.strerror}")
    bench = None
    spec_ab: tuple[tuple[str, Comparison], ...] = ()
    if bench_path is not None:
        bench = read_result_file(bench_path)
        sources.append(f"benchmark {bench_path.name}")
    if profile is not None:
        try:
            with HistoryStore(history_path) as store:
                entries = store.list(profile=profile.name, limit=1)
                if entries and bench is None:
                    bench = store.get(entries[0].id).result
                    sources.append(f"benchmark #{entries[0].id}")
                spec_ab, no_spec = _latest_ab(store, profile.name, sources)
                if no_spec is not None and (typed is None or typed.no_spec_tps is None):
                    typed = replace(typed or Measured(source="benchmark"), no_spec_tps=no_spec[0],
                                    no_spec_source=no_spec[1])  # fmt: skip
        except DynoError as exc:
            notes.append(f"history unavailable: {exc}")
    ctx = bench.context if bench is not None else RunContext()
    before, under_load = ctx.gpu_before, ctx.gpu_under_load
    if under_load:
        sources.append(f"GPU under load ({len(under_load)} readings during the benchmark)")
    if gpu_now:
        sources.append("GPU now")
    metrics: MetricsSnapshot | None = None
    rates: MetricsRates | None = None
    version = ctx.vllm_version
    if live_url:
        try:
            metrics, rates, live_version = read_live(live_url, api_key)
            version = live_version or version
            sources.append("live /metrics")
        except (DynoError, httpx.HTTPError) as exc:
            notes.append(f"live metrics unavailable: {exc}")
    published: tuple[Reference, ...] = ()
    if reference is not None and reference.source.url:
        try:
            published = published_rows(reference, load_references())
        except DynoError as exc:
            notes.append(f"the reference's other published rows unavailable: {exc}")
    synthetic = None
    if profile is not None and reference is not None and profile.engine().speculative_config:
        synthetic = check_profile(profile)  # a local install is read; an image says how to check it
    inp = DiagnosisInput(
        synthetic=synthetic,
        profile=profile,
        reference=reference,
        published=published,
        reference_log=reference_log,
        environment=Environment(
            image_digest=ctx.image_digest,
            vllm_version=version,
            gpu_name=ctx.gpu,
            driver=ctx.driver,
        ),
        log=log,
        metrics=metrics,
        rates=rates,
        bench=bench,
        measured=typed,
        gpu_before=before or gpu_now,
        gpu_under_load=under_load,
        spec_ab=spec_ab,
        post=post,
    )
    if typed is not None:
        sources.append(_typed_source(typed))
    configuration = compare_with_reference(profile, reference, published)
    return Gathered(diagnose(inp), tuple(sources), tuple(diff_lines(inp)), tuple(notes), configuration)


def _typed_source(typed: Measured) -> str:
    """``typed TPS, acceptance 3 positions, power cap 330 W``: what was typed, for the sources line."""
    parts = []
    if typed.narrative_tps is not None or typed.code_tps is not None:
        parts.append("TPS")
    if typed.acceptance_per_position:
        parts.append(f"acceptance {len(typed.acceptance_per_position)} positions")
    if typed.mean_acceptance_length is not None:
        parts.append(f"mean acceptance length {typed.mean_acceptance_length:g}")
    if typed.power_cap_w is not None:
        parts.append(f"power cap {typed.power_cap_w:g} W")
    if typed.no_spec_tps is not None and typed.no_spec_source == "typed":
        parts.append(f"no-spec TPS {typed.no_spec_tps:g}")
    froms = {typed.source, typed.acceptance_from, typed.power_cap_source} - {""}
    said = "typed" if froms == {"typed"} else "from the post" if "typed" not in froms else "typed and post"
    return f"{said} " + ", ".join(parts) if parts else f"{said} numbers"


def _latest_ab(
    store: HistoryStore, profile_name: str, sources: list[str]
) -> tuple[tuple[tuple[str, Comparison], ...], tuple[float, str] | None]:
    """Verdicts per prompt of the profile's latest A/B (both sides stored with one ab-pair tag), and its
    side without speculative decoding: mean narrative wall TPS and where it came from."""
    withs = store.list(profile=profile_name, tag=SIDE_TAGS["with"], limit=1)
    if not withs:
        return (), None
    pair = next((t for t in withs[0].tags if t.startswith(PAIR_PREFIX)), None)
    if pair is None:
        return (), None
    without = [e for e in store.list(tag=pair) if SIDE_TAGS["without"] in e.tags]
    if not without:
        return (), None
    base, cand = store.get(without[0].id).result, store.get(withs[0].id).result
    sources.append(f"spec-decode A/B #{without[0].id} vs #{withs[0].id}")
    out: list[tuple[str, Comparison]] = []
    for prompt in base.prompts:
        other = cand.prompt(prompt.name)
        if other is not None:
            verdict = compare_samples("wall_tps", prompt.values("wall_tps"), other.values("wall_tps"))
            out.append((prompt.name, verdict))
    narr = base.prompt("narrative")
    wall = narr.summary("wall_tps") if narr is not None else None
    no_spec = (
        (wall.mean, f"A/B #{without[0].id} without spec decode") if wall is not None and wall.mean else None
    )
    return tuple(out), no_spec
