"""Impossible numbers through the real CLI in a subprocess: a model folder whose config.json holds
NaN, Infinity, a negative or string size or 200,000 levels of nesting, a safetensors header with
negative offsets, a FIFO named model.safetensors or config.json; ``plan`` and ``launch`` refuse each
with a clear message (file and field) at once, never a traceback, never a wait, never ``fits``."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from llm_dyno.core.profiles.model import ProcessSettings, Profile, Runtime
from tests.test_hostile_servers import llm_dyno

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
