"""Docker Compose's own test fixtures as a corpus: what the app reads from each, compared by meaning with
what Compose reads (``docker-compose config``, v1.29, recorded beside each fixture).

The fixtures live in tests/fixtures/compose/upstream (``SOURCES.json`` names the repository, path and
commit of each); ``benchmarks/compose_corpus.py --collect`` copies them from the mirrors and records
Compose's reading, ``benchmarks/compose_corpus.py`` writes the figures, and
tests/core/profiles/test_upstream_corpus.py holds the app to them.

For every service that has an image and a command (a vLLM service always names its model), the app
imports it with ``--bind file`` (ports as written) and the facts that decide how the container runs
are compared: image, entrypoint, command, environment, ports, volumes, ipc, user, working_dir, restart.
Outcomes: ``match``; ``refused`` (the app refuses what Compose v1.29 accepts); ``differ`` (the fields
named); ``crash`` (anything but a clear import error); ``unjudged`` (Compose v1.29 cannot read the
file, mostly for a v2-only key, and no v2 judge is recorded here).

Where v1.29 cannot read a fixture, ``*.judge.yaml`` beside it is the judge: the services as
``docker compose config`` (v2) prints them, written from the assertions of Compose v2's own tests, each
source named in it (repository, file, test, what it asserts).
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from llm_dyno.core.errors import ImportFormatError
from llm_dyno.core.profiles.compose_project import normalize_project_name
from llm_dyno.core.profiles.importers import import_text
from llm_dyno.core.profiles.model import HOOKS, Profile
from llm_dyno.core.runtime.docker_spec import _entrypoint, _parse_port
from llm_dyno.core.secrets import is_secret_name, reference_name, resolve_reference

UPSTREAM = Path(__file__).resolve().parents[1] / "fixtures" / "compose" / "upstream"
UPSTREAM_PLACEHOLDER = "@UPSTREAM@"  # where the recorded configs name the fixtures' own folder
FIELDS = (
    *("image", "entrypoint", "command", "environment", "ports", "volumes", "ipc", "user", "working_dir"),
    "secrets",
    "hooks",
)
# the environment both readers see (nothing of the machine's, so that the figures do not depend on it)
CLEAN_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}


# service → why the app refuses it though Compose v1.29 prints a config for it
# Differences the app has from Compose v2, each named with its reason; a new one fails the corpus test,
# and a fixed one must leave this list (the test holds the set of differences equal to it)
KNOWN_GAPS: dict[str, str] = {}

REFUSED_FOR_A_SHARED_REASON = {
    "compose/pkg/e2e/fixtures/logs-test/cat.yaml#test": "${FILE} unset leaves ':/text_file.txt': v1.29 "
    "mounts '.', Compose v2 (compose-go ParseVolume) refuses the empty section between colons",
    "compose/pkg/e2e/testdata/TestIPC/compose.yaml#service": "ipc: service:X needs the other service "
    "running; the app starts one service (refused naming the key and line)",
    "compose/pkg/e2e/testdata/TestImagesAfterImageRemoved/compose.yaml#app": "image: ${REMOVED_IMAGE} is "
    "unset, so the image is empty: Compose v2 cannot create that container either",
    # judged by Compose v2's own tests (*.judge.yaml)
    "compose-go/loader/testdata/extends/reset.yaml#base": "command: !reset leaves no command "
    "(TestExtendsReset: Command == nil): no model for vllm serve, outside the corpus's own rule (a service "
    "with a command); refused naming the command line",
    "compose/pkg/e2e/testdata/TestImageVolumeRecreateOnRebuild/compose.yaml#consumer": "the image "
    "volume's source is ${SOURCE_IMAGE}, set by the e2e test to an image its build makes; unset here, the "
    "mount has no image, which Docker refuses (Source must not be empty); refused naming the volume's line",
    **{
        f"compose/pkg/e2e/testdata/{t}/compose.yaml#test": "depends_on a provider service: Compose runs the "
        "provider's plugin binary at up (docker-example-provider or example-provider on the PATH, built by "
        "docker/compose's e2e setup; Compose fails without it) and passes its variables into the "
        "container; the app runs no provider plugins and refuses naming depends_on and its line"
        for t in (
            "TestDependsOnMultipleProviders",
            "TestProviderRawSetEnv",
            "TestProviderRawSetEnvOverridesInheritedEnv",
            "TestProviderRawSetEnvOverridesInheritedEnvMapForm",
            "TestProviderRawSetEnvOverridesUserEnv",
            "TestProviderStopHook",
        )
    },
}


@dataclass(frozen=True)
class Outcome:
    """One service of one fixture: how the app's reading compares with Compose's."""

    fixture: str
    service: str
    result: str  # match | refused | differ | crash | unjudged
    detail: str = ""

    def key(self) -> str:
        """``fixture#service``, how the test's table names it."""
        return f"{self.fixture}#{self.service}"


