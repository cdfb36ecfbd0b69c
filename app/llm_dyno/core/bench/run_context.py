"""The context a benchmark result ran in, as a typed record (the ``"context"`` object of its JSON).

What ran, where, on which software and hardware, when, and what the GPUs read around it. The JSON
keys are the contract other tools and older versions of the app read; :meth:`RunContext.to_dict`
writes them as they always were, and :meth:`RunContext.from_dict` reads any stored result: a key of
the wrong type reads as unknown (None), and keys this version does not know (written by a newer
one) are kept in ``extra`` and written back unchanged.

The stored ceiling (``"roofline"``) is :class:`StoredCeiling`; see :mod:`llm_dyno.core.bench.ceiling`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from pydantic import Field, ValidationError, model_validator

from llm_dyno.core.records import Record
from llm_dyno.core.telemetry.nvml import GpuReading, reading_from_dict


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _obj(value: Any) -> dict[str, Any] | None:
    return dict(value) if isinstance(value, dict) else None


def _readings(value: Any) -> tuple[GpuReading, ...]:
    if not isinstance(value, list):
        return ()
    out = []
    for item in value:
        if isinstance(item, dict):
            try:
                out.append(reading_from_dict(item))
            except TypeError:
                continue  # a reading stored by another version: skip it
    return tuple(out)


class PromptCeiling(Record):
    """One prompt's decode ceiling as stored with the result (the share of it the prompt reached).

    Stored by field (``model_dump``); ``model_validate`` reads any version's: a value of the wrong type
    reads as unknown, keys this version does not know are dropped, and one without its tokens per pass
    is refused (the stored ceiling then leaves the prompt out)."""

    mean_acceptance_length: float
    tokens_source: str | None = None  # where the tokens per pass came from (older results: unknown)
    tokens_assumed: bool = False
    ceiling_tps: float | None = None
    achieved_tps: float | None = None
    share: float | None = None
    problem: str | None = None
    engine_bytes_per_token: float | None = None
    engine_ceiling_tps: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _any_version(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        numbers = ("ceiling_tps", "achieved_tps", "share", "engine_bytes_per_token", "engine_ceiling_tps")
        return {
            "mean_acceptance_length": _num(data.get("mean_acceptance_length")),
            "tokens_source": _str(data.get("tokens_source")) or None,
            "tokens_assumed": bool(data.get("tokens_assumed")),
            **{k: _num(data.get(k)) for k in numbers[:3]},
            "problem": _str(data.get("problem")),
            **{k: _num(data.get(k)) for k in numbers[3:]},
        }


class StoredCeiling(Record):
    """The inputs of the decode ceiling (bytes read per pass, the GPU's bandwidth) and each prompt's
    figures, stored so the ceiling can be recomputed when the result is read back.

    Stored by field (``model_dump``); ``model_validate`` reads any version's and refuses one whose
    inputs are missing, malformed or not positive (:func:`stored_ceiling` then gives None); a prompt
    that does not read is left out."""

    weights_bytes: float = Field(gt=0)
    draft_bytes_per_pass: float = 0.0
    bandwidth_bytes_s: float = Field(gt=0)
    bandwidth_source: str
    prompts: dict[str, PromptCeiling] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _any_version(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        draft = _num(data.get("draft_bytes_per_pass"))
        stored = data.get("prompts")
        prompts = {}
        for name, item in stored.items() if isinstance(stored, dict) else ():
            try:
                prompts[str(name)] = PromptCeiling.model_validate(item)
            except ValidationError:
                continue  # a prompt stored without its tokens per pass: left out
        return {
            "weights_bytes": _num(data.get("weights_bytes")),
            "draft_bytes_per_pass": draft if draft is not None and draft > 0 else 0.0,
            "bandwidth_bytes_s": _num(data.get("bandwidth_bytes_s")),
            "bandwidth_source": _str(data.get("bandwidth_source")) or "stored",
            "prompts": prompts,
        }


def stored_ceiling(data: Any) -> StoredCeiling | None:
    """A stored ceiling read back; None when there is none or its inputs do not read."""
    if not isinstance(data, dict):
        return None
    try:
        return StoredCeiling.model_validate(data)
    except ValidationError:
        return None


# keys written only when they hold something (older results do not have them)
_OPTIONAL = ("gpus", "gpu_read_from", "gpu_before", "gpu_under_load", "rounds", "roofline")


@dataclass(frozen=True)
class RunContext:
    """Where and on what a result ran. None is "unknown" (an older result, a server that does not say,
    no GPU read). Filled in as the run goes on, each time as a new copy (``dataclasses.replace``):
    ``started``/``finished`` by the runner, the GPU fields by the bench job, ``power_limit_w`` by a
    sweep, ``rounds`` when rounds are merged, ``roofline`` after the run."""

    url: str | None = None
    model: str | None = None
    suite: str | None = None
    suite_definition: dict[str, Any] | None = None  # the suite as run (Suite.to_dict)
    profile_name: str | None = None
    profile: dict[str, Any] | None = None  # the profile's snapshot as run (Profile.to_dict)
    image: str | None = None
    image_digest: str | None = None
    vllm_version: str | None = None
    gpu: str | None = None
    driver: str | None = None
    power_limit_w: float | None = None
    host: str | None = None
    platform: str | None = None
    app_version: str | None = None
    started: str | None = None
    finished: str | None = None
    gpus: str | None = None  # which GPUs were read ("GPU 0", "GPUs 0+1"), None when none
    gpu_read_from: str | None = None  # "this machine (NVML)" / "container … (nvidia-smi)"
    gpu_before: tuple[GpuReading, ...] = ()
    gpu_under_load: tuple[GpuReading, ...] = ()
    rounds: int | None = None
    roofline: StoredCeiling | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # keys a newer version wrote, kept verbatim

    @property
    def device(self) -> str:
        """What the server ran on, for a listing: ``GPU <name>``, ``CPU`` for vLLM on the CPU (a vllm-cpu
        profile ran it), ``GPU not read`` when no GPU was read and the profile does not say."""
        if self.gpu:
            return f"GPU {self.gpu}"
        if self.profile:
            from pydantic import ValidationError

            from llm_dyno.core.profiles.model import Profile
            from llm_dyno.core.runtime.memory import is_cpu_profile

            try:
                if is_cpu_profile(Profile.model_validate(self.profile)):
                    return "CPU"
            except (ValidationError, ValueError, TypeError):
                pass  # an older or foreign snapshot: it cannot say
        return "GPU not read"

    @property
    def profile_label(self) -> str | None:
        """The profile's name, from the name or from the snapshot."""
        return self.profile_name or _str((self.profile or {}).get("name"))

    def to_dict(self) -> dict[str, Any]:
        """The stored JSON object (the optional keys only when they hold something)."""
        out: dict[str, Any] = dict(self.extra)
        for f in fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if f.name in _OPTIONAL and value in (None, ()):
                continue
            if f.name in ("gpu_before", "gpu_under_load"):
                value = [r.to_dict() for r in value]
            elif f.name == "roofline":
                value = value.model_dump(mode="json")
            out[f.name] = value
        return out

    @staticmethod
    def from_dict(data: Any) -> RunContext:
        """Read a stored context (any version's; wrong types read as unknown)."""
        data = data if isinstance(data, dict) else {}
        known = {f.name for f in fields(RunContext)} - {"extra"}
        return RunContext(
            url=_str(data.get("url")),
            model=_str(data.get("model")),
            suite=_str(data.get("suite")),
            suite_definition=_obj(data.get("suite_definition")),
            profile_name=_str(data.get("profile_name")),
            profile=_obj(data.get("profile")),
            image=_str(data.get("image")),
            image_digest=_str(data.get("image_digest")),
            vllm_version=_str(data.get("vllm_version")),
            gpu=_str(data.get("gpu")),
            driver=_str(data.get("driver")),
            power_limit_w=_num(data.get("power_limit_w")),
            host=_str(data.get("host")),
            platform=_str(data.get("platform")),
            app_version=_str(data.get("app_version")),
            started=_str(data.get("started")),
            finished=_str(data.get("finished")),
            gpus=_str(data.get("gpus")),
            gpu_read_from=_str(data.get("gpu_read_from")),
            gpu_before=_readings(data.get("gpu_before")),
            gpu_under_load=_readings(data.get("gpu_under_load")),
            rounds=_int(data.get("rounds")),
            roofline=stored_ceiling(data.get("roofline")),
            extra={k: v for k, v in data.items() if k not in known},
        )


__all__ = ["PromptCeiling", "RunContext", "StoredCeiling", "stored_ceiling"]
