"""Long labels and volume specs through the real CLI (issue 22): a value the stored profile could not
hold is refused at import with the key and the line, nothing is written, and whatever imports loads
again (``profile list`` and ``profile show`` read it back)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_hostile_servers import llm_dyno

BIG = 200_000
EDGE = 65_530  # under the model's bound, but its stored line (key, indentation) is over the loader's


def _run_line(option: str) -> str:
    return f"docker run --gpus all {option} vllm/vllm-openai:v0.11.0 --model org/m --port 8000\n"


def _block_label(chars: int) -> str:
    """A compose file whose label value is ``chars`` long but every line short: the loader's line
    bound does not see it, only the value bound does."""
    lines = "\n".join("          " + "v" * 99 for _ in range(chars // 100))
    return (
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n    command: --model org/m\n"
        f"    labels:\n      big: >-\n{lines}\n"
    )


CASES = {
    "docker run label": (_run_line("--label big=" + "x" * BIG), "docker.labels", "big", ":1"),
    "docker run label name": (_run_line("--label " + "k" * BIG + "=v"), "docker.labels", "kkkk", ":1"),
    "docker run volume": (_run_line("-v /data:/" + "y" * BIG), "docker.volumes", "[0]", ":1"),
    "docker run volume at the edge": (_run_line("-v /data:/" + "y" * EDGE), "docker.volumes", "", ":1"),
    "docker run label at the edge": (_run_line("--label e=" + "z" * EDGE), "docker.labels", "", ":1"),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_long_label_or_volume_is_refused_naming_key_and_line(case: str, tmp_path: Path) -> None:
    text, key, entry, line = CASES[case]
    source = tmp_path / "run.sh"
    source.write_text(text)
    ran = llm_dyno(["profile", "import", str(source), "--name", "long"], tmp_path)
    assert ran.code == 2, ran.out + ran.err
    assert "Traceback" not in ran.err
    assert f"{source}{line}" in ran.err and key in ran.err and entry in ran.err, ran.err
    assert len(ran.err) < 2_000  # the message names the value, it does not print it
    assert not list((tmp_path / "config" / "profiles").glob("*.yaml"))  # nothing half-written


def test_long_compose_label_made_of_short_lines_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "docker-compose.yml"
    source.write_text(_block_label(BIG))
    ran = llm_dyno(["profile", "import", str(source), "--name", "long"], tmp_path)
    assert ran.code == 2 and "Traceback" not in ran.err, ran.err
    assert str(source) in ran.err and ("labels" in ran.err or "characters" in ran.err), ran.err
    assert not list((tmp_path / "config" / "profiles").glob("*.yaml"))


@pytest.mark.parametrize("chars", [1_000, 60_000])
def test_an_imported_label_and_volume_load_again(chars: int, tmp_path: Path) -> None:
    source = tmp_path / "run.sh"
    source.write_text(_run_line(f"--label ok={'a' * chars} -v /data:/{'b' * chars}"))
    ran = llm_dyno(["profile", "import", str(source), "--name", "fits"], tmp_path)
    assert ran.code == 0, ran.err
    listed = llm_dyno(["profile", "list", "--json"], tmp_path)
    assert listed.code == 0 and '"fits"' in listed.out and "refused" not in listed.err, listed.err
    shown = llm_dyno(["profile", "show", "fits", "--json"], tmp_path)
    assert shown.code == 0 and "a" * chars in shown.out and "b" * chars in shown.out
