"""Compose lifecycle hooks (issue 23), as Compose runs them (docker/compose pkg/e2e/hooks_test.go,
pkg/compose/pre_start.go): ``pre_start`` hooks are one-off containers run in order, to completion, before
the server's container starts (its volumes and environment, their own image, command and environment);
``post_start`` is a docker exec in the container once it started, ``pre_stop`` one before it stops. A
failing hook fails the launch with its status (Compose: "test hook exited with status 127",
"pre_start[1] ... 17"). Imported through the CLI, launched and stopped on a real engine; the hooks'
effects are read back from a bind-mounted folder."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest_docker import free_port
from tests.support.cli import cli as _cli
from tests.support.images import PLAIN_IMAGE, TINY_IMAGE

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
        "pre_start": [],
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


PRE_START = """\
    environment:
      SERVER_VAR: from-server
    pre_start:
      - command: sh -c 'echo A >> /out/order.txt'
      - image: {image}
        command: ["sh", "-c", "sleep 1; echo B-$$HOOK_VAR-$$SERVER_VAR >> /out/order.txt; {last}"]
        environment:
          HOOK_VAR: from-hook
"""


def _init_containers(docker_client: Any) -> list[Any]:
    return docker_client.containers.list(all=True, filters={"label": "llm-dyno.pre-start-of"})


def _imported(tmp_path: Path, name: str, last: str) -> Path:
    """A profile ``name`` imported through the CLI from a compose file with two pre_start hooks, the
    second ending in ``last``; the CLI's home."""
    # the server's image has no entrypoint (the service names one): hook 0 runs its command in it
    text = COMPOSE.format(image=PLAIN_IMAGE, port=free_port(), stop_says="x", stop_code=0)
    text += PRE_START.format(image=PLAIN_IMAGE, last=last)
    home = tmp_path / "home"
    imported = _cli(home, "profile", "import", str(_project(tmp_path, text)), "--name", name)
    assert imported.returncode == 0, imported.stderr
    assert "pre_start" not in imported.stderr  # kept, not warned
    return home


@pytest.mark.docker
def test_pre_start_hooks_run_in_order_before_the_server_starts(
    tmp_path: Path, docker_client: Any, test_images: None
) -> None:
    name = f"wt23pre{uuid.uuid4().hex[:6]}"
    home = _imported(tmp_path, name, "echo hook-two-says-hi")
    planned = json.loads(_cli(home, "plan", name, "--json").stdout)
    assert planned["hooks"]["pre_start"] == [
        {"command": ["sh", "-c", "echo A >> /out/order.txt"]},
        {
            "command": [
                "sh",
                "-c",
                "sleep 1; echo B-$HOOK_VAR-$SERVER_VAR >> /out/order.txt; echo hook-two-says-hi",
            ],
            "environment": {"HOOK_VAR": "from-hook"},
            "image": PLAIN_IMAGE,
        },
    ]
    shown = _cli(home, "plan", name).stdout
    server = f"llm-dyno-{name}"
    assert (
        "# pre_start[0] runs first, to completion, in a container of its own with the server's volumes and "
        f"environment:\ndocker run --rm --volumes-from {server} --network proj_default {PLAIN_IMAGE} sh -c "
        "'echo A >> /out/order.txt'\n"
    ) in shown, shown
    assert (
        f"docker run --rm --volumes-from {server} --network proj_default -e HOOK_VAR=from-hook {PLAIN_IMAGE} "
        "sh -c 'sleep 1; echo B-$HOOK_VAR-$SERVER_VAR"
    ) in shown, shown
    assert "# post_start[0] runs in the server's container once it started:\ndocker exec -e HOOK_" in shown
    order = tmp_path / "proj" / "out" / "order.txt"
    try:
        launched = _cli(home, "launch", name, "--wait", "--timeout", "60")
        assert launched.returncode == 0, launched.stderr
        # in order, with the server's environment and the hook's own, the server's bind mount
        assert order.read_text() == "A\nB-from-hook-from-server\n"
        server = docker_client.containers.list(filters={"label": f"llm-dyno.profile={name}"})[0]
        started = server.attrs["State"]["StartedAt"]
        assert _init_containers(docker_client) == []  # each removed once it finished
    finally:
        _cleanup(docker_client, name)
    # the server started after the second hook wrote (it slept 1 s first): RFC 3339, to the second
    written = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(order.stat().st_mtime))
    assert started[:19] >= written, (started, written)


@pytest.mark.docker
def test_a_failing_pre_start_hook_stops_the_launch_after_the_earlier_hooks(
    tmp_path: Path, docker_client: Any, test_images: None
) -> None:
    name = f"wt23preerr{uuid.uuid4().hex[:6]}"
    home = _imported(tmp_path, name, "echo about-to-fail; exit 17")
    try:
        launched = _cli(home, "launch", name, "--wait", "--timeout", "60")
        left = docker_client.containers.list(all=True, filters={"label": f"llm-dyno.profile={name}"})
        init_left = _init_containers(docker_client)
    finally:
        _cleanup(docker_client, name)
    assert launched.returncode != 0 and "Traceback" not in launched.stderr
    assert "pre_start[1] exited with status 17" in launched.stderr, (
        launched.stderr
    )  # Compose: pre_start[1], 17
    assert "| [pre_start] about-to-fail" in launched.stderr  # the hook's own output, in the log excerpt
    assert (tmp_path / "proj" / "out" / "order.txt").read_text().startswith("A\n")  # the first one ran
    assert left == [] and init_left == []  # the server never started and nothing is left behind
    assert not (tmp_path / "proj" / "out" / "post.txt").exists()  # nor did its post_start run


def test_privileged_and_per_replica_hooks_are_refused_naming_the_line(tmp_path: Path) -> None:
    base = COMPOSE.format(image=TINY_IMAGE, port=8000, stop_says="x", stop_code=0)
    for text, where, said in (
        (
            base + "    pre_start:\n      - command: echo hi\n        per_replica: true\n",
            "docker-compose.yml:16, field 'services.vllm.pre_start[0].per_replica'",
            "Compose refuses it too",
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

    text = COMPOSE.format(image=TINY_IMAGE, port=8000, stop_says="bye", stop_code=0)
    compose = _project(tmp_path, text + PRE_START.format(image="alpine:3", last="exit 0"))
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
        return docker["post_start"], docker["pre_stop"], docker["pre_start"]

    assert hooks("a") == hooks("b")
    assert hooks("a")[0][0]["command"][2].startswith("echo started-$HOOK_VAR")
    assert [h.get("image") for h in hooks("a")[2]] == [None, "alpine:3"]
    line = _cli(home, "profile", "export", "a", "--format", "docker-run")
    assert line.returncode != 0 and "Traceback" not in line.stderr
    assert "lifecycle hooks (pre_start / post_start / pre_stop)" in line.stderr, line.stderr
