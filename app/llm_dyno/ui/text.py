"""Short texts about a profile and its launch plan that several views show: a profile's one-line
subtitle (the editor's header, the profile list, the first-run dialog) and the plan's warnings as lines
(the launch panel, the editor's form). No Qt: plain strings, below every view."""

from __future__ import annotations

from collections.abc import Sequence

from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.runtime.launch_spec import PlanWarning, by_severity


def subtitle_of(profile: Profile) -> str:
    """``docker · vllm/vllm-openai:v0.11 · Qwen/Qwen3-8B`` for headers and the list."""
    parts = [profile.runtime.value]
    if profile.docker is not None and profile.runtime.value == "docker":
        image = profile.docker.image
        parts.append(image if "@" not in image else image.split("@")[0] + "@" + image.split("@")[1][7:19])
    parts.append(profile.model)
    return " · ".join(parts)


def warnings_text(warnings: Sequence[PlanWarning], prefix: str = "") -> str:
    """Plan warnings as lines, what refuses or exposes first, each under its kind's heading."""
    return "\n".join(f"⚠ {prefix}{w.kind.heading}: {w.text}" for w in by_severity(warnings))
