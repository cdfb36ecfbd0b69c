"""Rules over GPU readings (NVML or nvidia-smi) taken under load: power, heat, clocks, PCIe."""

from __future__ import annotations

from collections.abc import Sequence

from llm_dyno.core.bench.roofline import known_bandwidth
from llm_dyno.core.diagnose.diagnosis_input import DiagnosisInput, busy_readings
from llm_dyno.core.diagnose.evidence import (
    ChangeKind,
    Evidence,
    Finding,
    Impact,
    MetricEvidence,
    ProfileChange,
    Severity,
)
from llm_dyno.core.diagnose.power_curve import cap_effect
from llm_dyno.core.diagnose.registry import THIS_RULE, rule
from llm_dyno.core.telemetry.nvml import GpuReading

_THERMAL = {"SwThermalSlowdown", "HwThermalSlowdown", "HwSlowdown"}
# Air-cooled cards throttle at about 80–83 °C whatever the cap (club-3090 notes).
_HOT_C = 83.0


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _share(readings: Sequence[GpuReading], reason: str) -> float:
    return sum(1 for r in readings if reason in r.throttle_reasons) / len(readings)


def _same_gpu(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return True  # unknown: assume the user compares like with like
    ka, kb = known_bandwidth(a), known_bandwidth(b)
    if ka and kb:
        return ka[0] == kb[0]
    return a.lower().replace("nvidia", "").strip() == b.lower().replace("nvidia", "").strip()


@rule("power-cap-below-reference", "profile, GPU, reference")
def power_cap_below_reference(inp: DiagnosisInput) -> list[Finding]:
    """Our power limit is lower than the one the reference ran at, on the same GPU model."""
    ref = inp.reference
    if ref is None or ref.hardware.power_limit_w is None:
        return []
    if not _same_gpu(inp.gpu_name(), ref.hardware.gpu):
        return []
    cap = inp.power_cap()
    theirs = ref.hardware.power_limit_w
    if cap is None or cap[0] >= theirs * 0.98:
        return []
    ours, source = cap
    # sized from the reference's own TPS at your cap where it publishes them
    effect = cap_effect(ref, ours, "narrative")
    impact = (
        Impact(tps_pct=round((1 - effect.expected_ratio) * 100, 1), basis=effect.basis)
        if effect is not None
        else Impact(basis="founding post: ~33 → ~43 narrative TPS from 230 W to 330 W on a 3090")
    )
    return [
        Finding(
            THIS_RULE,
            f"Power limit {ours:.0f} W, the reference ran at {theirs:.0f} W",
            Severity.HIGH if effect is not None and effect.expected_ratio < 0.9 else Severity.MEDIUM,
            impact,
            (MetricEvidence("power limit", ours, "W", reference=theirs, source=source),),
            f"Set the power limit to {theirs:.0f} W to compare like with like (or sweep caps for the knee).",
            (ProfileChange(ChangeKind.SET_POWER_LIMIT, value=f"{theirs:g}"),),
            "power limit",
        )
    ]


@rule("power-cap-binding", "GPU under load")
def power_cap_binding(inp: DiagnosisInput) -> list[Finding]:
    """Under load the GPU sits at its power limit and the driver lowers clocks for it (SwPowerCap)."""
    busy = busy_readings(inp.gpu_under_load)
    if not busy or _share(busy, "SwPowerCap") < 0.5:
        return []
    capped = [r for r in busy if r.power_w is not None and r.power_limit_w]
    if (
        not capped
        or _mean([r.power_w / r.power_limit_w for r in capped if r.power_w and r.power_limit_w]) < 0.95
    ):
        return []
    r0 = capped[0]
    limit = r0.power_limit_w or 0.0
    room = r0.max_limit_w is not None and r0.max_limit_w > limit * 1.02
    evidence: list[Evidence] = [
        MetricEvidence(
            "power under load", round(_mean([r.power_w or 0.0 for r in capped]), 1), "W", source="nvml"
        ),
        MetricEvidence("power limit", limit, "W", source="nvml"),
        MetricEvidence("samples with SwPowerCap", f"{_share(busy, 'SwPowerCap'):.0%}", source="nvml"),
    ]
    if r0.max_limit_w:
        evidence.append(MetricEvidence("maximum allowed limit", r0.max_limit_w, "W", source="nvml"))
    return [
        Finding(
            THIS_RULE,
            "Power limit is binding under load",
            Severity.MEDIUM if room else Severity.LOW,
            Impact(basis="clocks drop to stay under the cap; memory-bound decode loses less than that"),
            tuple(evidence),
            (
                f"Raise the power limit towards {r0.max_limit_w:.0f} W and measure, or sweep caps."
                if room
                else "The limit is already the card's maximum: expected at full load; nothing to raise."
            ),
            (ProfileChange(ChangeKind.SET_POWER_LIMIT, value=f"{r0.max_limit_w:g}"),)
            if room and r0.max_limit_w
            else (),
            "power limit",
        )
    ]


@rule("thermal-throttling", "GPU under load")
def thermal_throttling(inp: DiagnosisInput) -> list[Finding]:
    """The driver slowed the GPU for heat, or it ran at the temperature where air-cooled cards do."""
    busy = busy_readings(inp.gpu_under_load)
    hot = [r for r in busy if set(r.throttle_reasons) & _THERMAL or (r.temperature_c or 0) >= _HOT_C]
    if not hot:
        return []
    reasons = sorted({x for r in hot for x in r.throttle_reasons if x in _THERMAL})
    peak = max((r.temperature_c for r in busy if r.temperature_c is not None), default=None)
    evidence: list[Evidence] = [
        MetricEvidence("samples throttled for heat", f"{len(hot) / len(busy):.0%}", source="nvml")
    ]
    if reasons:
        evidence.append(MetricEvidence("throttle reasons", ", ".join(reasons), source="nvml"))
    if peak is not None:
        evidence.append(MetricEvidence("peak temperature", peak, "°C", source="nvml"))
    return [
        Finding(
            THIS_RULE,
            "GPU throttles for heat",
            Severity.HIGH,
            Impact(basis="clocks drop as long as the card stays hot; results vary run to run"),
            tuple(evidence),
            "Improve cooling (airflow, fan curve, dust) or lower the power limit; let it cool between runs.",
            fix_label="thermal",
        )
    ]


@rule("sm-clock-below-max", "GPU under load")
def sm_clock_below_max(inp: DiagnosisInput) -> list[Finding]:
    """Under load the SM clock stays well below its maximum."""
    busy = [r for r in busy_readings(inp.gpu_under_load) if r.sm_clock_mhz and r.max_sm_clock_mhz]
    if not busy:
        return []
    clock = _mean([float(r.sm_clock_mhz or 0) for r in busy])
    top = float(busy[0].max_sm_clock_mhz or 0)
    if clock >= 0.9 * top:
        return []
    reasons = sorted({x for r in busy for x in r.throttle_reasons if x != "GpuIdle"})
    explained = bool(reasons)
    return [
        Finding(
            THIS_RULE,
            f"SM clock {clock:.0f} of {top:.0f} MHz under load",
            Severity.LOW if explained else Severity.MEDIUM,
            Impact(basis="decode is memory-bound: it loses less than the clock ratio; prefill about that"),
            (
                MetricEvidence("SM clock under load", round(clock), "MHz", reference=top, source="nvml"),
                MetricEvidence("throttle reasons", ", ".join(reasons) or "none reported", source="nvml"),
            ),
            "The clock follows the throttle reasons shown (power cap or heat)."
            if explained
            else "No throttle reason is reported: check application clocks (nvidia-smi -q -d CLOCK) and the "
            "GPU's performance state.",
            fix_label="clocks",
        )
    ]


@rule("pcie-link-below-max", "GPU under load")
def pcie_link_below_max(inp: DiagnosisInput) -> list[Finding]:
    """Under load the PCIe link runs below its maximum generation or width (idle links downshift normally)."""
    busy = busy_readings(inp.gpu_under_load)
    slow = [
        r
        for r in busy
        if (r.pcie_gen and r.pcie_gen_max and r.pcie_gen < r.pcie_gen_max)
        or (r.pcie_width and r.pcie_width_max and r.pcie_width < r.pcie_width_max)
    ]
    if not slow:
        return []
    r = slow[-1]
    tp = inp.profile.engine().tensor_parallel_size if inp.profile is not None else None
    multi = (tp or 1) > 1
    return [
        Finding(
            THIS_RULE,
            f"PCIe link Gen{r.pcie_gen} x{r.pcie_width}, capable of Gen{r.pcie_gen_max} x{r.pcie_width_max}",
            Severity.MEDIUM if multi else Severity.LOW,
            Impact(
                basis="matters for tensor-parallel all-reduce and loading; single-GPU decode barely uses PCIe"
            ),
            (
                MetricEvidence("PCIe generation", r.pcie_gen, reference=r.pcie_gen_max, source="nvml"),
                MetricEvidence("PCIe width", r.pcie_width, reference=r.pcie_width_max, source="nvml"),
            ),
            "Check the slot (a x16 card in a x4/x8 slot, a riser), the BIOS PCIe setting and the cable.",
            fix_label="pcie",
        )
    ]