def fixtures() -> Iterator[tuple[str, Path, dict[str, Any]]]:
    """(name, compose file, source record) for each fixture in SOURCES.json."""
    sources = json.loads((UPSTREAM / "SOURCES.json").read_text())
    for name, record in sorted(sources.items()):
        yield name, UPSTREAM / name, record


def _words(value: Any) -> list[str] | None:
    if value is None:
        return None
    return shlex.split(value) if isinstance(value, str) else [str(v) for v in value]


def _port_rows(published: list[Any]) -> list[tuple[str, str, str, str]]:
    rows = []
    for p in published:
        if isinstance(p, dict):
            rows.append(
                (
                    str(p.get("host_ip") or ""),
                    str(p.get("published") or ""),
                    str(p["target"]),
                    str(p.get("protocol") or "tcp"),
                )
            )
        else:
            ip, host, ctr, proto = _parse_port(str(p))
            rows.append((ip or "", host, ctr, proto))
    return sorted(rows)


def _volume_rows(volumes: list[Any], project: str | None) -> list[tuple[str, ...]]:
    rows = []
    for v in volumes:
        if isinstance(v, dict) and v.get("type") == "image":  # the image, where, and the path inside it
            image = v.get("image") if isinstance(v.get("image"), dict) else {}
            mode = "ro" if v.get("read_only") else "rw"
            rows.append(("image", str(v["source"]), str(v["target"]), mode, str(image.get("subpath") or "")))
            continue
        if isinstance(v, dict):
            mode = "ro" if v.get("read_only") else "rw"
            rows.append((str(v.get("source") or ""), str(v["target"]), mode))
            continue
        parts = str(v).split(":")
        if len(parts) == 1 or (parts[0].startswith("/") and not parts[1].startswith("/")):
            parts = ["", *parts]  # an anonymous volume: the container path (and its mode) alone
        src, dst, mode = [*parts, "", ""][:3]
        if project and src.startswith(f"{project}_"):
            src = src[len(project) + 1 :]  # the engine name of a named volume: Compose prints its key
        rows.append((src, dst, mode or "rw"))
    return sorted(rows)


def _secret_rows(service: dict[str, Any], declared: dict[str, Any]) -> list[tuple[str, ...]]:
    """A service's secrets as Compose v2 puts them in the container (docker/compose create.go,
    secrets.go): (target, source kind, file or variable, mode); a file secret's mode is the file's."""
    rows: dict[str, tuple[str, ...]] = {}
    for item in service.get("secrets") or []:
        long = item if isinstance(item, dict) else {"source": item}
        name = str(long["source"])
        target = str(long.get("target") or name)
        target = target if target.startswith("/") else f"/run/secrets/{target}"
        entry = declared.get(name) or {}
        if entry.get("environment"):
            mode = long.get("mode")
            text = "0444" if mode is None else f"{int(str(mode), 8) if isinstance(mode, str) else mode:04o}"
            ids = f"{long.get('uid') or 0}:{long.get('gid') or 0}"
            rows[target] = (target, "environment", str(entry["environment"]), text, ids)
        else:
            rows[target] = (target, "file", str(entry.get("file")), "", "")
    return sorted(rows.values())


