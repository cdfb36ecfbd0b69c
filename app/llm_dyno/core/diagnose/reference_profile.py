"""The reference as a profile: its published compose, and the user's profile set against it.

A reference that ships its compose (``compose:`` in its YAML, ``compose_source:`` naming the repository,
path and commit it was copied from) *is* a profile, read by the app's own compose importer. The
semantic profile diff (:func:`llm_dyno.core.profiles.diff.diff_profiles`) says what would launch
differently; this module says for each difference whether it matters for decode speed, why, and on
what source (``claim_sources``), and names the settings both share: those are not the difference.
A start script is read for what it does (Genesis patches, packages installed at start, other scripts)
instead of being compared as one long string.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from llm_dyno.core.diagnose.claim_sources import cite
from llm_dyno.core.diagnose.references import Reference
from llm_dyno.core.profiles.diff import DiffRow, diff_profiles
from llm_dyno.core.profiles.flags import parse_args
from llm_dyno.core.profiles.import_result import ImportResult
from llm_dyno.core.profiles.importers import import_text
from llm_dyno.core.profiles.model import Profile
from llm_dyno.core.records import fields_dict

_GENESIS_MODULAR = re.compile(r"python3?\s+-m\s+vllm\._genesis\.patches\.apply_all")
_GENESIS_SCRIPT = re.compile(r"[\w./-]*patch_genesis_unified\.py")
_PIP = re.compile(r"\bpip3?\s+install\s+([^\n;&|]+)")
_SCRIPT = re.compile(r"python3?\s+([\w./-]+\.py)")
_ALLOC_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF")
_TRUE = {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class GenesisSetup:
    """How a profile applies Genesis' vLLM patches: the layout, the line that runs them, its opt-ins."""

    layout: str  # "none", "v5.x single script", "v7.x modular package"
    command: str = ""
    opt_ins: tuple[str, ...] = ()  # GENESIS_ENABLE_* set true, without the prefix (P64_…)

    def describe(self) -> str:
        """``v7.x modular package (python3 -m …), opt-ins P64_…, P68_…`` / ``none``."""
        if self.layout == "none":
            return "none"
        text = f"{self.layout} ({self.command})"
        return text + (f", opt-ins {', '.join(self.opt_ins)}" if self.opt_ins else ", no opt-ins")


def _entry_text(profile: Profile) -> str:
    entry = profile.docker.entrypoint if profile.docker is not None else None
    return " ".join(entry or ())


def genesis_setup(profile: Profile) -> GenesisSetup:
    """The Genesis patches a container profile's start script applies (``none`` when it applies none)."""
    text = _entry_text(profile)
    opt_ins = tuple(
        sorted(
            k.removeprefix("GENESIS_ENABLE_")
            for k, v in profile.env.items()
            if k.startswith("GENESIS_ENABLE_") and v.strip().lower() in _TRUE
        )
    )
    if m := _GENESIS_MODULAR.search(text):
        return GenesisSetup("v7.x modular package", m.group(0), opt_ins)
    if m := _GENESIS_SCRIPT.search(text):
        return GenesisSetup("v5.x single script", f"python3 {m.group(0)}", opt_ins)
    return GenesisSetup("none", "", opt_ins)


def start_packages(profile: Profile) -> tuple[str, ...]:
    """Packages the start script installs with ``pip install`` before the server (options left out)."""
    out: list[str] = []
    for m in _PIP.finditer(_entry_text(profile)):
        out += [w for w in m.group(1).split() if not w.startswith("-")]
    return tuple(dict.fromkeys(out))


def other_start_scripts(profile: Profile) -> tuple[str, ...]:
    """Python scripts the start script runs besides Genesis (e.g. ``patch_tolist_cudagraph.py``)."""
    found = [m.group(1).rsplit("/", 1)[-1] for m in _SCRIPT.finditer(_entry_text(profile))]
    return tuple(dict.fromkeys(n for n in found if "genesis" not in n))


@dataclass(frozen=True)
class AllocConfFix:
    """An allocator setting written ``key=value`` where PyTorch reads ``key:value``, and the fix."""

    variable: str
    written: str
    fixed: str
    wrong_items: tuple[str, ...]


