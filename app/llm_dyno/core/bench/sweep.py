"""Power-cap sweep results (the sweep itself runs on the tune engine: core/jobs/sweep_job.py) and the
speculative-decoding A/B.

**Knee rule** (documented because the recommendation depends on it): the recommended cap is the
*lowest* cap whose throughput is within ``tolerance`` (default 5 %) of the best cap's throughput.
Throughput is the mean over the suite's prompts of the mean measured wall TPS. This mirrors the
community's reading of its sweeps ("about 5 % TPS lost for about 15 % less power").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from llm_dyno.core.bench.result import BenchResult, BenchRun, PromptResult
from llm_dyno.core.bench.stats import Comparison, Verdict, compare_samples
from llm_dyno.core.endpoint import Endpoint
from llm_dyno.core.profiles.model import Profile


@dataclass(frozen=True)
class SweepPoint:
    """One cap's benchmark, reduced to the community's sweep columns."""

    cap_w: float
    result: BenchResult

    def wall_tps(self, prompt: str) -> float | None:
        """Mean measured wall TPS of a prompt."""
        p = self.result.prompt(prompt)
        s = p.summary("wall_tps") if p else None
        return s.mean if s else None

    @property
    def throughput(self) -> float | None:
        """Mean over prompts of their mean wall TPS (what the knee rule compares)."""
        values = [v for p in self.result.prompts if (v := self.wall_tps(p.name)) is not None]
        return sum(values) / len(values) if values else None

    def _energy_values(self, attr: str) -> list[float]:
        out: list[float] = []
        for run in self.result.all_runs():
            value = getattr(run.energy, attr, None) if run.energy and not run.warmup else None
            if isinstance(value, int | float):
                out.append(float(value))
        return out

    @property
    def mean_power_w(self) -> float | None:
        """Mean of the per-run mean power over measured runs (from the ~10 Hz samples)."""
        values = self._energy_values("mean_power_w")
        return sum(values) / len(values) if values else None

    @property
    def max_temperature_c(self) -> float | None:
        """Hottest reading during the measured runs."""
        values = self._energy_values("max_temperature_c")
        return max(values) if values else None

    def tokens_per_j(self, prompt: str) -> float | None:
        """Mean tokens per joule of a prompt's measured runs (exact, from the energy counter)."""
        p = self.result.prompt(prompt)
        s = p.summary("tokens_per_j") if p else None
        return s.mean if s else None


@dataclass(frozen=True)
class SweepResult:
    """All caps measured, the cap restored afterwards, and the recommendation."""

    points: tuple[SweepPoint, ...] = ()
    original_limit_w: float | None = None
    original_limits_w: tuple[tuple[int, float], ...] = ()  # (GPU, watts) before the sweep
    restored: bool = False
    error: str | None = None
    cancelled: bool = False

    def recommended_cap(self, tolerance: float = 0.05) -> float | None:
        """The knee: the lowest cap within ``tolerance`` of the best throughput (module docstring)."""
        scored = [(p.cap_w, t) for p in self.points if (t := p.throughput) is not None]
        if not scored:
            return None
        best = max(t for _, t in scored)
        return min(cap for cap, t in scored if t >= best * (1 - tolerance))


def _cell(value: float | None, fmt: str = "{:.1f}") -> str:
    return "—" if value is None else fmt.format(value)


def sweep_table(sweep: SweepResult) -> str:
    """The community's sweep table; TPS/W uses the mean sampled power (the energy counter is in the JSON)."""
    lines = [
        "| Cap (W) | Narr wall TPS | Code wall TPS | Actual power (W) | GPU temp (°C) | TPS/W (narr) |",
        "|---|---|---|---|---|---|",
    ]
    for p in sweep.points:
        narr, power = p.wall_tps("narrative"), p.mean_power_w
        tps_w = narr / power if narr is not None and power else None
        lines.append(
            f"| {p.cap_w:.0f} | {_cell(narr)} | {_cell(p.wall_tps('code'))} | {_cell(power, '{:.0f}')} "
            f"| {_cell(p.max_temperature_c, '{:.0f}')} | {_cell(tps_w, '{:.3f}')} |"
        )
    return "\n".join(lines)


