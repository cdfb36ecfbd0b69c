"""What a power cap costs, from the reference's own published curve (the same setup at other caps).

The founding post measured ~33 narrative / ~40 code TPS at 230 W and ~43 / ~54 at 330 W
(shared/reference/REFERENCE_NUMBERS.md): a reference that publishes such points says what its numbers
would be at your cap. Points are joined linearly and never extrapolated past the published caps.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from llm_dyno.core.diagnose.references import Reference


@dataclass(frozen=True)
class CapEffect:
    """The reference's TPS at your cap as a share of its TPS at its own cap, for one prompt kind."""

    prompt: str
    your_cap_w: float
    reference_cap_w: float
    expected_ratio: float  # reference TPS at your cap / at its cap
    basis: str  # "the reference's own curve: 33 → 43 TPS from 230 to 330 W"


def _points(ref: Reference, prompt: str) -> list[tuple[float, float]]:
    own = getattr(ref.numbers, f"{prompt}_tps")
    cap = ref.hardware.power_limit_w
    pts = [(cap, own)] if cap and own else []
    pts += [(c.power_limit_w, v) for c in ref.numbers.at_other_caps if (v := getattr(c, f"{prompt}_tps"))]
    return sorted(pts)


def _at(points: list[tuple[float, float]], cap: float) -> float | None:
    for (w0, t0), (w1, t1) in itertools.pairwise(points):
        if w0 <= cap <= w1:
            return t0 if w1 == w0 else t0 + (t1 - t0) * (cap - w0) / (w1 - w0)
    return points[0][1] if len(points) == 1 and points[0][0] == cap else None


def cap_effect(ref: Reference, your_cap_w: float, prompt: str) -> CapEffect | None:
    """The effect of your cap on the reference's ``prompt`` TPS from its published points (None: the
    reference publishes no point at or around your cap)."""
    ref_cap = ref.hardware.power_limit_w
    points = _points(ref, prompt)
    if ref_cap is None or len(points) < 2:
        return None
    at_yours, at_theirs = _at(points, your_cap_w), _at(points, ref_cap)
    if at_yours is None or not at_theirs:
        return None
    curve = " → ".join(f"{t:g}" for _, t in points)
    caps = " to ".join(f"{w:g}" for w, _ in (points[0], points[-1]))
    basis = f"the reference's own curve ({ref.id}): {curve} {prompt} TPS from {caps} W"
    return CapEffect(prompt, your_cap_w, ref_cap, at_yours / at_theirs, basis)
