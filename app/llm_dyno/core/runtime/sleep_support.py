"""Is vLLM's sleep mode there? A profile's option, and the build's own answer.

Sleep mode exists only where vLLM's platform has it (``current_platform.is_sleep_mode_available()``:
CUDA, ROCm and XPU; ``vllm/config/model.py`` refuses ``--enable-sleep-mode`` elsewhere), so vLLM for
CPU has none. :func:`sleep_support` asks a process profile's own Python in a subprocess with a deadline
(the answer kept per interpreter in the cache folder); a Docker image is taken for a CUDA build and the
server's answer tells. A process plan that asks for sleep mode its build lacks carries a warning
(:func:`sleep_warning`) and its launch is refused (:func:`refuse_without_sleep_mode`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from llm_dyno.core.atomic import atomic_write_text
from llm_dyno.core.errors import DynoError
from llm_dyno.core.paths import cache_dir
from llm_dyno.core.runtime.base import LaunchPlan
from llm_dyno.core.runtime.launch_spec import PlanWarning, ProcessSpec, WarningKind

SLEEP_FLAG = "--enable-sleep-mode"
DEV_MODE_ENV = "VLLM_SERVER_DEV_MODE"
PROBE_TIMEOUT_S = 90.0  # importing vllm.platforms on a busy machine
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_PROBE = (
    "from vllm.platforms import current_platform as p\n"
    "print(repr((str(p.device_type), bool(p.is_sleep_mode_available()))))\n"
)


class SleepError(DynoError):
    """A sleep or wake could not be done (no sleep mode, the server refused, no answer)."""


def sleep_enabled(plan: LaunchPlan) -> bool:
    """Whether the plan's server was launched with sleep mode (the profile's option or the flag)."""
    return plan.profile.sleep_mode or SLEEP_FLAG in plan.profile.args


# ---- is sleep mode there? --------------------------------------------------------------------
@dataclass(frozen=True)
class SleepSupport:
    """Whether a build has sleep mode: True, False, or None (not known before the server answers),
    and why."""

    available: bool | None
    reason: str


def _python_of(executable: str, path: str | None = None) -> str | None:
    """The Python that runs ``executable`` (itself, or the interpreter its ``#!`` line names)."""
    found = shutil.which(executable, path=path)
    if found is None:
        return None
    if _PYTHON.match(Path(found).name):
        return found
    try:
        with open(found, "rb") as fh:
            first = fh.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env" and len(words) > 1:
        return shutil.which(words[1])
    return words[0] if _PYTHON.match(Path(words[0]).name) else None


def _probe_cache() -> Path:
    return cache_dir() / "sleep-support.json"


def probe_python(python: str, *, timeout_s: float = PROBE_TIMEOUT_S) -> SleepSupport:
    """Ask ``python``'s vLLM whether its platform has sleep mode (``current_platform
    .is_sleep_mode_available()``), in a subprocess bounded by ``timeout_s``. The answer is kept per
    interpreter (path and modification time) in the cache folder."""
    try:
        stamp = f"{python}:{os.stat(python).st_mtime_ns}"
    except OSError as exc:
        return SleepSupport(False, f"{python} cannot be read ({exc.strerror}): no vLLM to ask")
    cache = _probe_cache()
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        kept = json.loads(cache.read_text())[stamp]
        available = kept["available"]
        return SleepSupport(available if isinstance(available, bool) else None, str(kept["reason"]))
    try:
        done = subprocess.run(  # noqa: S603 - an argument list, no shell
            [python, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            env={**os.environ, "VLLM_LOGGING_LEVEL": "ERROR"},
        )
    except subprocess.TimeoutExpired:
        return SleepSupport(None, f"{python} did not say within {timeout_s:g} s whether it has sleep mode")
    except OSError as exc:
        return SleepSupport(False, f"{python} cannot run ({exc.strerror})")
    lines = [line for line in done.stdout.splitlines() if line.startswith("(")]
    m = re.fullmatch(r"\('([^']*)', (True|False)\)", lines[-1]) if lines else None
    if m is None:
        tail = (done.stderr.strip().splitlines() or ["no answer"])[-1][:200]
        return SleepSupport(None, f"{python} has no vLLM to ask ({tail}); the server's answer tells")
    device, has = m.group(1), m.group(2) == "True"
    support = SleepSupport(
        has,
        f"vLLM's {device} platform has sleep mode"
        if has
        else f"this vLLM build runs on {device}, which has no sleep mode (vLLM has it on CUDA, ROCm "
        "and XPU only, and refuses --enable-sleep-mode elsewhere)",
    )
    with contextlib.suppress(OSError, ValueError):
        kept_all = json.loads(cache.read_text()) if cache.exists() else {}
        kept_all = kept_all if isinstance(kept_all, dict) else {}
        kept_all[stamp] = asdict(support)
        cache.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(cache, json.dumps(kept_all, indent=1))
    return support


def sleep_support(plan: LaunchPlan) -> SleepSupport:
    """Whether the plan's build has sleep mode: a process server's Python is asked; a Docker image
    is taken for a CUDA build (the server's answer to the sleep request tells)."""
    if not isinstance(plan.spec, ProcessSpec):
        return SleepSupport(None, "a Docker image: taken for a CUDA build; its server's answer tells")
    python = _python_of(plan.spec.argv[0], plan.spec.env.get("PATH") or os.environ.get("PATH"))
    if python is None:
        return SleepSupport(None, f"{plan.spec.argv[0]!r} is not a Python program that could be asked")
    return probe_python(python)


def sleep_warning(plan: LaunchPlan) -> PlanWarning | None:
    """The plan warning of a profile that asks for sleep mode where its build has none (a launch
    is then refused), or None."""
    if not sleep_enabled(plan):
        return None
    support = sleep_support(plan)
    if support.available is not False:
        return None
    return PlanWarning(
        WarningKind.INVALID,
        f"sleep mode: {support.reason}; set sleep_mode: false (and drop {SLEEP_FLAG}) to launch",
    )


def refuse_without_sleep_mode(plan: LaunchPlan) -> None:
    """Refuse (:class:`SleepError`) to launch a plan that asks for sleep mode its build lacks."""
    warning = next((w for w in plan.warnings if w.text.startswith("sleep mode:")), None)
    warning = warning or sleep_warning(plan)
    if warning is not None:
        raise SleepError(
            f"cannot launch '{plan.profile.name}': {warning.text}",
            hint="sleep mode needs a CUDA (or ROCm / XPU) build of vLLM",
        )
