"""Docker images for the tests, built offline (no registry is reachable from CI or the dev machines).

Each image is a ``docker import`` of a rootfs of a few kilobytes: empty mount points, ``/etc/passwd``,
a real ``/sbin`` directory (``--init`` bind-mounts ``/sbin/docker-init`` and fails on a symlink) and
``bin``/``lib``/``lib64`` symlinks into ``/usr``. At run time the host's ``/usr``, the Python install
the vLLM venv was made from, and the venv itself are bind-mounted read-only (:func:`host_mounts`), so
the images stay tiny and build in a second.

- ``TINY_IMAGE``: entrypoint is a fake ``vllm serve`` (``/dyno/fake_vllm.py``, standard library only)
  that prints vLLM-like start-up lines and answers ``/health`` and ``/v1/models``; ``--emit LINE`` and
  ``--exit-code N`` make it print lines and die, for failure tests. Starts in well under a second.
- ``VLLM_IMAGE``: entrypoint is the venv's ``vllm serve``, like ``vllm/vllm-openai`` (the container
  command is the model followed by the flags), with the environment vLLM needs on CPU.
- ``PLAIN_IMAGE``: the same files with no entrypoint and ``sh`` as its command, as alpine has them:
  a command given to it runs as written (compose ``pre_start`` hooks run their command so).
- ``SMI_IMAGE``: a container "with GPUs": ``/dyno/bin/nvidia-smi`` (first on PATH) replays the
  ``nvidia-smi --query-gpu`` CSV recorded on a real H200 (``tests/fixtures/nvml/smi_*.csv``) for the
  query the app makes, and fails like nvidia-smi for any other. ``FAKE_SMI_GPUS=idle,load`` in the
  container's environment makes it show two GPUs (0: the idle recording, 1: the load recording).
  The entrypoint only sleeps.

Run ``python tests/support/images.py`` (or ``scripts/build-test-images``) to build them by hand.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

from tests.support import vllm_env

TINY_IMAGE = "llm-dyno-test/tiny:latest"
SMI_IMAGE = "llm-dyno-test/nvidia-smi:latest"
PLAIN_IMAGE = "llm-dyno-test/plain:latest"  # TINY_IMAGE's files without an entrypoint, like alpine
VLLM_IMAGE = "llm-dyno-test/vllm-cpu:0.32.0"
ABSENT_IMAGE = "llm-dyno-test/absent:1"  # never built: for the image-not-found test
TEST_LABEL = "llm-dyno-test"  # on every test container and image, so leftovers can be found
_HASH_LABEL = "llm-dyno-test.build-hash"

VLLM_VENV = vllm_env.configured_venv()  # the venv the tests serve with (conftest names it first)

_BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_NVML_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "nvml"

# The query the recordings answer (remote_gpu.QUERY_FIELDS when they were made, see the fixtures' README).
_RECORDED_QUERY = (
    "index,name,uuid,driver_version,power.draw,power.limit,power.default_limit,power.min_limit,"
    "power.max_limit,enforced.power.limit,utilization.gpu,utilization.memory,memory.used,memory.total,"
    "temperature.gpu,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,clocks_event_reasons.active,"
    "pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,fan.speed"
)

_FAKE_SMI = r'''#!/usr/bin/python3
"""nvidia-smi replaying CSV recorded on a real H200 (tests/fixtures/nvml/smi_*.csv) for one query."""
import os, sys

QUERY = "@QUERY@"
if sys.argv[1:] != ["--query-gpu=" + QUERY, "--format=csv,noheader,nounits"]:
    # what nvidia-smi says (on stdout) to a query it does not take
    print("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.")
    sys.exit(2)
for i, name in enumerate(os.environ.get("FAKE_SMI_GPUS", "idle").split(",")):
    with open(f"/dyno/smi/{name}.csv") as f:
        recorded = f.read().strip()
    print(f"{i}, {recorded.split(', ', 1)[1]}")  # GPU i: the recorded row under the next index
'''.replace("@QUERY@", _RECORDED_QUERY)

_FAKE_VLLM = r'''
"""A stand-in for `vllm serve` with the same argv shape: MODEL [--flag value ...]."""
import json, os, signal, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

args = sys.argv[1:]
model = args[0] if args and not args[0].startswith("-") else "tiny"
opts, emit = {}, []
i = 1 if args and not args[0].startswith("-") else 0
while i < len(args):
    key = args[i].lstrip("-")
    val = args[i + 1] if i + 1 < len(args) else ""
    if key == "emit":
        emit.append(val)
    else:
        opts[key] = val
    i += 2
served = opts.get("served-model-name", model)
print(f"INFO 01-01 00:00:00 [api_server.py:1] vLLM API server version 0.0.0-fake", flush=True)
print(f"INFO 01-01 00:00:00 [utils.py:1] non-default args: {{'model': {model!r}}}", flush=True)
for line in emit:
    print(line, flush=True)
if "exit-code" in opts:
    sys.exit(int(opts["exit-code"]))
time.sleep(float(opts.get("delay", "0")))

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/health":
            body = b""
        elif self.path == "/v1/models":
            body = json.dumps({"object": "list", "data": [{"id": served, "object": "model"}]}).encode()
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *a):
        print("INFO:     " + (fmt % a), flush=True)

server = ThreadingHTTPServer((opts.get("host", "0.0.0.0"), int(opts.get("port", "8000"))), Handler)
signal.signal(signal.SIGTERM, lambda *_: (print("INFO:     Shutting down", flush=True), sys.exit(0)))
print(f"INFO:     Started server process [{os.getpid()}]", flush=True)
print("INFO:     Waiting for application startup.", flush=True)
print("INFO:     Application startup complete.", flush=True)
server.serve_forever()
'''


def python_home(venv: Path = VLLM_VENV) -> Path:
    """The Python install a venv was made from (``home`` in its ``pyvenv.cfg``, minus ``/bin``)."""
    for line in (venv / "pyvenv.cfg").read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home":
            home = Path(value.strip())
            return home.parent if home.name == "bin" else home
    raise RuntimeError(f"{venv}/pyvenv.cfg names no 'home'")


def host_mounts(venv: Path = VLLM_VENV, *, with_vllm: bool = True) -> tuple[str, ...]:
    """Read-only bind mounts (``src:dst:ro``) every test container needs at run time."""
    mounts = ["/usr:/usr:ro"]
    if with_vllm:
        home = python_home(venv)
        mounts += [f"{home}:{home}:ro", f"{venv}:{venv}:ro"]
    return tuple(mounts)


def _rootfs(extra_files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:

        def add_dir(name: str, mode: int = 0o755) -> None:
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, mode, 0
            tar.addfile(info)

        for name in ("usr", "sbin", "etc", "root", "home", "proc", "sys", "dev", "run", "var", "dyno"):
            add_dir(name, 0o700 if name == "root" else 0o755)
        add_dir("tmp", 0o1777)
        add_dir("var/tmp", 0o1777)
        for name in ("bin", "lib", "lib64"):
            link = tarfile.TarInfo(name)
            link.type, link.linkname, link.mtime = tarfile.SYMTYPE, f"usr/{name}", 0
            tar.addfile(link)
        for folder in sorted({str(Path(f).parent) for f in extra_files} - {"dyno", "."}):
            add_dir(folder)
        files = {
            "etc/passwd": "root:x:0:0:root:/root:/bin/sh\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
            "etc/group": "root:x:0:\nnogroup:x:65534:\n",
            **extra_files,
        }
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            mode = 0o755 if name.startswith("dyno/bin/") else 0o644
            info.size, info.mode, info.mtime = len(data), mode, 0
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _specs(venv: Path) -> dict[str, tuple[bytes, list[str]]]:
    """Image name → (rootfs tar, Dockerfile-style changes)."""
    tiny_env = [f"ENV PATH={_BASE_PATH}", "ENV HOME=/root", "ENV LANG=C.UTF-8"]
    vllm_env = [
        f"ENV PATH={venv}/bin:{_BASE_PATH}",
        "ENV HOME=/root",
        "ENV LANG=C.UTF-8",
        "ENV HF_HUB_OFFLINE=1",
        "ENV TRANSFORMERS_OFFLINE=1",
        "ENV VLLM_CPU_KVCACHE_SPACE=1",
        "ENV VLLM_CACHE_ROOT=/tmp/vllm-cache",
        "ENV VLLM_NO_USAGE_STATS=1",
        "ENV DO_NOT_TRACK=1",
    ]
    return {
        TINY_IMAGE: (
            _rootfs({"dyno/fake_vllm.py": _FAKE_VLLM}),
            [*tiny_env, 'ENTRYPOINT ["/usr/bin/python3", "-u", "/dyno/fake_vllm.py"]', "WORKDIR /root"],
        ),
        PLAIN_IMAGE: (
            _rootfs({"dyno/fake_vllm.py": _FAKE_VLLM}),
            [*tiny_env, 'CMD ["/usr/bin/sh"]', "WORKDIR /root"],
        ),
        SMI_IMAGE: (
            _rootfs(
                {
                    "dyno/bin/nvidia-smi": _FAKE_SMI,
                    "dyno/smi/idle.csv": (_NVML_FIXTURES / "smi_idle.csv").read_text(),
                    "dyno/smi/load.csv": (_NVML_FIXTURES / "smi_load.csv").read_text(),
                }
            ),
            [
                f"ENV PATH=/dyno/bin:{_BASE_PATH}",
                "ENV LANG=C.UTF-8",
                'ENTRYPOINT ["/usr/bin/sleep", "infinity"]',
                "WORKDIR /root",
            ],
        ),
        VLLM_IMAGE: (
            _rootfs({}),
            [*vllm_env, f"ENTRYPOINT {json.dumps([f'{venv}/bin/vllm', 'serve'])}", "WORKDIR /root"],
        ),
    }


def ensure_test_images(client: Any, venv: Path = VLLM_VENV) -> list[str]:
    """Build the test images that are missing or out of date (a docker SDK client); returns those built."""
    import docker.errors  # the tests' venv has it; imported late so this module loads without it

    built: list[str] = []
    for name, (tar, changes) in _specs(venv).items():
        digest = hashlib.sha256(tar + json.dumps(changes).encode()).hexdigest()[:16]
        try:
            image = client.images.get(name)
            if image.labels.get(_HASH_LABEL) == digest:
                continue
        except docker.errors.ImageNotFound:
            pass
        repo, _, tag = name.rpartition(":")
        labels = [f"LABEL {TEST_LABEL}=1", f"LABEL {_HASH_LABEL}={digest}"]
        client.api.import_image_from_data(tar, repository=repo, tag=tag, changes=[*changes, *labels])
        built.append(name)
    return built


def main() -> None:
    """Build the images against DOCKER_HOST / the local engine."""
    import docker

    built = ensure_test_images(docker.from_env())
    print("built: " + ", ".join(built) if built else "test images are up to date")


if __name__ == "__main__":
    main()
