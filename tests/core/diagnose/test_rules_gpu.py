"""GPU rules on real H200 NVML readings (idle, then at its 700 W cap with SwPowerCap)."""

from __future__ import annotations

import dataclasses

from llm_dyno.core.diagnose import DiagnosisInput
from llm_dyno.core.diagnose.evidence import ChangeKind, Severity
from llm_dyno.core.diagnose.references import find_reference
from llm_dyno.core.diagnose.rules_gpu import (
    pcie_link_below_max,
    power_cap_below_reference,
    power_cap_binding,
    sm_clock_below_max,
    thermal_throttling,
)
from llm_dyno.core.profiles.model import PowerSettings
from tests.core.diagnose.helpers import founding_profile, h200_readings

ALL_GPU_RULES = (power_cap_binding, thermal_throttling, sm_clock_below_max, pcie_link_below_max)


def test_idle_readings_are_silent() -> None:
    idle, _ = h200_readings()
    for rule in ALL_GPU_RULES:
        assert rule(DiagnosisInput(gpu_under_load=tuple(idle))) == [], rule.__name__


def test_power_cap_binding_on_real_h200_load() -> None:
    _, load = h200_readings()
    [f] = power_cap_binding(DiagnosisInput(gpu_under_load=tuple(load)))
    # the limit already is the card's maximum (700 W): reported, nothing to raise
    assert f.severity is Severity.LOW and f.changes == ()
    # the same samples as they would read under a 400 W cap (the card allows 700 W)
    lower = tuple(dataclasses.replace(r, power_w=398.0, power_limit_w=400.0) for r in load)
    [g] = power_cap_binding(DiagnosisInput(gpu_under_load=lower))
    assert g.severity is Severity.MEDIUM and g.changes[0].value == "700"


def test_sm_clock_below_max_on_real_h200_load() -> None:
    _, load = h200_readings()
    [f] = sm_clock_below_max(DiagnosisInput(gpu_under_load=tuple(load)))
    assert "of 1980 MHz" in f.title and "SwPowerCap" in f.evidence[1].describe()
    assert f.severity is Severity.LOW  # explained by the power cap


def test_thermal_throttling() -> None:
    _, load = h200_readings()
    assert thermal_throttling(DiagnosisInput(gpu_under_load=tuple(load))) == []  # 55-58 °C, SwPowerCap only
    # no real thermal-throttle recording exists: the real reading with the SwThermalSlowdown bit (0x20) set
    hot = tuple(dataclasses.replace(r, throttle_mask=0x20 | 0x4, temperature_c=86.0) for r in load)
    [f] = thermal_throttling(DiagnosisInput(gpu_under_load=hot))
    assert f.severity is Severity.HIGH and "SwThermalSlowdown" in f.evidence[1].describe()


def test_pcie_link_below_max() -> None:
    _, load = h200_readings()
    assert pcie_link_below_max(DiagnosisInput(gpu_under_load=tuple(load))) == []  # Gen5 x16 of Gen5 x16
    # no real downgraded-link recording: the real reading as it would read in a Gen4 x8 slot
    slow = tuple(dataclasses.replace(r, pcie_gen=4, pcie_width=8) for r in load)
    [f] = pcie_link_below_max(DiagnosisInput(gpu_under_load=slow))
    assert f.title == "PCIe link Gen4 x8, capable of Gen5 x16"


def test_power_cap_below_reference() -> None:
    founding = founding_profile()
    ref = find_reference("founding-post-3090-330w")  # 330 W
    stock = founding.with_changes(power=PowerSettings(limit_w=230))  # the post's stock run: ~33 / ~40 TPS
    [f] = power_cap_below_reference(DiagnosisInput(profile=stock, reference=ref))
    assert f.changes[0].kind is ChangeKind.SET_POWER_LIMIT and f.changes[0].value == "330"
    capped = founding.with_changes(power=PowerSettings(limit_w=330))
    assert power_cap_below_reference(DiagnosisInput(profile=capped, reference=ref)) == []
    # an H200's 700 W says nothing about a 3090 reference
    _, load = h200_readings()
    h200_low = tuple(dataclasses.replace(r, power_limit_w=200.0) for r in load)
    assert power_cap_below_reference(DiagnosisInput(gpu_under_load=h200_low, reference=ref)) == []
