"""The ``docker run`` line that creates the same container as ``containers.create(**spec)``: what
``plan`` prints as the equivalent command (the spec comes from ``ContainerSpec.for_engine``), and the
equivalent of each compose lifecycle hook the launch and the stop run (:func:`hook_argvs`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llm_dyno.core.profiles.model import HOOKS, ExecHook, InitHook
from llm_dyno.core.runtime.docker_common import LABEL_SNAPSHOT, host_ip, is_url_host
from llm_dyno.core.runtime.launch_spec import ContainerSpec

_WHEN = {
    "pre_start": "runs first, to completion, in a container of its own with the server's volumes and "
    "environment",
    "post_start": "runs in the server's container once it started",
    "pre_stop": "runs in the server's container before it stops",
}


def _docker(host: str | None) -> list[str]:
    if not host:
        return ["docker"]
    return ["docker", *(["-H", host] if is_url_host(host) else ["--context", host])]


def _hook_options(hook: ExecHook) -> list[str]:
    argv = ["--user", hook.user] if hook.user else []
    argv += ["--workdir", hook.working_dir] if hook.working_dir else []
    for key, value in hook.environment.items():
        argv += ["-e", f"{key}={value}"]
    return argv


def hook_argvs(
    spec: ContainerSpec, create: Mapping[str, Any], host: str | None = None
) -> list[tuple[str, list[str]]]:
    """Each lifecycle hook as (what it is and when it runs, the docker command that does the same), in
    the order they run: ``pre_start`` (``docker run --rm --volumes-from``), then ``post_start`` and
    ``pre_stop`` (``docker exec``)."""
    name = str(create["name"])
    out: list[tuple[str, list[str]]] = []
    for when in HOOKS:
        for i, hook in enumerate(getattr(spec, when)):
            argv = _docker(host)
            if isinstance(hook, InitHook):
                network = create.get("network_mode") or create.get("network")
                argv += ["run", "--rm", "--volumes-from", name]
                argv += ["--network", str(network)] if network else []
                argv += [*_hook_options(hook), hook.image or str(create["image"])]
            else:
                argv += ["exec", *_hook_options(hook), name]
            out.append((f"{when}[{i}] {_WHEN[when]}", argv + list(hook.command)))
    return out


def docker_run_argv(spec: Mapping[str, Any], host: str | None = None) -> list[str]:
    """The ``docker run`` argv that creates the same container as ``containers.create(**spec)``."""
    argv = [*_docker(host), "run", "-d", "--name", str(spec["name"])]
    if spec.get("init"):
        argv.append("--init")
    for key, value in sorted(spec.get("labels", {}).items()):
        if key == LABEL_SNAPSHOT:
            continue  # the launched profile, for adoption: kilobytes of JSON nobody reads in a command line
        argv += ["--label", f"{key}={value}"]
    for ctr, bindings in spec.get("ports", {}).items():
        for b in bindings if isinstance(bindings, list) else [bindings]:
            port, proto = ctr.split("/")
            suffix = "" if proto == "tcp" else f"/{proto}"
            ip, host_port = host_ip(b), (b[1] if len(b) > 1 else None)  # a fixed port or a range
            published = f"{ip}:{host_port or ''}:" if ip else (f"{host_port}:" if host_port else "")
            argv += ["-p", f"{published}{port}{suffix}"]
    for bind in spec.get("volumes", []):
        argv += ["-v", bind.removesuffix(":rw")]
    for mount in spec.get("mounts", []):
        fields = [f"type={mount['Type']}", f"source={mount['Source']}", f"target={mount['Target']}"]
        subpath = (mount.get("ImageOptions") or {}).get("Subpath")
        fields += [f"image-subpath={subpath}"] if subpath else []  # docker run 28+ (an image volume)
        argv += ["--mount", ",".join(fields + (["readonly"] if mount.get("ReadOnly") else []))]
    for path, opts in (spec.get("tmpfs") or {}).items():
        argv += ["--tmpfs", f"{path}:{opts}" if opts else path]
    if "network_mode" in spec or "network" in spec:
        argv += ["--network", str(spec.get("network_mode") or spec.get("network"))]
    for endpoint in (spec.get("networking_config") or {}).values():
        for alias in endpoint.get("Aliases") or []:
            argv += ["--network-alias", alias]
    if "user" in spec:
        argv += ["--user", str(spec["user"])]
    if "working_dir" in spec:
        argv += ["--workdir", str(spec["working_dir"])]
    for limit in spec.get("ulimits", []):
        argv += ["--ulimit", f"{limit['Name']}={limit['Soft']}:{limit['Hard']}"]
    if "log_config" in spec:
        if spec["log_config"]["Type"]:
            argv += ["--log-driver", spec["log_config"]["Type"]]
        for key, value in spec["log_config"]["Config"].items():
            argv += ["--log-opt", f"{key}={value}"]
    for key, value in spec.get("environment", {}).items():
        argv += ["-e", f"{key}={value}"]
    if "shm_size" in spec:
        argv += ["--shm-size", str(spec["shm_size"])]
    if "ipc_mode" in spec:
        argv += ["--ipc", str(spec["ipc_mode"])]
    for req in spec.get("device_requests", []):
        argv += ["--gpus", _gpus_option(req)]
    if "runtime" in spec:
        argv += ["--runtime", str(spec["runtime"])]
    if "restart_policy" in spec:
        policy = spec["restart_policy"]
        count = policy.get("MaximumRetryCount")
        argv += ["--restart", policy["Name"] + (f":{count}" if count else "")]
    entry = list(spec.get("entrypoint") or [])
    if entry:
        argv += ["--entrypoint", entry[0]]
    argv.append(str(spec["image"]))
    # `docker run --entrypoint` takes one word; the rest of the entrypoint goes before the command.
    return argv + entry[1:] + list(spec.get("command", []))


def _gpus_option(req: Mapping[str, Any]) -> str:
    """A device request as ``docker run --gpus`` reads it (CSV fields driver, count, device,
    capabilities): ``all`` and ``"device=0,1"`` for NVIDIA GPUs, ``driver=amd,count=1`` for another
    driver's. Options have no field there: ``plan --json`` shows them."""
    ids, caps = list(req.get("DeviceIDs") or []), [c for g in req.get("Capabilities") or [] for c in g]
    fields = [f"driver={req['Driver']}"] if req.get("Driver") else []
    if ids:
        fields.append(f'"device={",".join(ids)}"')
    elif req.get("Count", -1) == -1:
        fields.append("count=all")
    else:
        fields.append(f"count={req['Count']}")
    if caps not in ([], ["gpu"]):
        fields.append(f'"capabilities={",".join(caps)}"')
    return "all" if fields == ["count=all"] else ",".join(fields)
