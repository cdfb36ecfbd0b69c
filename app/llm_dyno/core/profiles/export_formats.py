"""The formats a profile is exported in: one registry for ``llm-dyno profile export`` and the window.

Each :class:`ExportFormat` names its writer (profile -> text), the file suffix the window suggests and
a description; the CLI's ``--format`` choices and the export dialog's list are this registry's keys, in
order. To add a format, add an entry (docs/guide.md "Extending" shows one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from llm_dyno.core.profiles.exporters import to_compose, to_docker_run, to_vllm_serve
from llm_dyno.core.profiles.model import Profile


@dataclass(frozen=True)
class ExportFormat:
    """One export format: its writer, the suffix of its files and what it is, in the user's words."""

    write: Callable[[Profile], str]
    suffix: str
    description: str


def _yaml(profile: Profile) -> str:
    return profile.to_yaml()


EXPORT_FORMATS: dict[str, ExportFormat] = {
    "compose": ExportFormat(to_compose, ".yml", "docker-compose.yml"),
    "docker-run": ExportFormat(to_docker_run, ".sh", "docker run command"),
    "vllm-serve": ExportFormat(to_vllm_serve, ".sh", "vllm serve command"),
    "yaml": ExportFormat(_yaml, ".yaml", "LLM Dyno profile (YAML)"),
}


def export_profile(profile: Profile, name: str) -> str:
    """``profile`` written in the format called ``name``, ending in a newline.

    Raises KeyError for a name not in :data:`EXPORT_FORMATS` (the front ends offer only its keys);
    a writer's own refusal is a :class:`~llm_dyno.core.errors.DynoError`.
    """
    out = EXPORT_FORMATS[name].write(profile)
    return out if out.endswith("\n") else out + "\n"
