"""Apply a tune's recommendation to a copy of the profile: ``NAME-tuned`` (or ``NAME-tuned-2`` …),
saved through the profile store beside the original, which is never overwritten."""

from __future__ import annotations

from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.profiles.store import ProfileStore
from llm_dyno.core.tune.knobs import Setting, apply_settings


def tuned_copy(profile: Profile, settings: tuple[Setting, ...], taken: set[str]) -> tuple[Profile, list[str]]:
    """The copy with the settings applied, a free name, and notes on what a profile cannot hold."""
    notes: list[str] = []
    copy = apply_settings(profile, tuple(s for s in settings if s.knob.relaunch))
    for s in (s for s in settings if not s.knob.relaunch):  # the server settings are applied above
        copy, note = s.knob.spec.keep(copy, s.knob.name, s.value)
        if note is not None:
            notes.append(note)
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
