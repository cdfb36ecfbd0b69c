"""An imported profile must load again: the text it is stored as is read back before it is kept.

The model bounds each value (``yamlio.MAX_VALUE_CHARS``), but the stored line also holds the key, the
indentation and the quoting (a value of quotes doubles in length), so a value just under the bound can
still make a line the loader refuses. Reading the text back is the one check that cannot drift.
"""

from __future__ import annotations

from typing import Any

from llm_dyno.core.errors import ImportFormatError, Location, ProfileError
from llm_dyno.core.profiles.model import Profile, profile_from_yaml


def _longest_value(data: Any, path: str = "") -> tuple[int, str]:
    """(length, dotted path) of the longest string in ``data``: the value that made a line too long."""
    if isinstance(data, str):
        return len(data), path
    children: list[tuple[str, Any]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            child = f"{path}.{key}" if path else str(key)
            children += [(child, value), (child, str(key))]  # a long key makes a long line too
    elif isinstance(data, (list, tuple)):
        children = [(f"{path}[{i}]", v) for i, v in enumerate(data)]
    best = (0, path)
    for child_path, value in children:
        best = max(best, _longest_value(value, child_path))
    return best


def require_reload(profile: Profile, where: Any) -> None:
    """Raise :class:`ImportFormatError` unless ``profile`` loads again from the text it is saved as.

    ``where(key)`` gives the source location of a profile field (``Draft.loc``).
    """
    try:
        profile_from_yaml(profile.to_yaml())
    except ProfileError as exc:
        length, path = _longest_value(profile.to_dict())
        key = path.split("[", 1)[0]
        loc = where(key) if callable(where) else Location(None)
        raise ImportFormatError(
            f"{path}: a value of {length:,} characters would be stored as a profile that does not load "
            f"again ({exc.message})",
            where=loc,
            hint="shorten it (long text belongs in a file of its own)",
        ) from None
