"""The knobs a tune can turn, how ``--vary KNOB=V1,V2`` reads, and how a setting changes a profile.

A knob is a vLLM flag (any ``--flag``; ``num_speculative_tokens`` inside ``--speculative-config``), an
environment value (``env:NAME``), the Docker image (``image``), or one of the GPU's own settings: the
power cap (``power``, W) and a locked SM or memory clock (``sm_clock`` / ``mem_clock``, MHz). Flags, env
and image change the server (a relaunch); the GPU settings do not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from llm_dyno.core.profiles.flags import SWITCHES, canonical_name
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.tune.knob_kinds import KINDS, GpuKind, Kind, KnobError, KnobKind

__all__ = [
    "Knob", "KnobError", "KnobKind", "Setting", "Vary", "apply_setting", "apply_settings",
    "check_knob_for", "current_value", "parse_knob", "parse_vary",
]  # fmt: skip

# flags a tune must not vary: they decide where the server answers and who may use it
_FIXED_FLAGS = {
    "port": "the port the benchmark reaches the server on",
    "host": "the address the benchmark reaches the server on",
    "api-key": "the key the benchmark sends",
    "served-model-name": "the model name the benchmark asks for",
    "model": "the model (make a profile per model)",
    "speculative-config": "the whole speculative config (vary num_speculative_tokens instead)",
}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FLAG_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")  # what vLLM's flags look like (the CSV header trusts it)
MAX_VALUES = 16


@dataclass(frozen=True)
class Knob:
    """One knob: its kind and, for a flag or an env value, its name (``max-num-batched-tokens``)."""

    kind: KnobKind
    name: str = ""

    @property
    def spec(self) -> Kind:
        """The object of its kind: how it is checked and applied."""
        return KINDS[self.kind]

    @property
    def gpu(self) -> GpuKind | None:
        """Its kind's object when it is a GPU setting (None for a server knob)."""
        spec = self.spec
        return spec if isinstance(spec, GpuKind) else None

    @property
    def label(self) -> str:
        """How the knob reads in tables, charts and the CLI."""
        return self.spec.label(self.name)

    @property
    def unit(self) -> str:
        """The unit of its values ("" when none)."""
        return self.spec.unit

    @property
    def relaunch(self) -> bool:
        """Whether a new value needs a new server (a power cap or a clock lock does not)."""
        return self.spec.relaunch

    @classmethod
    def from_label(cls, label: str, kind: str) -> Knob:
        """The knob a stored record names by its label and kind."""
        k = KnobKind(kind)
        return cls(k, KINDS[k].name_from_label(label))


@dataclass(frozen=True)
class Setting:
    """One knob at one value (values are kept as the user wrote them)."""

    knob: Knob
    value: str

    def __str__(self) -> str:
        return f"{self.knob.label}={self.value}"

    def number(self) -> float | None:
        """The value as a number, when it is one (what the knee orders by)."""
        try:
            return float(self.value)
        except ValueError:
            return None


@dataclass(frozen=True)
class Vary:
    """A knob and the values a tune tries, in the order given."""

    knob: Knob
    values: tuple[str, ...]

    def settings(self) -> tuple[Setting, ...]:
        """One setting per value."""
        return tuple(Setting(self.knob, v) for v in self.values)


def parse_knob(text: str) -> Knob:
    """``num_speculative_tokens``, ``power``, ``sm_clock``, ``mem_clock``, ``image``, ``env:NAME`` or a
    vLLM flag (``--max-num-batched-tokens`` or ``max_num_batched_tokens``)."""
    name = text.strip()
    if not name:
        raise KnobError("a knob needs a name, e.g. --vary max-num-batched-tokens=2048,8192")
    for kind in KINDS.values():
        if name in kind.aliases:
            return Knob(kind.kind)
    env = KINDS[KnobKind.ENV].prefix or ""
    if name.startswith(env):
        var = name.removeprefix(env)
        if not _ENV_NAME.match(var):
            raise KnobError(f"knob {text!r}: {var!r} is not an environment variable name")
        return Knob(KnobKind.ENV, var)
    flag = canonical_name("--" + name.lstrip("-"))
    if not _FLAG_NAME.match(flag):
        raise KnobError(f"knob {text!r}: not a vLLM flag name (letters, digits and dashes)")
    if flag in _FIXED_FLAGS:
        raise KnobError(f"knob {text!r}: a tune keeps --{flag} fixed ({_FIXED_FLAGS[flag]})")
    if flag in SWITCHES:
        raise KnobError(
            f"knob {text!r}: --{flag} is an on/off switch; make a copy of the profile with it and A/B them",
        )
    return Knob(KnobKind.FLAG, flag)


def parse_vary(text: str) -> Vary:
    """``KNOB=V1,V2,…`` → :class:`Vary`; a clear error for a missing ``=``, no values or repeats."""
    if "=" not in text:
        raise KnobError(
            f"--vary {text!r}: expected KNOB=V1,V2,… (e.g. num_speculative_tokens=1,2,3 or power=230,290)"
        )
    head, _, tail = text.partition("=")
    knob = parse_knob(head)
    values = tuple(v.strip() for v in tail.split(",") if v.strip())
    if not values:
        raise KnobError(f"--vary {text!r}: give at least one value after '='")
    if len(set(values)) != len(values):
        raise KnobError(f"--vary {text!r}: a value is given twice")
    if len(values) > MAX_VALUES:
        raise KnobError(f"--vary {text!r}: {len(values)} values; at most {MAX_VALUES} per knob")
    _check_values(knob, values, text)
    return Vary(knob, values)


def _check_values(knob: Knob, values: tuple[str, ...], text: str) -> None:
    for value in values:
        knob.spec.check(knob.name, value, text)


def check_knob_for(profile: Profile, knob: Knob) -> None:
    """Refuse a knob the profile cannot take (no speculative config, no Docker image)."""
    knob.spec.check_profile(profile, knob.name)


def apply_setting(profile: Profile, setting: Setting) -> Profile:
    """The profile with one server setting applied (GPU settings leave it as it is)."""
    return setting.knob.spec.apply(profile, setting.knob.name, setting.value)


def apply_settings(profile: Profile, settings: tuple[Setting, ...]) -> Profile:
    """The profile with every server setting of a trial applied, in order."""
    for setting in settings:
        profile = apply_setting(profile, setting)
    return profile


def current_value(profile: Profile, knob: Knob) -> str | None:
    """What the profile itself has for a knob (None when unset, or a clock lock, which it cannot hold)."""
    return knob.spec.current(profile, knob.name)
