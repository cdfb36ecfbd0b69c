"""The boot-log fingerprint: what vLLM really resolved at start-up, yours beside the reference's.

Two setups with "the same compose" can start different engines: another build, CUDA graphs downgraded
to PIECEWISE, a truncated capture size that sends verify batches to eager mode, another attention
backend. The launch log says which; the line formats live in ``core/runtime/logformats/bootfacts``.
A reference rarely publishes its log: its facts are what it states (image, version, KV dtype), and the
rest is reported as unknown, with how to get it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from llm_dyno.core.diagnose.inputs import LaunchLog
from llm_dyno.core.diagnose.references import Reference
from llm_dyno.core.runtime.logformats import BootFactKind, parse_boot_facts

# The facts, in the order a table shows them among equals.
VERSION = "vLLM version"
IMAGE = "image digest"
CG_MODE = "CUDA-graph mode"
ATTENTION = "attention backend"
CAPTURED = "CUDA graph sizes captured"
TRUNCATED = "max capture size truncated"
VERIFY = "verify batch in captured sizes"
KV = "KV cache dtype"
WEIGHTS = "model weights in memory"
COMPILE = "torch.compile time"
PATCHES = "start-script patches"
FACTS = (VERSION, IMAGE, CG_MODE, ATTENTION, CAPTURED, TRUNCATED, VERIFY, KV, WEIGHTS, COMPILE, PATCHES)

HOW_TO_GET = {
    VERSION: 'the first lines of its `docker logs` ("Initializing a V1 LLM engine (vX)") or GET /version',
    IMAGE: "`docker inspect --format '{{.Image}}' CONTAINER` on the reference's machine",
    CG_MODE: 'its boot log: the cudagraph_mode in the engine config line and any "setting cudagraph_mode=" '
    "warning",
    ATTENTION: 'its boot log: "Using … attention backend"',
    CAPTURED: 'its boot log: the config line\'s cudagraph_capture_sizes and "Capturing CUDA graphs … N/N"',
    TRUNCATED: 'its boot log: a "Truncating max_cudagraph_capture_size" warning',
    VERIFY: "its boot log's capture sizes and its --max-num-seqs and num_speculative_tokens",
    KV: "its --kv-cache-dtype, or the config line's kv_cache_dtype",
    WEIGHTS: 'its boot log: "Model loading took N GiB memory"',
    COMPILE: 'its boot log: "torch.compile took N s in total"',
    PATCHES: 'the lines its start script prints before `vllm serve` (e.g. "N applied, M failed")',
}
ASK = (
    "ask the reference's author for the start-up part of `docker logs`, or run the reference's compose "
    "on your GPU and pass its log with --reference-log"
)


@dataclass(frozen=True)
class Fact:
    """One resolved fact and where it was read (``log:12``, ``environment``, ``reference file``)."""

    value: str
    where: str = ""


Fingerprint = dict[str, Fact]


@dataclass(frozen=True)
class FingerprintRow:
    """A fact, yours against the reference's; ``status`` is ``differs``, ``unknown`` or ``same``."""

    fact: str
    yours: str | None
    reference: str | None
    status: str
    yours_where: str = ""
    reference_where: str = ""
    how_to_get: str = ""  # where a side is unknown: how to learn it

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {
            "fact": self.fact,
            "yours": self.yours,
            "reference": self.reference,
            "status": self.status,
            "yours_where": self.yours_where,
            "reference_where": self.reference_where,
            "how_to_get": self.how_to_get,
        }


def _sizes(text: str) -> list[int]:
    return [int(s) for s in text.split(",") if s.strip().isdigit()]


def log_fingerprint(log: LaunchLog) -> Fingerprint:
    """The facts a launch log states (the last word on each; compile times summed). A new dict each
    call; the log is read once (several rules and the boot table ask for it, and a big log's tail is
    tens of thousands of lines)."""
    return dict(_read_fingerprint(log))