def _config_rows(service: dict[str, Any], declared: dict[str, Any], folder: Path) -> list[tuple[str, ...]]:
    """A service's configs as Compose v2 puts them in the container (docker/compose create.go,
    buildContainerConfigMounts): at ``/<name>`` or the target (a relative one under ``/``), a file bound
    read-only, an environment variable's value written with mode 0444, an inline ``content`` written."""
    rows: dict[str, tuple[str, ...]] = {}
    for item in service.get("configs") or []:
        long = item if isinstance(item, dict) else {"source": item}
        name = str(long["source"])
        target = str(long.get("target") or f"/{name}")
        target = target if target.startswith("/") else f"/{target}"
        entry = declared.get(name) or {}
        if entry.get("environment"):
            mode = long.get("mode")
            text = "0444" if mode is None else f"{int(str(mode), 8) if isinstance(mode, str) else mode:04o}"
            ids = f"{long.get('uid') or 0}:{long.get('gid') or 0}"
            rows[target] = (target, "environment", str(entry["environment"]), text, ids)
        elif "content" in entry:  # interpolated at load, as compose-go does (unset: empty)
            mode = long.get("mode")
            text = "0444" if mode is None else f"{int(str(mode), 8) if isinstance(mode, str) else mode:04o}"
            ids = f"{long.get('uid') or 0}:{long.get('gid') or 0}"
            content = re.sub(r"\$\{?(\w+)\}?", lambda m: CLEAN_ENV.get(m.group(1), ""), str(entry["content"]))
            rows[target] = (target, "content", content, text, ids)
        else:
            rows[target] = (target, "file", str(folder / str(entry.get("file"))), "", "")
    return sorted(rows.values())


