"""Compose semantics of issue 29 (round 3), through ``llm-dyno profile import`` and ``llm-dyno plan`` in a
subprocess, as Compose v2 has them (docker/compose ``pkg/compose/create.go``: a tmpfs ``size`` of 0 is
left out; the ``local`` driver mounts its folder with the ``o:`` options, so ``bind,ro`` is read-only), and
the plan's ``docker run`` line, run in bash with a ``docker`` that records its arguments, passes what
launch passes (an escaped ``$${foo}`` is the text ``${foo}``; a secret's reference is filled in by the
shell)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.support.cli import cli

SERVICE = (
    "services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n    command: m --port 8000\n"
    "    ports: ['8000:8000']\n"
)


def _import(tmp_path: Path, text: str) -> tuple[dict[str, Any] | None, str]:
    folder = tmp_path / "proj"
    folder.mkdir(exist_ok=True)
    (folder / "docker-compose.yml").write_text(text)
    done = cli(tmp_path / "home", "profile", "import", str(folder / "docker-compose.yml"), "--name", "p")
    assert "Traceback" not in done.stderr, done.stderr
    if done.returncode != 0:
        return None, done.stderr
    shown = cli(tmp_path / "home", "profile", "show", "p")
    assert shown.returncode == 0, shown.stderr
    return yaml.safe_load(shown.stdout), done.stderr


def test_a_tmpfs_of_size_zero_has_no_size_as_compose_passes_it(tmp_path: Path) -> None:
    text = SERVICE + (
        "    volumes:\n"
        "      - {type: tmpfs, target: /zero, tmpfs: {size: 0}}\n"
        "      - {type: tmpfs, target: /zero-m, tmpfs: {size: 0m}}\n"
        "      - {type: tmpfs, target: /sized, tmpfs: {size: 64m}}\n"
    )
    profile, err = _import(tmp_path, text)
    assert profile is not None, err
    assert profile["docker"]["tmpfs"] == ["/zero", "/zero-m", "/sized:size=64m"]
    plan = cli(tmp_path / "home", "plan", "p", "--json")
    assert plan.returncode == 0, plan.stderr
    tmpfs = json.loads(plan.stdout)["container"]["tmpfs"]
    assert tmpfs == {"/zero": "", "/zero-m": "", "/sized": "size=64m"}  # no size=0 ("no limit") passed


def test_a_local_volume_bound_read_only_is_mounted_read_only(tmp_path: Path) -> None:
    text = SERVICE + (
        "    volumes: ['weights:/weights', 'cache:/cache:rw', 'open:/open']\n"
        "volumes:\n"
        "  weights: {driver: local, driver_opts: {type: none, o: 'bind,ro', device: ./w}}\n"
        "  cache: {driver: local, driver_opts: {type: none, o: 'ro,bind', device: ./c}}\n"
        "  open: {driver: local, driver_opts: {type: none, o: bind, device: ./o}}\n"
    )
    profile, err = _import(tmp_path, text)
    assert profile is not None, err
    proj = tmp_path / "proj"
    assert profile["docker"]["volumes"] == [
        f"{proj / 'w'}:/weights:ro",
        f"{proj / 'c'}:/cache:ro",  # the volume is read-only whatever the service asks
        f"{proj / 'o'}:/open",
    ]


def test_the_plan_line_passes_an_escaped_literal_as_its_text(tmp_path: Path) -> None:
    text = SERVICE + (
        "    environment:\n      T_ESCAPED: $${foo}\n      HF_TOKEN: ${HF_TOKEN}\n      PLAIN: a b\n"
    )
    profile, err = _import(tmp_path, text)
    assert profile is not None, err
    assert profile["env"]["T_ESCAPED"] == "$${foo}"
    plan = cli(tmp_path / "home", "plan", "p")
    assert plan.returncode == 0, plan.stderr
    line = next(x for x in plan.stdout.splitlines() if x.startswith("docker run"))
    # run the line as a user pasting it would, with a docker that records its arguments
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "argv.json"
    fake = bin_dir / "docker"
    fake.write_text(
        f"#!/usr/bin/env python3\nimport json, sys\njson.dump(sys.argv[1:], open({str(record)!r}, 'w'))\n"
    )
    fake.chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HF_TOKEN": "hf_from_the_shell", "foo": "EXPANDED"}
    subprocess.run(["bash", "-c", line], env=env, check=True, timeout=30)
    argv = json.loads(record.read_text())
    envs = [argv[i + 1] for i, a in enumerate(argv) if a == "-e"]
    assert "T_ESCAPED=${foo}" in envs  # as launch passes it: the text, never the shell's $foo
    assert "HF_TOKEN=hf_from_the_shell" in envs  # a secret stays a reference the shell fills in
    assert "PLAIN=a b" in envs
    assert "hf_from_the_shell" not in plan.stdout
