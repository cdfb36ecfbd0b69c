"""Rules over the profile, the launch log and the environment: how the server was started."""

from __future__ import annotations

from llm_dyno.core.diagnose.claim_sources import cite
from llm_dyno.core.diagnose.diagnosis_input import DiagnosisInput
from llm_dyno.core.diagnose.evidence import (
    ChangeKind,
    DiffEvidence,
    Evidence,
    Finding,
    Impact,
    LogEvidence,
    MetricEvidence,
    ProfileChange,
    Severity,
)
from llm_dyno.core.diagnose.gpu_arch import compute_capability
from llm_dyno.core.diagnose.reference_profile import earlier_pin
from llm_dyno.core.diagnose.registry import THIS_RULE, rule
from llm_dyno.core.profiles.diff import DiffRow
from llm_dyno.core.profiles.exposure import exposure_of
from llm_dyno.core.profiles.model import Runtime
from llm_dyno.core.runtime.base import FailureKind
from llm_dyno.core.runtime.logformats import (
    DiagnosticKind,
    EventKind,
    classify_failure,
    parse_diagnostic,
    parse_events,
)

GIB = 1024**3
# The gap to a reference above which an unexplained difference (image, version) is ranked high.
_BIG_GAP = 0.10


def reference_gap(inp: DiagnosisInput) -> float | None:
    """How far the measured TPS falls short of the reference's (0.35 = 35 % slower), or None."""
    m, ref = inp.measured_numbers(), inp.reference
    if m is None or ref is None:
        return None
    ratios = [
        mine / theirs
        for mine, theirs in ((m.narrative_tps, ref.numbers.narrative_tps), (m.code_tps, ref.numbers.code_tps))
        if mine is not None and theirs
    ]
    return 1 - sum(ratios) / len(ratios) if ratios else None


@rule("cuda-graphs-downgraded", "launch log")
def cuda_graphs_downgraded(inp: DiagnosisInput) -> list[Finding]:
    """vLLM warned that it lowered the CUDA-graph mode (spec decode with an attention backend that can't)."""
    found: list[tuple[int, str, str]] = []
    reasons: list[str] = []
    for no, line in inp.log.numbered():
        for ev in parse_events(line):
            if ev.kind is EventKind.CUDAGRAPH_DOWNGRADE:
                found.append((no, str(ev.values.get("requested", "")), str(ev.values.get("mode", ""))))
                reasons.append(str(ev.values.get("reason", "")))
    if not found:
        return []
    worst = "NONE" if any(mode == "NONE" for _, _, mode in found) else found[-1][2]
    requested = found[-1][1]
    evidence = tuple(inp.log.evidence(no) for no, _, _ in found[:3])
    if worst == "NONE":
        sev, impact = (
            Severity.HIGH,
            Impact(
                tps_pct=30.0, basis="the reference recipe measured cudagraph_mode=NONE at about −30 % TPS"
            ),
        )
    else:
        sev, impact = (
            Severity.MEDIUM,
            Impact(
                basis="not measured: PIECEWISE leaves attention outside the graphs; NONE costs about 30 % "
                "(reference recipe), so a partial downgrade costs less than that"
            ),
        )
    return [
        Finding(
            THIS_RULE,
            f"CUDA graphs downgraded from {requested or 'FULL'} to {worst}",
            sev,
            impact,
            evidence,
            "The attention backend cannot run full CUDA graphs with speculative decoding, so every decode "
            "step launches the attention kernels one by one. Check whether the reference's vLLM build logs "
            f"the same warning; {_backend_advice(inp, reasons)} Compare with the spec-decode A/B benchmark.",
            fix_label="cuda graphs",
        )
    ]


