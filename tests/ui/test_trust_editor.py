"""The profile editor over a hostile model folder: a config.json with Infinity, 200,000 levels of
nesting or a string size, and a FIFO named model.safetensors; the estimate says why there is none, the
window keeps drawing and nothing waits on the FIFO."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from llm_dyno.core.profiles.store import ProfileStore
from tests.ui.test_memory_fit_ui import TINY, _window


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ("Infinity", "config.json is not JSON: Infinity is no number a model config can hold"),
        ("deep", "config.json is nested too deep to be a model config"),
        ("string", "field 'num_attention_heads' should be a whole number, got str 'two'"),
        ("fifo", "cannot read the weights: it is a FIFO, not a regular file"),
    ],
)
def test_editor_refuses_impossible_model_files_and_keeps_drawing(  # type: ignore[no-untyped-def]
    qtbot, store: ProfileStore, tmp_path: Path, shape: str, message: str
) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    text = json.dumps(TINY)
    if shape == "Infinity":
        text = text.replace('"hidden_size": 128', '"hidden_size": Infinity')
    elif shape == "deep":
        text = text[:-1] + ', "x": ' + "[" * 200_000 + "]" * 200_000 + "}"
    elif shape == "string":
        text = text.replace('"num_attention_heads": 2', '"num_attention_heads": "two"')
    (folder / "config.json").write_text(text)
    if shape == "fifo":
        os.mkfifo(folder / "model.safetensors")
    else:
        (folder / "model.safetensors").write_bytes(b"")
    store.save(
        Profile(
            name="odd-model",
            runtime=Runtime.PROCESS,
            process=ProcessSettings(executable="vllm"),
            model=str(folder),
        )
    )
    window = _window(qtbot)
    started = time.monotonic()
    window.select_profile("odd-model")
    panel = window.editor.form.memory
    qtbot.waitUntil(lambda: panel.estimate is not None, timeout=10_000)
    assert time.monotonic() - started < 10
    assert panel.estimate is not None and message in (panel.estimate.problem or "")
    assert not panel.estimate.fits
    assert not window.grab().isNull()  # the window still draws
    window.editor.set_profile(None)
