"""The kinds of knob a tune turns, one object each: how it is named, how its values are checked, how a
value reaches the server (a changed profile) or the GPU (a cap or a lock), and how the GPU is put back.

:data:`KINDS` maps each :class:`KnobKind` to its object; :mod:`llm_dyno.core.tune.knobs`, the tune and
sweep jobs and the tuned copy call these methods instead of asking which kind a knob is. To add a kind,
add a member to :class:`KnobKind` and its object to :data:`KINDS` (docs/guide.md "Extending").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import StrEnum

from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.edit import get_flag, set_flag
from llm_dyno.core.profiles.model import PowerSettings, Profile
from llm_dyno.core.telemetry import clocks, power

Say = Callable[[str], None]


class KnobError(DynoError):
    """A knob or a value a tune cannot use (said before anything starts)."""


class KnobKind(StrEnum):
    """What a knob changes."""

    FLAG = "flag"
    SPEC_TOKENS = "num_speculative_tokens"
    ENV = "env"
    IMAGE = "image"
    POWER = "power"
    SM_CLOCK = "sm_clock"
    MEM_CLOCK = "mem_clock"


_INT_FLAGS = frozenset(
    {
        "max-num-batched-tokens",
        "max-num-seqs",
        "max-model-len",
        "tensor-parallel-size",
        "pipeline-parallel-size",
    }
)
KV_CACHE_DTYPES = ("auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla")


def _whole(value: str, text: str) -> None:
    if not (value.isdigit() and int(value) > 0):
        raise KnobError(f"--vary {text!r}: {value!r} is not a positive whole number")


class Kind:
    """A server knob's kind (a value relaunches the server); subclasses say what differs.

    ``aliases`` are the names ``--vary`` reads as this kind; ``prefix`` the label's prefix before a
    named knob's name (``--`` for a flag, ``env:`` for an environment value); ``suggested`` the names
    the Tune view offers in its knob boxes.
    """

    kind: KnobKind
    aliases: tuple[str, ...] = ()
    suggested: tuple[str, ...] = ()
    prefix: str | None = None
    unit = ""
    relaunch = True

    def label(self, name: str) -> str:
        """How a knob of this kind reads in tables, charts and the CLI."""
        return f"{self.prefix}{name}" if self.prefix is not None else str(self.kind)

    def name_from_label(self, label: str) -> str:
        """The knob's name back from its :meth:`label` (a stored record's)."""
        return label.removeprefix(self.prefix) if self.prefix is not None else ""

    def check(self, name: str, value: str, text: str) -> None:
        """Refuse a value this knob cannot take (``text``: the ``--vary`` argument, for the message)."""

    def check_profile(self, profile: Profile, name: str) -> None:
        """Refuse a knob the profile cannot take."""

    def apply(self, profile: Profile, name: str, value: str) -> Profile:
        """The profile with this knob at ``value`` (a GPU kind leaves it as it is)."""
        return profile

    def current(self, profile: Profile, name: str) -> str | None:
        """What the profile itself has for this knob (None when unset)."""
        return None

    def keep(self, profile: Profile, name: str, value: str) -> tuple[Profile, str | None]:
        """A tuned copy of ``profile`` holding ``value``, and a note when a profile cannot hold it."""
        return self.apply(profile, name, value), None


class FlagKind(Kind):
    """Any vLLM flag (``--max-num-batched-tokens``)."""

    kind, prefix = KnobKind.FLAG, "--"
    suggested = ("max-num-batched-tokens", "kv-cache-dtype", "max-num-seqs")

    def check(self, name: str, value: str, text: str) -> None:
        if name in _INT_FLAGS:
            _whole(value, text)
        if name == "kv-cache-dtype" and value not in KV_CACHE_DTYPES:
            raise KnobError(
                f"--vary {text!r}: {value!r} is not a KV-cache dtype vLLM knows",
                hint="choose from " + ", ".join(KV_CACHE_DTYPES),
            )

    def apply(self, profile: Profile, name: str, value: str) -> Profile:
        return profile.with_changes(args=set_flag(profile.args, name, value))

    def current(self, profile: Profile, name: str) -> str | None:
        return get_flag(profile.args, name)


class SpecTokensKind(Kind):
    """``num_speculative_tokens`` inside ``--speculative-config``."""

    kind = KnobKind.SPEC_TOKENS
    aliases = ("num_speculative_tokens", "num-speculative-tokens", "draft_depth")
    suggested = ("num-speculative-tokens",)

    def check(self, name: str, value: str, text: str) -> None:
        _whole(value, text)

    def check_profile(self, profile: Profile, name: str) -> None:
        if not profile.engine().speculative_config:
            raise KnobError(
                f"profile '{profile.name}' has no --speculative-config: num_speculative_tokens has nothing "
                "to change",
                hint='add e.g. --speculative-config \'{"method": "ngram", "num_speculative_tokens": 3}\'',
            )

    def apply(self, profile: Profile, name: str, value: str) -> Profile:
        spec = dict(profile.engine().speculative_config or {})
        spec["num_speculative_tokens"] = int(value)
        return profile.with_changes(args=set_flag(profile.args, "speculative-config", json.dumps(spec)))

    def current(self, profile: Profile, name: str) -> str | None:
        n = profile.engine().num_speculative_tokens
        return str(n) if n is not None else None


class EnvKind(Kind):
    """An environment value of the server (``env:NAME``)."""

    kind, prefix, suggested = KnobKind.ENV, "env:", ("env:",)

    def apply(self, profile: Profile, name: str, value: str) -> Profile:
        return profile.with_changes(env={**profile.env, name: value})

    def current(self, profile: Profile, name: str) -> str | None:
        return profile.env.get(name)


class ImageKind(Kind):
    """The Docker image the server runs."""

    kind, aliases, suggested = KnobKind.IMAGE, ("image",), ("image",)

    def check_profile(self, profile: Profile, name: str) -> None:
        if profile.docker is None:
            raise KnobError(
                f"profile '{profile.name}' runs as a process, not in Docker: it has no image to vary"
            )

    def apply(self, profile: Profile, name: str, value: str) -> Profile:
        if profile.docker is None:
            return profile
        return profile.with_changes(docker={**profile.docker.model_dump(), "image": value})

    def current(self, profile: Profile, name: str) -> str | None:
        return profile.docker.image if profile.docker is not None else None


class GpuKind(Kind):
    """A setting of the GPU itself: no relaunch; checked against the GPU, set on it, put back after."""

    relaunch = False

    def preflight(self, gpu: int, values: tuple[str, ...]) -> None:
        """Refuse, before anything starts, a GPU that cannot take this knob or a value it does not allow."""
        raise NotImplementedError

    def remember(self, gpu: int) -> float | None:
        """What :meth:`restore` puts back, read before the first change (None: the driver's default)."""
        return None

    def set(self, gpu: int, value: str, say: Say) -> None:
        """Put ``value`` on the GPU."""
        raise NotImplementedError

    def restore(self, gpu: int, remembered: float | None, say: Say) -> str:
        """Put the GPU back; returns what was restored, in the user's words."""
        raise NotImplementedError


class PowerKind(GpuKind):
    """The power cap (W)."""

    kind, aliases, unit, suggested = KnobKind.POWER, ("power", "power_cap", "power-cap"), "W", ("power",)

    def check(self, name: str, value: str, text: str) -> None:
        try:
            ok = float(value) > 0
        except ValueError:
            ok = False
        if not ok:
            raise KnobError(f"--vary {text!r}: {value!r} is not a power in watts")

    def current(self, profile: Profile, name: str) -> str | None:
        limit = profile.power.limit_w if profile.power is not None else None
        return f"{limit:g}" if limit is not None else None

    def keep(self, profile: Profile, name: str, value: str) -> tuple[Profile, str | None]:
        kept = profile.power or PowerSettings()
        return profile.with_changes(
            power=kept.model_copy(update={"limit_w": float(value), "per_gpu_w": {}})
        ), None

    def preflight(self, gpu: int, values: tuple[str, ...]) -> None:
        problem = power.control_unavailable_reason(gpu)
        if problem is not None:
            raise KnobError(problem)
        limit = power.read_power_limit(gpu)
        for value in values:
            limit.check(float(value))

    def remember(self, gpu: int) -> float | None:
        return power.read_power_limit(gpu).current_w

    def set(self, gpu: int, value: str, say: Say) -> None:
        say(f"setting GPU {gpu} power limit to {value} W")
        power.set_power_limit(gpu, float(value))

    def restore(self, gpu: int, remembered: float | None, say: Say) -> str:
        if remembered is None:
            raise KnobError(f"GPU {gpu}: its power limit was not read before the tune changed it")
        say(f"restoring GPU {gpu} power limit to {remembered:g} W")
        power.set_power_limit(gpu, remembered)
        return f"GPU {gpu} power limit {remembered:g} W"


class ClockKind(GpuKind):
    """A locked clock (MHz) of one domain: SM or memory."""

    unit = "MHz"

    def __init__(self, kind: KnobKind, domain: clocks.ClockDomain, aliases: tuple[str, ...]) -> None:
        self.kind, self.domain, self.aliases, self.suggested = kind, domain, aliases, aliases[-1:]

    def check(self, name: str, value: str, text: str) -> None:
        _whole(value, text)

    def keep(self, profile: Profile, name: str, value: str) -> tuple[Profile, str | None]:
        lock = f"{self.kind.value}={value}"
        return (
            profile,
            f"{lock} is a GPU clock lock: a profile cannot hold it (lock it with the tune's value)",
        )

    def preflight(self, gpu: int, values: tuple[str, ...]) -> None:
        problem = clocks.clock_control_unavailable_reason(gpu)
        if problem is not None:
            raise KnobError(problem)
        supported = clocks.read_supported_clocks(gpu)
        for value in values:
            supported.check(self.domain, int(value))

    def set(self, gpu: int, value: str, say: Say) -> None:
        say(f"locking GPU {gpu} {self.domain.value} clock at {value} MHz")
        clocks.lock_clock(gpu, self.domain, int(value))

    def restore(self, gpu: int, remembered: float | None, say: Say) -> str:
        say(f"unlocking GPU {gpu} clocks ({self.domain.value})")
        clocks.reset_clocks(gpu, (self.domain,))
        return f"GPU {gpu} clocks unlocked ({self.domain.value})"


# In the order the Tune view offers them, which is also the order a tune puts the GPU back: power caps
# first, then clock locks.
KINDS: dict[KnobKind, Kind] = {
    k.kind: k
    for k in (
        SpecTokensKind(),
        FlagKind(),
        PowerKind(),
        ClockKind(KnobKind.SM_CLOCK, clocks.ClockDomain.SM, ("sm_clock", "sm-clock")),
        ClockKind(KnobKind.MEM_CLOCK, clocks.ClockDomain.MEMORY, ("mem_clock", "memory_clock", "mem-clock")),
        ImageKind(),
        EnvKind(),
    )
}


def check_kinds(kinds: dict[KnobKind, Kind]) -> None:
    """Refuse a table that misses a kind, files one under another's key or reads one alias as two kinds."""
    missing = [k.value for k in KnobKind if k not in kinds]
    if missing:
        raise ValueError(f"knob kinds without an object: {', '.join(missing)}")
    seen: dict[str, KnobKind] = {}
    for key, obj in kinds.items():
        if obj.kind is not key:
            raise ValueError(f"knob kind {key.value!r} is given the object of {obj.kind.value!r}")
        for alias in obj.aliases:
            if seen.setdefault(alias, key) is not key:
                raise ValueError(f"knob name {alias!r} means both {seen[alias].value} and {key.value}")


check_kinds(KINDS)

# What the Tune view's knob boxes offer (one style, vLLM's flag style; the underscore spellings are
# read too), and of those the GPU's own settings (not offered for a profile without a GPU).
KNOB_SUGGESTIONS = tuple(name for k in KINDS.values() for name in k.suggested)
GPU_KNOBS = tuple(name for k in KINDS.values() if isinstance(k, GpuKind) for name in k.suggested)
