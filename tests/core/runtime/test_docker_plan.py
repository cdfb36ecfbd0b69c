"""The pure half of the Docker backend: profile → containers.create kwargs and a `docker run` line.

No engine needed (only the docker SDK package), so these run everywhere, without the docker marker.
The founding profile is the compose file the project started from (reference/founding-compose.yml).
"""

from __future__ import annotations

import json
import shlex

import pytest
from docker.types import DeviceRequest

from llm_dyno.core.errors import DynoError
from llm_dyno.core.profiles.model import DockerSettings, Profile
from llm_dyno.core.runtime.docker_argv import docker_run_argv
from llm_dyno.core.runtime.docker_backend import DockerRuntime
from llm_dyno.core.runtime.docker_spec import network_to_create
from llm_dyno.core.runtime.launch_spec import WarningKind
from llm_dyno.core.secrets import resolve_command, resolve_env

PRE_START = (
    "set -e\npip install xxhash -q\npython3 /patches/patch_genesis_unified.py\n"
    "python3 /patches/patch_tolist_cudagraph.py"
)
IMAGE = "vllm/vllm-openai@sha256:9bba4628a3b943e0dd33caefb94b811569ba1e97bdf23bee19a265c31b947ccb"
ARGS = (
    "--served-model-name",
    "qwen3.6-27b-autoround",
    "--quantization",
    "auto_round",
    "--dtype",
    "float16",
    "--max-model-len",
    "75000",
    "--kv-cache-dtype",
    "fp8_e5m2",
    "--speculative-config",
    '{"method":"mtp","num_speculative_tokens":3}',
    "--host",
    "0.0.0.0",  # noqa: S104
    "--port",
    "8000",
)


def founding(**changes: object) -> Profile:
    docker = DockerSettings(
        image=IMAGE,
        container_name="vllm-qwen36-27b",
        restart="no",
        ports=("8020:8000",),
        volumes=(
            "/run/media/will/Storage/models:/root/.cache/huggingface",
            "/home/will/genesis-vllm-patches/patch_genesis_unified.py:/patches/patch_genesis_unified.py:ro",
        ),
        shm_size="16gb",
        ipc="host",
    )
    base = Profile(
        name="qwen36-27b",
        model="/root/.cache/huggingface/vllm-qwen36-27b-int4",
        model_flag=True,
        args=ARGS,
        env={"HUGGING_FACE_HUB_TOKEN": "${HF_TOKEN:-}", "OMP_NUM_THREADS": "1"},
        gpus="all",
        pre_start=PRE_START,
        docker=docker,
    )
    return base.with_changes(**changes) if changes else base


def test_founding_profile_becomes_the_compose_container() -> None:
    plan = DockerRuntime().plan(founding())
    spec = plan.spec.create
    assert spec["image"] == IMAGE
    assert spec["name"] == "vllm-qwen36-27b"
    assert spec["command"] == ["--model", "/root/.cache/huggingface/vllm-qwen36-27b-int4", *ARGS]
    assert spec["entrypoint"] == ["/bin/bash", "-c", PRE_START + '\nexec vllm serve "$@"', "--"]
    assert spec["init"] is True
    assert spec["ports"] == {"8000/tcp": ("127.0.0.1", 8020)}
    assert spec["volumes"] == [
        "/run/media/will/Storage/models:/root/.cache/huggingface:rw",
        "/home/will/genesis-vllm-patches/patch_genesis_unified.py:/patches/patch_genesis_unified.py:ro",
    ]
    assert spec["shm_size"] == "16gb" and spec["ipc_mode"] == "host"
    assert spec["device_requests"] == [DeviceRequest(count=-1, capabilities=[["gpu"]])]
    assert "restart_policy" not in spec  # restart: "no"
    # References stay unresolved in the plan: the secret is read at launch, never stored.
    assert spec["environment"]["HUGGING_FACE_HUB_TOKEN"] == "${HF_TOKEN:-}"
    assert plan.base_url == "http://127.0.0.1:8020" and plan.host_port == 8020
    assert plan.gpus is None and plan.runtime == "docker"


def test_labels_mark_every_container_as_ours() -> None:
    profile = founding()
    labels = DockerRuntime().plan(profile).spec.create["labels"]
    assert labels["llm-dyno.managed"] == "1"
    assert labels["llm-dyno.profile"] == "qwen36-27b"
    assert labels["llm-dyno.profile-hash"] == profile.content_hash()


def test_gpu_indices_become_device_ids() -> None:
    plan = DockerRuntime().plan(founding(gpus=(0, 2)))
    assert plan.spec.create["device_requests"] == [
        DeviceRequest(device_ids=["0", "2"], capabilities=[["gpu"]])
    ]
    assert plan.gpus == (0, 2)
    assert "device_requests" not in DockerRuntime().plan(founding(gpus=None)).spec.create


