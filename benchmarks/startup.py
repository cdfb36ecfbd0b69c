"""Cold start of the window against a bare PySide6 + pyqtgraph window, as same-run ratios.

    .venv/bin/python benchmarks/startup.py [--pairs 7] [--view dashboard] [--before DIR]

``--before DIR`` adds another version of the app in the same turns (C A B …): DIR holds its tree, e.g.
``git archive 7d84698 app resources profiles | tar -x -C DIR``, run with ``PYTHONPATH=DIR/app``.

A: ``python -m llm_dyno --screenshot FILE`` (start, build the window, render it, save the PNG, exit).
B: a bare PySide6 window that imports pyqtgraph, shows one QLabel, renders and saves it the same way.
They run in turns (A B A B …), each a fresh process, in the same environment (QT_QPA_PLATFORM=offscreen,
a fresh temporary LLM_DYNO_HOME per run, so no state carries over). Wall time is measured around the
child; peak RSS is the child's ``ru_maxrss`` from ``os.wait4``. Reported: medians and the median of the
per-pair ratios A/B (target: ≤ 1.5 for both). One discarded warm-up pair fills the page cache first.
The app's bytecode is compiled first (``compileall``, as installing a wheel does): where
PYTHONDONTWRITEBYTECODE is set, as on the shared dev machine, each run would otherwise recompile the
app's ~100 modules from source, a cost no installed copy pays.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

BARE = """
import sys
from PySide6.QtWidgets import QApplication, QLabel
import pyqtgraph  # noqa: F401  (the app plots with it: the bare window pays its import too)
app = QApplication(sys.argv[:1])
label = QLabel("LLM Dyno")
label.resize(1280, 800)
label.show()
for _ in range(5):
    app.processEvents()
ok = label.grab().save(sys.argv[1])
sys.exit(0 if ok else 1)
"""


def run_child(cmd: list[str], home: Path, app_path: str | None = None) -> tuple[float, float, float]:
    """Run ``cmd`` to the end; (wall seconds, peak RSS MiB, CPU seconds). Raises when it fails."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", LLM_DYNO_HOME=str(home))
    if app_path:
        env["PYTHONPATH"] = app_path
    env.pop("DOCKER_HOST", None)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{err[-2000:]}")
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime  # ru_maxrss: KiB on Linux


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=7, help="A/B pairs (at least 5)")
    parser.add_argument("--view", default=None, help="view shown in the screenshot (default: the first)")
    parser.add_argument("--before", metavar="DIR", help="another version's tree, run in the same turns")
    args = parser.parse_args()
    if args.pairs < 5:
        parser.error("--pairs: at least 5")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    compile_cmd = [sys.executable, "-m", "compileall", "-q", str(REPO / "app" / "llm_dyno")]
    subprocess.run(compile_cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    before_app = str(Path(args.before).resolve() / "app") if args.before else None
    if before_app:
        compile_before = [sys.executable, "-m", "compileall", "-q", f"{before_app}/llm_dyno"]
        subprocess.run(compile_before, env=env, check=True, stdout=subprocess.DEVNULL)
    rows: list[tuple[float, float, float, float, float, float]] = []
    before_rows: list[tuple[float, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="llm-dyno-startup-") as tmp:
        folder = Path(tmp)
        app_cmd = [sys.executable, "-m", "llm_dyno", "--screenshot", str(folder / "app.png")]
        if args.view:
            app_cmd += ["--view", args.view]
        bare_cmd = [sys.executable, "-c", BARE, str(folder / "bare.png")]
        for i in range(args.pairs + 1):
            c = run_child(app_cmd, folder / f"home-c{i}", before_app) if before_app else None
            a = run_child(app_cmd, folder / f"home-a{i}")
            b = run_child(bare_cmd, folder / f"home-b{i}")
            if i == 0:
                continue  # warm-up: the first pair reads everything from disk
            rows.append((a[0], a[1], b[0], b[1], a[2], b[2]))
            if c is not None:
                before_rows.append(c)
                print(f"        before {c[0]:.2f} s (CPU {c[2]:.2f} s) {c[1]:.0f} MiB", flush=True)
            print(
                f"pair {i}: app {a[0]:.2f} s (CPU {a[2]:.2f} s) {a[1]:.0f} MiB   "
                f"bare {b[0]:.2f} s (CPU {b[2]:.2f} s) {b[1]:.0f} MiB",
                flush=True,
            )
    med = statistics.median
    t_ratio = med(r[0] / r[2] for r in rows)
    m_ratio = med(r[1] / r[3] for r in rows)
    c_ratio = med(r[4] / r[5] for r in rows)

    def col(i: int) -> float:
        return med(r[i] for r in rows)

    print(
        f"{len(rows)} pairs (A B in turns, fresh processes, offscreen, temp LLM_DYNO_HOME):\n"
        f"  app  --screenshot: wall {col(0):.2f} s, CPU {col(4):.2f} s, peak RSS {col(1):.0f} MiB\n"
        f"  bare Qt+pyqtgraph: wall {col(2):.2f} s, CPU {col(5):.2f} s, peak RSS {col(3):.0f} MiB\n"
        f"  app / bare (median of per-pair ratios): wall {t_ratio:.2f}x, peak RSS {m_ratio:.2f}x "
        f"(target <= 1.5x); CPU time {c_ratio:.2f}x (less skewed by other load on the machine)"
    )
    if before_rows:
        pairs = list(zip(before_rows, rows, strict=True))
        print(
            f"  before ({args.before}): wall {med(c[0] for c in before_rows):.2f} s, "
            f"CPU {med(c[2] for c in before_rows):.2f} s, peak RSS {med(c[1] for c in before_rows):.0f} MiB; "
            f"before / bare: wall {med(c[0] / r[2] for c, r in pairs):.2f}x, "
            f"peak RSS {med(c[1] / r[3] for c, r in pairs):.2f}x, "
            f"CPU {med(c[2] / r[5] for c, r in pairs):.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
