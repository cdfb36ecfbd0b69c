"""Issue 28: the reference compared as a configuration, not as a table row, through `llm-dyno` in a child
process. The founding post's compose (copied into the test's folder, imported by `profile import`)
against the recipe's own compose shipped with its table rows (noonghunna/qwen36-27b-single-3090 @
061a5f1): the semantic diff beside the findings, each difference judged, the shared settings, and the
findings on what matters (image pin, Genesis layout, packages installed at start, the allocator
setting written key=value). `reference profile` imports a reference's compose as a profile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import cli

REPO = Path(__file__).resolve().parents[1]
SHARED = Path("/work/shared/reference/founding-compose.yml")
SHIPPED = REPO / "resources" / "references" / "founding-compose.yml"
RECIPE = "recipe-3090-default-20k"
WRONG, RIGHT = "max_split_size_mb=512", "max_split_size_mb:512"


def _founding_text() -> str:
    return (SHARED if SHARED.is_file() else SHIPPED).read_text(encoding="utf-8")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "rig"
    folder.mkdir()
    compose = folder / "docker-compose.yml"
    compose.write_text(_founding_text(), encoding="utf-8")
    done = cli(tmp_path, "profile", "import", str(compose), "--name", "founding")
    assert done.returncode == 0, done.stderr
    return tmp_path


def _diagnose_json(home: Path, *args: str) -> dict[str, Any]:
    done = cli(home, "diagnose", "founding", *args, "--json")
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_text_shows_the_configuration_beside_the_findings(home: Path) -> None:
    done = cli(home, "diagnose", "founding", "--reference", RECIPE, "--tps", "43", "54")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    head = (
        "Configuration against the reference (its compose: noonghunna/qwen36-27b-single-3090 "
        "compose/docker-compose.yml @ 061a5f1):"
    )
    assert head in out
    section = out[out.index(head) :]
    assert "  ! start script: Genesis patches: yours v5.x single script" in section
    assert "  ! start script: pip install: yours xxhash | reference xxhash pandas scipy" in section
    assert f"  ! environment: PYTORCH_CUDA_ALLOC_CONF: yours expandable_segments:True,{WRONG}" in section
    assert "    engine flags: --max-model-len: yours 75000 | reference 20000" in section
    assert "    = KV cache dtype: fp8_e5m2 on both" in section
    assert "    = CUDA-graph setting: vLLM's default" in section
    # the findings come before the section, each with its exact change or advice
    findings = out[: out.index(head)]
    assert "(alloc-conf-key-value;" in findings
    assert f"change: set env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,{RIGHT}" in findings
    assert "(genesis-differs-from-reference;" in findings
    assert (
        "python3 -m vllm._genesis.patches.apply_all` in place of `python3 /patches/patch_genesis_unified.py`"
        in findings
    )
    assert "GENESIS_ENABLE_P64_QWEN3CODER_MTP_STREAMING=1" in findings
    assert "(start-packages-differ-from-reference;" in findings
    assert "image history = yours is the recipe's own earlier pin (dev21)" in findings


def test_json_carries_the_diff_rows_and_the_shared_settings(home: Path) -> None:
    data = _diagnose_json(home, "--reference", RECIPE)
    rows = data["reference_diff"]
    assert rows and all(set(r) == {"field", "yours", "reference", "matters", "why", "source"} for r in rows)
    by_field = {r["field"]: r for r in rows}
    alloc = by_field["environment: PYTORCH_CUDA_ALLOC_CONF"]
    assert alloc["matters"] is True and alloc["yours"].endswith(WRONG) and alloc["reference"].endswith(RIGHT)
    assert "docs.pytorch.org" in alloc["source"] and "CUDAAllocatorConfig.cpp" in alloc["source"]
    image = by_field["container: image"]
    assert image["matters"] is True and "dev21" in image["why"] and "061a5f1" in image["source"]
    assert by_field["engine flags: --max-model-len"]["matters"] is False
    assert by_field["model: model"]["matters"] is False
    # the rows that matter come first
    flags = [r["matters"] for r in rows]
    assert flags == sorted(flags, reverse=True)
    shared = {s["setting"]: s["value"] for s in data["reference_shares"]}
    assert shared["KV cache dtype"] == "fp8_e5m2" and shared["max-num-seqs"] == "1"
    assert data["reference_configuration"].endswith("compose/docker-compose.yml @ 061a5f1")
    ids = [f["id"] for f in data["findings"]]
    assert {
        "alloc-conf-key-value",
        "genesis-differs-from-reference",
        "start-packages-differ-from-reference",
    } <= set(ids)
    [alloc_finding] = [f for f in data["findings"] if f["id"] == "alloc-conf-key-value"]
    assert alloc_finding["changes"] == [
        {"kind": "set_env", "key": "PYTORCH_CUDA_ALLOC_CONF", "value": f"expandable_segments:True,{RIGHT}"}
    ]
    # diagnosed against the default row itself, the patch question still finds its no-Genesis twin
    patches_q = next(a for a in data["questions"] if a["id"] == "patches")
    assert (
        patches_q["verdict"] == "not the difference" and "no-Genesis MTP 54.7 / 68.2" in patches_q["evidence"]
    )
    # what the reference's source states about its patches reaches the boot-log facts (and the causes)
    patches = next(r for r in data["boot_log"] if r["fact"] == "start-script patches")
    assert patches["reference"].startswith("Genesis v7.54") and patches["status"] == "differs"


def test_the_diff_follows_the_profile_and_the_row(home: Path, tmp_path: Path) -> None:
    # written as PyTorch reads it, the allocator row and its finding are gone
    compose = tmp_path / "rig" / "docker-compose.yml"
    compose.write_text(_founding_text().replace(WRONG, RIGHT), encoding="utf-8")
    done = cli(home, "profile", "import", str(compose), "--name", "founding", "--replace")
    assert done.returncode == 0, done.stderr
    data = _diagnose_json(home, "--reference", RECIPE)
    assert "environment: PYTORCH_CUDA_ALLOC_CONF" not in {r["field"] for r in data["reference_diff"]}
    assert "alloc-conf-key-value" not in [f["id"] for f in data["findings"]]
    # against the recipe's no-Genesis row: it runs no patches and no start script at all
    data = _diagnose_json(home, "--reference", "recipe-3090-no-genesis-mtp")
    genesis = next(r for r in data["reference_diff"] if r["field"] == "start script: Genesis patches")
    assert genesis["reference"] == "none"
    [finding] = [f for f in data["findings"] if f["id"] == "genesis-differs-from-reference"]
    assert "drop yours" in finding["advice"]
    # a row that quotes figures only says so, and names its source's rows that have a compose
    data = _diagnose_json(home, "--reference", "recipe-3090-claimed")
    assert data["reference_diff"] == [] and RECIPE in data["reference_diff_note"]


def test_reference_show_list_and_profile(home: Path) -> None:
    shown = cli(home, "reference", "show", RECIPE)
    assert shown.returncode == 0, shown.stderr
    assert "# profile: yes, its compose " in shown.stdout
    assert (
        "copied from noonghunna/qwen36-27b-single-3090 compose/docker-compose.yml @ 061a5f1 (https://github.com/"
        "noonghunna/qwen36-27b-single-3090/blob/061a5f11ab898f73b426ed90f83696cebba915d1/compose/"
        "docker-compose.yml)" in shown.stdout
    )
    as_json = json.loads(cli(home, "reference", "show", RECIPE, "--json").stdout)
    assert as_json["has_profile"] is True and Path(as_json["compose_file"]).is_file()
    listed = {r["id"]: r["profile"] for r in json.loads(cli(home, "reference", "list", "--json").stdout)}
    assert listed[RECIPE] is True and listed["recipe-3090-claimed"] is False
    # imported through the app's compose importer, then compared with the user's by `profile diff`
    done = cli(home, "reference", "profile", RECIPE, "--name", "recipe")
    assert done.returncode == 0, done.stderr
    assert "imported reference recipe-3090-default-20k as profile 'recipe'" in done.stdout
    shown_profile = cli(home, "profile", "show", "recipe")
    assert "nightly-07351e0883470724dd5a7e9730ed10e01fc99d08" in shown_profile.stdout
    diff = cli(home, "profile", "diff", "founding", "recipe", "--json")
    keys = {r["key"] for r in json.loads(diff.stdout)["rows"]}
    assert diff.returncode == 1 and {"--max-model-len", "PYTORCH_CUDA_ALLOC_CONF"} <= keys
    again = cli(home, "reference", "profile", RECIPE, "--name", "recipe")
    assert again.returncode != 0 and "already exists" in again.stderr
    figures = cli(home, "reference", "profile", "recipe-3090-claimed")
    assert figures.returncode != 0 and "publishes no configuration" in figures.stderr


def test_shipped_composes_name_their_source() -> None:
    folder = REPO / "resources" / "references" / "qwen36-27b-single-3090"
    files = sorted(p.name for p in folder.glob("*.yml"))
    assert files == [
        "docker-compose.minimal.yml",
        "docker-compose.no-genesis-mtp.yml",
        "docker-compose.tools-text.yml",
        "docker-compose.yml",
    ]
    for name in files:
        first = (folder / name).read_text(encoding="utf-8").splitlines()[0]
        assert first == (
            "# Source: github.com/noonghunna/qwen36-27b-single-3090, path compose/"
            f"{name}, commit 061a5f11ab898f73b426ed90f83696cebba915d1"
        )


def test_a_shared_graph_setting_reaches_the_causes(home: Path) -> None:
    """The founding launch log (recorded lines) runs PIECEWISE; the reference's compose sets the same
    CUDA-graph setting and attention backend: on the same build that is not the difference, on another
    it stays possible, and says why."""
    log = REPO / "tests" / "fixtures" / "diagnose" / "founding_launch.log"

    def piecewise(reference: str) -> dict[str, Any]:
        data = _diagnose_json(home, "--reference", reference, "--log", str(log))
        cause: dict[str, Any] = next(c for c in data["causes"] if c["id"] == "piecewise")
        return cause

    same_build = piecewise("founding-post-3090-330w")  # its compose is the post's own, same image
    assert same_build["verdict"] == "not the cause"
    assert "compose sets the same CUDA-graph setting" in same_build["reason"]
    other_build = piecewise(RECIPE)
    assert other_build["verdict"] == "possible" and "its build differs from yours" in other_build["reason"]


def test_a_reference_file_cannot_point_its_compose_outside_its_folder(home: Path, tmp_path: Path) -> None:
    secret = tmp_path / "not-a-compose.yml"
    secret.write_text(
        "services: {x: {image: 'secret-token-abc123', command: [vllm, serve, m]}}\n", encoding="utf-8"
    )
    folder = tmp_path / "downloaded"
    folder.mkdir()
    ref = folder / "theirs.yaml"
    ref.write_text("id: theirs\ntitle: t\ncompose: ../not-a-compose.yml\n", encoding="utf-8")
    done = cli(home, "reference", "profile", str(ref), "--dry-run")
    assert done.returncode != 0
    assert (
        "outside the reference's folder" in done.stderr
        and "secret-token-abc123" not in done.stdout + done.stderr
    )
    # beside it, the same file is read
    (folder / "compose.yml").write_text(secret.read_text(encoding="utf-8"), encoding="utf-8")
    ref.write_text("id: theirs\ntitle: t\ncompose: compose.yml\n", encoding="utf-8")
    done = cli(home, "reference", "profile", str(ref), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "secret-token-abc123" in done.stdout
