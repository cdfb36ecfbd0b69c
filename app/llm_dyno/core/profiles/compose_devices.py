"""A compose service's device requests (``gpus:`` and ``deploy.resources.reservations.devices``) as
Compose v2 passes them to Docker (docker/compose ``pkg/compose/create.go`` ``getDeployResources``): the
first NVIDIA request becomes the profile's ``gpus`` (what the app's GPU logic reads), every other one
is kept as written (``docker.devices``)."""

from __future__ import annotations

from typing import Any, Protocol

from llm_dyno.core.errors import ImportFormatError, Location
from llm_dyno.core.profiles.import_common import Draft


class ServiceReader(Protocol):
    """What these functions use of the compose service reader that calls them
    (:class:`~llm_dyno.core.profiles.compose_service.ServiceReader`): the service's mapping, its
    draft, where a path sits, a value as text, and the device requests it keeps."""

    svc: dict[str, Any]
    draft: Draft
    devices: list[dict[str, Any]]

    def at(self, *path: str | int) -> Location: ...

    def text(self, value: Any, *path: str | int) -> str: ...


def read_gpus(s: ServiceReader) -> Any:
    """The GPUs of the first NVIDIA request (what the app's GPU logic reads: NVML, the memory
    budget); every other request is kept in :attr:`ServiceReader.devices`, passed to Docker as written, as
    Compose passes each (docker/compose ``create.go`` ``getDeployResources``)."""
    requests: list[tuple[Any, tuple[str | int, ...]]] = []
    gpus = s.svc.get("gpus")
    if gpus is not None:
        if gpus == "all":
            requests.append(({"count": "all"}, ("gpus",)))
        elif not isinstance(gpus, list):
            raise ImportFormatError("'gpus' must be 'all' or a list of device requests", where=s.at("gpus"))
        else:
            requests += [(g, ("gpus", i)) for i, g in enumerate(gpus)]
    devices: Any = s.svc
    path: tuple[str, ...] = ()
    for key in ("deploy", "resources", "reservations", "devices"):
        if not isinstance(devices, dict):
            raise ImportFormatError(f"'{'.'.join(path)}' must be a mapping", where=s.at(*path))
        devices = devices.get(key) or ([] if key == "devices" else {})
        path = (*path, key)
    if not isinstance(devices, list):
        raise ImportFormatError("'deploy.resources.reservations.devices' must be a list", where=s.at(*path))
    requests += [(d, (*path, i)) for i, d in enumerate(devices)]
    found: Any = None
    for request, where in requests:
        if not isinstance(request, dict):
            continue
        caps = [
            str(c)
            for group in request.get("capabilities") or []
            for c in (group if isinstance(group, list) else [group])
        ]
        if not caps and where[0] != "gpus":  # gpus: implies the gpu capability
            raise ImportFormatError(
                "a device request needs capabilities (Docker Compose refuses it too)",
                where=s.at(*where),
                hint="add capabilities: [gpu]",
            )
        driver = request.get("driver")
        # Docker gives a request of the gpu capability without a driver to NVIDIA's
        nvidia = driver == "nvidia" or (not driver and ("gpu" in caps or where[0] == "gpus"))
        if nvidia and found is None:
            found = _nvidia(s, request, where)
        else:
            s.devices.append(_device(s, request, where, caps or ["gpu"]))
    return found


def _device(
    s: ServiceReader, request: dict[str, Any], where: tuple[str | int, ...], caps: list[str]
) -> dict[str, Any]:
    """A device request as written, for ``docker.devices``."""
    out: dict[str, Any] = {"capabilities": tuple(caps)}
    if request.get("driver"):
        out["driver"] = s.text(request["driver"], *where, "driver")
    ids, count = request.get("device_ids"), request.get("count")
    if ids is not None and count is not None:
        raise ImportFormatError(
            "a device request has both count and device_ids (Docker Compose refuses it too)",
            where=s.at(*where),
            hint="keep one of them",
        )
    if ids is not None:
        if not isinstance(ids, list):
            raise ImportFormatError("device_ids must be a list", where=s.at(*where, "device_ids"))
        out["device_ids"] = tuple(s.text(x, *where, "device_ids", k) for k, x in enumerate(ids))
    else:
        text = "all" if count is None else s.text(count, *where, "count")
        try:
            out["count"] = -1 if text == "all" else int(text)
        except ValueError:
            raise ImportFormatError(
                f"device count {count!r}: expected 'all' or a number", where=s.at(*where, "count")
            ) from None
    options = request.get("options") or {}
    if not isinstance(options, dict):
        raise ImportFormatError("device options must be a mapping", where=s.at(*where, "options"))
    out["options"] = {str(k): s.text(v, *where, "options", str(k)) for k, v in options.items()}
    return out


def _nvidia(s: ServiceReader, request: dict[str, Any], where: tuple[str | int, ...]) -> Any:
    """The profile's ``gpus`` from an NVIDIA request: 'all' or GPU indices."""
    if request.get("device_ids") is not None:
        try:
            return tuple(int(str(x)) for x in request["device_ids"])
        except ValueError:
            raise ImportFormatError(
                "GPU device_ids must be indices such as ['0', '1'] (UUIDs are not supported)",
                where=s.at(*where, "device_ids"),
            ) from None
    count = request.get("count", "all")
    if str(count) == "all" or str(count) == "-1":
        return "all"
    try:
        n = int(str(count))
    except ValueError:
        raise ImportFormatError(
            f"GPU count {count!r}: expected 'all' or a number", where=s.at(*where, "count")
        ) from None
    s.draft.warnings.append(f"GPU count {n} read as GPUs {', '.join(map(str, range(n)))}")
    return tuple(range(n))
