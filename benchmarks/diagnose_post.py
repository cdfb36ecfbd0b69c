"""What ``llm-dyno diagnose --post`` costs on a 1 MiB post (the most a post is read up to).

The post is the founding post (tests/fixtures/diagnose/founding_post.txt) repeated to 1 MiB: its
Key: value block, wrapped vLLM warning and prose, as a long thread pasted whole. Measured in child
processes, CPU time (user + system, so other load on the machine does not count): reading the post
alone (``read_post``) and the whole command. ``--app`` names another checkout's ``app`` folder, so one
run can put an older build beside this one (a ratio on the same machine is what compares).

    .venv/bin/python benchmarks/diagnose_post.py [--app /tmp/old/app] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
POST = REPO / "tests" / "fixtures" / "diagnose" / "founding_post.txt"
PROFILE = REPO / "profiles" / "qwen36-27b-mtp.yaml"
MIB = 1024 * 1024

_READ = """\
import resource, sys, time
from pathlib import Path
from llm_dyno.core.diagnose.post import read_post
text = Path(sys.argv[1]).read_text()
t = time.process_time(); post = read_post(text); cpu = time.process_time() - t
print(cpu, len(post.facts))
"""


def big_post(folder: Path) -> Path:
    """The founding post repeated to just under 1 MiB."""
    one = POST.read_text(encoding="utf-8") + "\n"
    text = one * (MIB // len(one.encode()))
    path = folder / "post-1mib.txt"
    path.write_text(text, encoding="utf-8")
    return path


def _cpu_of(cmd: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    before = os.times()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)
    after = os.times()
    return (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    ), done


def measure(app: Path, post: Path, home: Path) -> dict[str, float]:
    """CPU seconds of read_post alone and of the whole diagnose command, with ``app`` on the path."""
    env = {**os.environ, "PYTHONPATH": str(app), "LLM_DYNO_HOME": str(home), "NO_COLOR": "1"}
    read = subprocess.run([sys.executable, "-c", _READ, str(post)], env=env, capture_output=True, text=True,
                          timeout=600, check=True)  # fmt: skip
    subprocess.run([sys.executable, "-m", "llm_dyno", "profile", "import", str(PROFILE)], env=env,
                   capture_output=True, timeout=120, check=True)  # fmt: skip
    cmd = [sys.executable, "-m", "llm_dyno", "diagnose", "qwen36-27b-mtp", "--reference",
           "recipe-3090-claimed", "--post", str(post), "--json"]  # fmt: skip
    whole, done = _cpu_of(cmd, env)
    if done.returncode != 0:
        raise SystemExit(f"diagnose failed with {app}: {done.stderr[-500:]}")
    findings = len(json.loads(done.stdout)["findings"])
    return {"read_post_cpu_s": float(read.stdout.split()[0]), "diagnose_cpu_s": whole, "findings": findings}


def main(argv: list[str] | None = None) -> int:
    """Print one line per build measured, then the ratio when two were."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--app", type=Path, help="another build's app folder to measure beside this one")
    ap.add_argument("--out", type=Path, help="also write the lines here")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="llm-dyno-post-bench-") as tmp:
        root = Path(tmp)
        post = big_post(root)
        builds = [("this build", REPO / "app")] + ([("--app build", args.app)] if args.app else [])
        lines = [f"post: {post.stat().st_size:,} bytes (founding_post.txt repeated)"]
        got: dict[str, dict[str, float]] = {}
        for i, (label, app) in enumerate(builds):
            got[label] = m = measure(app, post, root / f"home{i}")
            lines.append(f"{label:<12} read_post {m['read_post_cpu_s']:6.2f} s CPU   diagnose --post "
                         f"{m['diagnose_cpu_s']:6.2f} s CPU   ({m['findings']:.0f} findings)")  # fmt: skip
        if args.app:
            a, b = got["--app build"], got["this build"]
            lines.append(f"ratio --app / this: read_post ×{a['read_post_cpu_s'] / b['read_post_cpu_s']:.2f}, "
                         f"diagnose ×{a['diagnose_cpu_s'] / b['diagnose_cpu_s']:.2f}")  # fmt: skip
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
