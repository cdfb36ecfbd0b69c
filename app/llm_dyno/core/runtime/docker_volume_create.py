"""The launch's half of :mod:`~llm_dyno.core.runtime.docker_volumes`: the engine's API version checked
for image volumes, and the driver volumes created, before any container exists."""

from __future__ import annotations

from collections.abc import Callable

import docker
import docker.errors

from llm_dyno.core.profiles.model import DockerSettings, Profile
from llm_dyno.core.runtime.base import FailureKind
from llm_dyno.core.runtime.docker_errors import DockerError, api_message
from llm_dyno.core.runtime.docker_volumes import IMAGE_MOUNT_API

VOLUME_CREATE_WAIT_S = 45.0  # Docker waits 15 s for a volume plugin that is not installed


def _version_tuple(version: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in version.split("."))
    except ValueError:
        return (0,)


def check_image_mounts(settings: DockerSettings, api_version: str, engine: str) -> None:
    """Refuse image volumes on an engine older than API 1.48, naming its version and the one needed
    (:class:`DockerError`); nothing is created before this check."""
    if not settings.image_volumes or _version_tuple(api_version) >= _version_tuple(IMAGE_MOUNT_API):
        return
    targets = ", ".join(f"{v.image} at {v.target}" for v in settings.image_volumes)
    raise DockerError(
        FailureKind.UNKNOWN,
        f"image volume(s) {targets}: {engine} speaks Docker Engine API {api_version}, and mounting an "
        f"image needs API {IMAGE_MOUNT_API} (Docker Engine 28 or later); Docker Compose refuses it there "
        "too. No container was created",
        hint="upgrade the Docker engine to 28 or later, or copy the image's files into a folder or a named "
        "volume and mount that instead",
    )


def ensure_volumes(client: docker.DockerClient, settings: DockerSettings, engine: str) -> None:
    """Create each driver volume that does not exist yet, with its driver, options and labels, as
    Compose does before it creates the containers. A driver the engine has no plugin for (or options
    it refuses) raises :class:`DockerError` naming the volume and the driver; no volume is left."""
    for volume in settings.driver_volumes:
        try:
            client.volumes.get(volume.name)
            continue  # an existing one is used as it is, as Compose uses it
        except docker.errors.NotFound:
            pass
        body = {
            "Name": volume.name,
            "Driver": volume.driver,
            "DriverOpts": dict(volume.options),
            "Labels": dict(volume.labels),
        }
        api = client.api
        try:
            # docker-py's volumes.create with a longer wait: the engine looks for a missing plugin for
            # 15 s before it says so (and a network driver may take a while to make the volume)
            answer = api._post_json(api._url("/volumes/create"), data=body, timeout=VOLUME_CREATE_WAIT_S)
            api._raise_for_status(answer)
        except docker.errors.APIError as exc:
            said = api_message(exc)
            missing = "plugin" in said.lower() and "not found" in said.lower()
            raise DockerError(
                FailureKind.UNKNOWN,
                f"volume {volume.name} (driver {volume.driver}) cannot be created on {engine}: {said}. "
                "No container was created",
                hint=(
                    f"install the volume plugin first (docker plugin install {volume.driver}), or change "
                    "the volume's driver"
                    if missing
                    else "check the volume's driver_opts against the driver's documentation"
                ),
            ) from exc


def prepare_volumes(
    client: docker.DockerClient, profile: Profile, host: str | None, ensure_image: Callable[[str], None]
) -> None:
    """What the launch does for a profile's volumes before its container is created: refuse image
    volumes on an engine older than API 1.48, pull their images (``ensure_image``, as the server's
    image is pulled: Compose pulls them too), then create the missing driver volumes."""
    settings = profile.docker
    if settings is None or not (settings.image_volumes or settings.driver_volumes):
        return
    engine = f"the Docker engine {host}" if host else "the Docker engine"
    check_image_mounts(settings, str(client.api.api_version), engine)
    for image in dict.fromkeys(v.image for v in settings.image_volumes):
        ensure_image(image)
    ensure_volumes(client, settings, engine)
