"""Writing an export the user asked for (``--csv FILE``, ``--json FILE``, the window's Export…): whole or
not at all, and always valid UTF-8.

``Path.write_text`` truncates the file first and encodes as it writes, so one character UTF-8 cannot
hold (a lone surrogate from a server's stream, an undecodable byte of a command line) left a 0-byte
file where the previous export was. Here the text is made valid first (:func:`valid_text`) and written
atomically; a target that is no regular file (``/dev/stdout``, a FIFO) is written as it is.
"""

from __future__ import annotations

import stat
from pathlib import Path

from llm_dyno.core.atomic import atomic_write_text
from llm_dyno.core.errors import DynoError, at
from llm_dyno.core.jsontext import valid_text


def write_export(path: Path, text: str, what: str = "the export") -> None:
    """Write ``text`` to ``path`` as UTF-8, replacing the file whole (the old one stays if anything
    fails); a link the user names is followed. Raises :class:`DynoError` naming the file."""
    text = valid_text(text)
    try:
        mode = path.stat().st_mode if path.exists() else None
        if mode is not None and not stat.S_ISREG(mode):
            with path.open("w", encoding="utf-8") as fh:  # a stream the user named: nothing to replace
                fh.write(text)
        else:
            atomic_write_text(path, text, follow_link=True)
    except OSError as exc:
        raise DynoError(
            f"cannot write {what}: {exc.strerror or exc}", where=at(path), hint="choose another file"
        ) from None
