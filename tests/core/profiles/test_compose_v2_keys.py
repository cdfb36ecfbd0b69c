"""Compose v2 keys the import used to refuse or drop (issue 23), read through ``llm-dyno profile import
--dry-run`` as Compose reads them: extends (same file and another), ``!reset`` / ``!override``,
profiles, port ranges, two bindings of the server port, anonymous volumes, bind propagation and SELinux
labels, ``nocopy``, a local volume bound to a folder, and the refusals that name key and line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

HEAD = "services:\n"


def _import(tmp_path: Path, text: str, *extra: str, files: dict[str, str] | None = None) -> tuple[Any, str]:
    folder = tmp_path / "proj"
    folder.mkdir(exist_ok=True)
    for name, body in (files or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(body)
    (folder / "docker-compose.yml").write_text(text)
    env = {k: v for k, v in os.environ.items() if k not in ("COMPOSE_PROFILES",)}
    argv = [sys.executable, "-m", "llm_dyno", "profile", "import", str(folder / "docker-compose.yml")]
    done = subprocess.run(
        [*argv, "--dry-run", *extra],
        env={**env, "LLM_DYNO_HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return (yaml.safe_load(done.stdout) if done.returncode == 0 else None), done.stderr


def test_extends_same_file_and_another_file(tmp_path: Path) -> None:
    text = (
        "services:\n"
        "  base:\n    image: vllm/vllm-openai:v0.11.0\n    command: m --port 8000\n"
        "    environment: [A=1, B=2]\n    ports: ['8000:8000']\n    volumes: ['./data:/data', './x:/x']\n"
        "  vllm:\n    extends: base\n    environment: {B: '3'}\n    volumes: ['./other:/data']\n"
        "  far:\n    extends: {file: sub/base.yaml, service: srv}\n"
        "    ports: !override ['127.0.0.1:9000:8000']\n"
    )
    other = (
        "services:\n  srv:\n    image: vllm/vllm-openai:v0.12.0\n    command: m2 --port 8000\n"
        "    ports: ['8000:8000']\n    volumes: ['./w:/w']\n    env_file: vars.env\n"
    )
    files = {"sub/base.yaml": other, "sub/vars.env": "FROM_SUB=1\n"}
    p, err = _import(tmp_path, text, "--service", "vllm", files=files)
    assert p is not None, err
    folder = tmp_path / "proj"
    assert p["model"] == "m" and p["args"] == ["--port", "8000"]
    assert p["env"] == {"A": "1", "B": "3"}  # mappings merged, the extending service's value wins
    assert p["docker"]["volumes"] == [f"{folder}/x:/x", f"{folder}/other:/data"]  # merged by target
    p, err = _import(tmp_path, text, "--service", "far")
    assert p is not None, err
    assert p["docker"]["image"] == "vllm/vllm-openai:v0.12.0" and p["model"] == "m2"
    assert p["docker"]["ports"] == ["127.0.0.1:9000:8000"]  # !override replaces instead of appending
    assert p["docker"]["volumes"] == [f"{folder}/sub/w:/w"]  # relative to the other file's folder
    assert p["env"] == {"FROM_SUB": "1"}


def test_reset_removes_what_extends_brings(tmp_path: Path) -> None:
    text = (
        "services:\n  base:\n    image: vllm/vllm-openai:v0.11.0\n    command: m --port 8000\n"
        "    ports: ['8000:8000']\n    environment: {DEBUG: '1'}\n"
        "  vllm:\n    extends: base\n    environment: !reset {}\n"
    )
    p, err = _import(tmp_path, text, "--service", "vllm")
    assert p is not None, err
    assert "env" not in p and p["model"] == "m"


def test_inactive_profile_is_not_a_second_vllm_service(tmp_path: Path) -> None:
    text = (
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n    command: m --port 8000\n"
        "    ports: ['8000:8000']\n"
        "  vllm-debug:\n    image: vllm/vllm-openai:v0.11.0\n    command: m --port 8001\n"
        "    ports: ['8001:8001']\n    profiles: [debug]\n"
    )
    p, err = _import(tmp_path, text)
    assert p is not None, err
    assert p["args"] == ["--port", "8000"]
    # the profile's service itself, asked for by name, is read (Compose starts it when named)
    p, err = _import(tmp_path, text, "--service", "vllm-debug")
    assert p is not None and p["args"] == ["--port", "8001"], err


def test_ports_ranges_and_bindings(tmp_path: Path) -> None:
    text = (
        HEAD + "  vllm:\n    image: vllm/vllm-openai:v0.11.0\n    command: m --port 8000\n"
        "    ports: ['8000', '127.0.0.1:18000:8000', '80-82:8080-8082', '6005-6015:9000']\n"
    )
    p, err = _import(tmp_path, text, "--bind", "file")
    assert p is not None, err
    assert p["docker"]["ports"] == [
        "8000",
        "127.0.0.1:18000:8000",
        "80:8080",
        "81:8081",
        "82:8082",
        "6005-6015:9000",
    ]
    # plan: the server is reached through the binding with a fixed host port, not the random one
    home = tmp_path / "home"
    env = {**os.environ, "LLM_DYNO_HOME": str(home)}
    folder = tmp_path / "proj"
    cmd = [sys.executable, "-m", "llm_dyno"]
    done = subprocess.run(
        [*cmd, "profile", "import", str(folder / "docker-compose.yml"), "--bind", "file"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    plan = subprocess.run(
        [*cmd, "plan", "vllm", "--json"], env=env, capture_output=True, text=True, check=False
    )
    assert plan.returncode == 0, plan.stderr
    planned = json.loads(plan.stdout)
    assert planned["base_url"] == "http://127.0.0.1:18000"
    assert planned["container"]["ports"]["9000/tcp"] == ["", "6005-6015"]
    assert planned["container"]["ports"]["8081/tcp"] == ["", 81]


def test_volumes_as_compose_mounts_them(tmp_path: Path) -> None:
    text = (
        HEAD + "  vllm:\n    image: vllm/vllm-openai:v0.11.0\n    command: m --port 8000\n"
        "    ports: ['8000:8000']\n    volumes:\n"
        "      - /var/cache/vllm\n"
        "      - type: bind\n        source: /srv/models\n        target: /models\n"
        "        read_only: true\n        bind: {propagation: rslave, selinux: z}\n"
        "      - type: volume\n        source: data\n        target: /data\n        volume: {nocopy: true}\n"
        "      - weights:/weights\n"
        "volumes:\n  data: {}\n"
        "  weights:\n    driver: local\n    driver_opts: {type: none, o: bind, device: ./w}\n"
    )
    p, err = _import(tmp_path, text)
    assert p is not None, err
    assert p["docker"]["volumes"] == [
        "/var/cache/vllm",  # anonymous: Docker makes one for the container, as with Compose
        "/srv/models:/models:ro,rslave,z",
        "proj_data:/data:nocopy",
        f"{tmp_path / 'proj' / 'w'}:/weights",  # the folder the local driver binds
    ]


def test_what_cannot_apply_is_refused_naming_key_and_line(tmp_path: Path) -> None:
    base = HEAD + "  vllm:\n    image: vllm/vllm-openai:v0.11.0\n    command: m --port 8000\n"
    p, err = _import(tmp_path, base + "    ipc: service:other\n  other:\n    image: busybox\n")
    assert (
        p is None and "docker-compose.yml:5, field 'services.vllm.ipc'" in err and "ipc: service:other" in err
    )
    # a volume driver and an image volume are kept (tests/test_round3_compose_left.py)
    # a pre_start hook runs (tests/core/profiles/test_compose_hooks.py); one per replica, Compose refuses
    p, err = _import(tmp_path, base + "    pre_start:\n      - command: echo hi\n        per_replica: true\n")
    assert p is None and "docker-compose.yml:7, field 'services.vllm.pre_start[0].per_replica'" in err, err
    assert "per_replica is not yet supported" in err


def test_env_file_format_raw_keeps_values_as_written(tmp_path: Path) -> None:
    text = (
        HEAD + "  vllm:\n    image: vllm/vllm-openai:v0.11.0\n    command: m --port 8000\n"
        "    ports: ['8000:8000']\n    env_file:\n      - {path: raw.env, format: raw}\n      - plain.env\n"
    )
    files = {"raw.env": 'QUOTED="a b"\nREF=${HOME}\n', "plain.env": 'PLAIN="a b"\n'}
    p, err = _import(tmp_path, text, files=files)
    assert p is not None, err
    assert p["env"] == {"QUOTED": '"a b"', "REF": "$${HOME}", "PLAIN": "a b"}  # $${HOME}: the literal ${HOME}


def test_device_requests_that_cannot_apply_are_refused(tmp_path: Path) -> None:
    base = (
        HEAD + "  vllm:\n    image: vllm/vllm-openai:v0.11.0\n    command: m --port 8000\n"
        "    ports: ['8000:8000']\n    deploy:\n      resources:\n        reservations:\n          devices:\n"
    )
    p, err = _import(tmp_path, base + "            - {driver: nvidia, count: 1}\n")
    assert p is None and "needs capabilities" in err
    assert "docker-compose.yml:10, field 'services.vllm.deploy.resources.reservations.devices[0]'" in err
    p, err = _import(tmp_path, base + "            - {capabilities: [tpu]}\n")
    assert p is not None and p["docker"]["devices"] == [{"capabilities": ["tpu"], "count": -1}], err
    p, err = _import(tmp_path, base + "            - {capabilities: [gpu], count: all}\n")
    assert p is not None and p["gpus"] == "all", err


def test_tmpfs_is_kept_and_planned(tmp_path: Path) -> None:
    text = (
        HEAD + "  vllm:\n    image: vllm/vllm-openai:v0.11.0\n    command: m --port 8000\n"
        "    ports: ['8000:8000']\n    tmpfs: /run\n    volumes:\n"
        "      - {type: tmpfs, target: /scratch, tmpfs: {size: 64m}}\n"
    )
    p, err = _import(tmp_path, text)
    assert p is not None, err
    assert p["docker"]["tmpfs"] == ["/run", "/scratch:size=64m"] and "volumes" not in p["docker"]
    home = tmp_path / "home"
    env = {**os.environ, "LLM_DYNO_HOME": str(home)}
    cmd = [sys.executable, "-m", "llm_dyno"]
    done = subprocess.run(
        [*cmd, "profile", "import", str(tmp_path / "proj" / "docker-compose.yml")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    plan = subprocess.run(
        [*cmd, "plan", "vllm", "--json"], env=env, capture_output=True, text=True, check=False
    )
    assert plan.returncode == 0, plan.stderr
    planned = json.loads(plan.stdout)
    assert planned["container"]["tmpfs"] == {"/run": "", "/scratch": "size=64m"}
    assert "--tmpfs /run --tmpfs /scratch:size=64m" in planned["command"]


def test_what_the_profile_does_not_keep_of_deploy_is_named_with_its_line(tmp_path: Path) -> None:
    """``deploy:`` keeps its GPU requests; replicas, limits, other reservations and policies are said,
    each at its line, never dropped without a word."""
    text = HEAD + (
        "  vllm:\n    image: vllm/vllm-openai:v0.11.0\n    command: m --port 8000\n    ports: ['8000:8000']\n"
        "    deploy:\n      replicas: 2\n      restart_policy: {condition: on-failure}\n      resources:\n"
        "        limits: {memory: 64g}\n        reservations:\n          memory: 1g\n"
        "          devices: [{driver: nvidia, count: all, capabilities: [gpu]}]\n"
    )
    p, err = _import(tmp_path, text)
    assert p is not None and p["gpus"] == "all", err
    for line, field, said in (
        (7, "deploy.replicas", "2 replicas: LLM Dyno runs one container of the server"),
        (8, "deploy.restart_policy", "not kept by LLM Dyno"),
        (10, "deploy.resources.limits", "not kept by LLM Dyno"),
        (12, "deploy.resources.reservations.memory", "not kept by LLM Dyno (it keeps the GPU requests)"),
    ):
        assert f"docker-compose.yml:{line}, field 'services.vllm.{field}': {said}" in err, err
    assert "devices" not in err
