"""Compose semantics of issue 29 (round 3) that were left: inline ``content:`` configs, volumes with a
driver, image volumes; through ``profile import``, ``plan`` and ``launch`` in a subprocess, as Docker
Compose v2 has them (docker/compose ``pkg/compose/secrets.go`` ``injectConfigs``: the content written
into the created container at ``/<name>`` or the target, mode 0444; ``create.go``: volumes created with
their driver and options before the containers, image mounts refused below Engine API 1.48)."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest_docker import free_port
from tests.support.cli import cli
from tests.support.create_engine import CreateRecordingEngine
from tests.support.images import TINY_IMAGE

SERVICE = (
    "services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n    command: m --port 8000\n"
    "    ports: ['8000:8000']\n"
)
# a stand-in server the real engine runs (tests/support/images.py): the host's /usr bound read-only
TINY_SERVICE = (
    f"  vllm:\n    image: {TINY_IMAGE}\n"
    '    entrypoint: ["/usr/bin/python3", "-u", "/dyno/fake_vllm.py"]\n'
    '    command: ["tiny", "--port", "8000"]\n    ports: ["@PORT@:8000"]\n'
    "    network_mode: bridge\n"
)


def _write(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir(exist_ok=True)
    (folder / "docker-compose.yml").write_text(text)
    return folder / "docker-compose.yml"


def _import(tmp_path: Path, text: str, name: str = "p") -> tuple[dict[str, Any] | None, str]:
    done = cli(tmp_path / "home", "profile", "import", str(_write(tmp_path, text)), "--name", name)
    assert "Traceback" not in done.stderr, done.stderr
    if done.returncode != 0:
        return None, done.stderr
    shown = cli(tmp_path / "home", "profile", "show", name)
    assert shown.returncode == 0, shown.stderr
    return yaml.safe_load(shown.stdout), done.stderr


def _plan(tmp_path: Path, *json_flag: str, name: str = "p") -> Any:
    plan = cli(tmp_path / "home", "plan", name, *json_flag)
    assert plan.returncode == 0, plan.stderr
    return json.loads(plan.stdout) if json_flag else plan.stdout


def _tiny(extra: str, project: str) -> str:
    return f"name: {project}\nservices:\n" + TINY_SERVICE.replace("@PORT@", str(free_port())) + extra


# ---- inline content: configs --------------------------------------------------------------------
CONTENT = (
    SERVICE + "    configs: [inline, {source: inline, target: /etc/dyno/t.conf, mode: 0440}]\n"
    "configs:\n  inline:\n    content: |\n      greeting=hello $$HOME\n      who=${WHO}\n"
)


def test_a_content_config_is_kept_planned_and_exported(tmp_path: Path) -> None:
    env = {**os.environ, "WHO": "dyno"}
    done = cli(tmp_path / "home", "profile", "import", str(_write(tmp_path, CONTENT)), "--name", "p", env=env)
    assert done.returncode == 0, done.stderr
    assert "does not keep" not in done.stderr
    text = "greeting=hello $HOME\nwho=dyno\n"  # interpolated at import as Compose does ($$: a literal $)
    profile = yaml.safe_load(cli(tmp_path / "home", "profile", "show", "p").stdout)
    assert profile["docker"]["secrets"] == [
        {"target": "/inline", "content": text},
        {"target": "/etc/dyno/t.conf", "content": text, "mode": 0o440},
    ]
    planned = _plan(tmp_path, "--json")
    assert planned["files"] == [
        {"path": "/inline", "content": text, "mode": "0444"},  # Compose's default mode for a config
        {"path": "/etc/dyno/t.conf", "content": text, "mode": "0440"},
    ]
    said = _plan(tmp_path)
    assert "with the config's content" in said and "/inline (30 bytes, mode 0444)" in said, said
    # a compose export declares it again as content (the $ escaped), which imports back the same
    exported = cli(tmp_path / "home", "profile", "export", "p", "--format", "compose")
    assert exported.returncode == 0, exported.stderr
    again = tmp_path / "again"
    again.mkdir()
    (again / "compose.yaml").write_text(exported.stdout)
    back = cli(tmp_path / "home", "profile", "import", str(again / "compose.yaml"), "--name", "q")
    assert back.returncode == 0, back.stderr
    shown = yaml.safe_load(cli(tmp_path / "home", "profile", "show", "q").stdout)
    assert shown["docker"]["secrets"] == profile["docker"]["secrets"]


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("token: hf_" + "a1B2c3D4e5" * 3, "a Hugging Face token"),
        ("--api-key sk-literal-value", "a literal --api-key or --hf-token value"),
        ("HF_TOKEN=abc123secret", "a literal value for HF_TOKEN"),
        ("key: ${HF_TOKEN}", "refers to a secret"),
    ],
)
def test_a_content_config_that_holds_a_secret_is_refused_at_its_line(
    tmp_path: Path, content: str, said: str
) -> None:
    text = SERVICE + f"    configs: [c]\nconfigs:\n  c:\n    content: '{content}'\n"
    profile, err = _import(tmp_path, text)
    assert profile is None
    assert "docker-compose.yml:8, field 'configs.c'" in err and said in err, err
    assert "environment:" in err  # the way out: a config read from a variable at launch
    assert content.split()[-1] not in err or "${" in content  # the secret is never echoed


@pytest.mark.docker
def test_a_content_config_is_written_into_the_launched_container(
    tmp_path: Path, docker_client: Any, test_images: None
) -> None:
    name = f"r3cnt{uuid.uuid4().hex[:6]}"
    extra = (
        '    volumes: ["/usr:/usr:ro"]\n'
        "    configs: [inlined, {source: inlined, target: /target}]\n"
        "configs:\n  inlined:\n    content: This is my $$CONFIG\n"
    )
    home = tmp_path / "home"
    assert (
        cli(home, "profile", "import", str(_write(tmp_path, _tiny(extra, name))), "--name", name).returncode
        == 0
    )
    try:
        launched = cli(home, "launch", name, "--wait", "--timeout", "60")
        assert launched.returncode == 0, launched.stderr
        (found,) = docker_client.containers.list(filters={"label": f"llm-dyno.profile={name}"})
        for path in ("/inlined", "/target"):  # TestConfigFromEnv's two content services
            code, out = found.exec_run(["/usr/bin/cat", path])
            assert (code, bytes(out)) == (0, b"This is my $CONFIG"), path
            code, out = found.exec_run(["/usr/bin/stat", "-c", "%a", path])
            assert (code, bytes(out).strip()) == (0, b"444"), path  # Compose's mode for a config
        assert not any(m["Destination"] in ("/inlined", "/target") for m in found.attrs["Mounts"])
    finally:
        cli(home, "stop", name)
        for c in docker_client.containers.list(all=True, filters={"label": f"llm-dyno.profile={name}"}):
            c.remove(force=True)


# ---- volumes with a driver ---------------------------------------------------------------------
def test_a_volume_with_a_driver_is_kept_and_planned(tmp_path: Path) -> None:
    text = (
        "name: shop\n" + SERVICE + "    volumes: [cache:/cache, cache:/again]\n"
        "volumes:\n  cache:\n    driver: rexray/ebs\n    driver_opts: {size: '10', volumetype: gp2}\n"
        "    labels: {team: ml}\n"
    )
    profile, err = _import(tmp_path, text)
    assert profile is not None, err
    assert profile["docker"]["volumes"] == ["shop_cache:/cache", "shop_cache:/again"]
    assert profile["docker"]["driver_volumes"] == [  # one volume, created once
        {
            "name": "shop_cache",
            "driver": "rexray/ebs",
            "options": {"size": "10", "volumetype": "gp2"},
            "labels": {
                "team": "ml",
                "com.docker.compose.project": "shop",
                "com.docker.compose.volume": "cache",
            },
        }
    ]
    said = _plan(tmp_path)
    assert "# volume shop_cache (driver rexray/ebs) is created before the container, when missing:" in said
    assert (
        "docker volume create --driver rexray/ebs --opt size=10 --opt volumetype=gp2 "
        "--label com.docker.compose.project=shop --label com.docker.compose.volume=cache --label team=ml "
        "-- shop_cache"
    ) in said, said


def test_a_secret_in_a_volume_option_is_refused_naming_the_option(tmp_path: Path) -> None:
    text = (
        SERVICE + "    volumes: [share:/share]\nvolumes:\n  share:\n    driver: local\n"
        "    driver_opts:\n      type: cifs\n      device: //nas/models\n"
        "      o: username=me,password=hunter2\n"
    )
    profile, err = _import(tmp_path, text)
    assert profile is None
    assert "docker-compose.yml:13, field 'volumes.share'" in err and "driver_opts.o" in err, err
    assert "hunter2" not in err and "external: true" in err


@pytest.mark.docker
def test_a_missing_volume_plugin_fails_the_launch_before_anything_exists(
    tmp_path: Path, docker_client: Any, test_images: None
) -> None:
    name = f"r3drv{uuid.uuid4().hex[:6]}"
    extra = (
        "    volumes: [cache:/cache]\n"
        "volumes:\n  cache:\n    driver: dyno-absent-plugin\n    driver_opts: {size: '1'}\n"
    )
    home = tmp_path / "home"
    assert (
        cli(home, "profile", "import", str(_write(tmp_path, _tiny(extra, name))), "--name", name).returncode
        == 0
    )
    try:
        launched = cli(home, "launch", name, "--wait", "--timeout", "60")
        assert launched.returncode != 0 and "Traceback" not in launched.stderr
        err = launched.stderr
        assert f"volume {name}_cache (driver dyno-absent-plugin) cannot be created" in err, err
        assert "docker plugin install dyno-absent-plugin" in err and "No container was created" in err
        assert docker_client.containers.list(all=True, filters={"label": f"llm-dyno.profile={name}"}) == []
        assert [v for v in docker_client.volumes.list() if v.name == f"{name}_cache"] == []
    finally:
        for c in docker_client.containers.list(all=True, filters={"label": f"llm-dyno.profile={name}"}):
            c.remove(force=True)


@pytest.mark.docker
def test_a_local_volume_with_options_is_created_and_mounted(
    tmp_path: Path, docker_client: Any, test_images: None
) -> None:
    name = f"r3loc{uuid.uuid4().hex[:6]}"
    extra = (
        '    volumes: ["/usr:/usr:ro", "scratch:/scratch"]\n'
        "volumes:\n  scratch:\n    driver_opts: {type: tmpfs, device: tmpfs, o: 'size=8m,uid=0'}\n"
    )
    home = tmp_path / "home"
    assert (
        cli(home, "profile", "import", str(_write(tmp_path, _tiny(extra, name))), "--name", name).returncode
        == 0
    )
    try:
        launched = cli(home, "launch", name, "--wait", "--timeout", "60")
        assert launched.returncode == 0, launched.stderr
        volume = docker_client.volumes.get(f"{name}_scratch")
        assert volume.attrs["Driver"] == "local"
        assert volume.attrs["Options"] == {"type": "tmpfs", "device": "tmpfs", "o": "size=8m,uid=0"}
        assert volume.attrs["Labels"]["com.docker.compose.project"] == name
        (found,) = docker_client.containers.list(filters={"label": f"llm-dyno.profile={name}"})
        code, out = found.exec_run(["/usr/bin/df", "-k", "/scratch"])
        assert code == 0 and b"tmpfs" in bytes(out) and b" 8192 " in bytes(out), out
    finally:
        cli(home, "stop", name)
        for c in docker_client.containers.list(all=True, filters={"label": f"llm-dyno.profile={name}"}):
            c.remove(force=True)
        for v in docker_client.volumes.list():
            if v.name == f"{name}_scratch":
                v.remove(force=True)


# ---- image volumes -----------------------------------------------------------------------------
IMAGE_VOLUME = (
    "    volumes:\n      - type: image\n        source: nginx:alpine\n        target: /mnt/image\n"
    "        image:\n          subpath: usr/share/nginx/html/\n"
)


def test_an_image_volume_is_kept_and_planned(tmp_path: Path) -> None:
    profile, err = _import(tmp_path, SERVICE + IMAGE_VOLUME)
    assert profile is not None, err
    assert profile["docker"]["image_volumes"] == [
        {"image": "nginx:alpine", "target": "/mnt/image", "subpath": "usr/share/nginx/html/"}
    ]
    said = _plan(tmp_path)
    assert (
        "--mount type=image,source=nginx:alpine,target=/mnt/image,image-subpath=usr/share/nginx/html/" in said
    )
    assert "Docker Engine 28+ (API 1.48) mounts them; launch checks the engine's API version first" in said
    # a traversal out of the image is refused at import (Docker refuses it too), naming the volume
    bad = SERVICE + IMAGE_VOLUME.replace("usr/share/nginx/html/", "../etc")
    profile, err = _import(tmp_path, bad, name="q")
    assert profile is None and "an image subpath is relative, without '..'" in err, err


@pytest.mark.docker
def test_an_image_volume_on_an_engine_below_api_1_48_is_refused_before_any_container(
    tmp_path: Path, docker_client: Any, test_images: None
) -> None:
    api = docker_client.version()["ApiVersion"]
    if tuple(map(int, api.split("."))) >= (1, 48):
        pytest.skip(f"this engine speaks API {api}: it mounts images")
    name = f"r3img{uuid.uuid4().hex[:6]}"
    home = tmp_path / "home"
    text = _tiny(IMAGE_VOLUME.replace("nginx:alpine", TINY_IMAGE), name)
    assert cli(home, "profile", "import", str(_write(tmp_path, text)), "--name", name).returncode == 0
    try:
        launched = cli(home, "launch", name, "--wait", "--timeout", "60")
        assert launched.returncode != 0 and "Traceback" not in launched.stderr
        err = launched.stderr
        assert f"speaks Docker Engine API {api}, and mounting an image needs API 1.48" in err, err
        assert "Docker Engine 28 or later" in err and "No container was created" in err
        assert docker_client.containers.list(all=True, filters={"label": f"llm-dyno.profile={name}"}) == []
    finally:
        for c in docker_client.containers.list(all=True, filters={"label": f"llm-dyno.profile={name}"}):
            c.remove(force=True)


def test_an_image_volume_on_api_1_48_is_a_mount_of_type_image(tmp_path: Path) -> None:
    """Against a fake engine that speaks API 1.48 (tests/support/create_engine.py): the create body's
    ``HostConfig.Mounts`` entry is the Mount of the Engine API 1.48 schema
    (https://docs.docker.com/reference/api/engine/version/v1.48/#tag/Container/operation/ContainerCreate,
    Mount: ``Type`` ``"image"``, ``Source`` the image reference, ``Target``, ``ReadOnly``,
    ``ImageOptions.Subpath``; the version history: "POST /containers/create now supports Mount of type
    image", v1.48)."""
    home = tmp_path / "home"
    text = "name: imgapi\n" + SERVICE + "    network_mode: bridge\n" + IMAGE_VOLUME
    assert cli(home, "profile", "import", str(_write(tmp_path, text)), "--name", "p").returncode == 0
    with CreateRecordingEngine(api="1.48") as engine:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKER_")}
        launched = cli(
            home, "launch", "p", "--wait", "--timeout", "30", env={**env, "DOCKER_HOST": engine.url}
        )
        assert "Traceback" not in launched.stderr, launched.stderr
        assert len(engine.created) == 1, (engine.requests, launched.stderr)
        mounts = engine.created[0]["HostConfig"]["Mounts"]
        assert mounts == [
            {
                "Type": "image",
                "Source": "nginx:alpine",
                "Target": "/mnt/image",
                "ReadOnly": False,
                "ImageOptions": {"Subpath": "usr/share/nginx/html/"},
            }
        ]
        # the volume's image is looked up (pulled when missing) before the create, like the server's
        assert any("/images/nginx:alpine/json" in r for r in engine.requests), engine.requests
        # the fake starts nothing: the launch fails there and removes what it created
        assert launched.returncode != 0 and engine.removed