def _backend_advice(inp: DiagnosisInput, reasons: list[str]) -> str:
    """Which attention backend to try, for this card: on Ampere (SM 8.x) FlashAttention takes an fp8_e5m2
    KV cache only from FA4 on (vllm PR #42569), and with FlashInfer and spec decode the drafter runs
    eager too (vllm #54992)."""
    name = inp.gpu_name()
    whose = ""
    if name is None and inp.reference is not None and inp.reference.hardware.gpu:
        name, whose = inp.reference.hardware.gpu, "; the reference's GPU, yours is not known"
    cc = compute_capability(name)
    if cc is None or cc[0] != 8:
        return "try a newer image or another attention backend (--attention-backend)."
    kv = inp.profile.engine().kv_cache_dtype if inp.profile is not None else None
    flashinfer = any("FlashInfer" in r for r in reasons)
    text = (
        f"on {name} (SM {cc[0]}.{cc[1]}{whose}) FlashAttention takes an fp8_e5m2 KV cache only from FA4 on "
        "(vllm PR #42569), so the options are --attention-backend TRITON_ATTN with "
        f"--kv-cache-dtype {kv or 'fp8_e5m2'}, or --attention-backend FLASH_ATTN with --kv-cache-dtype auto "
        "and a shorter --max-model-len (auto KV takes twice the memory per token)."
    )
    if flashinfer:
        text += " With FlashInfer and spec decode on SM 8.x the drafter runs eager as well (vllm #54992)."
    return text


@rule("enforce-eager", "profile, launch log")
def enforce_eager(inp: DiagnosisInput) -> list[Finding]:
    """``--enforce-eager`` (flag or the warning it causes) turns off torch.compile and CUDA graphs (on a
    GPU: vLLM on the CPU has no CUDA graphs to lose, and the CPU demo sets it to start fast)."""
    if inp.on_cpu():
        return []
    flag = inp.profile is not None and inp.profile.engine().enforce_eager
    lines = [
        inp.log.evidence(no)
        for no, line in inp.log.numbered()
        if (d := parse_diagnostic(line)) is not None and d.kind is DiagnosticKind.ENFORCE_EAGER
    ]
    if not flag and not lines:
        return []
    evidence: tuple[Evidence, ...] = (
        (MetricEvidence("--enforce-eager", "set", source="profile"),) if flag else ()
    ) + tuple(lines[:1])
    return [
        Finding(
            THIS_RULE,
            "Eager mode: no torch.compile, no CUDA graphs",
            Severity.HIGH,
            Impact(tps_pct=50.0, basis="the reference recipe: --enforce-eager costs about half the TPS"),
            evidence,
            "Remove --enforce-eager. It is a debugging switch; start-up takes longer once (compile and "
            "graph capture), decoding is much faster.",
            (ProfileChange(ChangeKind.REMOVE_FLAG, "enforce-eager"),) if flag else (),
            "eager",
        )
    ]


def compile_cache_root(env: dict[str, str]) -> str:
    """Where vLLM inside the container keeps its torch.compile cache (as root, the image's user)."""
    if env.get("VLLM_CACHE_ROOT"):
        return env["VLLM_CACHE_ROOT"].rstrip("/")
    if env.get("XDG_CACHE_HOME"):
        return env["XDG_CACHE_HOME"].rstrip("/") + "/vllm"
    return "/root/.cache/vllm"


def _volume_target(volume: str) -> str:
    parts = volume.split(":")
    return parts[1] if len(parts) >= 2 else parts[0]


@rule("compile-cache-not-on-volume", "profile, launch log")
def compile_cache_not_on_volume(inp: DiagnosisInput) -> list[Finding]:
    """A container profile whose compile cache dies with the container: every start compiles again."""
    p = inp.profile
    if p is None or p.runtime is not Runtime.DOCKER or p.docker is None or p.engine().enforce_eager:
        return []
    root = compile_cache_root(p.env)
    for volume in p.docker.volumes:
        target = _volume_target(volume).rstrip("/") or "/"
        if root == target or root.startswith(target.rstrip("/") + "/"):
            return []
    compile_lines: list[LogEvidence] = []
    seconds = 0.0
    for no, line in inp.log.numbered():
        for ev in parse_events(line):
            if ev.kind is EventKind.COMPILE_FINISHED:
                seconds += float(ev.values["seconds"])
                compile_lines.append(inp.log.evidence(no))
            elif ev.kind is EventKind.COMPILE_STARTED and "cache directory" in line:
                compile_lines.append(inp.log.evidence(no))
    evidence: tuple[Evidence, ...] = (
        MetricEvidence("compile cache root", root, source="container"),
        MetricEvidence(
            "volumes", ", ".join(_volume_target(v) for v in p.docker.volumes) or "none", source="profile"
        ),
        *compile_lines[:4],
    )
    return [
        Finding(
            THIS_RULE,
            "torch.compile cache is not on a volume",
            Severity.LOW,
            Impact(
                startup_s=seconds or None,
                basis="costs start-up time on every new container, not decode speed once warm",
            ),
            evidence,
            f"Mount a volume at {root} so compiled graphs survive the container; later starts load them "
            "from the cache instead of compiling again.",
            (ProfileChange(ChangeKind.ADD_VOLUME, value=f"vllm-compile-cache:{root}"),),
            "compile cache",
        )
    ]


