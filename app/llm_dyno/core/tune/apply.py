"""Apply a tune's recommendation to a copy of the profile: ``NAME-tuned`` (or ``NAME-tuned-2`` …),
saved through the profile store beside the original, which is never overwritten."""

from __future__ import annotations

from llm_dyno.core.profiles.model import PowerSettings, Profile
from llm_dyno.core.profiles.store import ProfileStore
from llm_dyno.core.tune.knobs import KnobKind, Setting, apply_settings


def tuned_copy(profile: Profile, settings: tuple[Setting, ...], taken: set[str]) -> tuple[Profile, list[str]]:
    """The copy with the settings applied, a free name, and notes on what a profile cannot hold."""
    notes: list[str] = []
    copy = apply_settings(profile, tuple(s for s in settings if s.knob.relaunch))
    for s in settings:
        if s.knob.kind is KnobKind.POWER:
            kept = profile.power or PowerSettings()
            copy = copy.with_changes(
                power=kept.model_copy(update={"limit_w": float(s.value), "per_gpu_w": {}})
            )
        elif not s.knob.relaunch:
            notes.append(f"{s} is a GPU clock lock: a profile cannot hold it (lock it with the tune's value)")
    name, n = f"{profile.name}-tuned", 2
    while name in taken:
        name, n = f"{profile.name}-tuned-{n}", n + 1
    summary = ", ".join(str(s) for s in settings)
    text = f"Tuned copy of '{profile.name}': {summary}."
    return copy.with_changes(name=name, notes=(profile.notes + "\n\n" + text).strip()), notes


def save_tuned_copy(
    store: ProfileStore, profile: Profile, settings: tuple[Setting, ...]
) -> tuple[Profile, list[str]]:
    """Save the tuned copy as a new profile (never replacing one); returns it and the notes."""
    copy, notes = tuned_copy(profile, settings, set(store.load_all().names()))
    store.save(copy, replace=False)
    return copy, notes