def test_named_host_ip_is_kept_and_default_name_from_profile() -> None:
    docker = founding().docker
    assert docker is not None
    profile = founding(
        docker=docker.model_copy(update={"ports": ("0.0.0.0:9000:8000",), "container_name": None})
    )
    plan = DockerRuntime().plan(profile)
    assert plan.spec.create["ports"] == {"8000/tcp": ("0.0.0.0", 9000)}  # noqa: S104
    assert plan.spec.create["name"] == "llm-dyno-qwen36-27b"
    assert plan.base_url == "http://127.0.0.1:9000"


def test_entrypoint_given_wins_and_none_keeps_the_image_entrypoint() -> None:
    assert "entrypoint" not in DockerRuntime().plan(founding(pre_start=None)).spec.create
    docker = founding().docker
    assert docker is not None
    custom = founding(
        docker=docker.model_copy(update={"entrypoint": ("python3", "-m", "vllm.entrypoints.cli.main")})
    )
    assert DockerRuntime().plan(custom).spec.create["entrypoint"] == [
        "python3",
        "-m",
        "vllm.entrypoints.cli.main",
    ]


def test_no_port_reaching_the_server_is_an_error() -> None:
    docker = founding().docker
    assert docker is not None
    with pytest.raises(DynoError, match="port 8000"):
        DockerRuntime().plan(founding(docker=docker.model_copy(update={"ports": ("8020:9999",)})))


def test_remote_host_warns_about_a_loopback_port() -> None:
    docker = founding().docker
    assert docker is not None
    plan = DockerRuntime().plan(founding(docker=docker.model_copy(update={"host": "ssh://will@gpubox"})))
    assert plan.base_url == "http://gpubox:8020"
    assert any(
        w.kind is WarningKind.UNREACHABLE and "gpubox" in w.text and "0.0.0.0:8020:8000" in w.text
        for w in plan.warnings
    )
    assert plan.describe().startswith("docker -H ssh://will@gpubox run ")


