"""Import a profile from what people paste: a compose file, a ``docker run`` or a ``vllm serve`` line.

The kind of text is detected; the engine flags are kept verbatim and in order, literal secrets are
replaced by references (with a warning), and anything malformed raises :class:`ImportFormatError`
naming the file, line and field.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from llm_dyno.core.errors import ImportFormatError, Location, ProfileError
from llm_dyno.core.profiles.cmdline_import import read_cmdline
from llm_dyno.core.profiles.compose_import import read_compose
from llm_dyno.core.profiles.import_common import SourceKind, known_flags
from llm_dyno.core.profiles.import_result import ImportFailed, ImportResult, build_result
from llm_dyno.core.profiles.model import Runtime, profile_from_yaml
from llm_dyno.core.profiles.yamlio import load_with_lines
from llm_dyno.core.secrets import redact_values, strip_credentials

__all__ = ["ImportFailed", "ImportResult", "SourceKind", "detect_kind", "import_text", "known_flags"]

# A YAML document starts with a mapping key (`services:`, `x-common: &anchor`, `version: "3"`) or `---`.
_YAML_START_RE = re.compile(r"^(---|[A-Za-z_][\w.-]*\s*:(\s|$))")


def detect_kind(text: str) -> SourceKind:
    """Guess what the text is: ``compose``, ``docker-run`` or ``vllm-serve``."""
    for line in text.split("\n"):
        stripped = line.strip()
        if not stripped or (stripped.startswith("#") and not stripped.startswith("# llm-dyno:")):
            continue
        if _YAML_START_RE.match(line):
            return "compose"
        break
    return "docker-run" if re.search(r"(^|\s|/)(docker|podman)\s", text) else "vllm-serve"


def import_text(
    text: str,
    *,
    source: str | None = None,
    name: str | None = None,
    service: str | None = None,
    runtime: str | Runtime | None = None,
    executable: str | None = None,
    base_dir: Path | None = None,
    bind: str | None = None,
    trust_host: bool = False,
    env_file_outside: bool = False,
) -> ImportResult:
    """Read a profile from compose YAML, a ``docker run`` line or a ``vllm serve`` line.

    ``source`` names the file in messages; ``name`` overrides the profile name; ``service`` picks the
    compose service; ``runtime`` forces ``docker`` or ``process``; ``executable`` sets the ``vllm``
    executable of a process profile; ``base_dir`` is the folder of the imported file (a compose
    project's folder: its ``.env``, relative paths, project name); ``bind`` is ``loopback`` (default)
    or ``file``: how ports written without an address are published; ``trust_host`` takes the Docker
    engine the file names (``x-llm-dyno.host``, ``docker -H``; else dropped with a warning);
    ``env_file_outside`` reads ``env_file:`` entries outside the compose file's folder (else refused).
    A failed import raises :class:`ImportFailed`, which keeps the warnings gathered before the failure.
    """
    if not text.strip():
        raise ImportFormatError(
            "nothing to import: the text is empty",
            where=Location(source, 1),
            hint="paste a docker-compose.yml, a docker run … command or a vllm serve … command",
        )
    if runtime is not None and str(runtime) not in {r.value for r in Runtime}:
        raise ImportFormatError(
            f"runtime {runtime!r}: expected 'docker' or 'process'", where=Location(source)
        )
    if bind is not None and bind not in ("loopback", "file"):
        raise ImportFormatError(f"bind {bind!r}: expected 'loopback' or 'file'", where=Location(source))
    if detect_kind(text) == "compose" and _is_profile_document(text):
        return _import_profile(text, source=source, name=name, trust_host=trust_host)
    warnings: list[str] = []
    try:
        if detect_kind(text) == "compose":
            draft = read_compose(
                text,
                source=source,
                service=service,
                base_dir=base_dir,
                warnings=warnings,
                env_file_outside=env_file_outside,
            )
        else:
            draft = read_cmdline(text, source=source, warnings=warnings)
        result = build_result(
            draft, name=name, runtime=runtime, executable=executable, bind=bind, trust_host=trust_host
        )
    except ImportFormatError as exc:
        # messages quote the words they are about: no secret of them is shown
        failed = ImportFormatError(redact_values(exc.message), where=exc.where, hint=exc.hint)
        kept = exc.warnings if isinstance(exc, ImportFailed) else warnings
        raise ImportFailed(failed, [redact_values(w) for w in kept]) from None
    return replace(result, warnings=tuple(redact_values(w) for w in result.warnings))


def _import_profile(text: str, *, source: str | None, name: str | None, trust_host: bool) -> ImportResult:
    """An LLM Dyno profile file (one exported or shared by someone): validated as it is, but for the
    Docker engine it names (dropped unless ``trust_host``) and what it runs first (named)."""
    profile = profile_from_yaml(text, source)
    if name is not None and name != profile.name:
        profile = profile.with_changes(name=name)
    warnings: list[str] = []
    if profile.docker is not None and profile.docker.host and not trust_host:
        warnings.append(
            f"docker.host ({strip_credentials(profile.docker.host)}) is not taken from an imported file: it "
            "picks the Docker engine that receives your secrets at launch; the profile uses your local "
            "engine (import --docker-host-from-file to take it)"
        )
        profile = profile.with_changes(docker=profile.docker.model_copy(update={"host": None}))
    if profile.pre_start:
        warnings.append(
            f"the imported profile runs a script before vLLM (pre_start): {profile.pre_start[:200]!r}"
        )
    return ImportResult(profile=profile, warnings=tuple(warnings), source_kind="profile", service=None)


def _is_profile_document(text: str) -> bool:
    try:
        data, _ = load_with_lines(text)
    except ProfileError:
        return False  # the compose reader reports malformed YAML in its own words
    return isinstance(data, dict) and "model" in data and "services" not in data
