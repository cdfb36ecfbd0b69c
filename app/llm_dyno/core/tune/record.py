"""A tune's record: what it tried, every trial's benchmark, the GPU state, saved as JSON as it goes.

The record is written atomically (:func:`~llm_dyno.core.atomic.atomic_write_text`) to
``data_dir()/tunes/<id>.json`` after every trial, so a cancelled or crashed tune keeps what it measured.
The benchmarks themselves are also in the history (tags ``tune``, ``tune-<id>``, ``tune-trial-<k>``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from llm_dyno.core.atomic import atomic_write_text
from llm_dyno.core.bench.result import BenchResult
from llm_dyno.core.errors import DynoError
from llm_dyno.core.jsontext import loads_outside
from llm_dyno.core.paths import data_dir
from llm_dyno.core.tune.knobs import Knob, Setting, Vary
from llm_dyno.core.tune.trials import Trial

FORMAT = 1


def tunes_dir() -> Path:
    """Where tune records are kept."""
    return data_dir() / "tunes"


@dataclass(frozen=True)
class TrialRun:
    """One trial benchmarked once (one repeat): the result, its history id, the GPU temperature before."""

    trial: int
    repeat: int
    result: BenchResult | None
    result_id: int | None = None
    temp_before_c: float | None = None
    relaunched: bool = False
    error: str | None = None
    started_at: str = ""

    @property
    def completion_tokens(self) -> int:
        """Every token the trial generated (warm-ups included)."""
        return sum(r.completion_tokens for r in self.result.all_runs()) if self.result is not None else 0


@dataclass(frozen=True)
class TrialStarted:
    """Event: a trial begins (after its relaunch and GPU settings)."""

    trial: Trial
    repeat: int
    position: int  # 1…total
    total: int
    temp_before_c: float | None


@dataclass(frozen=True)
class TrialFinished:
    """Event: a trial's benchmark ended (or failed: ``run.error``)."""

    run: TrialRun
    position: int
    total: int


@dataclass(frozen=True)
class TuneMessage:
    """Event: a step of the tune in words (relaunching, setting the cap, restoring)."""

    message: str


@dataclass(frozen=True)
class TuneRecord:
    """Everything a tune did (see the module docstring). Frozen: the tune job builds a new record at each
    step (:meth:`with_originals`, :meth:`with_run`, :meth:`with_restore`, :meth:`finished`)."""

    tune_id: str
    profile: str
    suite: str
    varies: tuple[Vary, ...]
    trials: tuple[Trial, ...]
    repeats: int
    recipe: str | None = None
    gpus: tuple[int, ...] = ()
    started_at: str = ""
    finished_at: str | None = None
    runs: tuple[TrialRun, ...] = ()
    original_power_w: tuple[tuple[int, float], ...] = ()  # (GPU, watts) before the tune, in GPU order
    restored: tuple[str, ...] = ()  # what was put back, in words
    restore_errors: tuple[str, ...] = ()
    error: str | None = None
    cancelled: bool = False

    def with_originals(self, power_w: dict[int, float]) -> TuneRecord:
        """This record with the GPUs' power limits read before any change."""
        return replace(self, original_power_w=tuple(power_w.items()))

    def with_run(self, run: TrialRun) -> TuneRecord:
        """This record with one more benchmarked trial."""
        return replace(self, runs=(*self.runs, run))

    def with_restore(self, restored: tuple[str, ...], errors: tuple[str, ...]) -> TuneRecord:
        """This record with what was put back on the GPUs (in words) and what could not be."""
        return replace(
            self, restored=(*self.restored, *restored), restore_errors=(*self.restore_errors, *errors)
        )

    def finished(self, at: str, *, cancelled: bool = False, error: str | None = None) -> TuneRecord:
        """This record as the tune ended at ``at`` (cancelled or failed with ``error`` when so)."""
        return replace(
            self,
            finished_at=at,
            cancelled=self.cancelled or cancelled,
            error=error if error is not None else self.error,
        )

    def trial(self, index: int) -> Trial:
        """A trial by its number."""
        return next(t for t in self.trials if t.index == index)

    def runs_of(self, index: int) -> list[TrialRun]:
        """A trial's repeats, in order."""
        return [r for r in self.runs if r.trial == index]

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the file's layout)."""
        return {
            "format": FORMAT,
            "kind": "tune",
            "id": self.tune_id,
            "profile": self.profile,
            "suite": self.suite,
            "recipe": self.recipe,
            "varies": [
                {"knob": v.knob.label, "kind": v.knob.kind.value, "values": list(v.values)}
                for v in self.varies
            ],
            "trials": [
                {"trial": t.index, "settings": {s.knob.label: s.value for s in t.settings}}
                for t in self.trials
            ],
            "repeats": self.repeats,
            "gpus": list(self.gpus),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "original_power_w": {str(k): v for k, v in self.original_power_w},
            "restored": list(self.restored),
            "restore_errors": list(self.restore_errors),
            "error": self.error,
            "cancelled": self.cancelled,
            "runs": [_run_dict(r) for r in self.runs],
        }

    def save(self, path: Path) -> None:
        """Write the record atomically (a kill leaves the old or the new file, whole)."""
        atomic_write_text(path, json.dumps(self.to_dict(), indent=1, default=str) + "\n")