@rule("image-differs-from-reference", "profile, environment, reference")
def image_differs_from_reference(inp: DiagnosisInput) -> list[Finding]:
    """The image (digest or tag) or vLLM version differs from the one the reference was measured on."""
    ref = inp.reference
    if ref is None:
        return []
    ours, theirs = inp.image(), ref.image_ref
    evidence: list[Evidence] = []
    if ours and theirs and ours != theirs:
        evidence.append(DiffEvidence(DiffRow("container", "image", ours, theirs, "changed")))
    pin = earlier_pin(ref, ours) if evidence else None
    if pin:  # the reference's own history says which build yours is
        evidence.append(MetricEvidence("image history", pin, source=cite("recipe-pin-drift")))
    v_ours, v_theirs = inp.environment.vllm_version, ref.vllm_version
    if v_ours and v_theirs and v_ours != v_theirs:
        evidence.append(MetricEvidence("vLLM version", v_ours, reference=v_theirs, source="/version"))
    if not evidence:
        return []
    if v_ours and not v_theirs:
        evidence.append(MetricEvidence("vLLM version", v_ours, source="environment"))
    gap = reference_gap(inp)
    if gap is not None:
        evidence.append(
            MetricEvidence("TPS short of the reference", round(gap * 100, 1), "%", source="measured")
        )
    big = gap is not None and gap > _BIG_GAP
    return [
        Finding(
            THIS_RULE,
            "Another vLLM build than the reference's",
            Severity.HIGH if big else Severity.MEDIUM,
            Impact(basis="unknown: kernels, CUDA-graph support and defaults change between builds"),
            tuple(evidence),
            (
                "Run the reference's image (pinned by digest) before comparing anything else; "
                if theirs and "@sha256:" in theirs
                else f"Run the reference's image ({theirs}: it publishes a tag, not a digest, so note the "
                "digest you pull) before comparing anything else; "
                if theirs
                else "Run the reference's build before comparing anything else; "
            )
            + "compare the launch logs of both for warnings that differ.",
            (ProfileChange(ChangeKind.SET_IMAGE, value=theirs),) if theirs and theirs != ours else (),
            "image",
        )
    ]


_FLOATING_TAGS = {"latest", "nightly"}


@rule("image-not-pinned", "profile, environment")
def image_not_pinned(inp: DiagnosisInput) -> list[Finding]:
    """A floating tag (``latest``, ``nightly``, none) makes results impossible to reproduce."""
    p = inp.profile
    if p is None or p.docker is None or p.docker.image_digest:
        return []
    name = p.docker.image.rsplit("/", 1)[-1]
    tag = name.split(":", 1)[1] if ":" in name else "latest"
    if tag not in _FLOATING_TAGS:
        return []
    digest = inp.environment.image_digest
    repo = p.docker.image.rsplit(":", 1)[0] if ":" in name else p.docker.image
    change = (ProfileChange(ChangeKind.SET_IMAGE, value=f"{repo}@{digest}"),) if digest else ()
    return [
        Finding(
            THIS_RULE,
            f"Image tag '{tag}' is not pinned",
            Severity.LOW,
            Impact(basis="reproducibility: the same profile can pull another vLLM tomorrow"),
            (MetricEvidence("image", p.docker.image, source="profile"),),
            "Pin the image by digest (repo@sha256:…) so a result can be reproduced and compared.",
            change,
            "pin image",
        )
    ]