def alloc_conf_fix(profile: Profile) -> AllocConfFix | None:
    """The profile's ``PYTORCH_CUDA_ALLOC_CONF`` (or ``PYTORCH_ALLOC_CONF``) with ``=`` inside an item,
    and the value with each such item written ``key:value``; None when every item is well formed."""
    for var in _ALLOC_VARS:
        value = profile.env.get(var)
        if not value:
            continue
        items = [i.strip() for i in value.split(",")]
        wrong = tuple(i for i in items if "=" in i and ":" not in i)
        if wrong:
            fixed = ",".join(i.replace("=", ":", 1) if i in wrong else i for i in items)
            return AllocConfFix(var, value, fixed, wrong)
    return None


@dataclass(frozen=True)
class ReferenceDiffRow:
    """One setting that differs from the reference's: whether it matters for decode speed, why, and
    the source of that judgement. ``None`` on a side: not set there."""

    field: str
    yours: str | None
    reference: str | None
    matters: bool
    why: str
    source: str

    def to_dict(self) -> dict[str, Any]:
        """JSON form (its fields)."""
        return fields_dict(self)


@dataclass(frozen=True)
class SharedSetting:
    """A setting the reference shares with the profile: not the difference."""

    setting: str
    value: str
    source: str

    def describe(self) -> str:
        """``KV cache dtype: fp8_e5m2 on both``."""
        return f"{self.setting}: {self.value} on both"

    def to_dict(self) -> dict[str, Any]:
        """JSON form (its fields)."""
        return fields_dict(self)


def import_reference(ref: Reference, name: str | None = None) -> ImportResult:
    """The reference's published configuration imported as a profile named ``name`` (default: its id),
    through the app's compose importer; :class:`ReferenceError` when it publishes none or it is
    unreadable."""
    from llm_dyno.core.diagnose.references import ReferenceError
    from llm_dyno.core.profiles.model import profile_from_data

    if ref.profile is not None:
        data = {**ref.profile, "name": name or ref.id}
        return ImportResult(profile_from_data(data, source=ref.file), source_kind="compose")
    if ref.compose is None:
        raise ReferenceError(
            f"reference {ref.id!r} publishes no configuration, only figures",
            hint="`llm-dyno reference list` marks the ones with a compose (“profile”)",
        )
    return import_text(ref.compose_text(), source=str(ref.compose_path()), name=name or ref.id)


# --- judging one difference ---------------------------------------------------------------------
_ENGINE_NOT_SPEED = {
    "max-model-len": ("context length sizes the KV pool; single-stream decode barely moves",
                      "recipe-context"),
    "gpu-memory-utilization": ("how much memory vLLM takes for weights and the KV pool: it sizes the "
                               "pool, not the decode step", "recipe-context"),
    "language-model-only": ("skips the vision tower: frees memory for the KV pool", "recipe-vision"),
    "max-num-batched-tokens": ("a prefill / memory knob, not decode", "batched-tokens"),
    "served-model-name": ("the name clients ask for", "not-engine"),
    "host": ("the address the server listens on", "not-engine"),
    "port": ("the port the server listens on", "not-engine"),
}  # fmt: skip
_CONTAINER_NOT_SPEED = ("container_name", "restart", "bind", "port ", "volume ", "network", "labels")


def earlier_pin(ref: Reference, image: str | None) -> str | None:
    """When ``image`` is one the reference's source ran before the image it measured on: what the
    source says about it (its pins drifted); else None."""
    for earlier in ref.earlier_images:
        if image and (image == earlier.image or image.split("@")[-1] == earlier.image.split("@")[-1]):
            v = f" ({earlier.vllm_version})" if earlier.vllm_version else ""
            return f"yours is the recipe's own earlier pin{v}: {earlier.note}"
    return None


