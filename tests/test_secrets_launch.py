"""Secrets at launch, through the real CLI: a real vLLM in a process and in a container with an API
key and an HF token. The key reaches vLLM only through its environment (VLLM_API_KEY, HF_TOKEN): it
is in no process's argv (/proc/PID/cmdline), in no container command, label or name (docker
inspect), in no file the app wrote under LLM_DYNO_HOME; and the server demands it (401 / 200).
An unset key refuses the launch and names the variable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from llm_dyno.core.profiles.model import DockerSettings, ProcessSettings, Profile, Runtime
from tests.conftest_docker import free_port
from tests.support import vllm_env
from tests.support.images import VLLM_IMAGE, host_mounts

API_SECRET = "sk-wt12-launch-secret-7f3a9"
HF_SECRET = "hf_wt12launchsecret42"
SECRETS = (API_SECRET, HF_SECRET)
ARGS = ("--api-key", "${VLLM_API_KEY}", "--hf-token", "${HF_TOKEN}")


def cli(home: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60) -> Any:
    full = {**os.environ, "LLM_DYNO_HOME": str(home), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "llm_dyno", *args],
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _save(home: Path, profile: Profile) -> None:
    folder = home / "config" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{profile.name}.yaml").write_text(profile.to_yaml())


def _cmdlines_with(secret: str) -> list[str]:
    hits = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if secret.encode() in (proc / "cmdline").read_bytes():
                    hits.append(proc.name)
            except OSError:
                continue
    return hits


def _files_with(home: Path, secret: str) -> list[str]:
    return [str(p) for p in home.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def _check_key_demanded(url: str) -> None:
    assert httpx.get(url + "/v1/models", timeout=10).status_code == 401
    ok = httpx.get(url + "/v1/models", headers={"Authorization": f"Bearer {API_SECRET}"}, timeout=10)
    assert ok.status_code == 200 and ok.json()["data"][0]["id"] == "tiny"


def test_an_unset_key_refuses_the_launch_and_names_the_variable(tmp_path: Path) -> None:
    profile = Profile(
        name="keyless", runtime=Runtime.PROCESS, model="org/m", args=("--api-key", "${WT12_NO_SUCH_KEY}")
    )
    _save(tmp_path, profile)
    docker = profile.with_changes(
        name="keyless-docker", runtime=Runtime.DOCKER, docker=DockerSettings(image="i", ports=("8000:8000",))
    )
    _save(tmp_path, docker)
    for name in ("keyless", "keyless-docker"):
        for command in ("plan", "launch"):
            done = cli(tmp_path, command, name)
            assert done.returncode == 2, done.stdout + done.stderr
            assert (
                "error: --api-key refers to ${WT12_NO_SUCH_KEY}, which is not set: the server would start "
                "without authentication; launch refused" in done.stderr
            )
            assert "export WT12_NO_SUCH_KEY=… before launching" in done.stderr


@pytest.mark.vllm
def test_a_process_server_gets_its_key_only_through_its_environment(
    tmp_path: Path, tiny_model: Path, vllm_exe: Path, vllm_cache: Path
) -> None:
    home = tmp_path / "home"
    port = vllm_env.free_port()
    profile = Profile(
        name="keyed-process",
        runtime=Runtime.PROCESS,
        process=ProcessSettings(executable=str(vllm_exe)),
        model=str(tiny_model),
        args=(*vllm_env.FAST_ARGS, "--served-model-name", "tiny", "--port", str(port), *ARGS),
        env=vllm_env.server_env(vllm_cache),
    )
    _save(home, profile)
    env = {"VLLM_API_KEY": API_SECRET, "HF_TOKEN": HF_SECRET}
    try:
        done = cli(home, "launch", profile.name, "--wait", "--timeout", "180", env=env, timeout=200)
        assert done.returncode == 0, done.stdout + done.stderr
        _check_key_demanded(f"http://127.0.0.1:{port}")
        for secret in SECRETS:
            assert _cmdlines_with(secret) == []
            assert _files_with(home, secret) == []
            assert secret not in done.stdout + done.stderr
        status = cli(home, "status", "--json", env=env)
        assert API_SECRET not in status.stdout
        pid = next(r["pid"] for r in json.loads(status.stdout) if r["profile"] == profile.name)
        environ = Path(f"/proc/{pid}/environ").read_bytes()  # where it is meant to be: vLLM reads it
        assert f"VLLM_API_KEY={API_SECRET}".encode() in environ
    finally:
        cli(home, "stop", profile.name, env=env)
    for secret in SECRETS:
        assert _files_with(home, secret) == []  # logs and state files after the stop, too


@pytest.mark.docker
@pytest.mark.vllm
def test_a_container_gets_its_key_only_through_its_environment(
    tmp_path: Path,
    docker_client: Any,
    test_images: None,
    tiny_model: Path,
    unique_name: Callable[[str], str],
) -> None:
    home = tmp_path / "home"
    name = unique_name("wt12-keyed")
    port = free_port()
    profile = Profile(
        name=name,
        model=str(tiny_model),
        args=(
            *vllm_env.FAST_ARGS,
            "--served-model-name",
            "tiny",
            "--host",
            "0.0.0.0",  # noqa: S104 (inside the container; published on 127.0.0.1)
            "--port",
            "8000",
            *ARGS,
        ),
        env={"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"},
        docker=DockerSettings(
            image=VLLM_IMAGE,
            container_name=name,
            ports=(f"127.0.0.1:{port}:8000",),
            volumes=(*host_mounts(), f"{tiny_model}:{tiny_model}:ro"),
            shm_size="1g",
        ),
    )
    _save(home, profile)
    env = {"VLLM_API_KEY": API_SECRET, "HF_TOKEN": HF_SECRET}
    try:
        done = cli(home, "launch", name, "--wait", "--timeout", "240", env=env, timeout=260)
        assert done.returncode == 0, done.stdout + done.stderr
        _check_key_demanded(f"http://127.0.0.1:{port}")
        attrs = docker_client.api.inspect_container(name)
        config = attrs["Config"]
        # Config.Env is the container's environment: the one place the key is meant to be (anyone
        # who can read it can also `docker exec` into the container: Docker access is root access)
        assert f"VLLM_API_KEY={API_SECRET}" in config["Env"] and f"HF_TOKEN={HF_SECRET}" in config["Env"]
        shown = json.dumps({k: v for k, v in config.items() if k != "Env"}) + json.dumps(
            {k: v for k, v in attrs.items() if k != "Config"}
        )
        for secret in SECRETS:
            assert secret not in shown  # Cmd, Entrypoint, Labels, Args, Name, HostConfig …
            assert _cmdlines_with(secret) == []  # the host's ps sees the container's vLLM too
            assert _files_with(home, secret) == []
    finally:
        cli(home, "stop", name, env=env, timeout=90)
    for secret in SECRETS:
        assert _files_with(home, secret) == []


def test_import_moves_literal_secrets_and_abbreviations_to_references(tmp_path: Path) -> None:
    line = tmp_path / "serve.sh"
    line.write_text(f"vllm serve Qwen/Q --api-ke {API_SECRET} --hf-token={HF_SECRET}\n")
    compose = tmp_path / "compose.yaml"
    compose.write_text(
        "services:\n  vllm:\n    image: vllm/vllm-openai\n"
        f'    command: ["Qwen/Q", "--api-key", "${{VLLM_API_KEY:-{API_SECRET}}}"]\n    ports: ["8000:8000"]\n'
    )
    done = cli(tmp_path, "profile", "import", str(line), "--name", "from-line")
    assert done.returncode == 0, done.stderr
    assert "warning: --api-ke held a literal secret; replaced it with ${VLLM_API_KEY}" in done.stderr
    assert "warning: --api-ke is an abbreviation of --api-key; written out in full" in done.stderr
    saved = (tmp_path / "config" / "profiles" / "from-line.yaml").read_text()
    assert "- --api-key\n- ${VLLM_API_KEY}\n- --hf-token=${HF_TOKEN}\n" in saved
    done = cli(tmp_path, "profile", "import", str(compose), "--name", "from-compose")
    assert done.returncode == 0, done.stderr
    # compose interpolation keeps ${VLLM_API_KEY:-…} a reference: its literal default is what is replaced
    assert "--api-key had a literal default; replaced it with ${VLLM_API_KEY}" in done.stderr
    for secret in SECRETS:
        assert _files_with(tmp_path / "config", secret) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            f'[--api-ke, "{API_SECRET}"]',
            "args[0]: --api-ke holds a secret value; use a reference like ${VLLM_API_KEY}",
        ),
        (
            '[--api-key, "${VLLM_API_KEY:-sk-abc}"]',
            "args[0]: --api-key has a literal default (the secret itself, stored in the profile)",
        ),
        (
            f'["--hf-token={HF_SECRET}"]',
            "args[0]: --hf-token holds a secret value; use a reference like ${HF_TOKEN}",
        ),
    ],
)
def test_a_profile_holding_a_secret_is_refused(args: str, message: str, tmp_path: Path) -> None:
    folder = tmp_path / "config" / "profiles"
    folder.mkdir(parents=True)
    (folder / "lit.yaml").write_text(f"schema: 1\nname: lit\nmodel: m\nruntime: process\nargs: {args}\n")
    done = cli(tmp_path, "profile", "list")
    assert f"lit.yaml:5, field 'args[0]': {message}" in done.stderr
