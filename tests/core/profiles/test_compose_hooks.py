"""Compose lifecycle hooks (issue 23), as Compose 2.30+ runs them (docker/compose pkg/e2e/hooks_test.go):
``post_start`` is a docker exec in the container once it started, ``pre_stop`` one before it stops; a
failing ``post_start`` fails the launch with "post_start hook exited with status N" (Compose: "test hook
exited with status 127"). Imported through the CLI, launched and stopped on a real engine; the hooks'
effects are read back from a bind-mounted folder. ``pre_start`` (an init container) stays refused."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest_docker import free_port
from tests.support.cli import cli as _cli
from tests.support.images import TINY_IMAGE

COMPOSE = """\
services:
  vllm:
    image: {image}
    entrypoint: ["/usr/bin/python3", "-u", "/dyno/fake_vllm.py"]
    command: ["tiny", "--port", "8000"]
    ports: ["{port}:8000"]
    volumes: ["/usr:/usr:ro", "./out:/out"]
    post_start:
      - command: sh -c 'echo started-$$HOOK_VAR > /out/post.txt; echo hook-says-hello'
        environment:
          HOOK_VAR: from-hook
    pre_stop:
      - command: ["sh", "-c", "echo {stop_says} >> /out/pre.txt; exit {stop_code}"]
"""


def _project(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "proj"
    (folder / "out").mkdir(parents=True)
    (folder / "docker-compose.yml").write_text(text)
    return folder / "docker-compose.yml"


def _cleanup(docker_client: Any, name: str) -> None:
    for c in docker_client.containers.list(all=True, filters={"label": f"llm-dyno.profile={name}"}):
        c.remove(force=True)


@pytest.mark.docker
@pytest.mark.parametrize("stop_code", [0, 3])
def test_post_start_and_pre_stop_hooks_run_in_the_container(
    tmp_path: Path, docker_client: Any, test_images: None, stop_code: int
) -> None:
    compose = _project(
        tmp_path,
        COMPOSE.format(image=TINY_IMAGE, port=free_port(), stop_says="in-the-pre-stop", stop_code=stop_code),
    )
    home, name = tmp_path / "home", f"wt23hook{uuid.uuid4().hex[:6]}"
    imported = _cli(home, "profile", "import", str(compose), "--name", name)
    assert imported.returncode == 0, imported.stderr
    assert "post_start" not in imported.stderr and "pre_stop" not in imported.stderr  # kept, not warned
    planned = json.loads(_cli(home, "plan", name, "--json").stdout)
    assert planned["hooks"] == {
        "post_start": [
            {
                "command": ["sh", "-c", "echo started-$HOOK_VAR > /out/post.txt; echo hook-says-hello"],
                "environment": {"HOOK_VAR": "from-hook"},
            }
        ],
        "pre_stop": [{"command": ["sh", "-c", f"echo in-the-pre-stop >> /out/pre.txt; exit {stop_code}"]}],
    }
    out = tmp_path / "proj" / "out"
    try:
        launched = _cli(home, "launch", name, "--wait", "--timeout", "60")
        assert launched.returncode == 0, launched.stderr
        assert (out / "post.txt").read_text() == "started-from-hook\n"  # run in the container, its env
        assert not (out / "pre.txt").exists()
        stopped = _cli(home, "stop", name)
        assert stopped.returncode == 0, stopped.stderr
    finally:
        _cleanup(docker_client, name)
    assert (out / "pre.txt").read_text() == "in-the-pre-stop\n"  # ran before the container stopped
    # a failing pre_stop hook is said; the stop goes on (the user asked for it)
    assert ("pre_stop hook exited with status 3" in stopped.stdout) is (stop_code == 3), stopped.stdout
    assert docker_client.containers.list(all=True, filters={"label": f"llm-dyno.profile={name}"}) == []


@pytest.mark.docker
def test_a_failing_post_start_hook_fails_the_launch_with_its_status(
    tmp_path: Path, docker_client: Any, test_images: None
) -> None:
    text = COMPOSE.format(image=TINY_IMAGE, port=free_port(), stop_says="x", stop_code=0).replace(
        "echo hook-says-hello'", "echo about-to-fail; command-in-error'"
    )
    home, name = tmp_path / "home", f"wt23hookerr{uuid.uuid4().hex[:6]}"
    assert _cli(home, "profile", "import", str(_project(tmp_path, text)), "--name", name).returncode == 0
    try:
        launched = _cli(home, "launch", name, "--wait", "--timeout", "60")
        left = docker_client.containers.list(all=True, filters={"label": f"llm-dyno.profile={name}"})
    finally:
        _cleanup(docker_client, name)
    assert launched.returncode != 0 and "Traceback" not in launched.stderr
    assert "post_start hook exited with status 127" in launched.stderr  # sh: command not found
    assert "| [post_start] about-to-fail" in launched.stderr  # the hook's own output, in the log excerpt
    assert left == []  # the failed launch leaves no container behind


def test_pre_start_and_privileged_hooks_are_refused_naming_the_line(tmp_path: Path) -> None:
    base = COMPOSE.format(image=TINY_IMAGE, port=8000, stop_says="x", stop_code=0)
    for text, where, said in (
        (
            base + "    pre_start:\n      - command: echo hi\n",
            "docker-compose.yml:14, field 'services.vllm.pre_start'",
            "init container of its own",
        ),
        (
            base + "        privileged: true\n",
            "docker-compose.yml:14, field 'services.vllm.pre_stop[0].privileged'",
            "a privileged pre_stop hook",
        ),
    ):
        folder = tmp_path / uuid.uuid4().hex[:6]
        folder.mkdir()
        (folder / "docker-compose.yml").write_text(text)
        result = _cli(tmp_path / "home", "profile", "import", str(folder / "docker-compose.yml"))
        assert result.returncode != 0 and "Traceback" not in result.stderr
        assert where in result.stderr and said in result.stderr, result.stderr


def test_compose_export_keeps_the_hooks(tmp_path: Path) -> None:
    import yaml

    compose = _project(tmp_path, COMPOSE.format(image=TINY_IMAGE, port=8000, stop_says="bye", stop_code=0))
    home = tmp_path / "home"
    assert _cli(home, "profile", "import", str(compose), "--name", "a").returncode == 0
    exported = _cli(home, "profile", "export", "a", "--format", "compose")
    assert exported.returncode == 0, exported.stderr
    (tmp_path / "again").mkdir()
    (tmp_path / "again" / "compose.yaml").write_text(exported.stdout)
    assert (
        _cli(home, "profile", "import", str(tmp_path / "again" / "compose.yaml"), "--name", "b").returncode
        == 0
    )

    def hooks(name: str) -> Any:
        docker = yaml.safe_load((home / "config" / "profiles" / f"{name}.yaml").read_text())["docker"]
        return docker["post_start"], docker["pre_stop"]

    assert hooks("a") == hooks("b")
    assert hooks("a")[0][0]["command"][2].startswith("echo started-$HOOK_VAR")
    line = _cli(home, "profile", "export", "a", "--format", "docker-run")
    assert line.returncode != 0 and "lifecycle hooks" in line.stderr and "Traceback" not in line.stderr
