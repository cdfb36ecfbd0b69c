"""Issue 12's figures: what each hostile answer or file costs the CLI, and the hostile-shape fuzz.

For every shape of tests/support/hostile_server.py (and each YAML bomb of tests/test_hostile_files.py)
the real CLI runs in a child process; its peak RSS (VmHWM) and wall time are recorded next to a
good run in the same session (the ratio is what to compare across machines), with its exit code,
its first line of error, and the runs kept in the history where a bench had finished runs before
the hostile one. Then the hostile fuzz targets of benchmarks/fuzz_hostile.py run (10,000 cases
each by default), and with ``--launch`` a real vLLM process is launched with an API key and every
process's argv and every file under LLM_DYNO_HOME is searched for the key.

    .venv/bin/python benchmarks/hostile_input.py --out benchmarks/results/hostile_input.txt
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for _path in (REPO / "app", REPO):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from benchmarks import fuzz_parsers  # noqa: E402
from benchmarks.fuzz_hostile import targets  # noqa: E402
from tests.support.hostile_server import HostileServer  # noqa: E402
from tests.test_hostile_files import BOMB, DEEP, LONG_LINE, RECURSIVE_ALIAS, SHIPPED  # noqa: E402
from tests.test_hostile_servers import Ran, llm_dyno  # noqa: E402

SUITE = """name: tiny
warmups: 0
runs: 3
timeout_s: 4
prompts:
  - name: narrative
    max_tokens: 24
    messages:
      - role: user
        content: hi
"""


def _home(root: Path, name: str) -> Path:
    home = root / name
    (home / "config" / "profiles").mkdir(parents=True)
    (home / "tiny.yaml").write_text(SUITE)
    return home


def _first_error(ran: Ran) -> str:
    for line in (ran.err + ran.out).splitlines():
        if "error:" in line or "unreachable:" in line or "warning:" in line:
            return line.strip()[:150]
    return ""


def _kept(home: Path) -> int:
    shown = llm_dyno(["history", "show", "1", "--json"], home)
    if shown.code != 0:
        return 0
    return sum(len(p["runs"]) for p in json.loads(shown.out)["prompts"])


def server_rows(root: Path) -> list[str]:
    """One line per hostile answer: command, peak MB, seconds, exit, runs kept, message."""
    rows: list[str] = []
    home = _home(root, "good")
    with HostileServer("models_list", good_posts=99, lifetime_s=60) as good:
        base = llm_dyno(
            ["bench", "--url", good.url, "--model", "tiny", "--suite", str(home / "tiny.yaml")], home
        )
    rows.append(
        f"{'good bench (baseline)':<34} {base.peak_mb:7.1f} {base.seconds:7.2f}  1.00  1.00  {base.code:>4}"
    )
    cases = [
        ("bench", s)
        for s in (
            "no_blank_lines",
            "long_line",
            "endless",
            "drip",
            "delta_string",
            "content_number",
            "chunk_list",
        )
    ]
    cases += [("watch", "big_metrics"), ("watch", "big_metrics_declared"), ("watch", "drip")]
    cases += [("diagnose", "big_metrics"), ("diagnose", "drip")]
    for command, shape in cases:
        home = _home(root, f"{command}-{shape}")
        with HostileServer(shape, good_posts=1, lifetime_s=60) as server:
            if command == "bench":
                args = ["bench", "--url", server.url, "--model", "tiny", "--suite", str(home / "tiny.yaml")]
            elif command == "watch":
                args = ["watch", "--url", server.url, "--count", "2", "--interval", "0.2"]
            else:
                args = ["diagnose", "--url", server.url]
            ran = llm_dyno(args, home)
        kept = f"{_kept(home)}/1" if command == "bench" else "-"
        ratios = f"{ran.peak_mb / base.peak_mb:5.2f} {ran.seconds / base.seconds:5.2f}"
        rows.append(
            f"{command + ' ' + shape:<34} {ran.peak_mb:7.1f} {ran.seconds:7.2f} {ratios}  {ran.code:>4}  "
            f"{kept:<4} {_first_error(ran)}"
        )
    return rows


def yaml_rows(root: Path) -> list[str]:
    """``profile list`` with each hostile profile next to the shipped one."""
    rows: list[str] = []
    home = _home(root, "yaml-good")
    (home / "config" / "profiles" / "cpu-demo.yaml").write_text(SHIPPED.read_text())
    base = llm_dyno(["profile", "list"], home)
    rows.append(
        f"{'profile list (baseline)':<34} {base.peak_mb:7.1f} {base.seconds:7.2f}  1.00  1.00  {base.code:>4}"
    )
    for name, text in (
        ("recursive alias", RECURSIVE_ALIAS),
        ("5,000-deep", DEEP),
        ("alias bomb", BOMB),
        ("2 MB line", LONG_LINE),
    ):
        home = _home(root, "yaml-" + name.replace(" ", "-").replace(",", ""))
        (home / "config" / "profiles" / "cpu-demo.yaml").write_text(SHIPPED.read_text())
        (home / "config" / "profiles" / "bad.yaml").write_text(text)
        ran = llm_dyno(["profile", "list"], home)
        still = "cpu-demo listed" if ran.out.startswith("cpu-demo") else "cpu-demo MISSING"
        rows.append(
            f"{'profile list: ' + name + f' ({len(text):,} B)':<34} {ran.peak_mb:7.1f} {ran.seconds:7.2f} "
            f"{ran.peak_mb / base.peak_mb:5.2f} {ran.seconds / base.seconds:5.2f}  {ran.code:>4}  {still}; "
            f"{_first_error(ran).split(': ', 2)[-1]}"
        )
    return rows


def fuzz_rows(examples: int) -> list[str]:
    """The hostile fuzz targets through fuzz_parsers' runner."""
    rows = []
    for name in targets():
        o = fuzz_parsers.fuzz(name, examples)
        errors = sum(o.tally.user_errors.values())
        counts = f"{o.tally.cases:>7} {o.tally.parsed:>7} {errors:>12} {o.tally.crash_count:>8}"
        rows.append(f"{name:<15} {counts} {o.seconds:>7.1f}s")
        for c in o.tally.crashes.values():
            rows.append(f"  CRASH {c.signature} ({c.count}): {c.smallest_input[:200]}")
    return rows


