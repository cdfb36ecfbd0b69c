"""A pasted forum post read as a launch log and typed figures, each reading with its post line.

A post quotes vLLM in its own words (the CUDA-graph downgrade warning, often wrapped over several
lines, "Model loading took", "SpecDecoding metrics", capture lines, a patch set's "N/M applied"): those
lines are read by the launch-log parser, after wrapped lines are joined. It also states facts and
figures in its own "Key: value" summary ("Attention backend: FlashInfer", "Model VRAM: 16.87 GiB",
"~43 narrative / ~54 code TPS at 330W", "93/87/74%"): those are read here, and only here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from llm_dyno.core.diagnose.fingerprint import (
    ATTENTION,
    CAPTURED,
    CG_MODE,
    COMPILE,
    KV,
    VERSION,
    WEIGHTS,
    Fact,
    Fingerprint,
    log_fingerprint,
)
from llm_dyno.core.diagnose.inputs import LaunchLog, Measured, parse_acceptance
from llm_dyno.core.errors import DynoError
from llm_dyno.core.runtime.logformats import BootFactKind, BootLine, parse_boot_facts

MAX_POST_BYTES = 1024 * 1024  # a post is a page of text; a bigger paste is a log (--log reads those)
_JOIN_MAX = 3  # continuation lines joined to a line that starts a wrapped vLLM message


def where(line_no: int) -> str:
    """How a reading from the post names its line (``post line 12``)."""
    return f"post line {line_no}"


@dataclass(frozen=True)
class PostFigure:
    """A figure the post states and the line it is on."""

    value: float
    line_no: int


@dataclass(frozen=True)
class PostFigures:
    """The user's numbers as the post states them (None / empty: the post does not say)."""

    narrative_tps: PostFigure | None = None
    code_tps: PostFigure | None = None
    acceptance: tuple[tuple[float, ...], int] | None = None  # fractions per position, line
    mean_acceptance_length: PostFigure | None = None
    power_cap_w: PostFigure | None = None


@dataclass(frozen=True)
class Post:
    """A pasted post: its text as a launch log (wrapped vLLM lines joined onto their first line, so line
    numbers stay the post's), the boot facts and figures it states, and where it came from."""

    log: LaunchLog
    facts: tuple[tuple[str, Fact], ...]
    figures: PostFigures
    source: str
    gpu: Fact | None = None  # the GPU the post names ("GPU: RTX 3090 (Ampere SM_86)") and its line

    def fingerprint(self) -> Fingerprint:
        """The boot facts the post states, each with its post line."""
        return dict(self.facts)

    def measured(self) -> Measured | None:
        """The post's figures as one record (None when it states none)."""
        f = self.figures
        if not any((f.narrative_tps, f.code_tps, f.acceptance, f.mean_acceptance_length, f.power_cap_w)):
            return None
        tps = f.narrative_tps or f.code_tps
        tps_line = tps.line_no if tps is not None else None
        acc_line = f.acceptance[1] if f.acceptance else None
        if acc_line is None and f.mean_acceptance_length is not None:
            acc_line = f.mean_acceptance_length.line_no
        return Measured(
            f.narrative_tps.value if f.narrative_tps else None,
            f.code_tps.value if f.code_tps else None,
            f.acceptance[0] if f.acceptance else (),
            f.mean_acceptance_length.value if f.mean_acceptance_length else None,
            where(tps_line) if tps_line else "post",
            where(acc_line) if acc_line else "",
            power_cap_w=f.power_cap_w.value if f.power_cap_w else None,
            power_cap_source=where(f.power_cap_w.line_no) if f.power_cap_w else "typed",
        )


