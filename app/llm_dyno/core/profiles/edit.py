"""Edit a profile's engine flags in place, keeping the user's spelling and the order of the others.

A form that changes ``--max-model-len`` must not reorder the argument list or rewrite
``--max_model_len=4096`` as ``--max-model-len 4096``: the flags stay as the user wrote them and only the
value changes. New flags go at the end. All functions are pure: they take and return argv tuples.
"""

from __future__ import annotations

from collections.abc import Sequence

from llm_dyno.core.profiles.flags import SWITCHES, Flag, canonical_name, parse_args


def _occurrences(args: Sequence[str], name: str) -> list[Flag]:
    wanted = canonical_name("--" + name)
    return [f for f in parse_args(args).flags if f.name == wanted]


def _needs_equals(value: str) -> bool:
    # a value that looks like a flag must be glued to its flag, or argparse reads it as one
    if not value.startswith("-"):
        return False
    try:
        float(value)
    except ValueError:
        return True
    return False


def get_flag(args: Sequence[str], name: str) -> str | None:
    """The value of flag ``name`` (canonical, e.g. ``max-model-len``); None if absent or a switch.

    The last occurrence wins, as in argparse.
    """
    found = _occurrences(args, name)
    return found[-1].value if found else None


def has_flag(args: Sequence[str], name: str) -> bool:
    """Whether flag ``name`` appears in ``args`` (with or without a value)."""
    return bool(_occurrences(args, name))


def set_flag(args: Sequence[str], name: str, value: str) -> tuple[str, ...]:
    """Set flag ``name`` to ``value``.

    An existing flag keeps its place and spelling (``--x=1`` stays glued, ``--x 1`` stays split, ``-tp 1``
    stays short); only its last occurrence changes. A missing flag is appended as ``--name value``.
    """
    out = list(args)
    found = _occurrences(out, name)
    if not found:
        if _needs_equals(value):
            return (*out, f"--{name}={value}")
        return (*out, f"--{name}", value)
    flag = found[-1]
    i = flag.index
    if "=" in flag.spelled and flag.spelled.startswith("--"):
        head = flag.spelled.split("=", 1)[0]
        out[i] = f"{head}={value}"
    elif flag.value is None:
        # a flag written without its value: give it one right after the flag token
        if _needs_equals(value):
            out[i] = f"{flag.spelled}={value}"
        else:
            out.insert(i + 1, value)
    elif _needs_equals(value):
        out[i : i + 2] = [f"{flag.spelled}={value}"]
    else:
        out[i + 1] = value
    return tuple(out)


def remove_flag(args: Sequence[str], name: str) -> tuple[str, ...]:
    """Remove every occurrence of flag ``name`` (and its value tokens); other tokens keep their order."""
    drop: set[int] = set()
    for flag in _occurrences(args, name):
        drop.add(flag.index)
        if flag.value is not None and "=" not in flag.spelled and not flag.spelled.startswith("-O"):
            drop.add(flag.index + 1)
    return tuple(t for i, t in enumerate(args) if i not in drop)


def set_optional_flag(args: Sequence[str], name: str, value: str | None) -> tuple[str, ...]:
    """Set flag ``name`` to ``value``, or remove it when ``value`` is None or blank."""
    if value is None or not value.strip():
        return remove_flag(args, name)
    return set_flag(args, name, value.strip())


def get_switch(args: Sequence[str], name: str) -> bool | None:
    """State of an on/off switch: True for ``--name``, False for ``--no-name``, None when absent.

    When both appear, the later one wins.
    """
    on, off = _occurrences(args, name), _occurrences(args, "no-" + name)
    last_on = on[-1].index if on else -1
    last_off = off[-1].index if off else -1
    if last_on < 0 and last_off < 0:
        return None
    return last_on > last_off


def set_switch(args: Sequence[str], name: str, state: bool | None) -> tuple[str, ...]:
    """Turn switch ``name`` on (``--name``), off (``--no-name``) or back to the default (None: neither).

    A switch already written keeps its place: turning ``--enable-prefix-caching`` off writes
    ``--no-enable-prefix-caching`` where it stood. For a switch with no ``--no-`` form in vLLM
    (see :data:`SWITCHES`), False removes it.
    """
    if state is None:
        return remove_flag(remove_flag(args, name), "no-" + name)
    if get_switch(args, name) is state:
        return tuple(args)
    wanted = name if state else "no-" + name
    if not state and wanted not in SWITCHES:
        return remove_flag(args, name)
    other = "no-" + name if state else name
    existing = _occurrences(args, other)
    if existing:
        keep = existing[-1].index
        out = [f"--{wanted}" if i == keep else t for i, t in enumerate(args)]
        # drop any earlier contradicting spellings so the switch reads one way only
        drops = {f.index for f in existing[:-1]}
        return tuple(t for i, t in enumerate(out) if i not in drops)
    return (*args, f"--{wanted}")


def flag_groups(args: Sequence[str]) -> list[tuple[str | None, tuple[str, ...]]]:
    """Split ``args`` into groups: each flag with its value token(s), and each stray positional alone.

    Returns ``(canonical name or None for a positional, tokens)`` in order; joining the tokens gives
    ``args`` back.
    """
    parsed = parse_args(args)
    starts: dict[int, str | None] = {f.index: f.name for f in parsed.flags}
    starts.update({i: None for i, _ in parsed.positionals})
    order = sorted(starts)
    groups: list[tuple[str | None, tuple[str, ...]]] = []
    for n, i in enumerate(order):
        end = order[n + 1] if n + 1 < len(order) else len(args)
        groups.append((starts[i], tuple(args[i:end])))
    return groups


def replace_unmanaged(
    args: Sequence[str], managed: frozenset[str], new_groups: Sequence[Sequence[str]]
) -> tuple[str, ...]:
    """Replace the flags *not* in ``managed`` with ``new_groups``, keeping every managed flag in place.

    The n-th unmanaged group in ``args`` becomes the n-th new group, so editing one extra flag's value
    keeps the order; extra new groups are appended, missing ones dropped.
    """
    pending = [tuple(g) for g in new_groups if g]
    out: list[str] = []
    for name, tokens in flag_groups(args):
        if name is not None and name in managed:
            out.extend(tokens)
        elif pending:
            out.extend(pending.pop(0))
    for group in pending:
        out.extend(group)
    return tuple(out)
