"""What a benchmark run measured besides its timings: speculative-decoding acceptance counts (and
their sum over runs), the GPU's energy and power over the run, and the thermal state it started from.

Parts of :class:`~llm_dyno.core.bench.result.BenchRun`; their JSON forms are part of the result's
contract (see :mod:`~llm_dyno.core.bench.result`).
"""

from __future__ import annotations

from typing import Any

from pydantic import computed_field, model_validator

from llm_dyno.core.records import Record

_DERIVED = ("rate", "mean_length", "per_position")  # written with the counts, recomputed on reading


class Acceptance(Record):
    """Speculative-decoding counts over one run (or summed over many) and the rates derived from them.

    Its JSON (``model_dump``) holds the counts and the rates; ``model_validate`` reads the counts and
    recomputes the rates."""

    drafts: int
    draft_tokens: int
    accepted_tokens: int
    per_position_accepted: tuple[int, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _without_derived(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if k not in _DERIVED}
        return data

    @property
    def contradiction(self) -> str | None:
        """Why these counts cannot all be true, or None: a negative count (a result stored before the
        reset rule held deltas across a restart), more accepted than drafted, or more acceptances at
        one position than there were drafts (vLLM accepts only drafted tokens, each once)."""
        counts = (self.drafts, self.draft_tokens, self.accepted_tokens, *self.per_position_accepted)
        if min(counts) < 0:
            return f"a negative count ({min(counts):,})"
        if self.accepted_tokens > self.draft_tokens:
            return f"{self.accepted_tokens:,} tokens accepted of {self.draft_tokens:,} drafted"
        if any(n > self.drafts for n in self.per_position_accepted):
            return f"more acceptances at one position than the {self.drafts:,} drafts"
        return None

    @property
    def possible(self) -> bool:
        """Whether these counts can all be true (see :attr:`contradiction`); rates come only from these."""
        return self.contradiction is None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rate(self) -> float | None:
        """Accepted / drafted tokens."""
        return self.accepted_tokens / self.draft_tokens if self.draft_tokens and self.possible else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def mean_length(self) -> float | None:
        """1 + accepted / drafts: tokens per verify step, bonus token included (vLLM's convention)."""
        return 1 + self.accepted_tokens / self.drafts if self.drafts and self.possible else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def per_position(self) -> tuple[float, ...]:
        """Accepted at position i / drafts: cumulative, so non-increasing."""
        if not self.drafts or not self.possible:
            return ()
        return tuple(a / self.drafts for a in self.per_position_accepted)

    def __add__(self, other: Acceptance) -> Acceptance:
        width = max(len(self.per_position_accepted), len(other.per_position_accepted))
        a = list(self.per_position_accepted) + [0] * (width - len(self.per_position_accepted))
        b = list(other.per_position_accepted) + [0] * (width - len(other.per_position_accepted))
        return Acceptance(
            drafts=self.drafts + other.drafts,
            draft_tokens=self.draft_tokens + other.draft_tokens,
            accepted_tokens=self.accepted_tokens + other.accepted_tokens,
            per_position_accepted=tuple(x + y for x, y in zip(a, b, strict=True)),
        )


def sum_acceptance(items: list[Acceptance | None]) -> Acceptance | None:
    """Sum of counts (the right way to aggregate rates); ``None`` when no item has counts that can be
    true (see :attr:`Acceptance.possible`: impossible ones are left out)."""
    total: Acceptance | None = None
    for item in items:
        if item is not None and item.possible:
            total = item if total is None else total + item
    return total


class EnergyStats(Record):
    """GPU readings over one run: energy from the counter delta, power sampled at ~10 Hz.

    ``mean_power_w`` is energy / time from the counter (``mean_power_source`` says so; the mean of
    the sampled 1-second averages where no counter was read); ``sampled_mean_power_w`` the mean of the
    driver's 1 s averages; ``peak_power_source`` says whether the peak is instantaneous or the peak of
    1 s averages; ``span_s`` the time between the first and last counter readings. Stored by field
    (``model_dump``) in a load level; a run writes its fields under names of its own.
    """

    energy_j: float | None = None
    tokens_per_j: float | None = None
    mean_power_w: float | None = None
    peak_power_w: float | None = None
    max_temperature_c: float | None = None
    throttle_reasons: tuple[str, ...] = ()
    samples: int = 0
    sampled_mean_power_w: float | None = None
    mean_power_source: str = ""
    peak_power_source: str = ""
    span_s: float | None = None


class ThermalState(Record):
    """The GPU's thermal condition a run started from (cold and heat-soaked GPUs differ by ~4–5 %).

    ``stable`` True: the temperature held within the tolerance before the prompt's first run; False:
    it did not settle within the wait (the runs went on); None: no GPU was visible or no wait was
    asked for. ``start_c`` is the reading as this run began. Stored by field (``model_dump``).
    """

    stable: bool | None
    settled_c: float | None = None
    waited_s: float = 0.0
    start_c: float | None = None
    note: str = ""

    def describe(self) -> str:
        """``stable at 54 °C (waited 12 s); run started at 55 °C`` for humans."""
        if self.stable is None:
            return self.note or "thermal state unknown"
        head = "stable" if self.stable else "not stable"
        at = f" at {self.settled_c:.0f} °C" if self.settled_c is not None else ""
        text = f"{head}{at} (waited {self.waited_s:.0f} s)"
        if self.start_c is not None:
            text += f"; run started at {self.start_c:.0f} °C"
        return text
