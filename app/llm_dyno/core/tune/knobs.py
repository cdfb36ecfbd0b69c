"""The knobs a tune can turn, how ``--vary KNOB=V1,V2`` reads, and how a setting changes a profile.

A knob is a vLLM flag (any ``--flag``; ``num_speculative_tokens`` inside ``--speculative-config``), an
environment value (``env:NAME``), the Docker image (``image``), or one of the GPU's own settings: the
power cap (``power``, W) and a locked SM or memory clock (``sm_clock`` / ``mem_clock``, MHz). Flags, env
and image change the server (a relaunch); the GPU settings do not.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import StrEnum

from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.edit import set_flag
from llm_dyno.core.profiles.flags import SWITCHES, canonical_name
from llm_dyno.core.profiles.model import Profile


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


GPU_KINDS = frozenset({KnobKind.POWER, KnobKind.SM_CLOCK, KnobKind.MEM_CLOCK})
_ALIASES = {
    "num_speculative_tokens": KnobKind.SPEC_TOKENS,
    "num-speculative-tokens": KnobKind.SPEC_TOKENS,
    "draft_depth": KnobKind.SPEC_TOKENS,
    "power": KnobKind.POWER,
    "power_cap": KnobKind.POWER,
    "power-cap": KnobKind.POWER,
    "sm_clock": KnobKind.SM_CLOCK,
    "sm-clock": KnobKind.SM_CLOCK,
    "mem_clock": KnobKind.MEM_CLOCK,
    "mem-clock": KnobKind.MEM_CLOCK,
    "memory_clock": KnobKind.MEM_CLOCK,
    "image": KnobKind.IMAGE,
}
# flags a tune must not vary: they decide where the server answers and who may use it
_FIXED_FLAGS = {
    "port": "the port the benchmark reaches the server on",
    "host": "the address the benchmark reaches the server on",
    "api-key": "the key the benchmark sends",
    "served-model-name": "the model name the benchmark asks for",
    "model": "the model (make a profile per model)",
    "speculative-config": "the whole speculative config (vary num_speculative_tokens instead)",
}
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
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FLAG_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")  # what vLLM's flags look like (the CSV header trusts it)
MAX_VALUES = 16


@dataclass(frozen=True)
class Knob:
    """One knob: its kind and, for a flag or an env value, its name (``max-num-batched-tokens``)."""

    kind: KnobKind
    name: str = ""

    @property
    def label(self) -> str:
        """How the knob reads in tables, charts and the CLI."""
        if self.kind is KnobKind.FLAG:
            return f"--{self.name}"
        if self.kind is KnobKind.ENV:
            return f"env:{self.name}"
        return self.kind.value

    @property
    def unit(self) -> str:
        """The unit of its values ("" when none)."""
        return {KnobKind.POWER: "W", KnobKind.SM_CLOCK: "MHz", KnobKind.MEM_CLOCK: "MHz"}.get(self.kind, "")

    @property
    def relaunch(self) -> bool:
        """Whether a new value needs a new server (a power cap or a clock lock does not)."""
        return self.kind not in GPU_KINDS


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
    if name in _ALIASES:
        return Knob(_ALIASES[name])
    if name.startswith("env:"):
        var = name[4:]
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
    whole = knob.kind in (KnobKind.SPEC_TOKENS, KnobKind.SM_CLOCK, KnobKind.MEM_CLOCK) or (
        knob.kind is KnobKind.FLAG and knob.name in _INT_FLAGS
    )
    for value in values:
        if whole and not (value.isdigit() and int(value) > 0):
            raise KnobError(f"--vary {text!r}: {value!r} is not a positive whole number")
        if knob.kind is KnobKind.POWER:
            try:
                ok = float(value) > 0
            except ValueError:
                ok = False
            if not ok:
                raise KnobError(f"--vary {text!r}: {value!r} is not a power in watts")
        if knob.kind is KnobKind.FLAG and knob.name == "kv-cache-dtype" and value not in KV_CACHE_DTYPES:
            raise KnobError(
                f"--vary {text!r}: {value!r} is not a KV-cache dtype vLLM knows",
                hint="choose from " + ", ".join(KV_CACHE_DTYPES),
            )


def check_knob_for(profile: Profile, knob: Knob) -> None:
    """Refuse a knob the profile cannot take (no speculative config, no Docker image)."""
    if knob.kind is KnobKind.SPEC_TOKENS and not profile.engine().speculative_config:
        raise KnobError(
            f"profile '{profile.name}' has no --speculative-config: num_speculative_tokens has nothing to "
            "change",
            hint='add e.g. --speculative-config \'{"method": "ngram", "num_speculative_tokens": 3}\'',
        )
    if knob.kind is KnobKind.IMAGE and profile.docker is None:
        raise KnobError(f"profile '{profile.name}' runs as a process, not in Docker: it has no image to vary")


def apply_setting(profile: Profile, setting: Setting) -> Profile:
    """The profile with one server setting applied (GPU settings leave it as it is)."""
    knob, value = setting.knob, setting.value
    if knob.kind is KnobKind.SPEC_TOKENS:
        spec = dict(profile.engine().speculative_config or {})
        spec["num_speculative_tokens"] = int(value)
        return profile.with_changes(args=set_flag(profile.args, "speculative-config", json.dumps(spec)))
    if knob.kind is KnobKind.FLAG:
        return profile.with_changes(args=set_flag(profile.args, knob.name, value))
    if knob.kind is KnobKind.ENV:
        return profile.with_changes(env={**profile.env, knob.name: value})
    if knob.kind is KnobKind.IMAGE and profile.docker is not None:
        return profile.with_changes(docker={**profile.docker.model_dump(), "image": value})
    return profile


def apply_settings(profile: Profile, settings: tuple[Setting, ...]) -> Profile:
    """The profile with every server setting of a trial applied, in order."""
    for setting in settings:
        profile = apply_setting(profile, setting)
    return profile


def current_value(profile: Profile, knob: Knob) -> str | None:
    """What the profile itself has for a server knob (None when unset or a GPU knob)."""
    from llm_dyno.core.profiles.edit import get_flag

    if knob.kind is KnobKind.SPEC_TOKENS:
        n = profile.engine().num_speculative_tokens
        return str(n) if n is not None else None
    if knob.kind is KnobKind.FLAG:
        return get_flag(profile.args, knob.name)
    if knob.kind is KnobKind.ENV:
        return profile.env.get(knob.name)
    if knob.kind is KnobKind.IMAGE:
        return profile.docker.image if profile.docker is not None else None
    if knob.kind is KnobKind.POWER and profile.power is not None and profile.power.limit_w is not None:
        return f"{profile.power.limit_w:g}"
    return None
