"""Shared fixtures for the diagnose tests: recorded real logs, NVML samples and profiles."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from llm_dyno.core.diagnose.inputs import LaunchLog
from llm_dyno.core.profiles.importers import import_text
from llm_dyno.core.profiles.model import Profile, profile_from_yaml
from llm_dyno.core.telemetry.nvml import GpuReading

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "diagnose"
SHARED_COMPOSE = Path(__file__).resolve().parents[3] / "resources" / "references" / "founding-compose.yml"


def log(name: str) -> LaunchLog:
    """A fixture log, numbered as in the file."""
    path = FIXTURES / name
    return LaunchLog.from_text(path.read_text(encoding="utf-8"), str(path))


def founding_profile() -> Profile:
    """The founding post's compose, through the real importer."""
    return import_text(SHARED_COMPOSE.read_text(encoding="utf-8"), source=str(SHARED_COMPOSE)).profile


def founding_open_profile() -> Profile:
    """The founding profile with its port published on every interface, as Docker Compose would."""
    profile = founding_profile()
    assert profile.docker is not None
    return profile.with_changes(docker=profile.docker.model_copy(update={"ports": ("0.0.0.0:8020:8000",)}))


def clean_profile() -> Profile:
    """A profile with none of the problems the rules look for."""
    path = FIXTURES / "clean_profile.yaml"
    return profile_from_yaml(path.read_text(encoding="utf-8"), str(path))


def h200_readings() -> tuple[list[GpuReading], list[GpuReading]]:
    """(idle, under load) real H200 NVML readings."""
    names = {f.name for f in dataclasses.fields(GpuReading)}
    idle: list[GpuReading] = []
    load: list[GpuReading] = []
    for line in (FIXTURES / "nvml_h200.jsonl").read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        for r in data.get("readings", []):
            reading = GpuReading(**{k: v for k, v in r.items() if k in names})
            (load if reading.throttle_mask == 4 else idle).append(reading)
    return idle, load