def test_an_engine_elsewhere_through_docker_host_is_where_the_server_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The profile names no host; DOCKER_HOST points at another machine:
    the plan's URL, and so every job's endpoint, is that machine, not 127.0.0.1."""
    monkeypatch.setenv("DOCKER_HOST", "tcp://gpubox.lan:2376")
    assert DockerRuntime().plan(founding()).base_url == "http://gpubox.lan:8020"
    monkeypatch.setenv("DOCKER_HOST", "unix:///var/run/docker.sock")
    assert DockerRuntime().plan(founding()).base_url == "http://127.0.0.1:8020"


def test_the_snapshot_label_is_the_profile_with_its_references() -> None:
    profile = founding()
    plan = DockerRuntime().plan(profile)
    snapshot = json.loads(plan.spec.create["labels"]["llm-dyno.profile-snapshot"])
    assert snapshot == profile.to_dict()
    assert "profile-snapshot" not in plan.describe()  # not in the docker run line people read


def test_describe_is_an_equivalent_docker_run() -> None:
    plan = DockerRuntime().plan(founding())
    argv = shlex.split(plan.describe())
    assert argv == docker_run_argv(plan.spec.create)
    i = argv.index(IMAGE)
    # `--entrypoint` takes one word; the rest of the entrypoint precedes the command.
    assert argv[argv.index("--entrypoint") + 1] == "/bin/bash"
    assert argv[i + 1 : i + 4] == ["-c", PRE_START + '\nexec vllm serve "$@"', "--"]
    assert argv[i + 4 :] == ["--model", "/root/.cache/huggingface/vllm-qwen36-27b-int4", *ARGS]
    for flag in ("--init", "--gpus", "--shm-size", "--ipc"):
        assert flag in argv
    assert "127.0.0.1:8020:8000" in argv
    assert "HUGGING_FACE_HUB_TOKEN=${HF_TOKEN:-}" in argv
    assert json.loads(argv[argv.index("--speculative-config") + 1])["num_speculative_tokens"] == 3


def test_gpu_indices_in_docker_run() -> None:
    argv = docker_run_argv(DockerRuntime().plan(founding(gpus=(1,))).spec.create)
    assert argv[argv.index("--gpus") + 1] == '"device=1"'


def test_env_references_resolve_from_the_environment() -> None:
    env = {
        "A": "${TOK:-fallback}",
        "B": "$TOK",
        "C": "${MISSING}",
        "D": "${EMPTY:-d}",
        "E": "${UNSET-e}",
        "F": "x",
    }
    out = resolve_env(env, {"TOK": "s3cret", "EMPTY": ""})
    assert out == {"A": "s3cret", "B": "s3cret", "C": "", "D": "d", "E": "e", "F": "x"}


def test_reference_arguments_resolve_at_launch() -> None:
    argv = ["m", "--api-key", "${KEY}", "--port", "8000"]
    assert resolve_command(argv, {"KEY": "k"}) == ["m", "--api-key", "k", "--port", "8000"]
    attached = ["m", "--api-key=${KEY}", "--x=a=${KEY}"]  # only a whole value is a reference
    assert resolve_command(attached, {"KEY": "k"}) == ["m", "--api-key=k", "--x=a=${KEY}"]


def test_same_host_folder_mounted_twice_stays_twice() -> None:
    docker = founding().docker
    assert docker is not None
    twice = ("/srv/models:/models", "/srv/models:/srv/models:ro")
    plan = DockerRuntime().plan(founding(docker=docker.model_copy(update={"volumes": twice})))
    assert plan.spec.create["volumes"] == ["/srv/models:/models:rw", "/srv/models:/srv/models:ro"]
    argv = shlex.split(plan.describe())
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "-v"] == ["/srv/models:/models", *twice[1:]]


def test_loopback_bind_is_shown_and_file_bind_warns_about_exposure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("K", "k")  # an unset key would refuse the plan
    plan = DockerRuntime().plan(founding())
    assert plan.spec.create["ports"] == {"8000/tcp": ("127.0.0.1", 8020)}
    assert any(
        w.kind is WarningKind.EXPOSURE and "8020:8000" in w.text and "docker.bind: file" in w.text
        for w in plan.warnings
    )
    docker = founding().docker
    assert docker is not None
    open_plan = DockerRuntime().plan(founding(docker=docker.model_copy(update={"bind": "file"})))
    assert open_plan.spec.create["ports"] == {
        "8000/tcp": ("", 8020)
    }  # HostIp "": every interface, as Compose
    assert open_plan.base_url == "http://127.0.0.1:8020"
    opened = "reachable from the network (0.0.0.0:8020)"
    assert any(w.kind is WarningKind.EXPOSURE and opened in w.text for w in open_plan.warnings)
    assert "-p" in (argv := shlex.split(open_plan.describe())) and "8020:8000" in argv
    keyed = founding(docker=docker.model_copy(update={"bind": "file"}), args=(*ARGS, "--api-key", "${K}"))
    assert not any("reachable from the network" in w.text for w in DockerRuntime().plan(keyed).warnings)


def test_compose_settings_reach_the_container() -> None:
    docker = founding().docker
    assert docker is not None
    settings = DockerSettings.model_validate(
        {
            **docker.model_dump(),
            "network": "proj_default",
            "network_aliases": ("vllm",),
            "project": "proj",
            "user": "1000:1000",
            "working_dir": "/work",
            "labels": {"traefik.enable": "true"},
            "ulimits": {"memlock": "-1", "nofile": "1024:2048"},
            "logging": {"driver": "json-file", "options": {"max-size": "10m", "max-file": "3"}},
        }
    )
    plan = DockerRuntime().plan(founding(docker=settings))
    spec = plan.spec.create
    assert spec["network"] == "proj_default"
    assert spec["networking_config"]["proj_default"]["Aliases"] == ["vllm"]
    assert spec["user"] == "1000:1000" and spec["working_dir"] == "/work"
    assert spec["labels"]["traefik.enable"] == "true" and spec["labels"]["llm-dyno.managed"] == "1"
    assert [(u["Name"], u["Soft"], u["Hard"]) for u in spec["ulimits"]] == [
        ("memlock", -1, -1),
        ("nofile", 1024, 2048),
    ]
    assert spec["log_config"] == {"Type": "json-file", "Config": {"max-size": "10m", "max-file": "3"}}
    argv = shlex.split(plan.describe())
    for pair in (("--network", "proj_default"), ("--network-alias", "vllm"), ("--log-opt", "max-size=10m")):
        assert argv[argv.index(pair[0]) + 1] == pair[1]
    assert network_to_create(plan) == (
        "proj_default",
        {"com.docker.compose.project": "proj", "com.docker.compose.network": "default"},
    )
    host = DockerRuntime().plan(founding(docker=docker.model_copy(update={"network": "host"})))
    assert host.spec.create["network_mode"] == "host" and network_to_create(host) is None


def test_described_line_fills_secret_references_in_when_run(monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    monkeypatch.setenv("VLLM_API_KEY", "set-here")  # an unset key would refuse the plan
    profile = founding(args=(*ARGS, "--api-key", "${VLLM_API_KEY}"))
    line = DockerRuntime().plan(profile).describe()
    # the key reaches the container through its environment (vLLM reads VLLM_API_KEY), never its command
    assert 'HUGGING_FACE_HUB_TOKEN="${HF_TOKEN:-}"' in line and '-e VLLM_API_KEY="${VLLM_API_KEY}"' in line
    assert "set-here" not in line and "--api-key" not in line.split(" -- ", 1)[-1]
    env = {"PATH": "/usr/bin:/bin", "HF_TOKEN": "hf_x", "VLLM_API_KEY": "sk_y"}
    script = "set -- " + line + '\nprintf "%s\\n" "$@"'
    words = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert "HUGGING_FACE_HUB_TOKEN=hf_x" in words and "VLLM_API_KEY=sk_y" in words