# ---- speculative-decoding A/B ------------------------------------------------------------------


ServerFactory = Callable[[], AbstractContextManager[Endpoint]]

_AB_WORDS = {
    Verdict.BETTER: "net gain",
    Verdict.WORSE: "net loss",
    Verdict.WITHIN_NOISE: "within noise",
    Verdict.UNKNOWN: "unknown",
}


@dataclass(frozen=True)
class ABResult:
    """Spec decoding off (baseline) vs on, with a wall-TPS verdict per prompt."""

    without_spec: BenchResult
    with_spec: BenchResult
    verdicts: tuple[tuple[str, Comparison], ...]

    def summary(self) -> list[str]:
        """``narrative: net gain (+38.2 %)`` lines."""
        out = []
        for prompt, c in self.verdicts:
            delta = f" ({c.delta_pct:+.1f} %)" if c.delta_pct is not None else ""
            out.append(f"{prompt}: {_AB_WORDS[c.verdict]}{delta}")
        return out


def spec_ab(
    with_spec: ServerFactory,
    without_spec: ServerFactory,
    run_suite: Callable[[Endpoint], BenchResult],
    *,
    rounds: int = 1,
) -> ABResult:
    """Run the suite on a server without spec decoding, then on one with it (one server at a time),
    ``rounds`` times in turn (A B A B …), so that drift (a GPU heating up, other load) hits both sides;
    each side's rounds are merged into one result before the verdicts."""
    base_parts: list[BenchResult] = []
    cand_parts: list[BenchResult] = []
    for _ in range(max(1, rounds)):
        with without_spec() as endpoint:
            base_parts.append(run_suite(endpoint))
        with with_spec() as endpoint:
            cand_parts.append(run_suite(endpoint))
        if not (base_parts[-1].complete and cand_parts[-1].complete):
            break  # an error or a cancellation ends the A/B with what it has
    base, cand = merge_rounds(base_parts), merge_rounds(cand_parts)
    verdicts = []
    for prompt in base.prompts:
        other = cand.prompt(prompt.name)
        if other is not None:
            verdicts.append(
                (
                    prompt.name,
                    compare_samples("wall_tps", prompt.values("wall_tps"), other.values("wall_tps")),
                )
            )
    return ABResult(base, cand, tuple(verdicts))


def merge_rounds(parts: list[BenchResult]) -> BenchResult:
    """One side's rounds as one result: the first round's context, every round's runs per prompt
    (numbered on, 1…N), the first error or cancellation. ``context.rounds`` says how many."""
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    context = dataclasses.replace(first.context, rounds=len(parts))
    runs: dict[str, list[BenchRun]] = {}  # per prompt, in the order the prompts first ran
    for part in parts:
        for prompt in part.prompts:
            into = runs.setdefault(prompt.name, [])
            start = len(into)  # runs numbered on from the rounds before, warm-ups included
            into.extend(dataclasses.replace(r, index=start + k) for k, r in enumerate(prompt.runs, 1))
    return BenchResult(
        first.suite,
        context,
        tuple(PromptResult(name, tuple(rs)) for name, rs in runs.items()),
        next((p.error for p in parts if p.error), None),
        any(p.cancelled for p in parts),
    )


def without_spec_decode(profile: Profile) -> Profile:
    """The same profile with ``--speculative-config`` (both spellings) removed: the A/B baseline."""
    args = list(profile.args)
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("--speculative-config", "--speculative_config"):
            i += 2
            continue
        if arg.startswith(("--speculative-config=", "--speculative_config=")):
            i += 1
            continue
        out.append(arg)
        i += 1
    return profile.with_changes(args=tuple(out), name=f"{profile.name}-no-spec")