@functools.lru_cache(maxsize=2)
def _read_fingerprint(log: LaunchLog) -> Fingerprint:
    out: Fingerprint = {}
    compile_s = 0.0
    compile_where: list[str] = []
    requested: str | None = None
    sizes: list[int] = []
    saw_graph_config = False
    for no, line in log.numbered():
        for fact in parse_boot_facts(line):
            v, k, at = fact.values, fact.kind, f"log:{no}"
            if k is BootFactKind.VLLM_VERSION:
                out[VERSION] = Fact(str(v["version"]), at)
            elif k is BootFactKind.KV_CACHE_DTYPE:
                out[KV] = Fact(str(v["dtype"]), at)
            elif k is BootFactKind.CUDAGRAPH_MODE:
                requested, saw_graph_config = str(v["mode"]), True
                out.setdefault(CG_MODE, Fact(requested, at))
            elif k is BootFactKind.CAPTURE_SIZES:
                sizes, saw_graph_config = _sizes(str(v["sizes"])), True
                out[CAPTURED] = Fact(_describe_sizes(sizes), at)
            elif k is BootFactKind.CUDAGRAPH_DOWNGRADE:
                reason = str(v.get("reason", "")).split("(")[0].strip()
                out[CG_MODE] = Fact(f"{v['mode']} (downgraded from {v['requested']}: {reason})", at)
            elif k is BootFactKind.GRAPHS_PROFILED and CAPTURED not in out:
                largest = f" (largest {v['largest']})" if "largest" in v else ""
                out[CAPTURED] = Fact(f"{v['counts']}{largest}", at)
                if (
                    "largest" in v and not sizes
                ):  # a batch is padded up to a captured size: the largest counts
                    sizes = [int(str(v["largest"]))]
            elif k is BootFactKind.GRAPHS_CAPTURING and CAPTURED not in out:
                out[CAPTURED] = Fact(f"{v['total']} graphs", at)
            elif k is BootFactKind.GRAPHS_SKIPPED:
                out[CAPTURED] = Fact("none (capture skipped)", at)
            elif k is BootFactKind.CAPTURE_TRUNCATED:
                out[TRUNCATED] = Fact(f"yes, to {v['size']}", at)
                sizes = [s for s in sizes if s <= int(str(v["size"]))] or sizes
            elif k is BootFactKind.ATTENTION_BACKEND:
                out[ATTENTION] = Fact(str(v["backend"]), at)
            elif k is BootFactKind.WEIGHTS_GIB:
                out[WEIGHTS] = Fact(f"{float(v['gib']):g} GiB", at)
            elif k is BootFactKind.COMPILE_S:
                compile_s += float(v["seconds"])
                compile_where.append(at)
            elif k is BootFactKind.PATCHES:
                old = out.get(PATCHES)
                text = _describe_patches(v)
                out[PATCHES] = Fact(f"{old.value}; {text}", f"{old.where}, {at}") if old else Fact(text, at)
    if compile_where:
        parts = f" ({len(compile_where)} parts)" if len(compile_where) > 1 else ""
        out[COMPILE] = Fact(f"{compile_s:g} s{parts}", ", ".join(compile_where))
    if saw_graph_config and TRUNCATED not in out:
        out[TRUNCATED] = Fact("no", 'log: no "Truncating" warning')
    if sizes:
        out["_sizes"] = Fact(",".join(str(s) for s in sizes))
    return out


def _describe_sizes(sizes: list[int]) -> str:
    if not sizes:
        return "none"
    return f"{len(sizes)}: {','.join(str(s) for s in sizes)} (largest {max(sizes)})"


def _describe_patches(v: dict[str, str | float]) -> str:
    name = str(v.get("name") or "").strip(" —-:")
    if "sites" in v:
        return f"{name}: {v['sites']}".strip(": ")
    total = f"/{v['total']}" if "total" in v else ""
    return f"{name + ' ' if name else ''}{v['applied']}{total} applied, {v['failed']} failed"


