"""A tune's trials (the cross product of its knobs) and the order they run in.

Server knobs vary slowest and GPU knobs fastest, so a repeat relaunches the server only when a server
setting changes; repeats are interleaved (A B C A B C …), so drift (a GPU heating up, other load on
the machine) falls on every trial alike rather than on the last ones.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from llm_dyno.core.tune.knobs import Setting, Vary

MAX_TRIALS = 64


@dataclass(frozen=True)
class Trial:
    """One profile variant: its number (1…N) and its settings, one per varied knob."""

    index: int
    settings: tuple[Setting, ...]

    @property
    def server_settings(self) -> tuple[Setting, ...]:
        """The settings that need a relaunch."""
        return tuple(s for s in self.settings if s.knob.relaunch)

    @property
    def gpu_settings(self) -> tuple[Setting, ...]:
        """The GPU's own settings (power cap, locked clocks)."""
        return tuple(s for s in self.settings if not s.knob.relaunch)

    @property
    def label(self) -> str:
        """``num_speculative_tokens=3, --max-num-batched-tokens=256``."""
        return ", ".join(str(s) for s in self.settings)

    def value(self, knob_label: str) -> str | None:
        """This trial's value of a knob (by label)."""
        return next((s.value for s in self.settings if s.knob.label == knob_label), None)


def build_trials(varies: tuple[Vary, ...]) -> tuple[Trial, ...]:
    """The cross product of the knobs' values, server knobs outermost (in the order given)."""
    ordered = sorted(varies, key=lambda v: not v.knob.relaunch)  # stable: server knobs first
    combos = itertools.product(*(v.settings() for v in ordered))
    # each trial lists its settings in the order the user gave the knobs
    order = {v.knob: i for i, v in enumerate(varies)}
    return tuple(
        Trial(k, tuple(sorted(combo, key=lambda s: order[s.knob]))) for k, combo in enumerate(combos, 1)
    )


def schedule(trials: tuple[Trial, ...], repeats: int) -> tuple[tuple[int, Trial], ...]:
    """(repeat, trial) in running order: every trial once per repeat, repeats one after the other."""
    return tuple((r, t) for r in range(1, repeats + 1) for t in trials)
