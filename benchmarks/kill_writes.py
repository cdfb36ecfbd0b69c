"""Kill -9 writers in the middle of their writes, then check that nothing completed was lost or corrupt.

Two writers, each run ``--kills`` times (default 1,000):

- profiles: ``ProfileStore.save`` of a few profiles over and over, each save with a higher generation
  number in its notes;
- history: ``HistoryStore.add`` of benchmark results (with a profile snapshot) to one SQLite database.

Each round forks a child (cheap: the parent has already imported everything) that writes in a loop and
reports every *completed* write on a pipe; the parent SIGKILLs it after a random 0–``--max-ms`` ms and
checks: every profile file loads, each profile holds the last reported generation (or the one after it,
finished but not yet reported); the database opens, ``PRAGMA integrity_check`` says ok, and every
reported result is there and reads back whole. Runs on Linux / macOS (fork).

    .venv/bin/python benchmarks/kill_writes.py --kills 1000
    .venv/bin/python benchmarks/kill_writes.py --kills 200 --budget-s 60 --json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "app") not in sys.path:
    sys.path.insert(0, str(REPO / "app"))

from llm_dyno.core.atomic import remove_stale_temps  # noqa: E402
from llm_dyno.core.bench.result import BenchResult, BenchRun, PromptResult  # noqa: E402
from llm_dyno.core.bench.run_context import RunContext  # noqa: E402
from llm_dyno.core.history.store import HistoryStore  # noqa: E402
from llm_dyno.core.profiles.model import DockerSettings, Profile  # noqa: E402
from llm_dyno.core.profiles.store import ProfileStore  # noqa: E402

PROFILE_NAMES = ("kill-a", "kill-b", "kill-c")


@dataclass
class Figures:
    """What one writer's rounds showed."""

    writer: str
    kills: int = 0
    completed_writes: int = 0
    killed_mid_run: int = 0  # rounds where the child was still writing when killed
    stale_temps_removed: int = 0
    lost: int = 0
    corrupt: int = 0
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _profile(name: str, gen: int) -> Profile:
    return Profile(
        name=name,
        notes=f"generation {gen}\n" + "x" * 400,
        docker=DockerSettings(image="vllm/vllm-openai:latest", ports=("8000:8000",)),
        model="Qwen/Qwen3-8B",
        args=("--max-model-len", str(4096 + gen), "--gpu-memory-utilization", "0.9"),
    )


def _result(tag: str, profile: Profile) -> BenchResult:
    runs = [BenchRun("narrative", i, False, 0.1, 10.0, 500, 50.0, 51.0, "length") for i in range(5)]
    ctx = RunContext(
        started="2026-01-01T00:00:00+00:00",
        model=profile.model,
        profile=profile.to_dict(),
        profile_name=profile.name,
        extra={"tag": tag},
    )
    return BenchResult("community", ctx, [PromptResult("narrative", runs)])


# ---- children: write forever, report each completed write on fd ----------------------------------------


def _profile_child(folder: Path, start_gen: dict[str, int], fd: int) -> None:
    store = ProfileStore(folder)
    gens = dict(start_gen)
    while True:
        for name in PROFILE_NAMES:
            gens[name] += 1
            store.save(_profile(name, gens[name]))
            os.write(fd, f"{name} {gens[name]}\n".encode())


def _history_child(db: Path, round_no: int, fd: int) -> None:
    profile = _profile("kill-history", round_no)
    with HistoryStore(db) as history:
        i = 0
        while True:
            note = f"{round_no}-{i}"
            rid = history.add(_result(note, profile), note=note)
            os.write(fd, f"{rid} {note}\n".encode())
            i += 1


