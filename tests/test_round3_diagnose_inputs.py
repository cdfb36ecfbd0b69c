"""Issue 28: inputs checked before they are used. A log from another setup is named as such before
anything else, through `llm-dyno diagnose --json` in a child process; a log of this setup is not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import cli

REPO = Path(__file__).resolve().parents[1]
FOUNDING_LOG = REPO / "tests" / "fixtures" / "diagnose" / "founding_launch.log"
# the "log from another setup": 2 draft positions, a 262,144-token context, another model name,
# 66 GiB of KV cache (on a 24 GB card) and 23.43 GiB of weights; lines in the formats vLLM prints
# (config dump as in tests/fixtures/diagnose/founding_launch.log, memory lines as vllm's gpu_worker.py)
OTHER_SETUP = """\
(EngineCore pid=1) Initializing a V1 LLM engine (v0.20.2) with config: \
model='Lorbus/Qwen3.6-27B-int4-AutoRound', \
dtype=torch.float16, max_seq_len=262144, quantization=auto_round, kv_cache_dtype=fp8_e5m2, \
compilation_config={'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, \
'cudagraph_capture_sizes': [1, 2, 4, 8], 'max_cudagraph_capture_size': 8}
(EngineCore pid=1) Model loading took 23.43 GiB memory
(EngineCore pid=1) INFO 05-03 18:41:30 [gpu_worker.py:440] Available KV cache memory: 66.0 GiB
(APIServer pid=1) SpecDecoding metrics: Mean acceptance length: 2.69, Per-position acceptance rate: 0.890, \
0.800, Avg Draft acceptance rate: 84.5%
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    done = cli(tmp_path, "profile", "import", str(REPO / "profiles" / "qwen36-27b-mtp.yaml"))
    assert done.returncode == 0, done.stderr
    return tmp_path


def _json(home: Path, *args: str) -> dict[str, Any]:
    done = cli(home, "diagnose", "qwen36-27b-mtp", "--reference", "recipe-3090-claimed", *args, "--json")
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_a_log_from_another_setup_is_named_first(home: Path, tmp_path: Path) -> None:
    log = tmp_path / "other.log"
    log.write_text(OTHER_SETUP, encoding="utf-8")
    data = _json(home, "--log", str(log), "--tps", "43", "54")
    first = data["findings"][0]
    assert first["id"] == "log-not-from-this-profile"
    title = first["title"]
    assert title.startswith("This log is not from this profile (qwen36-27b-mtp) on RTX 3090")
    assert "2 draft positions, the profile drafts 3" in title
    assert "262,144 tokens" in title and "75,000" in title
    assert "Lorbus/Qwen3.6-27B-int4-AutoRound" in title
    assert "KV cache 66 GiB is more than" in title
    assert any("log:3:" in e and "66.0 GiB" in e for e in first["evidence"])
    # 89 / 80 % against 92 / 81 / 64 %: the same acceptance position by position, not 2.69 vs 3.37
    split = data["gap_split"]
    assert split["acceptance_is_cause"] is False
    assert split["acceptance_by_position"] == {"yours": [0.89, 0.8], "reference": [0.92, 0.81, 0.64]}
    assert "position by position" in split["verdict"]
    acceptance = next(c for c in data["causes"] if c["id"] == "acceptance")
    assert acceptance["verdict"] == "not the cause"


def test_a_log_of_this_setup_passes_the_check(home: Path) -> None:
    data = _json(home, "--log", str(FOUNDING_LOG), "--tps", "43", "54")
    assert "log-not-from-this-profile" not in [f["id"] for f in data["findings"]]
    assert data["rule_errors"] == []


def test_typed_rates_for_another_draft_count_are_named(home: Path) -> None:
    data = _json(home, "--tps", "43", "54", "--acceptance", "89,80")
    first = data["findings"][0]
    assert first["id"] == "log-not-from-this-profile"
    assert "2 acceptance rates typed, the profile drafts 3" in first["title"]
    assert data["gap_split"]["acceptance_is_cause"] is False


def test_a_clearly_lower_position_makes_acceptance_the_cause(home: Path, tmp_path: Path) -> None:
    # position 2 at 60 % against the reference's 81 %: short by position although K differs
    log = tmp_path / "worse.log"
    worse = OTHER_SETUP.replace("0.800, Avg", "0.600, Avg")
    assert worse != OTHER_SETUP
    log.write_text(worse, encoding="utf-8")
    split = _json(home, "--log", str(log), "--tps", "43", "54")["gap_split"]
    assert split["acceptance_is_cause"] is True
