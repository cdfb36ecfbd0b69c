"""A GPU's compute capability from its name, for advice that depends on the card (attention backends).

Datasheet values (NVIDIA's CUDA GPUs list, developer.nvidia.com/cuda-gpus); names as NVML reports them
(``NVIDIA GeForce RTX 3090``) or as a reference writes them. Most specific patterns first.
"""

from __future__ import annotations

import re

_TABLE: tuple[tuple[str, tuple[int, int]], ...] = (
    (r"rtx 50\d\d|rtx pro 6000 blackwell", (12, 0)),
    (r"\bb200\b|\bgb200\b|\bb100\b", (10, 0)),
    (r"\bgb10\b", (12, 1)),
    (r"\bh100\b|\bh200\b|\bgh200\b|\bh800\b", (9, 0)),
    (r"rtx 40\d\d|\bl40s?\b|\bl4\b|rtx 6000 ada|rtx [245]000 ada", (8, 9)),
    (r"\ba100\b|\ba30\b|\ba800\b", (8, 0)),
    (r"rtx 30\d\d|\ba10g?\b|\ba40\b|rtx a[2456]000|\ba16\b|\ba2\b", (8, 6)),
    (r"titan rtx|rtx 20\d\d|\bt4\b|quadro rtx", (7, 5)),
    (r"\bv100\b", (7, 0)),
)


def compute_capability(gpu_name: str | None) -> tuple[int, int] | None:
    """(major, minor) for a GPU name, or None when the table does not know it."""
    if not gpu_name:
        return None
    name = re.sub(r"\b(nvidia|geforce)\b", " ", gpu_name.lower())
    name = re.sub(r"[-_]", " ", name)
    return next((cc for pattern, cc in _TABLE if re.search(pattern, name)), None)
