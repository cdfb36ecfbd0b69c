"""Docker engine connections and the errors users hit with them, each turned into what to do."""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections.abc import Iterator
from typing import Any

import docker
import docker.errors
from docker.transport.sshconn import SSHSocket

from llm_dyno.core.errors import DynoError
from llm_dyno.core.runtime.base import FailureKind, FailureReason
from llm_dyno.core.runtime.docker_bounds import EngineAnswerRefused
from llm_dyno.core.runtime.docker_common import LABEL_MANAGED, LABEL_PROFILE, is_url_host
from llm_dyno.core.runtime.docker_contexts import default_host, find_context


class DockerError(DynoError):
    """A Docker operation failed in a way the user can fix; ``kind`` classifies it."""

    def __init__(self, kind: FailureKind, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.kind = kind

    def reason(self, exit_code: int | None = None) -> FailureReason:
        """This error as the failure of a server."""
        return FailureReason(self.kind, self.message, hint=self.hint or "", exit_code=exit_code)


def _where(host: str | None) -> str:
    return host or default_host() or os.environ.get("DOCKER_HOST") or "the local Docker engine"


def connection_error(exc: BaseException, host: str | None) -> DockerError:
    """Classify a failure to reach an engine: not running / wrong host, or no permission on the socket."""
    text = str(exc)
    if "Permission denied" in text or "PermissionError" in text:
        return DockerError(
            FailureKind.DOCKER_PERMISSION,
            f"permission denied on the Docker socket of {_where(host)}",
            hint="add your user to the docker group (sudo usermod -aG docker $USER), then log out and in "
            "again or run `newgrp docker`",
        )
    where = _where(host)
    if where.startswith("tcp://") and ("SSL" in text or "CERTIFICATE" in text.upper()):
        hint = (
            "the engine's TLS was refused: check DOCKER_CERT_PATH (ca.pem, cert.pem, key.pem from the "
            "engine's CA) and that the engine's certificate names this host"
        )
    elif where.startswith("tcp://") and not os.environ.get("DOCKER_TLS_VERIFY"):
        hint = (
            "is dockerd listening there? An engine on tcp:// with TLS (port 2376) needs DOCKER_TLS_VERIFY=1 "
            "and DOCKER_CERT_PATH, or a docker context that has its certificates"
        )
    else:
        hint = (
            "is dockerd running (`docker info`; `sudo systemctl start docker` or scripts/start-dockerd)? "
            "Check DOCKER_HOST, the active `docker context`, or the profile's docker.host"
        )
    return DockerError(FailureKind.DOCKER_UNREACHABLE, f"cannot reach {where}: {_short(text)}", hint=hint)


def connect(host: str | None) -> docker.DockerClient:
    """A client for a profile's ``docker.host``, checked with a ping.

    None follows DOCKER_HOST / DOCKER_TLS_VERIFY / DOCKER_CERT_PATH and the active docker context;
    a URL (``unix://``, ``tcp://``, ``ssh://``) is used as given (TLS for ``tcp://`` from the same
    environment variables); anything else names a docker context.
    """
    host = host or default_host()  # the app's setting, for a profile that names no host
    if host is None and not os.environ.get("DOCKER_HOST") and os.environ.get("DOCKER_CONTEXT"):
        host = os.environ["DOCKER_CONTEXT"]  # docker-py's from_env reads DOCKER_HOST only
    try:
        kwargs: dict[str, Any] = {}
        if host is None:
            kwargs = docker.utils.kwargs_from_env()
            url = kwargs.pop("base_url", None)
        elif is_url_host(host):
            url = host
            if host.startswith("tcp://") and os.environ.get("DOCKER_TLS_VERIFY"):
                kwargs = docker.utils.kwargs_from_env()
                kwargs.pop("base_url", None)
        else:
            ctx = find_context(host)
            if ctx is None:
                raise DockerError(
                    FailureKind.DOCKER_UNREACHABLE,
                    f"there is no docker context named {host!r}",
                    hint="list them with `docker context ls`, or give docker.host as a URL (ssh://user@box)",
                )
            url, kwargs = ctx.host, {"tls": ctx.tls}
        with _ca_bundle_variables_ignored():
            client = docker.DockerClient(base_url=url, **kwargs, **_ssh_options(url))
        client.api.trust_env = False  # see _ca_bundle_variables_ignored
        client.ping()
    except DockerError:
        raise
    except EngineAnswerRefused as exc:
        raise answer_refused_error(exc, host) from None
    except (docker.errors.DockerException, OSError) as exc:
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, EngineAnswerRefused):  # docker-py wraps the one of /version
            raise answer_refused_error(cause, host) from None
        raise connection_error(exc, host) from exc
    return client


def answer_refused_error(exc: EngineAnswerRefused, host: str | None) -> DockerError:
    """An engine whose answer broke a bound (too big, too slow): what it was, and where."""
    return DockerError(
        FailureKind.DOCKER_UNREACHABLE,
        f"{_where(host)}: {exc.message}",
        hint="check that DOCKER_HOST, the active `docker context` or the profile's docker.host names "
        "a Docker engine (`docker info`), and that it is not overloaded",
    )


