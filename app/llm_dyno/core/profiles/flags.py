"""vLLM engine flags: parse them as written, normalise them, and read the ones the app reasons about.

The profile keeps the flags exactly as the user wrote them (a list of argv tokens). This module turns
that list into :class:`Flag` records (``--x=1`` and ``--x 1`` read the same, ``--max_model_len`` reads as
``max-model-len``) and offers a typed :class:`EngineConfig` view over them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llm_dyno.core.errors import Location, ProfileError
from llm_dyno.core.jsontext import OutsideJSONError, loads_outside

# Flags that take no value (argparse store_true / BooleanOptionalAction in vLLM).
SWITCHES: frozenset[str] = frozenset(
    {
        "trust-remote-code",
        "language-model-only",
        "enable-auto-tool-choice",
        "enable-prefix-caching",
        "no-enable-prefix-caching",
        "enable-chunked-prefill",
        "no-enable-chunked-prefill",
        "enforce-eager",
        "no-enforce-eager",
        "disable-log-requests",
        "enable-log-requests",
        "disable-log-stats",
        "disable-custom-all-reduce",
        "disable-sliding-window",
        "disable-cascade-attn",
        "disable-frontend-multiprocessing",
        "disable-fastapi-docs",
        "enable-lora",
        "enable-prompt-tokens-details",
        "enable-server-load-tracking",
        "enable-force-include-usage",
        "enable-expert-parallel",
        "enable-sleep-mode",
        "enable-log-outputs",
        "async-scheduling",
        "no-async-scheduling",
        "skip-tokenizer-init",
        "headless",
        "use-tqdm-on-load",
        "no-use-tqdm-on-load",
        "return-tokens-as-token-ids",
        "enable-request-id-headers",
    }
)

# Short spellings vLLM accepts.
ALIASES: dict[str, str] = {
    "tp": "tensor-parallel-size",
    "pp": "pipeline-parallel-size",
    "dp": "data-parallel-size",
    "q": "quantization",
    "O": "compilation-config",
}

# Flags whose value is JSON; compared by meaning (key order does not matter).
JSON_FLAGS: frozenset[str] = frozenset(
    {
        "speculative-config",
        "compilation-config",
        "kv-transfer-config",
        "hf-overrides",
        "override-generation-config",
        "limit-mm-per-prompt",
        "default-chat-template-kwargs",
        "additional-config",
        "mm-processor-kwargs",
    }
)


@dataclass(frozen=True)
class Flag:
    """One engine flag: canonical ``name`` (no dashes), ``value`` (None for a switch) and its position."""

    name: str
    value: str | None
    index: int  # index of the flag's first token in the profile's args
    spelled: str  # the flag token as written, e.g. "--max_model_len=4096"

    def meaning(self) -> Any:
        """The value as compared by a semantic diff: parsed JSON for JSON flags, else the string."""
        if self.value is not None and self.name in JSON_FLAGS:
            try:
                return loads_outside(self.value, f"--{self.name}")
            except ValueError:
                return self.value
        return self.value


@dataclass(frozen=True)
class ParsedArgs:
    """The flags and positional tokens of an argument list."""

    flags: tuple[Flag, ...]
    positionals: tuple[tuple[int, str], ...] = ()

    def get(self, name: str) -> Flag | None:
        """The last occurrence of a flag (argparse semantics: the last one wins)."""
        found = None
        for f in self.flags:
            if f.name == name:
                found = f
        return found


def canonical_name(token: str) -> str:
    """``--max_model_len`` → ``max-model-len``; ``-tp`` → ``tensor-parallel-size``."""
    bare = token.lstrip("-")
    if token.startswith("-") and not token.startswith("--") and bare in ALIASES:
        return ALIASES[bare]
    return bare.replace("_", "-")


def _is_flag_token(token: str) -> bool:
    if not token.startswith("-") or token in ("-", "--"):
        return False
    # negative numbers are values, not flags
    try:
        float(token)
    except ValueError:
        return True
    return False


def parse_args(args: Sequence[str]) -> ParsedArgs:
    """Split argv tokens into flags and positionals, accepting ``--flag=value`` and ``--flag value``."""
    flags: list[Flag] = []
    positionals: list[tuple[int, str]] = []
    i = 0
    while i < len(args):
        token = args[i]
        if not _is_flag_token(token):
            positionals.append((i, token))
            i += 1
            continue
        if token.startswith("--") and "=" in token:
            raw, value = token.split("=", 1)
            flags.append(Flag(canonical_name(raw), value, i, token))
            i += 1
            continue
        if token.startswith("-O") and token[2:].isdigit():
            # -O3: compilation level attached to the short flag
            flags.append(Flag("compilation-config", token[2:], i, token))
            i += 1
            continue
        name = canonical_name(token)
        if name in SWITCHES:
            flags.append(Flag(name, None, i, token))
            i += 1
            continue
        if i + 1 < len(args) and not _is_flag_token(args[i + 1]):
            flags.append(Flag(name, args[i + 1], i, token))
            i += 2
        else:
            flags.append(Flag(name, None, i, token))
            i += 1
    return ParsedArgs(tuple(flags), tuple(positionals))


@dataclass(frozen=True)
class EngineConfig:
    """Typed view of the engine flags the app reasons about; None where the flag is absent."""

    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    kv_cache_dtype: str | None = None
    quantization: str | None = None
    dtype: str | None = None
    tensor_parallel_size: int | None = None
    speculative_config: dict[str, Any] | None = None
    compilation_config: dict[str, Any] | None = None
    enable_prefix_caching: bool | None = None
    enable_chunked_prefill: bool | None = None
    enforce_eager: bool = False
    host: str | None = None
    port: int | None = None
    api_key: str | None = None
    served_model_name: str | None = None
    warnings: tuple[str, ...] = field(default=())
    # every flag as read (the one parse of the args): what the typed fields above do not name
    parsed: ParsedArgs = field(default=ParsedArgs(()), repr=False, compare=False)

    def flag(self, name: str) -> Flag | None:
        """The last occurrence of a flag by its canonical name (``device``, ``block-size``), or None."""
        return self.parsed.get(name)

    @property
    def num_speculative_tokens(self) -> int | None:
        """Draft tokens per step from the speculative config, if any."""
        if not self.speculative_config:
            return None
        value = self.speculative_config.get("num_speculative_tokens")
        return int(value) if isinstance(value, int) else None


# vLLM reads "32k" as 32,000 and "32K" as 32,768 (decimal and binary suffixes).
_SUFFIXES = {"k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}


def _parse_int(text: str) -> int:
    t = text.strip().replace("_", "")
    if t and t[-1] in _SUFFIXES:
        value = float(t[:-1]) * _SUFFIXES[t[-1]]
        if not value.is_integer():
            raise ValueError(text)
        return int(value)
    return int(t)


_INT_FLAGS = {
    "max-model-len": "a whole number of tokens, e.g. 32768",
    "max-num-seqs": "a whole number, e.g. 1",
    "max-num-batched-tokens": "a whole number of tokens, e.g. 2048",
    "tensor-parallel-size": "a whole number of GPUs, e.g. 1",
    "port": "a TCP port number, e.g. 8000",
}


def engine_config(
    args: Sequence[str], *, source: str | None = None, parsed: ParsedArgs | None = None
) -> EngineConfig:
    """Read the typed engine config from argv tokens; raise :class:`ProfileError` naming the bad token.
    ``parsed``: ``parse_args(args)`` when the caller has it already (it is not parsed again)."""
    parsed = parse_args(args) if parsed is None else parsed
    values: dict[str, Any] = {}
    warnings: list[str] = []

    def fail(flag: Flag, what: str) -> ProfileError:
        return ProfileError(
            f"{flag.spelled} {flag.value!r}: expected {what}"
            if flag.value is not None
            else f"{flag.spelled}: {what}",
            where=Location(source, None, f"args[{flag.index}]"),
            hint=f"fix the value of {flag.spelled}",
        )

    for name, what in _INT_FLAGS.items():
        f = parsed.get(name)
        if f is None:
            continue
        if f.value is None:
            raise fail(f, f"a value ({what})")
        try:
            number = _parse_int(f.value)
        except ValueError:
            raise fail(f, what) from None
        if number < (0 if name == "port" else 1) or (name == "port" and number > 65535):
            raise fail(f, what)
        values[name.replace("-", "_")] = number

    f = parsed.get("gpu-memory-utilization")
    if f is not None:
        try:
            util = float(f.value or "")
        except ValueError:
            raise fail(f, "a fraction between 0 and 1, e.g. 0.9") from None
        if not 0 < util <= 1:
            raise fail(f, "a fraction between 0 and 1, e.g. 0.9")
        values["gpu_memory_utilization"] = util

    for name in ("kv-cache-dtype", "quantization", "dtype", "host", "api-key", "served-model-name"):
        f = parsed.get(name)
        if f is not None:
            if f.value is None:
                raise fail(f, "a value")
            values[name.replace("-", "_")] = f.value

    for name in ("speculative-config", "compilation-config"):
        f = parsed.get(name)
        if f is None:
            continue
        if f.value is None:
            raise fail(f, "a JSON object")
        if name == "compilation-config" and f.value.strip().isdigit():
            values["compilation_config"] = {"level": int(f.value)}
            continue
        try:
            obj = loads_outside(f.value, f"--{name}")
        except OutsideJSONError as exc:
            raise fail(f, f"a JSON object ({exc.detail})") from None
        if not isinstance(obj, dict):
            raise fail(f, 'a JSON object such as \'{"method": "ngram", "num_speculative_tokens": 3}\'')
        values[name.replace("-", "_")] = obj

    for name in ("enable-prefix-caching", "enable-chunked-prefill", "enforce-eager"):
        on, off = parsed.get(name), parsed.get("no-" + name)
        chosen = max((x for x in (on, off) if x is not None), key=lambda x: x.index, default=None)
        if chosen is not None:
            values[name.replace("-", "_")] = chosen.name == name

    return EngineConfig(**values, warnings=tuple(warnings), parsed=parsed)
