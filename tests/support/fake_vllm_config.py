"""A stand-in vLLM install for the diagnosis's key check: a venv-like folder whose ``bin/python`` runs
this interpreter with a ``vllm`` package whose ``vllm.config.SpeculativeConfig`` has the fields given
(what a real build lists when asked), and a ``bin/vllm`` beside it. Nothing in it can serve."""

from __future__ import annotations

import sys
from pathlib import Path

_CONFIG = """\
import dataclasses, time
time.sleep({hang_s})
SpeculativeConfig = dataclasses.make_dataclass("SpeculativeConfig", [(f, object, None) for f in {fields!r}])
"""


def fake_vllm(
    root: Path, fields: tuple[str, ...], *, version: str = "0.99.0+fake", hang_s: float = 0
) -> Path:
    """Make the install under ``root``; return its ``bin/vllm`` (``hang_s``: importing the config
    takes that long, for a build that does not answer)."""
    package = root / "site" / "vllm"
    (package / "config").mkdir(parents=True)
    (package / "__init__.py").write_text(f"__version__ = {version!r}\n")
    (package / "config" / "__init__.py").write_text(_CONFIG.format(fields=fields, hang_s=hang_s))
    bindir = root / "bin"
    bindir.mkdir(parents=True)
    python = bindir / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{root / "site"}" exec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    vllm = bindir / "vllm"
    vllm.write_text("#!/bin/sh\necho 'a stand-in: it cannot serve' >&2\nexit 1\n")
    vllm.chmod(0o755)
    return vllm