_ENV_LOCK = threading.Lock()


def close_client(client: docker.DockerClient) -> None:
    """Close an engine connection; closing a broken one never fails the caller."""
    with contextlib.suppress(docker.errors.DockerException, OSError):
        client.close()


def _close_ssh_socket(self: SSHSocket) -> None:
    """docker-py's ``SSHSocket.close`` writes a goodbye into the ``ssh`` process's stdin; when that
    process has already exited (the engine host went away, or at interpreter exit) the write raises
    BrokenPipeError, from whichever finalizer closes the pool, as a traceback after the program's own
    output. Say goodbye only to a live process, then close the pipe and end the process quietly."""
    proc = self.proc
    if proc is None or proc.stdin is None or proc.stdin.closed:
        return
    with contextlib.suppress(OSError, ValueError):
        if proc.poll() is None:
            proc.stdin.write(b"\n\n")
            proc.stdin.flush()
    with contextlib.suppress(OSError, ValueError):
        proc.stdin.close()  # closes the pipe even when the flush inside fails
    with contextlib.suppress(OSError):
        proc.terminate()


SSHSocket.close = _close_ssh_socket  # docker-py has no hook for it (see above)


@contextlib.contextmanager
def _ca_bundle_variables_ignored() -> Iterator[None]:
    """requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE (set on many managed machines) replace the
    CA that docker-py gives for a TLS engine, so the engine's own CA would never be trusted. The client
    is made without them (it asks the engine's version on creation) and then ignores the environment
    (``trust_env = False``) for every later request."""
    with _ENV_LOCK:
        saved = {k: os.environ.pop(k) for k in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE") if k in os.environ}
        try:
            yield
        finally:
            os.environ.update(saved)


def _ssh_options(url: str | None) -> dict[str, Any]:
    """For an ``ssh://`` engine: the system ssh, as the docker CLI uses (the user's ~/.ssh/config,
    agent and known hosts), or paramiko (which docker-py needs loaded for ssh:// either way) when
    there is no ssh client."""
    if not url or not url.startswith("ssh://"):
        return {}
    return {"use_ssh_client": shutil.which("ssh") is not None}


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def api_message(exc: BaseException) -> str:
    """The engine's own words for an API error."""
    if isinstance(exc, docker.errors.APIError) and exc.explanation:
        return str(exc.explanation)
    return str(exc)


def start_error(exc: BaseException, spec: dict[str, Any]) -> DockerError:
    """Classify a failed ``start``: GPU runtime missing, port taken, or something else."""
    text = api_message(exc)
    low = text.lower()
    if "could not select device driver" in low or "nvidia-container-cli" in low or "unknown runtime" in low:
        return DockerError(
            FailureKind.NVIDIA_RUNTIME_MISSING,
            f"Docker cannot give the container GPUs: {_short(text)}",
            hint="install the NVIDIA Container Toolkit (nvidia-container-toolkit), run "
            "`sudo nvidia-ctk runtime configure --runtime=docker` and restart dockerd",
        )
    if "port is already allocated" in low or "address already in use" in low:
        ports = ", ".join(
            str(b[1])
            for bs in spec.get("ports", {}).values()
            for b in (bs if isinstance(bs, list) else [bs])
            if len(b) > 1
        )
        return DockerError(
            FailureKind.PORT_IN_USE,
            f"host port {ports} is already in use: {_short(text)}",
            hint="stop whatever listens there (`ss -ltnp`, `docker ps`) or change docker.ports "
            "in the profile",
        )
    return DockerError(FailureKind.UNKNOWN, f"Docker could not start the container: {_short(text)}")


def name_taken_error(client: docker.DockerClient, name: str) -> DockerError:
    """A container of that name exists already: say whether it is ours."""
    try:
        other = client.containers.get(name)
        labels = other.labels or {}
        status = other.status
    except docker.errors.DockerException:
        labels, status = {}, "unknown"
    if labels.get(LABEL_MANAGED) == "1":
        return DockerError(
            FailureKind.CONTAINER_NAME_TAKEN,
            f"container {name!r} already exists ({status}); LLM Dyno started it for profile "
            f"{labels.get(LABEL_PROFILE, '?')!r}",
            hint="stop that server first (it is adopted at start-up), or `docker rm -f " + name + "`",
        )
    return DockerError(
        FailureKind.CONTAINER_NAME_TAKEN,
        f"container name {name!r} is taken by a container LLM Dyno did not create ({status}); "
        "it is left alone",
        hint="set docker.container_name in the profile to another name, or remove that container yourself",
    )


def image_error(image: str, cause: str) -> DockerError:
    """The image is not on the machine and pulling it failed."""
    return DockerError(
        FailureKind.IMAGE_NOT_FOUND,
        f"image {image} is not on this machine and cannot be pulled: {_short(cause)}",
        hint="check the name and tag, log in to the registry (`docker login`), "
        "or `docker load` it from a file",
    )