def _fork_and_kill(child: Callable[[int], None], max_ms: float, rng: random.Random) -> tuple[list[str], bool]:
    """Run ``child(fd)`` in a fork, SIGKILL it after a random delay; return its reported lines."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_fd)
        try:
            child(write_fd)
        finally:
            os._exit(3)
    os.close(write_fd)
    time.sleep(rng.uniform(0, max_ms) / 1000)
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    chunks = []
    while chunk := os.read(read_fd, 65536):
        chunks.append(chunk)
    os.close(read_fd)
    killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    return b"".join(chunks).decode().splitlines(), killed


def run_profiles(folder: Path, kills: int, max_ms: float, rng: random.Random, deadline: float) -> Figures:
    """Kill ``ProfileStore.save`` mid-write ``kills`` times; check every file after each kill."""
    fig = Figures("profiles")
    started = time.perf_counter()
    store = ProfileStore(folder)
    reported = dict.fromkeys(PROFILE_NAMES, 0)
    for _ in range(kills):
        if time.monotonic() > deadline:
            break
        lines, killed = _fork_and_kill(lambda fd: _profile_child(folder, reported, fd), max_ms, rng)
        fig.kills += 1
        fig.killed_mid_run += killed
        for line in lines:
            name, gen = line.split()
            reported[name] = int(gen)
            fig.completed_writes += 1
        fig.stale_temps_removed += remove_stale_temps(folder)
        report = store.load_all()
        if report.errors:
            fig.corrupt += len(report.errors)
            fig.problems.extend(str(e) for e in report.errors[:3])
        found = {sp.profile.name: sp.profile for sp in report.profiles}
        for name, gen in reported.items():
            profile = found.get(name)
            if gen == 0 and profile is None:
                continue
            if profile is None:
                fig.lost += 1
                fig.problems.append(f"{name}: missing after generation {gen} was reported")
                continue
            have = int(profile.notes.split()[1])
            if have < gen:
                fig.lost += 1
                fig.problems.append(f"{name}: has generation {have}, {gen} was reported saved")
            elif have > gen + 1:
                fig.corrupt += 1
                fig.problems.append(f"{name}: has generation {have}, only {gen} was reported")
            reported[name] = max(gen, have)  # a save that finished but was not reported counts
        if len(report.profiles) != len(found) or len(found) > len(PROFILE_NAMES):
            fig.corrupt += 1
            fig.problems.append(
                f"duplicate or extra profiles: {sorted(sp.path.name for sp in report.profiles)}"
            )
    fig.seconds = time.perf_counter() - started
    return fig


def run_history(db: Path, kills: int, max_ms: float, rng: random.Random, deadline: float) -> Figures:
    """Kill ``HistoryStore.add`` mid-write ``kills`` times; check the database after each kill."""
    fig = Figures("history")
    started = time.perf_counter()
    expected: dict[int, str] = {}
    for round_no in range(kills):
        if time.monotonic() > deadline:
            break
        lines, killed = _fork_and_kill(lambda fd, r=round_no: _history_child(db, r, fd), max_ms, rng)
        fig.kills += 1
        fig.killed_mid_run += killed
        new: dict[int, str] = {}
        for line in lines:
            rid, note = line.split()
            new[int(rid)] = note
        fig.completed_writes += len(new)
        expected.update(new)
        try:
            with HistoryStore(db) as history:
                check = history._conn.execute("PRAGMA integrity_check").fetchall()
                if check != [("ok",)]:
                    fig.corrupt += 1
                    fig.problems.append(f"round {round_no}: integrity_check {check[:3]}")
                for rid, note in new.items():
                    row = history._conn.execute("SELECT note FROM results WHERE id = ?", (rid,)).fetchone()
                    if row is None or row[0] != note:
                        fig.lost += 1
                        fig.problems.append(
                            f"round {round_no}: result {rid} ({note}) missing or changed: {row}"
                        )
                        continue
                    history.get(rid)  # the stored JSON reads back into a result
        except Exception as exc:  # an unreadable database is the failure this benchmark looks for
            fig.corrupt += 1
            fig.problems.append(f"round {round_no}: {type(exc).__name__}: {exc}")
    # a last full pass: every result ever reported is still there, whole
    with HistoryStore(db) as history:
        notes = dict(history._conn.execute("SELECT id, note FROM results").fetchall())
        for rid, note in expected.items():
            if notes.get(rid) != note:
                fig.lost += 1
                fig.problems.append(f"final: result {rid} ({note}) missing")
        if history._conn.execute("PRAGMA integrity_check").fetchall() != [("ok",)]:
            fig.corrupt += 1
            fig.problems.append("final integrity_check failed")
    fig.seconds = time.perf_counter() - started
    return fig


def main(argv: list[str] | None = None) -> int:
    """Command line; exit 1 when anything was lost or corrupt."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=1000, help="kills per writer (default 1000)")
    parser.add_argument("--max-ms", type=float, default=100.0, help="kill within this many ms of the fork")
    parser.add_argument("--budget-s", type=float, default=None, help="stop each writer after this long")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (default: a temp folder)")
    parser.add_argument("--writer", choices=["profiles", "history"], action="append")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="llm-dyno-kill-"))
    folder.mkdir(parents=True, exist_ok=True)
    figures = []
    for writer in args.writer or ["profiles", "history"]:
        deadline = time.monotonic() + (args.budget_s if args.budget_s else 1e9)
        if writer == "profiles":
            figures.append(run_profiles(folder / "profiles", args.kills, args.max_ms, rng, deadline))
        else:
            figures.append(run_history(folder / "history.db", args.kills, args.max_ms, rng, deadline))
    if args.json:
        print(json.dumps([asdict(f) for f in figures], indent=2))
    else:
        for f in figures:
            print(
                f"{f.writer:<9} kills {f.kills:>5}  completed writes {f.completed_writes:>6}  "
                f"lost {f.lost}  corrupt {f.corrupt}  stale temps removed {f.stale_temps_removed}  "
                f"{f.seconds:.1f}s"
            )
            for p in f.problems[:10]:
                print(f"  problem: {p}")
        print(f"work folder: {folder}")
    return 1 if any(f.lost or f.corrupt for f in figures) else 0


if __name__ == "__main__":
    sys.exit(main())
