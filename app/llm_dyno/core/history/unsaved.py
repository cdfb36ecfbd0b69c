"""A result the history could not store whole, kept as a JSON file so that nothing measured is lost."""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path

from llm_dyno.core.atomic import atomic_write_text
from llm_dyno.core.errors import DynoError
from llm_dyno.core.paths import data_dir
from llm_dyno.core.secrets import strip_credentials


def keep_unsaved(json_text: str, kind: str) -> Path | None:
    """Write ``json_text`` (a result's JSON, as ``bench --json`` writes it) to
    ``data_dir()/unsaved/<kind>-<time>.json``, else to the temporary folder when the data folder cannot
    be written; returns the file, None when neither could be written."""
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    text = strip_credentials(json_text) + "\n"  # as the history would have stored it
    for folder in (data_dir() / "unsaved", Path(tempfile.gettempdir()) / "llm-dyno-unsaved"):
        path = folder / f"{kind}-{stamp}.json"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, text)
        except (OSError, DynoError):  # a folder that cannot be written, a link in the way
            continue
        return path
    return None