def launch_rows(root: Path) -> list[str]:
    """A real vLLM process launched with an API key: where the key can be found."""
    import httpx
    from tests.support import vllm_env
    from tests.test_secrets_launch import API_SECRET, HF_SECRET, _cmdlines_with, _files_with, cli

    from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime

    exe = vllm_env.vllm_executable()
    if exe is None:
        return [f"skipped: {vllm_env.missing_reason()}"]
    home = root / "launch"
    model = root / "tiny-model"
    import subprocess

    subprocess.run(
        [str(vllm_env.python()), str(vllm_env.TINYMODEL_SCRIPT), str(model)], check=True, timeout=600
    )
    port = vllm_env.free_port()
    profile = Profile(
        name="keyed",
        runtime=Runtime.PROCESS,
        process=ProcessSettings(executable=str(exe)),
        model=str(model),
        args=(
            *vllm_env.FAST_ARGS,
            "--served-model-name",
            "tiny",
            "--port",
            str(port),
            "--api-key",
            "${VLLM_API_KEY}",
            "--hf-token",
            "${HF_TOKEN}",
        ),
        env=vllm_env.server_env(root / "cache"),
    )
    (home / "config" / "profiles").mkdir(parents=True)
    (home / "config" / "profiles" / "keyed.yaml").write_text(profile.to_yaml())
    env = {"VLLM_API_KEY": API_SECRET, "HF_TOKEN": HF_SECRET}
    try:
        done = cli(home, "launch", "keyed", "--wait", "--timeout", "180", env=env, timeout=200)
        if done.returncode != 0:
            return [f"launch failed: {done.stderr[-300:]}"]
        url = f"http://127.0.0.1:{port}/v1/models"
        without = httpx.get(url, timeout=10).status_code
        with_key = httpx.get(url, headers={"Authorization": f"Bearer {API_SECRET}"}, timeout=10).status_code
        argv_hits = sum(len(_cmdlines_with(s)) for s in (API_SECRET, HF_SECRET))
        file_hits = sum(len(_files_with(home, s)) for s in (API_SECRET, HF_SECRET))
    finally:
        cli(home, "stop", "keyed", env=env)
    file_hits += sum(len(_files_with(home, s)) for s in (API_SECRET, HF_SECRET))
    files = sum(1 for p in home.rglob("*") if p.is_file())
    return [
        f"GET /v1/models without the key: HTTP {without}; with it: HTTP {with_key}",
        f"secret values in /proc/*/cmdline: {argv_hits}; in the {files} files under LLM_DYNO_HOME "
        f"(during and after the run): {file_hits}",
    ]


def main(argv: list[str] | None = None) -> int:
    """Run everything and print (or write) the report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=10_000, help="fuzz cases per target")
    parser.add_argument("--launch", action="store_true", help="also launch a real vLLM with a key")
    parser.add_argument("--no-fuzz", action="store_true", help="only the CLI measurements")
    parser.add_argument("--out", help="write the report here too")
    args = parser.parse_args(argv)
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="llm-dyno-hostile-") as tmp:
        root = Path(tmp)
        head = f"{'case':<34} {'peak MB':>7} {'s':>7} {'xRSS':>5} {'xs':>5}  exit  kept message"
        lines = [
            f"# benchmarks/hostile_input.py, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
            "x = ratio to the good run of the same session",
            "",
            "## hostile servers through the CLI (child process; peak RSS: its VmHWM)",
            head,
            *server_rows(root),
            "",
            "## hostile profiles: `llm-dyno profile list` with one bad file next to a good one",
            head,
            *yaml_rows(root),
            "",
        ]
        if not args.no_fuzz:
            lines += [
                f"## hostile-shape fuzz ({args.examples:,} cases per target; "
                "crash = any exception but the documented one)",
                f"{'target':<15} {'cases':>7} {'parsed':>7} {'user errors':>12} {'crashes':>8} {'time':>8}",
                *fuzz_rows(args.examples),
            ]
        if args.launch:
            lines += [
                "",
                "## secrets: a real vLLM process with --api-key ${VLLM_API_KEY}",
                *launch_rows(root),
            ]
    lines += ["", f"total {time.time() - started:.0f} s"]
    report = "\n".join(lines) + "\n"
    print(report, end="")
    if args.out:
        Path(args.out).write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