def _run_dict(r: TrialRun) -> dict[str, Any]:
    return {
        "trial": r.trial,
        "repeat": r.repeat,
        "result_id": r.result_id,
        "temp_before_c": r.temp_before_c,
        "relaunched": r.relaunched,
        "error": r.error,
        "started_at": r.started_at,
        "completion_tokens": r.completion_tokens,
        "result": r.result.to_dict() if r.result is not None else None,
    }


def record_from_dict(data: dict[str, Any]) -> TuneRecord:
    """A record read back from its JSON (:class:`DynoError` for a file that is not one)."""
    try:
        varies = tuple(
            Vary(Knob.from_label(v["knob"], v["kind"]), tuple(v["values"])) for v in data["varies"]
        )
        knobs = {v.knob.label: v.knob for v in varies}
        trials = tuple(
            Trial(int(t["trial"]), tuple(Setting(knobs[k], str(val)) for k, val in t["settings"].items()))
            for t in data["trials"]
        )
        runs = tuple(
            TrialRun(
                int(r["trial"]),
                int(r["repeat"]),
                BenchResult.from_dict(r["result"]) if r.get("result") else None,
                r.get("result_id"),
                r.get("temp_before_c"),
                bool(r.get("relaunched")),
                r.get("error"),
                r.get("started_at", ""),
            )
            for r in data["runs"]
        )
        return TuneRecord(
            str(data["id"]),
            str(data["profile"]),
            str(data["suite"]),
            varies,
            trials,
            int(data["repeats"]),
            recipe=data.get("recipe"),
            gpus=tuple(data.get("gpus", ())),
            started_at=data.get("started_at", ""),
            finished_at=data.get("finished_at"),
            runs=runs,
            original_power_w=tuple((int(k), float(v)) for k, v in data.get("original_power_w", {}).items()),
            restored=tuple(str(x) for x in data.get("restored", [])),
            restore_errors=tuple(str(x) for x in data.get("restore_errors", [])),
            error=data.get("error"),
            cancelled=bool(data.get("cancelled")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise DynoError(f"not a tune record: {type(exc).__name__}: {exc}") from None


def load_record(path: Path) -> TuneRecord:
    """Read a saved tune record."""
    try:
        data = loads_outside(path.read_text(encoding="utf-8"), "the file")
    except (OSError, ValueError) as exc:
        raise DynoError(f"{path}: cannot read the tune record: {exc}") from None
    if not isinstance(data, dict) or data.get("kind") != "tune":
        raise DynoError(f"{path}: not a tune record")
    return record_from_dict(data)
