"""The profile index at 5,000 profiles: ``profile show``, ``profile list``, an import and the window's
opening, before and after, through the CLI in subprocesses.

    .venv/bin/python benchmarks/profile_index.py [--profiles 5000] [--repeats 3] [--before COMMIT]

The profiles are the shipped examples under 5,000 names, written into a temporary LLM_DYNO_HOME (its
files dated an hour back, as a folder that has been there a while). "before" is the app as it was at
``--before`` (default: the commit before the index came in), "after" the app at ``--after`` (default
HEAD: committed code, not a work tree other edits may be half-way through), each taken with ``git
archive COMMIT app resources`` into a temporary folder and run with ``PYTHONPATH`` pointing there.
"after" runs once with the index files deleted before each run (cold: the first run after an upgrade,
or a folder another program rewrote) and once with its index in place (warm: the common case). Each
measurement is a fresh process; the window's opening is ``llm-dyno --screenshot FILE`` (offscreen:
start, build, render, save, exit).
``llm-dyno --version`` is timed too: the interpreter's and the CLI's own start-up, which no index can
save. Reported: the median wall time of each and the ratio before / after. Bytecode is compiled first
for both trees (as an installed wheel has it).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "app"))
RESULTS = REPO / "benchmarks" / "results"
INDEX_FILES = (".index.json", ".index-data.json")
INDEX_COMMIT = "55d05f4"  # "Profile index: …"; its parent is the app without the index


def make_profiles(home: Path, count: int) -> Path:
    """``count`` profiles (the shipped examples under numbered names) in ``home``'s profile folder."""
    from llm_dyno.core.profiles.store import file_stem, shipped_profiles

    folder = home / "config" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    ships = shipped_profiles()
    old = time.time_ns() - 3600 * 1_000_000_000
    for i in range(count):
        p = ships[i % len(ships)]
        q = p.with_changes(name=f"{p.name}-{i:05d}")
        path = folder / (file_stem(q.name) + ".yaml")
        path.write_text(q.to_yaml(), encoding="utf-8")
        os.utime(path, ns=(old, old))
    return folder


def old_tree(commit: str, into: Path) -> Path:
    """The ``app`` folder of ``commit``, extracted under ``into`` with the ``resources`` it reads."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", commit, "app", "resources"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "app"


def timed(app: Path, home: Path, *args: str) -> float:
    """Seconds one ``python -m llm_dyno ARGS`` takes with ``app`` on the path (it must succeed)."""
    env = {
        **os.environ, "PYTHONPATH": str(app), "LLM_DYNO_HOME": str(home), "NO_COLOR": "1",
        "QT_QPA_PLATFORM": "offscreen",
    }  # fmt: skip
    env.pop("LLM_DYNO_DATA", None)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "llm_dyno", *args], env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"llm-dyno {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return took


def measure(app: Path, home: Path, folder: Path, tag: str, repeats: int, cold: bool, work: Path) -> dict:
    """Median seconds of each operation with ``app``; ``cold``: the index files deleted before each run."""
    serve = work / "serve.sh"
    serve.write_text("vllm serve org/imported-model --port 8300\n")
    ops = {
        "version": ("--version",),
        "show": ("profile", "show", "cpu-demo-00000"),
        "list": ("profile", "list"),
        "import": None,
        "window": ("--screenshot", str(work / f"{tag}.png")),
    }
    out: dict[str, float] = {}
    for op, args in ops.items():
        times = []
        for i in range(repeats):
            if cold:
                for name in INDEX_FILES:
                    (folder / name).unlink(missing_ok=True)
            if args is None:
                times.append(timed(app, home, "profile", "import", str(serve), "--name", f"imp-{tag}-{i}"))
            else:
                times.append(timed(app, home, *args))
        out[op] = statistics.median(times)
        print(f"  {tag:<12} {op:<8} {out[op]:7.2f} s  ({', '.join(f'{t:.2f}' for t in times)})", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", default=f"{INDEX_COMMIT}^", help="the commit to compare with")
    parser.add_argument("--after", default="HEAD", help="the commit measured (committed: not the work tree)")
    parser.add_argument("--keep", help="work in this folder (kept) instead of a temporary one")
    args = parser.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="llm-dyno-index-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        home = work / "home"
        folder = make_profiles(home, args.profiles)
        before_app = old_tree(args.before, work / "before")
        after_app = old_tree(args.after, work / "after")
        for tree in (before_app, after_app):
            compileall.compile_dir(str(tree), quiet=1)
        print(f"{args.profiles} profiles in {folder}; {args.repeats} runs of each", flush=True)
        rows = {
            "before": measure(before_app, home, folder, "before", args.repeats, False, work),
            "after, cold": measure(after_app, home, folder, "after-cold", args.repeats, True, work),
            "after": measure(after_app, home, folder, "after", args.repeats, False, work),
        }
        # the warm run's first call builds the index; its median is the index in place
        report(rows, args, os.cpu_count() or 0)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def report(rows: dict[str, dict[str, float]], args: argparse.Namespace, cpus: int) -> None:
    ops = list(rows["before"])
    lines = [
        f"Profile index: {args.profiles} profiles, median of {args.repeats} fresh processes each "
        f"({cpus} CPUs, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}); before = {args.before}, "
        f"after = {args.after}",
        "",
        f"{'operation':<9} " + " ".join(f"{k:>12}" for k in rows) + "   before/after  before/cold",
    ]
    for op in ops:
        b, cold, warm = rows["before"][op], rows["after, cold"][op], rows["after"][op]
        lines.append(
            f"{op:<9} "
            + " ".join(f"{rows[k][op]:>10.2f} s" for k in rows)
            + f"   {b / warm:>10.1f}x  {b / cold:>10.1f}x"
        )
    base = rows["after"]["version"]
    lines += [
        "",
        "Less the CLI's own start-up (`--version`, which no index can save):",
        *(
            f"  {op:<8} before {rows['before'][op] - rows['before']['version']:6.2f} s, after "
            f"{rows['after'][op] - base:6.2f} s"
            for op in ops
            if op != "version"
        ),
    ]
    text = "\n".join(lines) + "\n"
    print("\n" + text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "profile_index.txt").write_text(text, encoding="utf-8")
    (RESULTS / "profile_index.json").write_text(
        json.dumps({"profiles": args.profiles, **rows}, indent=1) + "\n"
    )


if __name__ == "__main__":
    main()
