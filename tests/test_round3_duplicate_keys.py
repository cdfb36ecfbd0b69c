"""Issue 29, class 6: duplicate keys and merge order, through the CLI (``profile import --dry-run``,
``profile validate``, ``profile list``), on files each test writes.

Compose v2 (go-yaml v3) refuses a mapping with a key written twice ("mapping key "image" already
defined at line N"); the YAML merge-key spec says keys written in the mapping win over merged ones and,
in ``<<: [*a, *b]``, the earlier mapping wins.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import yaml

from tests.support.cli import cli

_PROFILE = """\
schema: 1
name: dup
runtime: docker
docker:
  image: vllm/vllm-openai:v0.11.0
model: facebook/opt-125m
docker:
  image: attacker/evil:latest
"""


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _dry_run(tmp_path: Path, path: Path) -> tuple[int, str, dict[str, object] | None]:
    out = cli(tmp_path / "home", "profile", "import", str(path), "--dry-run")
    data = yaml.safe_load(out.stdout) if out.returncode == 0 else None
    return out.returncode, out.stdout + out.stderr, data


def _image(data: object) -> str:
    assert isinstance(data, dict), data
    docker = data["docker"]
    assert isinstance(docker, dict)
    return str(docker["image"])


def test_compose_service_with_image_twice_is_refused_naming_both_lines(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "compose.yml",
        """\
        services:
          vllm:
            image: vllm/vllm-openai:v0.11.0
            command: ["--model", "facebook/opt-125m"]
            image: attacker/evil:latest
        """,
    )
    rc, text, _ = _dry_run(tmp_path, path)
    assert rc != 0, text
    assert "'image'" in text and "line 3" in text and "line 5" in text, text
    assert f"{path}:5" in text, text
    assert "attacker/evil" not in text.split("refused", 1)[0]  # nothing imported before the refusal


def test_merge_sequence_earlier_mapping_wins(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "compose.yml",
        """\
        x-vetted: &vetted
          image: vllm/vllm-openai:v0.11.0
          shm_size: 8g
        x-extra: &extra
          image: attacker/evil:latest
          ipc: host
        services:
          vllm:
            <<: [*vetted, *extra]
            command: ["--model", "facebook/opt-125m"]
        """,
    )
    rc, text, data = _dry_run(tmp_path, path)
    assert rc == 0, text
    assert _image(data) == "vllm/vllm-openai:v0.11.0", text
    assert isinstance(data, dict)
    assert data["docker"]["ipc"] == "host"  # keys only the later one has are still merged


def test_own_keys_win_over_merged_ones(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "compose.yml",
        """\
        x-base: &base
          image: attacker/evil:latest
        services:
          vllm:
            image: vllm/vllm-openai:v0.11.0
            <<: *base
            command: ["--model", "facebook/opt-125m"]
        """,
    )
    rc, text, data = _dry_run(tmp_path, path)
    assert rc == 0, text
    assert _image(data) == "vllm/vllm-openai:v0.11.0", text


def test_two_merge_keys_in_one_mapping_are_refused(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "compose.yml",
        """\
        x-a: &a
          image: vllm/vllm-openai:v0.11.0
        x-b: &b
          image: attacker/evil:latest
        services:
          vllm:
            <<: *a
            <<: *b
            command: ["--model", "facebook/opt-125m"]
        """,
    )
    rc, text, _ = _dry_run(tmp_path, path)
    assert rc != 0, text
    assert "'<<'" in text and "line 7" in text and "line 8" in text, text


def test_profile_file_with_docker_twice_is_not_valid(tmp_path: Path) -> None:
    path = _write(tmp_path, "dup.yaml", _PROFILE)
    out = cli(tmp_path / "home", "profile", "validate", str(path))
    text = out.stdout + out.stderr
    assert out.returncode != 0, text
    assert "'docker'" in text and "line 4" in text and "line 7" in text and f"{path}:7" in text, text
    imported = cli(tmp_path / "home", "profile", "import", str(path), "--dry-run")
    assert imported.returncode != 0, imported.stdout + imported.stderr
    assert "line 7" in imported.stdout + imported.stderr


def test_store_reports_a_profile_with_a_duplicate_key_instead_of_loading_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    good = cli(home, "profile", "import", str(_write(tmp_path, "ok.yaml", _PROFILE.rsplit("docker:", 1)[0])))
    assert good.returncode == 0, good.stdout + good.stderr
    stored = next((home / "config" / "profiles").glob("*.yaml"))
    stored.write_text(stored.read_text(encoding="utf-8") + "docker:\n  image: attacker/evil:latest\n")
    listed = cli(home, "profile", "list")
    text = listed.stdout + listed.stderr
    assert "attacker/evil" not in text
    assert "written twice" in text and str(stored) in text, text


def test_duplicate_in_a_nested_mapping_and_a_plain_file_still_imports(tmp_path: Path) -> None:
    nested = _write(
        tmp_path,
        "compose.yml",
        """\
        services:
          vllm:
            image: vllm/vllm-openai:v0.11.0
            command: ["--model", "facebook/opt-125m"]
            environment:
              HF_HUB_OFFLINE: "1"
              HF_HUB_OFFLINE: "0"
        """,
    )
    rc, text, _ = _dry_run(tmp_path, nested)
    assert rc != 0 and "'HF_HUB_OFFLINE'" in text and "line 6" in text and "line 7" in text, text
    plain = _write(
        tmp_path,
        "plain.yml",
        """\
        services:
          vllm:
            image: vllm/vllm-openai:v0.11.0
            command: ["--model", "facebook/opt-125m"]
        """,
    )
    rc, text, data = _dry_run(tmp_path, plain)
    assert rc == 0 and _image(data) == "vllm/vllm-openai:v0.11.0", text
