"""Compose semantics of issue 29 (round 3): device requests and ``configs:``, through ``llm-dyno profile
import``, ``profile show``, ``plan --json`` and ``profile export`` in a subprocess, as Compose v2 has them
(docker/compose ``pkg/compose/create.go``: ``getDeployResources`` passes every device request to Docker
with its driver, count, IDs, capabilities and options; ``buildContainerConfigMounts`` binds a file config
read-only at ``/<name>`` or its target, as file secrets are bound)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest_docker import free_port
from tests.support.cli import cli
from tests.support.images import TINY_IMAGE

SERVICE = (
    "services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n    command: m --port 8000\n"
    "    ports: ['8000:8000']\n"
)
DEVICES = "    deploy:\n      resources:\n        reservations:\n          devices:\n"
NVIDIA = "            - {driver: nvidia, device_ids: ['0', '1'], capabilities: [gpu]}\n"
AMD = "            - {driver: amd.com, count: 2, capabilities: [gpu, compute], options: {x: 'y'}}\n"


def _import(
    tmp_path: Path, text: str, files: dict[str, str] | None = None
) -> tuple[dict[str, Any] | None, str]:
    folder = tmp_path / "proj"
    folder.mkdir(exist_ok=True)
    for name, content in (files or {}).items():
        (folder / name).write_text(content)
    (folder / "docker-compose.yml").write_text(text)
    done = cli(tmp_path / "home", "profile", "import", str(folder / "docker-compose.yml"), "--name", "p")
    assert "Traceback" not in done.stderr, done.stderr
    if done.returncode != 0:
        return None, done.stderr
    shown = cli(tmp_path / "home", "profile", "show", "p")
    assert shown.returncode == 0, shown.stderr
    return yaml.safe_load(shown.stdout), done.stderr


def _plan(tmp_path: Path) -> dict[str, Any]:
    plan = cli(tmp_path / "home", "plan", "p", "--json")
    assert plan.returncode == 0, plan.stderr
    return dict(json.loads(plan.stdout))


AMD_KEPT = {"driver": "amd.com", "count": 2, "capabilities": ["gpu", "compute"], "options": {"x": "y"}}
AMD_REQUEST = {
    "Driver": "amd.com",
    "Count": 2,
    "DeviceIDs": [],
    "Capabilities": [["gpu", "compute"]],
    "Options": {"x": "y"},
}
NVIDIA_REQUEST = {"Driver": "", "Count": 0, "DeviceIDs": ["0", "1"], "Capabilities": [["gpu"]], "Options": {}}


def test_every_device_request_is_kept_whatever_the_order(tmp_path: Path) -> None:
    for order in ((NVIDIA, AMD), (AMD, NVIDIA)):
        case = tmp_path / str(len(list(tmp_path.iterdir())))
        case.mkdir()
        profile, err = _import(case, SERVICE + DEVICES + "".join(order))
        assert profile is not None, err
        assert profile["gpus"] == [0, 1], profile  # the GPU logic reads the NVIDIA request
        assert profile["docker"]["devices"] == [AMD_KEPT]
        planned = _plan(case)
        assert planned["container"]["device_requests"] == [NVIDIA_REQUEST, AMD_REQUEST]
        assert "--gpus '\"device=0,1\"'" in planned["command"]
        assert "--gpus 'driver=amd.com,count=2,\"capabilities=gpu,compute\"'" in planned["command"]


def test_the_compose_export_writes_every_request_and_reads_back_the_same(tmp_path: Path) -> None:
    profile, err = _import(tmp_path, SERVICE + DEVICES + AMD + NVIDIA)
    assert profile is not None, err
    exported = cli(tmp_path / "home", "profile", "export", "p", "--format", "compose")
    assert exported.returncode == 0, exported.stderr
    devices = yaml.safe_load(exported.stdout)["services"]
    (service,) = devices.values()
    written = service["deploy"]["resources"]["reservations"]["devices"]
    assert written == [
        {"driver": "nvidia", "device_ids": ["0", "1"], "capabilities": ["gpu"]},
        {"driver": "amd.com", "count": 2, "capabilities": ["gpu", "compute"], "options": {"x": "y"}},
    ]
    again = tmp_path / "again"
    again.mkdir()
    back, err = _import(again, exported.stdout)
    assert back is not None, err
    assert back["gpus"] == [0, 1] and back["docker"]["devices"] == [AMD_KEPT]
    # a docker run line would lose the options: refused, naming the field, never written without them
    line = cli(tmp_path / "home", "profile", "export", "p", "--format", "docker-run")
    assert line.returncode != 0 and "Traceback" not in line.stderr
    assert "device requests besides its GPUs (drivers amd.com)" in line.stderr
    assert "docker.devices" in line.stderr


def test_a_profile_with_only_another_drivers_devices_is_not_warned_of_having_no_gpus(tmp_path: Path) -> None:
    profile, err = _import(tmp_path, SERVICE + DEVICES + AMD)
    assert profile is not None, err
    assert "gpus" not in profile or profile["gpus"] is None
    planned = _plan(tmp_path)
    assert planned["container"]["device_requests"] == [AMD_REQUEST]
    assert "no GPUs requested" not in json.dumps(planned["warnings"])


def test_a_request_with_both_count_and_device_ids_is_refused_at_its_line(tmp_path: Path) -> None:
    text = (
        SERVICE
        + DEVICES
        + NVIDIA
        + "            - {driver: amd.com, count: 1, device_ids: ['0'], capabilities: [gpu]}\n"
    )
    profile, err = _import(tmp_path, text)
    assert profile is None
    assert "both count and device_ids" in err
    assert "docker-compose.yml:11, field 'services.vllm.deploy.resources.reservations.devices[1]'" in err


def test_file_configs_are_bound_read_only_at_their_name_or_target(tmp_path: Path) -> None:
    text = SERVICE + (
        "    configs:\n      - plain\n      - {source: templ, target: /etc/app/chat.jinja, mode: 0440}\n"
        "      - {source: rel, target: rel.conf}\n"
        "configs:\n  plain: {file: ./plain.txt}\n  templ: {file: ./chat.jinja}\n  rel: {file: ./rel.txt}\n"
    )
    files = {"plain.txt": "a", "chat.jinja": "b", "rel.txt": "c"}
    profile, err = _import(tmp_path, text, files)
    assert profile is not None, err
    folder = (tmp_path / "proj").resolve()
    assert profile["docker"]["secrets"] == [
        {"target": "/plain", "file": str(folder / "plain.txt")},
        {"target": "/etc/app/chat.jinja", "file": str(folder / "chat.jinja")},
        {"target": "/rel.conf", "file": str(folder / "rel.txt")},
    ]
    assert "not kept" not in err, err
    assert "uid, gid and mode of a file config are ignored" in err  # as Compose warns
    mounts = _plan(tmp_path)["container"]["mounts"]
    assert [(m["Target"], m["Source"], m["Type"], m["ReadOnly"]) for m in mounts] == [
        ("/plain", str(folder / "plain.txt"), "bind", True),
        ("/etc/app/chat.jinja", str(folder / "chat.jinja"), "bind", True),
        ("/rel.conf", str(folder / "rel.txt"), "bind", True),
    ]


def test_an_environment_config_is_written_from_the_variable_at_launch(tmp_path: Path) -> None:
    text = SERVICE + "    configs: [tpl]\nconfigs:\n  tpl: {environment: CHAT_TEMPLATE}\n"
    profile, err = _import(tmp_path, text)
    assert profile is not None, err
    assert profile["docker"]["secrets"] == [{"target": "/tpl", "environment": "CHAT_TEMPLATE"}]


def test_an_external_config_is_refused_naming_its_line(tmp_path: Path) -> None:
    text = SERVICE + "    configs: [ext]\nconfigs:\n  ext:\n    external: true\n"
    profile, err = _import(tmp_path, text)
    assert profile is None
    assert "config 'ext' uses external:, which only Swarm provides" in err
    assert "docker-compose.yml:9, field 'configs.ext.external'" in err


@pytest.mark.docker
def test_a_file_config_is_in_the_launched_container_read_only(
    tmp_path: Path, docker_client: Any, test_images: None
) -> None:
    text = (
        f"services:\n  vllm:\n    image: {TINY_IMAGE}\n"
        '    entrypoint: ["/usr/bin/python3", "-u", "/dyno/fake_vllm.py"]\n'
        f'    command: ["tiny", "--port", "8000"]\n    ports: ["{free_port()}:8000"]\n'
        '    volumes: ["/usr:/usr:ro"]\n'
        "    configs: [chat, {source: chat, target: /etc/dyno/chat.jinja}]\n"
        "configs:\n  chat: {file: ./chat.jinja}\n"
    )
    name = f"r3cfg{uuid.uuid4().hex[:6]}"
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "chat.jinja").write_text("{{ messages }}\n")
    (folder / "docker-compose.yml").write_text(text)
    home = tmp_path / "home"
    assert cli(home, "profile", "import", str(folder / "docker-compose.yml"), "--name", name).returncode == 0
    try:
        launched = cli(home, "launch", name, "--wait", "--timeout", "60")
        assert launched.returncode == 0, launched.stderr
        (found,) = docker_client.containers.list(filters={"label": f"llm-dyno.profile={name}"})
        for path in ("/chat", "/etc/dyno/chat.jinja"):
            code, out = found.exec_run(["/usr/bin/cat", path])
            assert (code, bytes(out)) == (0, b"{{ messages }}\n"), path
            code, _ = found.exec_run(["/usr/bin/touch", path])
            assert code != 0, f"{path} is writable"  # bound read-only, as Compose binds it
            (mount,) = [m for m in found.attrs["Mounts"] if m["Destination"] == path]
            assert (mount["Type"], mount["RW"]) == ("bind", False)
    finally:
        cli(home, "stop", name)
        for c in docker_client.containers.list(all=True, filters={"label": f"llm-dyno.profile={name}"}):
            c.remove(force=True)