def read_post(text: str, source: str = "post") -> Post:
    """Read a post's text; DynoError when it is larger than :data:`MAX_POST_BYTES`."""
    size = len(text.encode("utf-8", errors="replace"))
    if size > MAX_POST_BYTES:
        raise DynoError(
            f"the post {source} is {size:,} bytes; a post is read up to {MAX_POST_BYTES:,} bytes (1 MiB)",
            hint="paste the post's own text; pass a launch log with --log (any size is read)",
        )
    raw = LaunchLog.from_text(text, source).lines
    joined = LaunchLog(_join_wrapped(raw), 1, source, "post line ")
    facts = _relabel(log_fingerprint(joined))
    for fact, value in _key_value_facts(raw).items():
        facts.setdefault(fact, value)  # vLLM's own words win over the post's summary of them
    return Post(joined, tuple(facts.items()), _figures(raw), source, _gpu(raw))


# a GPU named in prose: "on a single RTX 3090", "an RTX 4090", "1x H100"
_GPU_NAME = re.compile(
    r"\b((?:GeForce\s+)?RTX\s+(?:PRO\s+)?A?\d{3,4}(?:\s*Ti)?|GTX\s+\d{3,4}(?:\s*Ti)?|[AHBL]\d{2,3}S?)\b"
)


def _gpu(lines: tuple[str, ...]) -> Fact | None:
    """The GPU the post names: its "GPU:" line, else the first GPU model named in its text."""
    prose: Fact | None = None
    for no, line in enumerate(lines, 1):
        kv = _key(line)
        if kv is not None and kv[0] in ("gpu", "gpus", "hardware") and (m := _GPU_NAME.search(kv[1])):
            return Fact(m.group(1), where(no))
        if prose is None and (m := _GPU_NAME.search(line)) is not None:
            prose = Fact(m.group(1), where(no))
    return prose


def _join_wrapped(lines: tuple[str, ...]) -> tuple[str, ...]:
    """Lines with a vLLM message wrapped over several lines joined onto its first line (the others left
    empty so numbering stays); repeated patch-count lines ("20/21 applied" in two lists) read once.

    One pass: each line is parsed once (its facts kept for the lines after it), and a line's join is
    tried on its whole window (up to :data:`_JOIN_MAX` lines, to an empty one) first: a pattern that
    matches a shorter join matches the longer one too (and the first pattern that matches the line alone
    wins on both), so a window that states nothing beyond its first line is done in one parse.
    """
    out = list(lines)
    own: dict[int, list[BootLine]] = {}  # line index → its facts alone (parsed once)

    def facts(j: int) -> list[BootLine]:
        if j not in own:
            own[j] = parse_boot_facts(out[j])
        return own[j]

    def kinds(j: int) -> set[BootFactKind]:
        return {f.kind for f in facts(j)}

    seen_patches: set[tuple[str, ...]] = set()
    for i in range(len(out)):
        line = out[i]
        if not line.strip():
            continue
        found = facts(i)
        alone = kinds(i)
        width = 0
        while width < _JOIN_MAX and i + 1 + width < len(out) and out[i + 1 + width].strip():
            width += 1
        whole = _parse_join(out, i, width) if width else []
        if {f.kind for f in whole} - alone:  # something new across the line breaks: the shortest join
            for extra in range(1, width + 1):
                joined = whole if extra == width else _parse_join(out, i, extra)
                tails = set().union(*(kinds(j) for j in range(i + 1, i + 1 + extra)))
                if {f.kind for f in joined} - alone - tails:
                    out[i] = " ".join(part.strip() for part in out[i : i + 1 + extra])
                    for j in range(i + 1, i + 1 + extra):
                        out[j] = ""
                        own[j] = []
                    found = own[i] = joined
                    break
        for fact in found:
            if fact.kind is BootFactKind.PATCHES and "applied" in fact.values:
                key = tuple(str(fact.values.get(k, "")) for k in ("applied", "total", "failed"))
                if key in seen_patches:
                    out[i] = ""
                seen_patches.add(key)
    return tuple(out)


def _parse_join(lines: list[str], i: int, extra: int) -> list[BootLine]:
    return parse_boot_facts(" ".join(part.strip() for part in lines[i : i + 1 + extra]))