@rule("scheduled-tokens-capped", "launch log, profile")
def scheduled_tokens_warning(inp: DiagnosisInput) -> list[Finding]:
    """vLLM capped max_num_scheduled_tokens to make room for draft tokens (or left none at all)."""
    hits = [
        (no, d)
        for no, line in inp.log.numbered()
        if (d := parse_diagnostic(line)) is not None
        and d.kind in (DiagnosticKind.SCHEDULED_TOKENS_CAPPED, DiagnosticKind.SCHEDULED_TOKENS_NONE)
    ]
    if not hits:
        return []
    fatal = any(d.kind is DiagnosticKind.SCHEDULED_TOKENS_NONE for _, d in hits)
    changes: tuple[ProfileChange, ...] = ()
    suggestion = ""
    if inp.profile is not None:
        e = inp.profile.engine()
        k, seqs, batched = e.num_speculative_tokens, e.max_num_seqs, e.max_num_batched_tokens
        if k and seqs and batched:
            # vLLM reserves draft slots per sequence; issue 50708's −1792 = 2048 − 256 × (16 − 1)
            want = batched + seqs * (k - 1)
            suggestion = f" (e.g. --max-num-batched-tokens {want})"
            changes = (ProfileChange(ChangeKind.SET_FLAG, "max-num-batched-tokens", str(want)),)
    return [
        Finding(
            THIS_RULE,
            "No tokens can be scheduled with these spec-decode settings"
            if fatal
            else "Scheduled tokens per step capped by spec-decode settings",
            Severity.HIGH if fatal else Severity.LOW,
            Impact(basis="prefill chunks shrink; single-stream decode is barely affected"),
            tuple(inp.log.evidence(no) for no, _ in hits[:2]),
            f"Raise --max-num-batched-tokens{suggestion}, or lower num_speculative_tokens or --max-num-seqs.",
            changes,
            "batched tokens",
        )
    ]


@rule("exposed-without-api-key", "profile")
def exposed_without_api_key(inp: DiagnosisInput) -> list[Finding]:
    """The server answers anyone on the network and asks for no key (where it listens: the same
    :func:`exposure_of` the plan and the launch report)."""
    p = inp.profile
    if p is None:
        return []
    exposure = exposure_of(p)
    if not exposure.network or exposure.has_key:
        return []
    evidence: list[Evidence] = [
        MetricEvidence("listens on", ", ".join(exposure.binds), source="profile"),
        MetricEvidence("--api-key", "none", source="profile"),
    ]
    return [
        Finding(
            THIS_RULE,
            "Server reachable from the network without an API key",
            Severity.HIGH,
            Impact(security=True, basis="anyone on the network can use the model and its GPU"),
            tuple(evidence),
            "Set --api-key to a reference such as ${VLLM_API_KEY} (and export VLLM_API_KEY), or publish the "
            "port on 127.0.0.1 only.",
            (ProfileChange(ChangeKind.SET_FLAG, "api-key", "${VLLM_API_KEY}"),),
            "api key",
        )
    ]


# Memory the driver and display hold on an idle GPU (a real idle H200 showed 0.6 GiB): below this,
# memory in use before launch is not another workload.
_IDLE_MEMORY_BYTES = 2 * GIB


@rule("gpu-busy", "launch log, GPU before launch")
def gpu_busy(inp: DiagnosisInput) -> list[Finding]:
    """Another process held GPU memory before launch (or the start failed for lack of free memory)."""
    evidence: list[Evidence] = []
    if inp.log.lines:
        reason = classify_failure(inp.log.lines)
        if reason.kind is FailureKind.GPU_BUSY:
            for no, line in inp.log.numbered():
                if line in reason.excerpt:
                    evidence.append(inp.log.evidence(no))
                    break
    used = inp.environment.gpu_mem_used_before_launch_bytes
    total = inp.environment.gpu_mem_total_bytes
    if used is None:
        for r in inp.gpu_before:
            if r.mem_used_bytes is not None and r.mem_used_bytes > (used or 0):
                used, total = r.mem_used_bytes, r.mem_total_bytes
    if used is not None and used > _IDLE_MEMORY_BYTES:
        evidence.append(
            MetricEvidence(
                "GPU memory in use before launch",
                round(used / GIB, 2),
                "GiB",
                source="nvml" if total is None else f"nvml, of {total / GIB:.0f} GiB",
            )
        )
    if not evidence:
        return []
    return [
        Finding(
            THIS_RULE,
            "Another process uses the GPU",
            Severity.HIGH,
            Impact(basis="less memory for the KV cache, or no start at all; shared compute when it runs"),
            tuple(evidence),
            "Stop the other process (see nvidia-smi), or lower --gpu-memory-utilization to fit what is free.",
            fix_label="gpu busy",
        )
    ]
