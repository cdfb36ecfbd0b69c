"""Built-in tunes: the sweeps people run by hand, with values chosen from the profile and the GPU.

- ``power-cap``: four caps from the GPU's maximum down to 55 % of it (10 W steps, within its range)
- ``clock-lock``: four locked SM clocks from the maximum down to about 55 % (supported values only)
- ``draft-depth``: ``num_speculative_tokens`` 1, 2, 3, 4
- ``batched-tokens``: ``--max-num-batched-tokens`` 2048, 4096, 8192, 16384
- ``kv-dtype``: ``--kv-cache-dtype`` auto against fp8 (an A/B)
"""

from __future__ import annotations

from collections.abc import Callable

from llm_dyno.core.errors import DynoError
from llm_dyno.core.telemetry import clocks, power
from llm_dyno.core.tune.knobs import Knob, KnobKind, Vary

_FRACTIONS = (0.55, 0.7, 0.85, 1.0)


def _power_caps(gpu: int) -> Vary:
    limit = power.read_power_limit(gpu)
    top = limit.max_w or limit.default_w or limit.current_w
    low = limit.min_w or 0.0
    caps = sorted({max(low, round(top * f / 10) * 10) for f in _FRACTIONS})
    return Vary(Knob(KnobKind.POWER), tuple(f"{c:g}" for c in caps))


def _nearest(values: tuple[int, ...], target: float) -> int:
    return min(values, key=lambda v: abs(v - target))


def _sm_clocks(gpu: int) -> Vary:
    supported = clocks.read_supported_clocks(gpu).sm_mhz
    if not supported:
        raise DynoError(f"GPU {gpu} lists no supported SM clocks to lock")
    top = max(supported)
    picks = sorted({_nearest(supported, top * f) for f in _FRACTIONS})
    return Vary(Knob(KnobKind.SM_CLOCK), tuple(str(c) for c in picks))


def _fixed(knob: Knob, values: tuple[str, ...]) -> Callable[[int | None], Vary]:
    return lambda _gpu: Vary(knob, values)


def _on_gpu(make: Callable[[int], Vary], recipe: str) -> Callable[[int | None], Vary]:
    def build(gpu: int | None) -> Vary:
        if gpu is None:
            raise DynoError(
                f"the {recipe} recipe changes a GPU of this machine, and the profile names none",
                hint="set gpus: in the profile (or --gpu N with --url)",
            )
        return make(gpu)

    return build


RECIPES: dict[str, Callable[[int | None], Vary]] = {
    "power-cap": _on_gpu(_power_caps, "power-cap"),
    "clock-lock": _on_gpu(_sm_clocks, "clock-lock"),
    "draft-depth": _fixed(Knob(KnobKind.SPEC_TOKENS), ("1", "2", "3", "4")),
    "batched-tokens": _fixed(
        Knob(KnobKind.FLAG, "max-num-batched-tokens"), ("2048", "4096", "8192", "16384")
    ),
    "kv-dtype": _fixed(Knob(KnobKind.FLAG, "kv-cache-dtype"), ("auto", "fp8")),
}


def recipe_vary(name: str, gpu: int | None) -> Vary:
    """The knob and values of a built-in recipe (``gpu``: the first GPU the tune changes)."""
    make = RECIPES.get(name)
    if make is None:
        raise DynoError(f"unknown recipe {name!r}", hint="choose from " + ", ".join(RECIPES))
    return make(gpu)