def _judge(row: DiffRow, ref: Reference, yours: Profile) -> tuple[bool, str, str]:
    key = row.key
    if row.group == "model":
        return False, ("a model folder or repo name: the checkpoint in it decides (compare \"Model "
                       "loading took … GiB\" in both logs)"), cite("model-path")  # fmt: skip
    if row.group == "engine flags":
        flag = key.removeprefix("--")
        if flag in _ENGINE_NOT_SPEED:
            why, src = _ENGINE_NOT_SPEED[flag]
            return False, why, cite(src)
        return True, "an engine setting: it changes what vLLM runs", cite("engine-flag")
    if row.group == "container":
        if key in ("image", "image digest"):
            earlier = earlier_pin(ref, yours.docker.image if yours.docker else None)
            why = "another vLLM build: kernels, CUDA-graph support and defaults change between builds"
            if earlier:
                return True, f"{why}; {earlier}", cite("recipe-pin-drift")
            return True, why, cite("recipe-compose")
        if key.startswith(_CONTAINER_NOT_SPEED) or key in ("shm_size", "ipc"):
            return False, "how the container is named, reached or fed files", cite("not-engine")
        return True, "a container setting that differs", cite("recipe-compose")
    if row.group == "environment":
        if key in _ALLOC_VARS:
            fix = alloc_conf_fix(yours)
            if fix is not None and row.left == fix.written:
                wrong = ", ".join(fix.wrong_items)
                return True, (f"PyTorch reads key:value pairs: {wrong} is one unknown key, refused at the "
                              f"first CUDA allocation; write {fix.fixed}"), (
                    f"{cite('pytorch-alloc-conf')}; {cite('pytorch-alloc-parser')}")  # fmt: skip
            return (
                False,
                "allocator settings: fragmentation and out-of-memory, not decode speed",
                cite("pytorch-alloc-conf"),
            )
        if key.startswith("NCCL_") and yours.engine().tensor_parallel_size in (None, 1):
            return False, "acts between GPUs; this server uses one", cite("single-gpu-nccl")
        if key in ("HUGGING_FACE_HUB_TOKEN", "HF_TOKEN", "CUDA_VISIBLE_DEVICES"):
            return False, "a download token or which GPU is seen", cite("not-engine")
        return True, "an environment variable read by vLLM or PyTorch", cite("engine-flag")
    if row.group == "power":
        return True, "a lower cap lowers decode speed", cite("power-cap")
    return True, "a setting that differs", cite("recipe-compose")


def _start_rows(yours: Profile, theirs: Profile) -> list[ReferenceDiffRow]:
    out: list[ReferenceDiffRow] = []
    ga, gb = genesis_setup(yours), genesis_setup(theirs)
    if ga.describe() != gb.describe():
        why = "the patches change vLLM's code before it starts"
        if {ga.layout, gb.layout} == {"v5.x single script", "v7.x modular package"}:
            why += ("; v5.x is the single patch_genesis_unified.py script, v7.x a package mounted into "
                    "vLLM and applied with apply_all, whose patches run only when GENESIS_ENABLE_* opts "
                    "in")  # fmt: skip
        why += (
            "; the recipe measured its Genesis neutral on the fp8 + MTP path (55.0 / 70.5 with, "
            "54.7 / 68.2 without)"
        )
        src = f"{cite('genesis-modular')}; {cite('genesis-opt-in')}; {cite('genesis-neutral')}"
        out.append(
            ReferenceDiffRow("start script: Genesis patches", ga.describe(), gb.describe(), True, why, src)
        )
    pa, pb = start_packages(yours), start_packages(theirs)
    if pa != pb:
        only = [p for p in pb if p not in pa]
        why = "part of what runs before vllm serve, installed unpinned at every start"
        if only:
            why += f"; the reference also installs {', '.join(only)}"
        out.append(ReferenceDiffRow("start script: pip install", " ".join(pa) or None, " ".join(pb) or None,
                                    True, why, cite("start-packages")))  # fmt: skip
    sa, sb = other_start_scripts(yours), other_start_scripts(theirs)
    if sa != sb:
        out.append(ReferenceDiffRow("start script: other scripts", ", ".join(sa) or None,
                                    ", ".join(sb) or None, True, "other code run before vllm serve",
                                    cite("recipe-compose")))  # fmt: skip
    return out


def _folded(row: DiffRow) -> bool:
    """Rows the start-script rows say better: the entrypoint string, Genesis' mounts and opt-ins."""
    if row.group == "container" and row.key == "entrypoint":
        return True
    if row.group == "container" and row.key.startswith("volume "):
        return "_genesis" in row.key or "genesis" in (row.left or "") + (row.right or "")
    return row.group == "environment" and row.key.startswith("GENESIS_ENABLE_")


def reference_diff(profile: Profile, ref: Reference) -> tuple[ReferenceDiffRow, ...]:
    """Every setting of ``profile`` that differs from the reference's published configuration, the
    ones that matter first; empty when the reference publishes none."""
    theirs = ref.load_profile()
    if theirs is None:
        return ()
    rows = _start_rows(profile, theirs)
    diff = list(diff_profiles(profile, theirs))
    image_row = any(r.group == "container" and r.key == "image" for r in diff)
    for r in diff:
        if _folded(r) or (image_row and r.key == "image digest"):
            continue
        if r.key == "image" and profile.docker is not None and theirs.docker is not None:
            r = replace(r, left=profile.docker.image, right=theirs.docker.image)  # tag and digest, whole
        matters, why, source = _judge(r, ref, profile)
        rows.append(ReferenceDiffRow(f"{r.group}: {r.key}", r.left, r.right, matters, why, source))
    return tuple(sorted(rows, key=lambda r: not r.matters))  # a stable sort keeps the diff's order


