"""Apply a finding's suggested change to a renamed copy of a profile (the original is never touched)."""

from __future__ import annotations

from collections.abc import Iterable

from llm_dyno.core.diagnose.evidence import ChangeKind, Finding, ProfileChange
from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.edit import remove_flag, set_flag
from llm_dyno.core.profiles.model import PowerSettings, Profile

_NAME_MAX = 80


class ApplyError(DynoError):
    """A finding has no machine-applicable change, or it does not fit this profile."""


def fixed_name(profile: Profile, finding: Finding) -> str:
    """``<name> - fix <label>``: profile names allow no parentheses or colons, so this spelling."""
    suffix = f" - fix {finding.fix_label or finding.id}"
    return (profile.name[: _NAME_MAX - len(suffix)] + suffix).strip()


def free_name(base: str, taken: Iterable[str]) -> str:
    """``base``, or ``base 2``, ``base 3``… whichever is not in ``taken`` (the window and CLI rule)."""
    names = set(taken)
    if base not in names:
        return base
    n = 2
    while f"{base} {n}" in names:
        n += 1
    return f"{base} {n}"


def _apply(profile: Profile, change: ProfileChange) -> Profile:
    k = change.kind
    if k is ChangeKind.REMOVE_FLAG:
        return profile.with_changes(args=remove_flag(profile.args, change.key))
    if k is ChangeKind.SET_FLAG:
        return profile.with_changes(args=set_flag(profile.args, change.key, change.value or ""))
    if k is ChangeKind.SET_ENV:
        return profile.with_changes(env={**profile.env, change.key: change.value or ""})
    if k is ChangeKind.SET_POWER_LIMIT:
        power = profile.power or PowerSettings()
        return profile.with_changes(power=power.model_copy(update={"limit_w": float(change.value or 0)}))
    if profile.docker is None:
        raise ApplyError(f"'{change.describe()}' needs a container profile; {profile.name!r} runs a process")
    if k is ChangeKind.ADD_VOLUME:
        volumes = (*profile.docker.volumes, change.value or "")
        return profile.with_changes(docker=profile.docker.model_copy(update={"volumes": volumes}))
    return profile.with_changes(docker=profile.docker.model_copy(update={"image": change.value}))


def apply_finding(profile: Profile, finding: Finding, *, name: str | None = None) -> Profile:
    """A copy of ``profile`` named ``name`` (default :func:`fixed_name`) with the finding's changes made."""
    if not finding.changes:
        raise ApplyError(
            f"finding {finding.id!r} has no change that can be applied automatically",
            hint=finding.advice,
        )
    out = profile
    for change in finding.changes:
        out = _apply(out, change)
    return out.with_changes(name=name or fixed_name(profile, finding))
