"""Why a start failed, classified from a tail of log lines."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llm_dyno.core.runtime.base import FailureDetails, FailureKind, FailureReason
from llm_dyno.core.runtime.logformats.prefix import line_level, strip_prefix

# ---- failures --------------------------------------------------------------------------------------
# The real cause of a failed start is often far above the last line ("Engine core initialization
# failed. See root cause above."), so rules search the whole tail given (keep at least 250 lines).


@dataclass(frozen=True)
class _Rule:
    kind: FailureKind
    pattern: re.Pattern[str]
    summary: Callable[[re.Match[str]], str]
    hint: Callable[[re.Match[str]], str]
    details: Callable[[re.Match[str]], FailureDetails] = lambda _m: FailureDetails()


def _int(text: str) -> int:
    return int(text.replace(",", ""))


_RULES: list[_Rule] = [
    _Rule(
        FailureKind.UNRECOGNIZED_ARGUMENTS,
        re.compile(r"error: unrecognized arguments: (?P<args>.+)$"),
        lambda m: f"vLLM does not know these arguments: {m.group('args').strip()}",
        lambda m: (
            "Remove or correct them in the profile's args (check the spelling against this vLLM version). "
            + (
                "The image's entrypoint already is `vllm serve`: do not repeat 'serve' in the command."
                if "serve" in m.group("args").split()
                else ""
            )
        ).strip(),
        lambda m: FailureDetails(arguments=tuple(m.group("args").split())),
    ),
    _Rule(
        FailureKind.PORT_IN_USE,
        # The phrase anywhere; the port when the line names the address ("('0.0.0.0', 8000)").
        re.compile(r"^(?=.*address already in use)(?:.*?\('?[^',()]*'?, (?P<port>\d+)\))?", re.IGNORECASE),
        lambda m: (
            "the server's port is already in use" + (f" (port {m.group('port')})" if m.group("port") else "")
        ),
        lambda _m: "Another program listens on that port: stop it, or change --port in the profile.",
        lambda m: FailureDetails(port=int(m.group("port")) if m.group("port") else None),
    ),
    _Rule(
        FailureKind.KV_CACHE_TOO_SMALL,
        re.compile(r"max seq len \((?P<want>[\d,]+)\).*?estimated maximum model length is (?P<n>[\d,]+)"),
        lambda m: (
            f"the KV cache cannot hold one request of max-model-len {_int(m.group('want')):,}; "
            f"it fits at most {_int(m.group('n')):,} tokens"
        ),
        lambda m: (
            f"Lower --max-model-len to {_int(m.group('n'))} or less, or give the KV cache more memory "
            "(raise --gpu-memory-utilization; on CPU raise VLLM_CPU_KVCACHE_SPACE)."
        ),
        lambda m: FailureDetails(
            max_model_len=_int(m.group("want")), estimated_max_model_len=_int(m.group("n"))
        ),
    ),
    _Rule(
        FailureKind.NO_KV_MEMORY,
        re.compile(r"No available memory for the cache blocks"),
        lambda _m: "no memory is left for the KV cache after loading the model",
        lambda _m: "Raise --gpu-memory-utilization, or use a smaller or more quantized model.",
    ),
    _Rule(
        FailureKind.GPU_BUSY,
        re.compile(
            r"Free memory on device(?: \S+)? \((?P<free>\d+(?:\.\d+)?)/(?P<total>\d+(?:\.\d+)?) GiB\)"
            r" on startup is less than desired GPU memory utilization"
            r" \((?P<util>\d+(?:\.\d+)?), (?P<want>\d+(?:\.\d+)?) GiB\)"
        ),
        lambda m: (
            f"only {m.group('free')} of {m.group('total')} GiB GPU memory is free; "
            f"--gpu-memory-utilization {m.group('util')} wants {m.group('want')} GiB"
        ),
        lambda _m: (
            "Another process holds GPU memory (see nvidia-smi): stop it, or lower --gpu-memory-utilization "
            "to fit in the free memory."
        ),
        lambda m: FailureDetails(
            free_gib=float(m.group("free")),
            total_gib=float(m.group("total")),
            wanted_gib=float(m.group("want")),
            gpu_memory_utilization=float(m.group("util")),
        ),
    ),
    _Rule(
        FailureKind.CUDA_OOM,
        re.compile(
            r"(?:CUDA out of memory|OutOfMemoryError)(?:.*?Tried to allocate (?P<size>\d+(?:\.\d+)? \w+))?"
        ),
        lambda m: (
            "CUDA out of memory" + (f" (tried to allocate {m.group('size')})" if m.group("size") else "")
        ),
        lambda _m: (
            "Lower --gpu-memory-utilization, --max-num-seqs or --max-num-batched-tokens, shorten "
            "--max-model-len, or use a smaller or more quantized model."
        ),
    ),
    _Rule(
        FailureKind.MODEL_LEN_EXCEEDS_MODEL,
        re.compile(
            r"max_model_len \((?P<want>[\d,]+)\) is greater than the derived max_model_len \((?P<why>[^)]*)\)"
        ),
        lambda m: (
            f"--max-model-len {_int(m.group('want')):,} is longer than the model supports ({m.group('why')})"
        ),
        lambda _m: (
            "Lower --max-model-len to the model's limit, or set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 in the "
            "profile's env if you know the model handles longer contexts."
        ),
        lambda m: FailureDetails(max_model_len=_int(m.group("want"))),
    ),
]

_ENGINE_FAILED = re.compile(r"Engine core initialization failed")
# "ValueError: …", "torch.OutOfMemoryError: …", "pydantic_core._pydantic_core.ValidationError: …"
_ERROR_LINE = re.compile(
    r"^(?:[A-Za-z_][\w]*\.)*(?P<type>[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit))(?::\s|$)"
)
_VALUE_ERROR_DETAIL = re.compile(r"^\s*Value error, (?P<msg>.+)")


def _error_messages(lines: Sequence[str]) -> list[tuple[int, str]]:
    """(index, message) of lines that state an exception, with pydantic's detail line folded in."""
    out: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        msg = strip_prefix(line)
        if not _ERROR_LINE.match(msg):
            continue
        if "ValidationError" in msg:
            for nxt in lines[i + 1 : i + 4]:
                d = _VALUE_ERROR_DETAIL.match(strip_prefix(nxt))
                if d:
                    msg = f"{msg.split(':', 1)[0]}: {d.group('msg')}"
                    break
        out.append((i, msg))
    return out


