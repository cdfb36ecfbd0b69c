"""The recorders in tests/fixtures/nvml ran on a shared GPU: their guard must leave no pynvml function
that changes a GPU callable (checked against the installed nvidia-ml-py, in a process of its own)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

GUARD = Path(__file__).resolve().parents[2] / "fixtures" / "nvml"
CHECK = """
import inspect, pynvml, readonly_nvml
changing = [n for n in dir(pynvml) if n.startswith(readonly_nvml.CHANGING) and callable(getattr(pynvml, n))]
assert len(changing) > 40, changing  # set power limit, clocks, persistence, compute mode, ...
for name in changing:
    try:
        getattr(pynvml, name)(None, 1)
    except RuntimeError as exc:
        assert "must not be called" in str(exc), (name, exc)
    else:
        raise SystemExit(f"{name} was not blocked")
print(len(changing), "blocked", "nvmlDeviceSetPowerManagementLimit" in changing)
"""


def test_every_changing_nvml_function_is_blocked() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHECK], cwd=GUARD, capture_output=True, text=True, timeout=60,
        env={"PYTHONPATH": str(GUARD), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    count, word, has_power = done.stdout.split()
    assert word == "blocked" and int(count) > 40 and has_power == "True"
