"""Read and set a GPU's power limit, and put back the one it had before.

Setting needs root. The order of attempts: validate against NVML's constraints (refuse with the
allowed range), call ``nvmlDeviceSetPowerManagementLimit`` directly (works as root), and on
``NVML_ERROR_NO_PERMISSION`` run the privileged helper through ``pkexec`` (an argument list, never a
shell string). The first limit changed is remembered in ``data_dir()/power/previous.json`` so that
:func:`restore_power_limit` can put it back; a limit set by NVML does not survive a reboot anyway.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_dyno.core.atomic import atomic_write_text
from llm_dyno.core.errors import DynoError
from llm_dyno.core.paths import data_dir
from llm_dyno.core.telemetry.nvml import Nvml, nvml

HELPER_ENV = "LLM_DYNO_POWER_HELPER"
# Where the helper is looked for: packaging/org.llmdyno.power.policy names each of these as the
# exec.path of an action (tests/packaging checks both lists agree), so pkexec authorises exactly these.
HELPER_PATHS = (
    "/usr/libexec/llm-dyno/llm-dyno-power-helper",
    "/usr/local/libexec/llm-dyno/llm-dyno-power-helper",
)

Runner = Callable[[list[str]], "subprocess.CompletedProcess[str]"]


class PowerLimitError(DynoError):
    """A power limit cannot be read, is out of range, or cannot be set."""


@dataclass(frozen=True)
class PowerLimit:
    """A GPU's power limit in watts: the current management limit, its default and allowed range,
    and the limit the driver actually enforces (lower when another limiter is active)."""

    gpu: int
    current_w: float
    default_w: float | None
    min_w: float | None
    max_w: float | None
    enforced_w: float | None
    uuid: str | None = None

    def check(self, watts: float) -> None:
        """Raise :class:`PowerLimitError` unless ``watts`` lies within the allowed range."""
        if self.min_w is None or self.max_w is None:
            raise PowerLimitError(f"GPU {self.gpu}: the driver does not report power limit constraints")
        if not self.min_w <= watts <= self.max_w:
            raise PowerLimitError(
                f"GPU {self.gpu}: {watts:g} W is outside the allowed range {self.min_w:g}–{self.max_w:g} W",
                hint=f"choose a limit between {self.min_w:g} and {self.max_w:g} W",
            )


def read_power_limit(gpu: int = 0, session: Nvml | None = None) -> PowerLimit:
    """The power limit of GPU ``gpu``; raises NvmlUnavailable without a driver."""
    r = (session or nvml()).read(gpu)
    if r.power_limit_w is None:
        raise PowerLimitError(f"GPU {gpu} ({r.name}): power management is not supported")
    return PowerLimit(
        gpu, r.power_limit_w, r.default_limit_w, r.min_limit_w, r.max_limit_w, r.enforced_limit_w, r.uuid
    )


def _trusted(path: Path) -> str | None:
    """Why ``path`` may not be run as root through pkexec (None: it may): it must be absolute, and
    it and every folder above it owned by root and writable by nobody else, or another user could
    swap the program that root runs. A sticky folder such as /tmp is fine: nobody else may replace
    what root owns in it."""
    if not path.is_absolute():
        return "not an absolute path"
    try:
        for part in (path, *path.parents):
            st = part.stat()
            if st.st_uid != 0:
                return f"{part} is not owned by root"
            sticky_dir = stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX
            if st.st_mode & 0o022 and not sticky_dir:
                return f"{part} is writable by others than root"
    except OSError as exc:
        return f"cannot be checked ({exc.strerror})"
    return None


def find_helper() -> Path | None:
    """The installed privileged helper, if any. ``LLM_DYNO_POWER_HELPER`` overrides the search, but
    only with a root-owned absolute path (:class:`PowerLimitError` otherwise: an environment
    variable must not choose what root runs); each path searched is one the polkit policy names."""
    override = os.environ.get(HELPER_ENV)
    if override:
        path = Path(override)
        if path.is_absolute() and not path.exists():
            return None  # named but not installed: the caller says how to install it
        problem = _trusted(path)
        if problem is not None:
            raise PowerLimitError(
                f"{HELPER_ENV}={override} is refused: {problem}",
                hint="install the helper root-owned (e.g. /usr/libexec/llm-dyno/) or unset the variable",
            )
        return path if os.access(path, os.X_OK) else None
    for c in HELPER_PATHS:
        if os.access(c, os.X_OK):
            return Path(c)
    return None


def helper_command(helper: Path, action: str, gpu: int, watts: int | None = None) -> list[str]:
    """The pkexec argument list for the helper: ``set GPU WATTS`` or ``reset GPU``."""
    if action == "set":
        if watts is None:
            raise ValueError("set needs watts")
        return ["pkexec", str(helper), "set", str(int(gpu)), str(int(watts))]
    if action == "reset":
        return ["pkexec", str(helper), "reset", str(int(gpu))]
    raise ValueError(f"unknown helper action {action!r}")


def _previous_file() -> Path:
    return data_dir() / "power" / "previous.json"


_PREVIOUS_MAX_BYTES = 64 * 1024  # a limit for each of a few GPUs fits in a few hundred bytes


def remembered_limits() -> dict[str, Any]:
    """What ``previous.json`` holds: ``{"<gpu>": {"watts": W, "uuid": …}}`` (empty when none).
    :class:`PowerLimitError` naming the file and the entry when it does not read (garbage, too large,
    nested too deep, an entry of the wrong type): nothing is changed on the strength of a damaged file."""
    path = _previous_file()
    damaged = f"{path}: the remembered power limits are damaged"
    hint = f"delete {path} (`power reset` then restores each GPU's default limit)"
    try:
        with path.open("rb") as fh:
            raw = fh.read(_PREVIOUS_MAX_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise PowerLimitError(f"{path}: cannot read the remembered power limits: {exc.strerror}") from None
    if len(raw) > _PREVIOUS_MAX_BYTES:
        raise PowerLimitError(f"{damaged}: larger than {_PREVIOUS_MAX_BYTES} bytes", hint=hint)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # RecursionError: [[[[…]]]] nested too deep
        raise PowerLimitError(
            f"{damaged}: not JSON ({type(exc).__name__}: {str(exc)[:80]})", hint=hint
        ) from None
    if not isinstance(data, dict):
        raise PowerLimitError(f"{damaged}: not an object of GPU entries", hint=hint)
    for gpu, entry in data.items():
        watts = entry.get("watts") if isinstance(entry, dict) else None
        ok = (
            gpu.isascii()
            and gpu.isdigit()
            and isinstance(watts, int | float)
            and not isinstance(watts, bool)
            and 0 < watts < 100_000
            and isinstance(entry.get("uuid"), str | None)
        )
        if not ok:
            raise PowerLimitError(
                f'{damaged}: entry "{gpu[:20]}" is not {{"watts": W, "uuid": "…"}} for a GPU index', hint=hint
            )
    return data


def _remember(limit: PowerLimit) -> None:
    data = remembered_limits()
    # Keep the first one: after several changes, "reset" goes back to where the user started.
    data.setdefault(str(limit.gpu), {"watts": limit.current_w, "uuid": limit.uuid})
    atomic_write_text(_previous_file(), json.dumps(data, indent=2, sort_keys=True) + "\n")


def _forget(gpu: int) -> None:
    data = remembered_limits()
    if data.pop(str(gpu), None) is not None:
        atomic_write_text(_previous_file(), json.dumps(data, indent=2, sort_keys=True) + "\n")


def _default_runner(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)  # noqa: S603


def _apply(gpu: int, watts: float, session: Nvml, runner: Runner, helper_action: str) -> str:
    """Set the limit through NVML, else through the helper. Returns how it was done."""
    lib = session.ensure()
    handle = session.handle(gpu)
    try:
        lib.nvmlDeviceSetPowerManagementLimit(handle, round(watts * 1000))
        return "nvml"
    except lib.NVMLError as exc:
        if not isinstance(exc, lib.NVMLError_NoPermission):
            raise PowerLimitError(f"GPU {gpu}: NVML refused the power limit: {exc}") from exc
    helper = find_helper()
    if helper is None or shutil.which("pkexec") is None:
        raise PowerLimitError(
            f"GPU {gpu}: setting a power limit needs root (NVML: no permission)",
            hint="run as root (sudo llm-dyno power …), or install the privileged helper "
            "(packaging/llm-dyno-power-helper into /usr/libexec/llm-dyno/ and "
            "packaging/org.llmdyno.power.policy into /usr/share/polkit-1/actions/) and pkexec",
        )
    cmd = helper_command(helper, helper_action, gpu, None if helper_action == "reset" else round(watts))
    done = runner(cmd)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout or "").strip()[:300]
        raise PowerLimitError(f"GPU {gpu}: the power helper failed (exit {done.returncode}): {detail}")
    return "helper"


def set_power_limit(
    gpu: int, watts: float, *, session: Nvml | None = None, runner: Runner = _default_runner
) -> PowerLimit:
    """Set GPU ``gpu``'s power limit to ``watts`` and return the limit read back afterwards.

    Refuses values outside the constraints before touching anything; remembers the limit in force
    before the first change so that :func:`restore_power_limit` can put it back.
    """
    s = session or nvml()
    before = read_power_limit(gpu, s)
    before.check(watts)
    if abs(before.current_w - watts) < 0.5:
        return before
    _remember(before)
    _apply(gpu, watts, s, runner, "set")
    return read_power_limit(gpu, s)


def set_power_limits(
    gpus: tuple[int, ...], watts: float, *, session: Nvml | None = None, runner: Runner = _default_runner
) -> tuple[PowerLimit, ...]:
    """Give each of ``gpus`` the same limit (tensor-parallel GPUs run in lock step) and read them back.

    Every GPU's range is checked before any is changed, so a value that one GPU refuses changes none.
    """
    s = session or nvml()
    for gpu in gpus:
        read_power_limit(gpu, s).check(watts)
    return tuple(set_power_limit(gpu, watts, session=s, runner=runner) for gpu in gpus)


def restore_power_limit(
    gpu: int, *, session: Nvml | None = None, runner: Runner = _default_runner
) -> PowerLimit:
    """Put back the limit remembered before the first change (the default when none was)."""
    s = session or nvml()
    now = read_power_limit(gpu, s)
    remembered = remembered_limits().get(str(gpu))
    target = float(remembered["watts"]) if remembered else now.default_w
    if target is None:
        raise PowerLimitError(f"GPU {gpu}: no remembered limit and no default limit to restore")
    if abs(now.current_w - target) >= 0.5:
        now.check(target)
        _apply(gpu, target, s, runner, "set" if remembered else "reset")
        now = read_power_limit(gpu, s)
    _forget(gpu)
    return now


def control_unavailable_reason(gpu: int = 0) -> str | None:
    """Why power limits cannot be set here (None when they can): no driver, or neither root nor helper."""
    try:
        read_power_limit(gpu)
    except DynoError as exc:
        return f"Power control is unavailable: {exc.message}"
    if os.geteuid() == 0:
        return None
    try:
        helper = find_helper()
    except PowerLimitError as exc:
        return f"Power control is unavailable: {exc.message}"
    if helper is None:
        return (
            "Setting a power limit needs root or the privileged helper "
            "(packaging/llm-dyno-power-helper with pkexec)."
        )
    return None