def note_verify_batch(fp: Fingerprint, max_seqs: int | None, k: int | None) -> None:
    """Whether the spec-decode verify batch (max_num_seqs × (k + 1) tokens) is a captured size: a batch
    outside the captured sizes runs eager (vllm #27325)."""
    sizes = _sizes(fp["_sizes"].value) if "_sizes" in fp else []
    if not sizes or not k or not max_seqs:
        return
    batch = max_seqs * (k + 1)
    inside = batch <= max(sizes)
    fp[VERIFY] = Fact(
        f"{'yes' if inside else 'NO: runs eager'} ({max_seqs} seq × ({k}+1) = {batch} tokens; "
        f"largest captured {max(sizes)})",
        fp[CAPTURED].where if CAPTURED in fp else "",
    )


def reference_fingerprint(ref: Reference, log: LaunchLog | None = None) -> Fingerprint:
    """The reference's facts: its boot log when one is given, else only what the reference states."""
    fp = log_fingerprint(log) if log is not None and log.lines else {}
    where = "reference file"
    if VERSION not in fp and ref.vllm_version:
        fp[VERSION] = Fact(ref.vllm_version, where)
    image = ref.image_ref
    if image:
        fp[IMAGE] = Fact(
            image.split("@", 1)[1] if "@" in image else f"{image} (tag; no digest published)", where
        )
    for fact, value in ref.stated_facts.items():  # what its source states (e.g. its patch results)
        if fact in FACTS and fact not in fp:
            fp[fact] = Fact(value, "reference's source")
    flags = ref.engine_flags()
    if KV not in fp and flags is not None and flags.kv_cache_dtype:
        fp[KV] = Fact(flags.kv_cache_dtype, where)
    if flags is not None and flags.num_speculative_tokens:
        note_verify_batch(fp, 1, flags.num_speculative_tokens)  # single-stream benchmark: one sequence
    return fp


def _same(fact: str, a: str, b: str) -> bool:
    if fact == KV:
        return a == b or {a, b} <= {"fp8", "fp8_e4m3"}  # "fp8" is vLLM's alias of e4m3 on CUDA
    return a == b


def compare(yours: Fingerprint, theirs: Fingerprint | None) -> tuple[FingerprintRow, ...]:
    """Rows for every fact either side knows, or the reference lacks: differences first, then facts one
    side does not know (with how to get them), then facts that agree."""
    theirs = theirs or {}
    rows: list[FingerprintRow] = []
    for fact in FACTS:
        a, b = yours.get(fact), theirs.get(fact)
        if a is None and b is None and fact in (VERIFY, TRUNCATED):
            continue
        if a is not None and b is not None:
            status = "same" if _same(fact, a.value, b.value) else "differs"
        else:
            status = "unknown"
        how = ""
        if b is None:
            how = f"reference: {HOW_TO_GET[fact]}"
        elif a is None:
            how = f"yours: {HOW_TO_GET[fact]}"
        rows.append(
            FingerprintRow(
                fact,
                a.value if a else None,
                b.value if b else None,
                status,
                a.where if a else "",
                b.where if b else "",
                how,
            )
        )
    order = {"differs": 0, "unknown": 1, "same": 2}
    return tuple(sorted(rows, key=lambda r: order[r.status]))


def describe_rows(rows: Iterable[FingerprintRow]) -> list[str]:
    """Plain-text table lines: fact, yours, reference, status."""
    out = []
    for r in rows:
        mark = {"differs": "≠", "unknown": "?", "same": "="}[r.status]
        where = f" [{r.yours_where}]" if r.yours_where else ""
        out.append(
            f"{mark} {r.fact}: yours {r.yours or 'unknown'}{where} | reference {r.reference or 'unknown'}"
        )
        if r.status == "unknown" and r.how_to_get:
            out.append(f"     how to get it: {r.how_to_get}")
    return out