def _flags(profile: Profile) -> dict[str, str]:
    out: dict[str, str] = {}
    for f in parse_args(profile.args).flags:
        meaning = f.meaning()
        shown = json.dumps(meaning, sort_keys=True) if isinstance(meaning, dict | list) else str(meaning)
        out[f.name] = "on" if f.value is None else shown
    return out


_SHARED = (  # engine flag, the setting's name; a flag neither sets is vLLM's own default on both
    ("kv-cache-dtype", "KV cache dtype"),
    ("speculative-config", "speculative decoding"),
    ("max-num-seqs", "max-num-seqs"),
    ("quantization", "quantization"),
    ("dtype", "dtype"),
    ("attention-backend", "attention backend"),
    ("tensor-parallel-size", "tensor-parallel-size"),
)


def shared_settings(profile: Profile, ref: Reference) -> tuple[SharedSetting, ...]:
    """Settings the reference's published configuration shares with ``profile``: not the difference.
    The CUDA-graph setting counts as shared when neither sets ``--compilation-config``,
    ``-O``/``--optimization-level`` or ``--enforce-eager``."""
    theirs = ref.load_profile()
    if theirs is None:
        return ()
    a, b = _flags(profile), _flags(theirs)
    out: list[SharedSetting] = []
    graph = ("compilation-config", "O", "optimization-level", "enforce-eager")
    if all(a.get(k) == b.get(k) for k in graph):
        set_ = [f"--{k} {a[k]}" for k in graph if k in a]
        value = (
            ", ".join(set_)
            if set_
            else "vLLM's default (neither sets --compilation-config or --enforce-eager)"
        )
        out.append(SharedSetting("CUDA-graph setting", value, cite("graph-default")))
    for flag, name in _SHARED:
        if a.get(flag) == b.get(flag):
            value = a.get(flag, "vLLM's default (not set)")
            out.append(SharedSetting(name, value, cite("recipe-compose")))
    scripts = [s for s in other_start_scripts(profile) if s in other_start_scripts(theirs)]
    if scripts:
        out.append(SharedSetting("start script", f"runs {', '.join(scripts)}", cite("recipe-compose")))
    return tuple(out)


@dataclass(frozen=True)
class ReferenceComparison:
    """The profile against the reference's published configuration: the differences (those that matter
    first), the settings both share, where the configuration was published, and, when there are no
    rows, why."""

    rows: tuple[ReferenceDiffRow, ...] = ()
    shared: tuple[SharedSetting, ...] = ()
    published: str = ""  # "owner/name compose/docker-compose.yml @ 061a5f1", or the file read
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``reference_diff``, ``reference_shares``, ``reference_configuration``, ``note``."""
        return {
            "reference_diff": [r.to_dict() for r in self.rows],
            "reference_shares": [s.to_dict() for s in self.shared],
            "reference_configuration": self.published or None,
            "reference_diff_note": self.note or None,
        }


def compare_with_reference(
    profile: Profile | None, ref: Reference | None, published_rows: tuple[Reference, ...] = ()
) -> ReferenceComparison:
    """:func:`reference_diff` and :func:`shared_settings` for a diagnosis; a reference that publishes
    no configuration gets a note naming its source's rows that do (``published_rows``)."""
    from llm_dyno.core.errors import DynoError

    if profile is None or ref is None:
        return ReferenceComparison()
    if ref.compose is None and ref.profile is None:
        with_compose = [r.id for r in published_rows if r.compose is not None]
        more = (
            f"; its source's rows with their compose: {', '.join(with_compose)} (--reference ID)"
            if with_compose
            else ""
        )
        return ReferenceComparison(note=f"{ref.id} publishes figures only, no configuration{more}")
    where = ref.compose_source.describe() if ref.compose_source else (ref.compose or ref.file or ref.id)
    try:
        return ReferenceComparison(reference_diff(profile, ref), shared_settings(profile, ref), where)
    except DynoError as exc:
        return ReferenceComparison(published=where, note=f"the reference's configuration: {exc.message}")