def _relabel(fp: Fingerprint) -> Fingerprint:
    """``log:12`` → ``post line 12``."""
    out: Fingerprint = {}
    for fact, value in fp.items():
        at = re.sub(r"log:(\d+)", lambda m: where(int(m.group(1))), value.where)
        out[fact] = Fact(value.value, at)
    return out


def _key(line: str) -> tuple[str, str] | None:
    found = re.match(r"\s*([A-Za-z][\w .()/-]*?)\s*:\s+(.+?)\s*$", line)
    return (found.group(1).lower(), found.group(2)) if found else None


_IN_VRAM = re.compile(r"(\d+(?:\.\d+)?)\s*GiB in VRAM")


def _key_value_facts(lines: tuple[str, ...]) -> Fingerprint:
    """The post's "Key: value" summary lines as boot facts (the first statement of each); the weights
    also from prose ("16.87 GiB in VRAM") where no "Model VRAM:" line states them."""
    out: Fingerprint = {}
    prose: Fact | None = None
    for no, line in enumerate(lines, 1):
        if prose is None and "in VRAM" in line and (m := _IN_VRAM.search(line)) is not None:
            prose = Fact(f"{float(m.group(1)):g} GiB", where(no))  # "16.87 GiB in VRAM" in prose
        kv = _key(line)
        if kv is None:
            continue
        key, value = kv
        at = where(no)
        if key == "vllm version":
            out.setdefault(VERSION, Fact(value.split()[0], at))
        elif key == "attention backend":
            out.setdefault(ATTENTION, Fact(value.split()[0].upper().replace(" ", "_"), at))
        elif key == "cuda graphs" and (m := re.search(r"downgraded to (\w+)", value)) is not None:
            first = value.split()[0]
            out.setdefault(CG_MODE, Fact(f"{m.group(1)} (downgraded from {first})", at))
        elif key == "cuda graph capture" and (m := re.search(r"sizes ([\d,\s]+)", value)) is not None:
            sizes = [int(s) for s in m.group(1).split(",") if s.strip().isdigit()]
            if sizes:
                text = f"{len(sizes)}: {','.join(map(str, sizes))} (largest {max(sizes)})"
                out.setdefault(CAPTURED, Fact(text, at))
                out.setdefault("_sizes", Fact(",".join(map(str, sizes))))
        elif key in ("model vram", "model memory") and (m := re.match(r"~?(\d+(?:\.\d+)?)\s*GiB", value)):
            out.setdefault(WEIGHTS, Fact(f"{float(m.group(1)):g} GiB", at))
        elif key == "torch.compile":
            parts = [float(s) for s in re.findall(r"(\d+(?:\.\d+)?)\s*s\b", value)]
            if parts:
                n = f" ({len(parts)} parts)" if len(parts) > 1 else ""
                out.setdefault(COMPILE, Fact(f"{sum(parts):g} s{n}", at))
        elif key == "kv cache" and (m := re.match(r"(fp8\w*|auto|bfloat16|float16)\b", value)):
            out.setdefault(KV, Fact(m.group(1), at))
    if prose is not None:
        out.setdefault(WEIGHTS, prose)
    return out


_TPS_PAIR = re.compile(
    r"~?(?P<narr>\d+(?:\.\d+)?)\s*narrative\s*/\s*~?(?P<code>\d+(?:\.\d+)?)\s*code\s*TPS"
    r"(?:\s*at\s*(?P<cap>\d+(?:\.\d+)?)\s*W\b)?",
    re.IGNORECASE,
)
_RATES = re.compile(r"(?P<rates>\d+(?:\.\d+)?%?(?:\s*/\s*\d+(?:\.\d+)?%?){1,15})%?")


