"""Issue 29 (round 3), the Compose part that was left, continued (tests/test_round3_compose_left.py):
what the exports, ``profile validate`` and ``profile diff`` make of content configs, volumes with a
driver and image volumes, through the CLI in a subprocess."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cli import cli
from tests.support.images import TINY_IMAGE
from tests.test_round3_compose_left import IMAGE_VOLUME, SERVICE, _import, _plan, _write

# ---- exports -----------------------------------------------------------------------------------
VOLUMES = (
    "name: expo\n"
    + SERVICE
    + "    volumes:\n      - cache:/cache:ro\n"
    + IMAGE_VOLUME.split("\n", 1)[1]
    + "volumes:\n  cache:\n    driver: local\n"
    "    driver_opts: {type: nfs, o: 'addr=10.0.0.1,rw,nfsvers=4', device: ':/export/$$x'}\n"
    "    labels: {team: ml}\n"
)


def test_the_exports_make_the_same_driver_and_image_volumes(tmp_path: Path) -> None:
    profile, err = _import(tmp_path, VOLUMES)
    assert profile is not None, err
    line = cli(tmp_path / "home", "profile", "export", "p", "--format", "docker-run")
    assert line.returncode == 0, line.stderr
    # Docker's --mount reads CSV: the option with commas is one quoted field, the line one shell word
    assert (
        "--mount 'type=volume,source=expo_cache,target=/cache,readonly,volume-driver=local,"
        'volume-opt=type=nfs,"volume-opt=o=addr=10.0.0.1,rw,nfsvers=4",volume-opt=device=:/export/$x,'
        "volume-label=com.docker.compose.project=expo,volume-label=com.docker.compose.volume=cache,"
        "volume-label=team=ml'"
    ) in line.stdout, line.stdout
    assert "--mount type=image,source=nginx:alpine,target=/mnt/image,image-subpath=usr/share/nginx/html/" in (
        line.stdout
    )
    assert " -v expo_cache" not in line.stdout
    # the compose export declares the driver and its options; imported again, the same volumes
    exported = cli(tmp_path / "home", "profile", "export", "p", "--format", "compose")
    assert exported.returncode == 0, exported.stderr
    again = tmp_path / "again"
    again.mkdir()
    (again / "compose.yaml").write_text(exported.stdout)
    back = cli(tmp_path / "home", "profile", "import", str(again / "compose.yaml"), "--name", "q")
    assert back.returncode == 0, back.stderr
    shown = yaml.safe_load(cli(tmp_path / "home", "profile", "show", "q").stdout)["docker"]
    mine = profile["docker"]
    assert shown["volumes"] == mine["volumes"] and shown["image_volumes"] == mine["image_volumes"]
    assert [{k: v[k] for k in ("name", "driver", "options")} for v in shown["driver_volumes"]] == [
        {"name": "expo_cache", "driver": "local", "options": mine["driver_volumes"][0]["options"]}
    ]
    assert shown["driver_volumes"][0]["labels"]["team"] == "ml"


@pytest.mark.docker
def test_a_pasted_docker_run_export_creates_the_volume_with_its_options(
    tmp_path: Path, docker_client: Any, test_images: None
) -> None:
    name = f"r3exp{uuid.uuid4().hex[:6]}"
    text = (
        f"name: {name}\nservices:\n  vllm:\n    image: {TINY_IMAGE}\n    container_name: {name}\n"
        '    entrypoint: ["/usr/bin/df", "-k", "/scratch"]\n    command: ["tiny", "--port", "8000"]\n'
        '    ports: ["8000"]\n    network_mode: bridge\n    volumes: ["/usr:/usr:ro", "scratch:/scratch"]\n'
        "volumes:\n  scratch:\n    driver_opts: {type: tmpfs, device: tmpfs, o: 'size=8m,uid=0'}\n"
    )
    home = tmp_path / "home"
    assert cli(home, "profile", "import", str(_write(tmp_path, text)), "--name", "p").returncode == 0
    line = cli(home, "profile", "export", "p", "--format", "docker-run")
    assert line.returncode == 0, line.stderr
    try:
        ran = subprocess.run(["bash", "-c", line.stdout], capture_output=True, text=True, timeout=120)
        # the entrypoint's df (which also reads the command's words as files, and says so): the volume
        # Docker made from --mount is the tmpfs of the options
        assert "Traceback" not in ran.stderr and "/scratch" in ran.stdout, (ran.stdout, ran.stderr)
        assert "tmpfs" in ran.stdout and " 8192 " in ran.stdout, ran.stdout
        volume = docker_client.volumes.get(f"{name}_scratch")
        assert volume.attrs["Options"] == {"type": "tmpfs", "device": "tmpfs", "o": "size=8m,uid=0"}
    finally:
        for c in docker_client.containers.list(all=True, filters={"name": name}):
            c.remove(force=True)
        for v in docker_client.volumes.list():
            if v.name == f"{name}_scratch":
                v.remove(force=True)


def test_what_the_launch_makes_of_declared_volumes_is_what_compose_makes(tmp_path: Path) -> None:
    """A local volume that rbinds a folder is that folder (told when it hands over the host, as a bind
    is); an external volume is never created (it must exist, as with Compose); a read-only image volume
    stays read-only."""
    text = (
        "name: decl\n" + SERVICE + "    volumes:\n      - root:/host\n      - ext:/ext\n"
        "      - {type: image, source: nginx:alpine, target: /mnt/image, read_only: true}\n"
        "volumes:\n  root: {driver: local, driver_opts: {type: none, o: rbind, device: /}}\n"
        "  ext: {external: true, driver: rexray/ebs}\n"
    )
    profile, err = _import(tmp_path, text)
    assert profile is not None, err
    docker = profile["docker"]
    assert docker["volumes"] == ["/:/host", "ext:/ext"] and "driver_volumes" not in docker
    assert "volume '/:/host' hands the container the host (/ is the host's whole file system)" in err, err
    assert docker["image_volumes"][0]["read_only"] is True
    planned = _plan(tmp_path, "--json")
    (mount,) = [m for m in planned["container"]["mounts"] if m["Type"] == "image"]
    assert mount["ReadOnly"] is True


def test_a_secret_reference_in_a_volume_option_is_refused_too(tmp_path: Path) -> None:
    """Docker would get the reference as written, or, resolved, show the secret in `docker volume
    inspect`: neither is what the file means, so the import refuses it at its line."""
    text = (
        SERVICE + "    volumes: [share:/share]\nvolumes:\n  share:\n    driver: local\n"
        "    driver_opts: {type: cifs, device: //nas/m, o: 'username=me,password=${NAS_PASSWORD}'}\n"
    )
    profile, err = _import(tmp_path, text)
    assert profile is None
    assert "field 'volumes.share'" in err and "driver_opts.o holds a reference to a secret" in err, err


def test_a_hand_written_profile_with_a_secret_in_a_volume_option_is_not_valid(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "schema: 1\nname: bad\nruntime: docker\nmodel: m\nargs: [--port, '8000']\ndocker:\n"
        "  image: vllm/vllm-openai:v0.11.0\n  ports: ['8000:8000']\n  volumes: ['share:/share']\n"
        "  driver_volumes:\n    - name: share\n      driver: local\n"
        "      options: {type: cifs, device: //nas/m, o: 'username=me,password=hunter2'}\n"
    )
    done = cli(tmp_path / "home", "profile", "validate", str(path))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"{path}:13, field 'docker.driver_volumes[0].options'" in done.stderr, done.stderr
    assert "driver option o holds a secret (password=…)" in done.stderr and "hunter2" not in done.stderr


def test_profile_diff_names_changed_configs_and_volumes(tmp_path: Path) -> None:
    first = VOLUMES.replace(
        "    volumes:\n      - cache", "    configs: [c]\n    volumes:\n      - cache"
    ) + ("configs:\n  c: {content: one}\n")
    second = first.replace("nfsvers=4", "nfsvers=3").replace("subpath: usr/share/nginx/html/", "subpath: usr")
    assert _import(tmp_path, first, name="a")[0] is not None
    assert _import(tmp_path, second.replace("content: one", "content: two"), name="b")[0] is not None
    done = cli(tmp_path / "home", "profile", "diff", "a", "b", "--json")
    assert done.returncode in (0, 1), done.stderr
    rows = {r["key"]: r for r in json.loads(done.stdout)["rows"]}
    assert set(rows) == {"secrets", "driver_volumes", "image_volumes"}, rows
    assert '"content":"one"' in rows["secrets"]["left"] and '"content":"two"' in rows["secrets"]["right"]
    assert "nfsvers=4" in rows["driver_volumes"]["left"] and "nfsvers=3" in rows["driver_volumes"]["right"]
    assert '"subpath":"usr"' in rows["image_volumes"]["right"]
