"""Model folders as a hub download has them, without the weights' bytes (for the memory estimate)."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def model_folder(dest: Path, config: dict[str, Any], tensors: dict[str, tuple[str, int]] | None = None,
                 total_size: int | None = None) -> Path:  # fmt: skip
    """A model folder as a hub download has it, without the weights' bytes: config.json, and a
    safetensors header (``tensors``: name → (dtype, bytes)) or an index with ``total_size``."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "config.json").write_text(json.dumps(config))
    if tensors is not None:
        header: dict[str, Any] = {}
        offset = 0
        for name, (dtype, nbytes) in tensors.items():
            header[name] = {"dtype": dtype, "shape": [nbytes], "data_offsets": [offset, offset + nbytes]}
            offset += nbytes
        raw = json.dumps(header).encode()
        (dest / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)  # header only
    if total_size is not None:
        index = {"metadata": {"total_size": total_size}}
        (dest / "model.safetensors.index.json").write_text(json.dumps(index))
    return dest


@contextmanager
def demo_model_folder_made() -> Iterator[Path]:
    """The CPU demo's model folder made where the setup builds it (in the test run's own HOME), for tests
    that plan the shipped ``cpu-demo`` as a user would after setup; removed afterwards."""
    from llm_dyno.core.demo.cpu_demo import demo_model_dir

    folder = demo_model_dir()
    folder.mkdir(parents=True)
    try:
        yield folder
    finally:
        folder.rmdir()