def classify_failure(lines: Sequence[str], exit_code: int | None = None) -> FailureReason:
    """Why a server failed, from the tail of its log (give it at least the last 250 lines).

    Known causes are tried first (searching from the end); then ``Engine core initialization failed``
    with the last exception line above it as the root cause; then the last exception line at all;
    else the exit code alone.
    """
    messages = [strip_prefix(line) for line in lines]
    # Known causes are stated by errors and tracebacks; a warning may quote them harmlessly
    # (e.g. "User-specified max_model_len … is greater than …" when the override is allowed).
    quiet = [line_level(line) in ("DEBUG", "INFO", "WARNING") for line in lines]
    for rule in _RULES:
        for i in range(len(messages) - 1, -1, -1):
            m = None if quiet[i] else rule.pattern.search(messages[i])
            if m:
                return FailureReason(
                    rule.kind,
                    rule.summary(m),
                    rule.hint(m),
                    _excerpt(lines, i),
                    exit_code,
                    rule.details(m),
                )
    errors = _error_messages(lines)
    engine_idx = next(
        (i for i in range(len(messages) - 1, -1, -1) if _ENGINE_FAILED.search(messages[i])), None
    )
    if engine_idx is not None:
        root = [(i, msg) for i, msg in errors if i < engine_idx and not _ENGINE_FAILED.search(msg)]
        if root:
            i, msg = root[-1]
            return FailureReason(
                FailureKind.ENGINE_INIT_FAILED,
                f"the engine failed to start: {msg}",
                "Fix the root cause shown: the profile's flags or model may not fit this vLLM or hardware.",
                (*_excerpt(lines, i), lines[engine_idx]),
                exit_code,
                FailureDetails(root_cause=msg),
            )
        return FailureReason(
            FailureKind.ENGINE_INIT_FAILED,
            "the engine failed to start (no root cause found in the log tail)",
            "Read the full log: the cause may lie further up.",
            (lines[engine_idx],),
            exit_code,
        )
    if errors:
        i, msg = errors[-1]
        return FailureReason(
            FailureKind.UNKNOWN, msg, "Read the log around this line.", _excerpt(lines, i), exit_code
        )
    tail = tuple(line for line in lines[-5:] if line.strip())
    code = "" if exit_code is None else f" with exit code {exit_code}"
    return FailureReason(
        FailureKind.EXITED, f"the server exited{code}", "Read the log for the cause.", tail, exit_code
    )


def _excerpt(lines: Sequence[str], index: int) -> tuple[str, ...]:
    """The line at ``index``, with the exception header above it when it continues one (pydantic)."""
    head = lines[index - 1] if index > 0 and _ERROR_LINE.match(strip_prefix(lines[index - 1])) else None
    return (head, lines[index]) if head else (lines[index],)
