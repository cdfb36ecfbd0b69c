"""Impossible numbers through the real CLI in a subprocess: a model folder whose config.json holds
NaN, Infinity, a negative or string size or 200,000 levels of nesting, a safetensors header with
negative offsets, a FIFO named model.safetensors or config.json; ``plan`` and ``launch`` refuse each
with a clear message (file and field) at once, never a traceback, never a wait, never ``fits``."""

from __future__ import annotations

import csv
import io
import json
import os
import struct
from pathlib import Path

import pytest

from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from tests.support.hostile_server import HostileServer
from tests.test_hostile_servers import PEAK_RSS_LIMIT_MB, _bench, llm_dyno

GOOD = {
    "architectures": ["Qwen2ForCausalLM"],
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "hidden_size": 128,
    "vocab_size": 2048,
    "torch_dtype": "bfloat16",
}


def _safetensors(path: Path, offsets: list[int]) -> None:
    header = json.dumps({"w": {"dtype": "BF16", "shape": [4], "data_offsets": offsets}}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 8)


def _folder(tmp_path: Path, shape: str) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    config = folder / "config.json"
    _safetensors(folder / "model.safetensors", [0, 8])
    text = json.dumps(GOOD)
    if shape == "Infinity":
        text = text.replace('"hidden_size": 128', '"hidden_size": Infinity')
    elif shape == "NaN":
        text = text.replace('"num_hidden_layers": 2', '"num_hidden_layers": NaN')
    elif shape == "negative":
        text = text.replace('"num_key_value_heads": 1', '"num_key_value_heads": -5')
    elif shape == "string":
        text = text.replace('"num_attention_heads": 2', '"num_attention_heads": "two"')
    elif shape == "deep":
        text = text[:-1] + ', "x": ' + "[" * 200_000 + "]" * 200_000 + "}"
    elif shape == "negative offsets":
        _safetensors(folder / "model.safetensors", [0, -1_000_000_000_000])
    elif shape == "fifo weights":
        (folder / "model.safetensors").unlink()
        os.mkfifo(folder / "model.safetensors")
    config.write_text(text)
    return folder


MESSAGES = {
    "Infinity": "config.json is not JSON: Infinity is no number a model config can hold",
    "NaN": "config.json is not JSON: NaN is no number a model config can hold",
    "negative": "config.json: field 'num_key_value_heads' is -5, outside 1..1,048,576",
    "string": "config.json: field 'num_attention_heads' should be a whole number, got str 'two'",
    "deep": "config.json is nested too deep to be a model config",
    "negative offsets": "model.safetensors: tensor 'w' has data_offsets [0, -1000000000000], not two whole",
    "fifo weights": "cannot read the weights: it is a FIFO, not a regular file",
}


def _profile(tmp_path: Path, folder: Path) -> None:
    exe = tmp_path / "fake-vllm"
    exe.write_text("#!/bin/sh\nexit 3\n")
    exe.chmod(0o755)
    profile = Profile(
        name="odd", runtime=Runtime.PROCESS, model=str(folder), process=ProcessSettings(executable=str(exe))
    )
    profiles = tmp_path / "config" / "profiles"
    profiles.mkdir(parents=True)
    (profiles / "odd.yaml").write_text(profile.to_yaml())


@pytest.mark.parametrize("shape", list(MESSAGES))
def test_plan_and_launch_refuse_impossible_model_files(shape: str, tmp_path: Path) -> None:
    _profile(tmp_path, _folder(tmp_path, shape))
    ran = llm_dyno(["plan", "odd", "--json", "--gpu", "RTX 3090"], tmp_path, timeout_s=60)
    assert ran.code == 0, ran.err[-2000:]
    assert "Traceback" not in ran.err and ran.seconds < 30
    memory = json.loads(ran.out)["memory"]
    assert MESSAGES[shape] in memory["problem"], memory
    assert not memory.get("fits")
    ran = llm_dyno(["launch", "odd", "--wait", "--timeout", "30"], tmp_path, timeout_s=60)
    assert "Traceback" not in ran.err and ran.seconds < 30


# ---- numbers and text from a server, numbers from the user ----------------------------------------


@pytest.mark.parametrize("shape", ["tokens_negative", "tokens_huge"])
def test_bench_refuses_an_impossible_token_count_as_a_malformed_answer(shape: str, tmp_path: Path) -> None:
    with HostileServer(shape, good_posts=1, lifetime_s=40) as server:
        ran = _bench(server, tmp_path)
    assert ran.code == 1, ran.err
    value = "-1000" if shape == "tokens_negative" else str(10**30)
    assert f"failed: malformed answer: usage.completion_tokens is {value}, not a count" in ran.err
    assert "(1 completed runs kept)" in ran.out
    shown = llm_dyno(["history", "show", "1", "--json"], tmp_path)
    runs = json.loads(shown.out)["prompts"][0]["runs"]
    assert [r["completion_tokens"] for r in runs] == [24]  # only the good run is stored


def test_bench_csv_makes_server_text_inert(tmp_path: Path) -> None:
    csv_path = tmp_path / "runs.csv"
    with HostileServer("formula", lifetime_s=40) as server:
        ran = _bench(server, tmp_path, "--csv", str(csv_path))
    assert ran.code == 0, ran.err
    text = csv_path.read_text()
    assert "\x1b" not in text and "\x07" not in text
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows and all(r["finish_reason"].startswith("'=HYPERLINK(") for r in rows)


@pytest.mark.parametrize("bad", ["nan", "inf", "-5", "0", "fast"])
def test_diagnose_refuses_typed_tps_that_is_no_figure(bad: str, tmp_path: Path) -> None:
    ran = llm_dyno(["diagnose", "--url", "http://127.0.0.1:9", "--tps", bad, "40"], tmp_path)
    assert ran.code == 2, ran.err
    assert "argument --tps:" in ran.err and repr(bad) in ran.err and "Traceback" not in ran.err


def test_a_suite_of_a_billion_runs_is_refused_with_its_bound(tmp_path: Path) -> None:
    suite = tmp_path / "huge.yaml"
    suite.write_text(
        "name: huge\nwarmups: 0\nruns: 1000000000\nprompts:\n  - name: n\n    max_tokens: 8\n"
        "    messages:\n      - role: user\n        content: hi\n"
    )
    ran = llm_dyno(["bench", "--url", "http://127.0.0.1:9", "--model", "m", "--suite", str(suite)], tmp_path)
    assert ran.code != 0
    assert "line 3" in ran.err or "huge.yaml" in ran.err
    assert "'runs' must be an integer ≥ 1 and ≤ 10,000, got 1000000000" in ran.err
    assert "Traceback" not in ran.err and ran.peak_mb < PEAK_RSS_LIMIT_MB
    ran = llm_dyno(["bench", "--url", "http://127.0.0.1:9", "--model", "m", "--runs", "1000000000"], tmp_path)
    assert ran.code != 0 and "--runs must be between 1 and 10,000, got 1000000000" in ran.err
