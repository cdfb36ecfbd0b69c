"""Every shipped example profile loads, and the founding one is what the importer reads from the compose."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_dyno.core.bench.suite import load_suite
from llm_dyno.core.demo import tinymodel
from llm_dyno.core.profiles.diff import DiffRow, diff_profiles
from llm_dyno.core.profiles.edit import get_flag
from llm_dyno.core.profiles.importers import import_text
from llm_dyno.core.profiles.model import Profile, profile_from_yaml

PROFILES = Path(__file__).resolve().parents[3] / "profiles"
FOUNDING = Path(__file__).parent / "fixtures" / "founding-compose.yml"


def _load(name: str) -> Profile:
    path = PROFILES / name
    return profile_from_yaml(path.read_text(encoding="utf-8"), str(path))


def test_the_expected_profiles_ship() -> None:
    names = {p.name for p in PROFILES.glob("*.yaml")}
    assert {"qwen36-27b-mtp.yaml", "qwen36-27b-no-spec.yaml", "cpu-demo.yaml"} <= names


@pytest.mark.parametrize("path", sorted(PROFILES.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_profile_loads(path: Path) -> None:
    profile = profile_from_yaml(path.read_text(encoding="utf-8"), str(path))
    assert profile.name == path.stem
    profile.engine()


def test_founding_profile_matches_the_import() -> None:
    imported = import_text(FOUNDING.read_text()).profile
    # the poster's file, its paths made a stranger's (under ~) and no token passed for a model read from disk
    hf = "/root/.cache/huggingface"
    patch = "/patches/patch_{}.py"
    assert diff_profiles(imported, _load("qwen36-27b-mtp.yaml")).rows == (
        DiffRow("container", f"volume {hf}", f"/run/media/will/Storage/models:{hf}",
                f"~/.cache/huggingface:{hf}", "changed"),
        *(
            DiffRow("container", f"volume {patch.format(n)}",
                    f"/home/will/genesis-vllm-patches/patch_{n}.py:{patch.format(n)}:ro",
                    f"~/genesis-vllm-patches/patch_{n}.py:{patch.format(n)}:ro", "changed")
            for n in ("genesis_unified", "tolist_cudagraph")
        ),
        DiffRow("environment", "HUGGING_FACE_HUB_TOKEN", "${HF_TOKEN:-}", None, "removed"),
        # the poster's key=value, which PyTorch refuses (the diagnosis names it); the example ships the fix
        DiffRow("environment", "PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True,max_split_size_mb=512",
                "expandable_segments:True,max_split_size_mb:512", "changed"),
        DiffRow("power", "limit_w", None, "330.0", "added"),
    )  # fmt: skip
    assert "founding post" in _load("qwen36-27b-mtp.yaml").notes


@pytest.mark.parametrize("name", ["qwen36-27b-mtp.yaml", "qwen36-27b-no-spec.yaml"])
def test_examples_carry_no_one_authors_machine(name: str) -> None:
    text = (PROFILES / name).read_text(encoding="utf-8")
    assert "/run/media/" not in text and "/home/will" not in text and "${HF_TOKEN" not in text
    assert "The founding" not in text  # says what it is for a stranger


def test_no_spec_differs_only_in_speculative_config() -> None:
    assert diff_profiles(_load("qwen36-27b-mtp.yaml"), _load("qwen36-27b-no-spec.yaml")).rows == (
        DiffRow(
            "engine flags",
            "--speculative-config",
            '{"method":"mtp","num_speculative_tokens":3}',
            None,
            "removed",
        ),
    )


def test_cpu_demo() -> None:
    p = _load("cpu-demo.yaml")
    assert p.runtime.value == "process" and p.process is not None and p.process.executable == "vllm"
    assert p.model == "~/.cache/llm-dyno/models/tiny-qwen2"  # filled in by `llm-dyno demo setup`
    assert "--enforce-eager" in p.args
    assert get_flag(p.args, "--dtype") == "float32"
    assert p.env["VLLM_CPU_KVCACHE_SPACE"] == "1" and p.env["HF_HUB_OFFLINE"] == "1"


def test_cpu_demo_context_fits_the_community_suite_and_the_model() -> None:
    """The one-click benchmark's longest answer plus its prompt fits --max-model-len, which fits the
    tiny model's positions (else vLLM refuses the request, or the start)."""
    max_len = int(get_flag(_load("cpu-demo.yaml").args, "--max-model-len") or 0)
    suite = load_suite("community")
    longest = max(p.max_tokens for p in suite.prompts)
    assert longest == 1000
    assert longest + 200 <= max_len <= tinymodel.MAX_POSITIONS
