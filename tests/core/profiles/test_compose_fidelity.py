"""Launch fidelity: the same compose project started by Docker Compose and by the app (``llm-dyno profile
import`` + ``llm-dyno launch`` in subprocesses) gives the same container, field by field of ``docker
inspect``. Every difference left is a documented choice of the app, listed in ``ALLOWED`` with its reason
(and, where the user should know, warned about at import and launch).

Docker Compose here is v1.29 (Debian's ``docker-compose``; ``.ci/run`` installs it). The projects live in
tests/fixtures/compose/fidelity, adapted to the offline test image. Each run copies a project into a
folder named ``wt16fid<run id><case>``, which is also its compose project name, so every container,
network and volume it makes carries that prefix; all are removed at the end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest_docker import free_port

pytestmark = pytest.mark.docker

FIDELITY = Path(__file__).parents[2] / "fixtures" / "compose" / "fidelity"
RUN = uuid.uuid4().hex[:6]
FIELDS = (
    "Image",
    "Entrypoint",
    "Cmd",
    "Env",
    "Mounts",
    "PortBindings",
    "ShmSize",
    "IpcMode",
    "Ulimits",
    "RestartPolicy",
    "DeviceRequests",
    "NetworkMode",
    "Labels",
    "User",
    "WorkingDir",
    "LogConfig",
    "Init",
)
# field → why the app's container differs from Docker Compose's (each is a choice, not a loss)
ALLOWED = {
    "PortBindings": "docker.bind: loopback (the default) publishes ports written without an address on "
    "127.0.0.1 only, because a vLLM server without --api-key has no authentication; import and launch "
    "warn about it, and docker.bind: file (import --bind file) binds as Compose does (checked below)",
    "Init": "the app always runs Docker's init (tini) so that vLLM, which ignores SIGTERM as PID 1, stops "
    "cleanly; Compose only does with init: true",
    "DeviceRequests": "Compose passes the file's driver (nvidia); the app requests GPUs by capability "
    "with the driver left to Docker, which picks the NVIDIA one: the same GPUs",
}
# Labels each tool sets for itself (compared without them): Compose's bookkeeping and the app's.
OWN_LABEL_PREFIXES = ("com.docker.compose.", "llm-dyno.")


def _docker_compose() -> str:
    found = shutil.which("docker-compose")
    if found is None:
        message = "docker-compose is not installed (apt-get install -y docker-compose)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def _facts(attrs: dict[str, Any]) -> dict[str, Any]:
    """The compared fields of one ``docker inspect``, normalised where Docker spells one thing two ways."""
    config, host = attrs["Config"], attrs["HostConfig"]
    mounts = sorted(
        (m["Type"], m.get("Name") if m["Type"] == "volume" else m["Source"], m["Destination"], m["RW"])
        for m in attrs["Mounts"]
    )
    restart = dict(host.get("RestartPolicy") or {})
    if restart.get("Name") in ("", None):
        restart["Name"] = "no"  # the same policy, written "" or "no" by different clients
    requests = [  # no device ids is written [] or null
        {
            "Driver": r["Driver"],
            "Count": r["Count"],
            "DeviceIDs": r["DeviceIDs"] or [],
            "Capabilities": r["Capabilities"],
        }
        for r in host.get("DeviceRequests") or []
    ]
    return {
        "Image": config["Image"],
        "Entrypoint": config["Entrypoint"],
        "Cmd": config["Cmd"],
        "Env": sorted(config["Env"] or []),
        "Mounts": mounts,
        "PortBindings": host["PortBindings"],
        "ShmSize": host["ShmSize"],
        "IpcMode": host["IpcMode"],
        "Ulimits": sorted((u["Name"], u["Soft"], u["Hard"]) for u in host.get("Ulimits") or []),
        "RestartPolicy": restart,
        "DeviceRequests": requests,
        "NetworkMode": host["NetworkMode"],
        "Labels": {k: v for k, v in (config["Labels"] or {}).items() if not k.startswith(OWN_LABEL_PREFIXES)},
        "User": config["User"],
        "WorkingDir": config["WorkingDir"],
        "LogConfig": host["LogConfig"],
        "Init": bool(host.get("Init")),
    }


def _differences(compose: dict[str, Any], app: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    return {f: (compose[f], app[f]) for f in FIELDS if compose[f] != app[f]}


class Project:
    """A fidelity project copied to its own folder, run by Docker Compose and by the app."""

    def __init__(self, case: str, tmp_path: Path, client: Any) -> None:
        self.name = f"wt16fid{RUN}{case}"
        self.folder = tmp_path / self.name
        shutil.copytree(FIDELITY / case, self.folder)
        (self.folder / "models").mkdir(exist_ok=True)
        self.port = free_port()
        (self.folder / ".env").write_text(f"PORT={self.port}\nSHM_SIZE=128m\nMAX_MODEL_LEN=8192\n")
        self.home = tmp_path / "home"
        self.client = client
        self.compose_bin = _docker_compose()
        self.profiles: list[str] = []
        self.env = {
            k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "MODEL_ROOT", "COMPOSE_FILE")
        }

    def compose(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [self.compose_bin, *args],
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"docker-compose {' '.join(args)}: {done.stderr}")
        return done

    def cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        env = {**self.env, "LLM_DYNO_HOME": str(self.home)}
        return subprocess.run(
            [sys.executable, "-m", "llm_dyno", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def compose_container(self, *, start: bool) -> dict[str, Any]:
        self.compose("up", "-d" if start else "--no-start", "vllm")
        cid = self.compose("ps", "-q", "vllm").stdout.strip()
        attrs: dict[str, Any] = self.client.api.inspect_container(cid)
        self.compose("down", "-v", "--remove-orphans")
        return attrs

    def run_export(self, text: str) -> dict[str, Any]:
        """Start an exported compose file with Docker Compose in a folder of its own; its inspect."""
        folder = self.folder / f"{self.name}x"
        folder.mkdir()
        (folder / "docker-compose.yml").write_text(text)
        run = [self.compose_bin, "-f", str(folder / "docker-compose.yml")]
        kw: dict[str, Any] = {"env": self.env, "capture_output": True, "text": True, "timeout": 120}
        up = subprocess.run([*run, "up", "-d"], cwd=folder, check=False, **kw)
        try:
            assert up.returncode == 0, up.stderr
            cid = subprocess.run([*run, "ps", "-q"], cwd=folder, check=True, **kw).stdout.strip()
            attrs: dict[str, Any] = self.client.api.inspect_container(cid)
        finally:
            subprocess.run([*run, "down", "-v", "--remove-orphans"], cwd=folder, check=False, **kw)
        return attrs

    def import_profile(self, profile: str, *extra: str) -> subprocess.CompletedProcess[str]:
        done = self.cli(
            "profile",
            "import",
            str(self.folder / "docker-compose.yml"),
            "--service",
            "vllm",
            "--name",
            profile,
            "--replace",
            *extra,
        )
        assert done.returncode == 0, done.stderr
        self.profiles.append(profile)
        return done

    def app_container(self, profile: str) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
        launched = self.cli("launch", profile, "--wait", "--timeout", "60")
        assert launched.returncode == 0, launched.stderr
        found = self.client.containers.list(filters={"label": f"llm-dyno.profile={profile}"})
        assert len(found) == 1, found
        return found[0].attrs, launched

    def cleanup(self) -> None:
        for profile in self.profiles:
            self.cli("stop", profile)
            for c in self.client.containers.list(all=True, filters={"label": f"llm-dyno.profile={profile}"}):
                c.remove(force=True)
        self.compose("--profile", "sibling", "down", "-v", "--remove-orphans", check=False)
        for c in self.client.containers.list(all=True, filters={"name": self.name}):
            c.remove(force=True)
        for n in self.client.networks.list(filters={"name": self.name}):
            if n.name.startswith(self.name):
                n.remove()
        for v in self.client.volumes.list(filters={"name": self.name}):
            v.remove(force=True)


@pytest.fixture
def project(tmp_path: Path, docker_client: Any, test_images: None) -> Iterator[Any]:
    made: list[Project] = []

    def make(case: str) -> Project:
        p = Project(case, tmp_path, docker_client)
        made.append(p)
        return p

    yield make
    for p in made:
        p.cleanup()


def test_stack_launches_as_docker_compose_would(project: Any) -> None:
    p = project("stack")
    compose = _facts(p.compose_container(start=True))
    imported = p.import_profile(f"{p.name}-loopback")
    assert "127.0.0.1 only" in imported.stderr  # the loopback choice is said at import
    attrs, launched = p.app_container(f"{p.name}-loopback")
    app = _facts(attrs)
    # launch warnings reach the command line
    assert "warning: " in launched.stderr and "127.0.0.1 only" in launched.stderr
    diff = _differences(compose, app)
    assert set(diff) == {"PortBindings", "Init"}, {k: v for k, v in diff.items() if k not in ALLOWED}
    assert diff["PortBindings"] == (
        {"8000/tcp": [{"HostIp": "", "HostPort": str(p.port)}]},
        {"8000/tcp": [{"HostIp": "127.0.0.1", "HostPort": str(p.port)}]},
    )
    # what the file says, seen in both (so that an equal pair means something)
    assert compose["ShmSize"] == 128 * 2**20 and compose["User"] == "65534:65534"
    assert len([m for m in compose["Mounts"] if m[1] == str(p.folder / "models")]) == 2
    assert (("volume", f"{p.name}_cache", "/root/.cache", True)) in compose["Mounts"]
    assert compose["NetworkMode"] == f"{p.name}_default"
    assert compose["LogConfig"] == {"Type": "json-file", "Config": {"max-file": "3", "max-size": "10m"}}
    assert "MAX_LEN=8192" in compose["Env"] and "OMP_NUM_THREADS=1" in compose["Env"]

    # a sibling service started by Compose reaches the app's server by its service name
    probe = p.compose(
        "--profile",
        "sibling",
        "run",
        "--rm",
        "--no-deps",
        "--entrypoint",
        "/usr/bin/python3",
        "client",
        "-c",
        "import urllib.request; print(urllib.request.urlopen('http://vllm:8000/health').status)",
    )
    assert probe.stdout.strip().endswith("200"), probe.stderr
    stopped = p.cli("stop", f"{p.name}-loopback")
    assert stopped.returncode == 0, stopped.stderr

    # the profile's compose export, run by Docker Compose, starts what the app started
    exported = p.cli("profile", "export", f"{p.name}-loopback", "--format", "compose")
    assert exported.returncode == 0, exported.stderr
    again = p.run_export(exported.stdout)
    assert set(_differences(_facts(again), app)) == {"Init"}, _differences(_facts(again), app)

    # bind: file publishes as written: then the ports are equal too
    p.import_profile(f"{p.name}-file", "--bind", "file")
    attrs, launched = p.app_container(f"{p.name}-file")
    assert "reachable from the network" in launched.stderr  # no --api-key: the exposure is warned about
    diff = _differences(compose, _facts(attrs))
    assert set(diff) == {"Init"}, diff


def test_own_network_alias_and_written_loopback_port(project: Any) -> None:
    p = project("networks")
    compose_attrs = p.compose_container(start=True)
    compose = _facts(compose_attrs)
    p.import_profile(f"{p.name}-net")
    attrs, _ = p.app_container(f"{p.name}-net")
    app = _facts(attrs)
    assert set(_differences(compose, app)) == {"Init"}, _differences(compose, app)
    assert compose["NetworkMode"] == f"{p.name}_backend"
    assert compose["Entrypoint"] == ["/usr/bin/python3", "-u", "/dyno/fake_vllm.py"]
    assert compose["Cmd"] == ["tiny", "--served-model-name", "tiny-chat", "--port", "8000"]
    net = f"{p.name}_backend"
    aliases = set(attrs["NetworkSettings"]["Networks"][net]["Aliases"] or [])
    assert {"vllm", "llm-api"} <= aliases  # reachable under both names, as with Compose
    assert {"vllm", "llm-api"} <= set(compose_attrs["NetworkSettings"]["Networks"][net]["Aliases"])


def test_gpu_request_matches_at_creation(project: Any, docker_client: Any) -> None:
    """Without the NVIDIA runtime no GPU container starts (with either tool), so the containers are
    compared as created: Compose's ``up --no-start`` and the app's plan created the way launch does."""
    from llm_dyno.core.profiles.store import ProfileStore
    from llm_dyno.core.runtime.manager import ServerManager

    p = project("gpu")
    compose = _facts(p.compose_container(start=False))
    name = f"{p.name}-gpu"
    p.import_profile(name)
    launched = p.cli("launch", name, "--wait", "--timeout", "60")
    gpu_host = "nvidia" in (docker_client.info().get("Runtimes") or {})
    if not gpu_host:
        assert launched.returncode == 1 and "GPU" in launched.stderr, launched.stderr
        assert not docker_client.containers.list(all=True, filters={"label": f"llm-dyno.profile={name}"})
    plan = ServerManager().plan(ProfileStore(p.home / "config" / "profiles").get(name))
    spec = {**plan.spec.create, "name": f"{p.name}-created"}
    created = docker_client.containers.create(**spec)
    try:
        app = _facts(docker_client.api.inspect_container(created.id))
    finally:
        created.remove(force=True)
    diff = _differences(compose, app)
    # the plan's ports are loopback and its init on, as at every launch; the GPU request differs only
    # in the driver's name
    assert set(diff) == {"PortBindings", "Init", "DeviceRequests"}, diff
    assert compose["DeviceRequests"] == [
        {"Driver": "nvidia", "Count": -1, "DeviceIDs": [], "Capabilities": [["gpu"]]}
    ]
    assert [{**r, "Driver": "nvidia"} for r in app["DeviceRequests"]] == compose["DeviceRequests"]