def _figures(lines: tuple[str, ...]) -> PostFigures:
    """The user's own figures: the first TPS pair ("~43 narrative / ~54 code TPS at 330W"), the
    per-position acceptance ("Per-position acceptance: 93.0% / 86.6% / 73.9%", else the first "93/87/74%"
    in prose), the mean acceptance length and the power cap."""
    narr = code = length = cap = None
    acc: tuple[tuple[float, ...], int] | None = None
    prose_acc: tuple[tuple[float, ...], int] | None = None
    for no, line in enumerate(lines, 1):
        line = line.replace("\\~", "~")  # Markdown escapes the tilde: "\~43 narrative"
        if narr is None and (m := _TPS_PAIR.search(line)) is not None:
            narr, code = PostFigure(float(m.group("narr")), no), PostFigure(float(m.group("code")), no)
            if m.group("cap") and cap is None:
                cap = PostFigure(float(m.group("cap")), no)
        kv = _key(line)
        key, value = kv if kv is not None else ("", "")
        if acc is None and key in ("per-position acceptance", "acceptance per position"):
            acc = _rates(value, no)
        elif prose_acc is None and "acceptance" in line.lower() and "%" in line:
            for m in _RATES.finditer(line):
                if "%" in m.group(0):
                    prose_acc = _rates(m.group("rates"), no)
                    break
        m = re.match(r"(\d+(?:\.\d+)?)", value) if key == "mean acceptance length" else None
        if length is None and m is not None and 1 <= float(m.group(1)) <= 64:
            length = PostFigure(float(m.group(1)), no)
        if key == "power cap" and (m := re.match(r"(\d+(?:\.\d+)?)\s*W", value)) is not None:
            cap = PostFigure(float(m.group(1)), no) if cap is None else cap
    return PostFigures(narr, code, acc or prose_acc, length, cap)


def _rates(text: str, line_no: int) -> tuple[tuple[float, ...], int] | None:
    try:
        return parse_acceptance(text), line_no
    except ValueError:
        return None


def read_post_file(path: Path) -> Post:
    """A post saved to a file, read bounded (no more than :data:`MAX_POST_BYTES` + 1 bytes)."""
    if not path.is_file():
        raise DynoError(
            f"cannot read the post {path}: no such file", hint="give the post's text as a file (- for stdin)"
        )
    try:
        with path.open("rb") as fh:
            text = fh.read(MAX_POST_BYTES + 1).decode("utf-8", errors="replace")
    except OSError as exc:
        raise DynoError(f"cannot read the post {path}: {exc.strerror}") from None
    return read_post(text, path.name)


_FIGURES = (
    ("narrative_tps", "narrative TPS"),
    ("code_tps", "code TPS"),
    ("acceptance_per_position", "acceptance"),
    ("mean_acceptance_length", "mean acceptance length"),
    ("power_cap_w", "power cap"),
    ("no_spec_tps", "no-spec TPS"),
)


def _show(value: object) -> str:
    if isinstance(value, tuple):
        return " / ".join(f"{v * 100:g}%" for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def with_post(typed: Measured | None, post: Post | None) -> tuple[Measured | None, list[str]]:
    """The typed numbers, the post's filling what was not typed; a note for each typed figure that
    differs from the post's (the typed one is used)."""
    from_post = post.measured() if post is not None else None
    if from_post is None or typed is None:
        return (typed if from_post is None else from_post), []
    notes: list[str] = []
    merged = from_post
    for attr, label in _FIGURES:
        mine, theirs = getattr(typed, attr), getattr(from_post, attr)
        if mine is None or mine == ():
            continue
        if theirs is not None and theirs != () and mine != theirs:
            notes.append(f"typed {label} {_show(mine)} is used; the post says {_show(theirs)}")
        merged = replace(merged, **{attr: mine})
        if attr == "power_cap_w":
            merged = replace(merged, power_cap_source="typed")
    typed_tps = typed.narrative_tps is not None or typed.code_tps is not None
    typed_acc = bool(typed.acceptance_per_position) or typed.mean_acceptance_length is not None
    merged = replace(
        merged,
        source="typed" if typed_tps else merged.source,
        acceptance_source="typed" if typed_acc else merged.acceptance_source,
    )
    return merged, notes