def compose_facts(
    service: dict[str, Any],
    project: str | None,
    declared: dict[str, Any] | None = None,
    configs: dict[str, Any] | None = None,
    folder: Path | None = None,
) -> dict[str, Any]:
    """The compared facts of one service as ``docker-compose config`` printed it (``declared``: the
    top-level ``secrets:`` it printed; ``configs``: the top-level ``configs:``, files read against
    ``folder``). Compose v2 mounts configs as it mounts file secrets: both are the "secrets" fact."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(str(e).partition("=")[::2] for e in env)
    return {
        "image": str(service.get("image")),
        "entrypoint": _words(service.get("entrypoint")),
        "command": _words(service.get("command")),
        "environment": {str(k): str(v) for k, v in env.items() if v is not None},
        "ports": _port_rows(service.get("ports") or []),
        "volumes": _volume_rows(service.get("volumes") or [], project),
        "ipc": service.get("ipc"),
        "user": None if service.get("user") is None else str(service["user"]),
        "working_dir": service.get("working_dir"),
        "secrets": sorted(
            _secret_rows(service, declared or {}) + _config_rows(service, configs or {}, folder or Path("/"))
        ),
        "hooks": {
            key: [[h.get("image"), *(_words(h["command"]) or [])] for h in service.get(key) or []]
            for key in HOOKS
            if service.get(key)
        },
    }


def app_facts(profile: Profile) -> dict[str, Any]:
    """The compared facts of an imported profile: what its launch hands to Docker."""
    docker = profile.docker
    assert docker is not None
    env = {}
    for key, value in profile.env.items():
        ref = reference_name(value)
        if ref is not None and (is_secret_name(key) or is_secret_name(ref)):
            env[key] = "<secret reference>"  # deliberate: a secret stays a reference, warned at import
        else:
            env[key] = resolve_reference(value, CLEAN_ENV) or ""
    return {
        "image": resolve_reference(docker.image, CLEAN_ENV),
        "entrypoint": _entrypoint(profile, docker),
        "command": [resolve_reference(a, CLEAN_ENV) or "" for a in profile.vllm_argv()],
        "environment": env,
        "ports": _port_rows(list(docker.ports)),
        "volumes": sorted(
            _volume_rows(list(docker.volumes), docker.project)
            + [
                ("image", v.image, v.target, "ro" if v.read_only else "rw", v.subpath or "")
                for v in docker.image_volumes
            ]
        ),
        "ipc": docker.ipc,
        "user": docker.user,
        "working_dir": docker.working_dir,
        "secrets": sorted(
            (s.target, "environment", s.environment, f"{0o444 if s.mode is None else s.mode:04o}", ids)
            if s.environment is not None
            else (s.target, "content", s.content, f"{0o444 if s.mode is None else s.mode:04o}", ids)
            if s.content is not None
            else (s.target, "file", str(s.file), "", "")
            for s in docker.secrets
            for ids in [f"{s.uid or 0}:{s.gid or 0}"]
        ),
        "hooks": {  # (image: a pre_start hook's own, None: the server's; then the command)
            key: [[getattr(h, "image", None), *h.command] for h in getattr(docker, key)]
            for key in HOOKS
            if getattr(docker, key)
        },
    }


def _same(field: str, compose: Any, app: Any) -> bool:
    if field == "environment":
        return set(compose) == set(app) and all(
            app[k] == "<secret reference>" or app[k] == compose[k] for k in compose
        )
    return bool(compose == app)


def judge(name: str, compose_file: Path) -> list[Outcome]:
    """Every service of one fixture that has an image and a command, judged."""
    text = compose_file.read_text()
    data = yaml.safe_load(_no_tags(text)) or {}
    config_file = compose_file.with_name(compose_file.name + ".config.yaml")
    error_file = compose_file.with_name(compose_file.name + ".config-error.txt")
    judge_file = compose_file.with_name(compose_file.name + ".judge.yaml")
    resolved = None
    if judge_file.exists():  # v1.29 cannot read it (or read it without a v2-only key that decides a
        resolved = yaml.safe_load(judge_file.read_text())  # compared fact): Compose v2's tests judge it
    elif config_file.exists():
        resolved = yaml.safe_load(config_file.read_text().replace(UPSTREAM_PLACEHOLDER, str(UPSTREAM)))
    project = normalize_project_name(data.get("name") or compose_file.parent.name) or None
    out = []
    for service, svc in (data.get("services") or {}).items():
        if not isinstance(svc, dict) or "command" not in svc or "build" in svc:
            continue
        old = dict(os.environ)
        os.environ.clear()
        os.environ.update(CLEAN_ENV)
        try:
            result = import_text(
                text,
                source=str(compose_file),
                service=str(service),
                base_dir=compose_file.parent,
                bind="file",
            )
            app: dict[str, Any] | None = app_facts(result.profile)
            refusal = ""
        except ImportFormatError as exc:
            app, refusal = None, exc.message
        except Exception as exc:  # a crash is a finding, never an abort of the whole corpus
            out.append(Outcome(name, str(service), "crash", f"{type(exc).__name__}: {exc}"))
            continue
        finally:
            os.environ.clear()
            os.environ.update(old)
        if resolved is None or str(service) not in resolved["services"]:  # no judge recorded here
            why = error_file.read_text().strip().splitlines()[-1][:200] if error_file.exists() else ""
            said = f"app refused: {refusal}" if app is None else "app imported it"
            out.append(Outcome(name, str(service), "unjudged", f"{said}; v1.29: {why}"))
            continue
        if app is None:
            out.append(Outcome(name, str(service), "refused", refusal))
            continue
        compose = compose_facts(
            resolved["services"][str(service)],
            project,
            resolved.get("secrets"),
            resolved.get("configs"),
            compose_file.parent,
        )
        diff = [f for f in FIELDS if not _same(f, compose[f], app[f])]
        detail = "; ".join(f"{f}: compose {compose[f]!r} app {app[f]!r}" for f in diff)
        out.append(Outcome(name, str(service), "differ" if diff else "match", detail))
    return out


def _no_tags(text: str) -> str:
    """YAML tags Compose v2 knows (``!reset``, ``!override``) read by a plain loader as plain values."""
    return text.replace("!reset", "").replace("!override", "")


def judge_all() -> list[Outcome]:
    """The whole corpus."""
    return [o for name, path, _ in fixtures() for o in judge(name, path)]
