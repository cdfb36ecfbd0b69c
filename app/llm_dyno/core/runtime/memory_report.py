"""The memory estimate's records and how they read: text lines for ``plan``, JSON for ``plan --json``,
and the side-by-side comparison with vLLM's logged KV capacity after a launch."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field, field_serializer

from llm_dyno.core.records import Record

GIB = 1024**3


def fmt_bytes(n: int | float | None) -> str:
    """``1.5 GiB``, ``640 MiB``, ``12 KiB``, ``800 B`` (binary units, as vLLM logs them)."""
    if n is None:
        return "?"
    for unit, size in (("GiB", GIB), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.0f} B"


class MemoryPart(Record):
    """One share of the memory: weights, a reserve, the KV cache; ``source`` says where it comes from."""

    name: str
    bytes: int | None
    source: str


class MemoryEstimate(Record):
    """What a profile's server would hold in memory, before it runs (see :mod:`.memory`); its JSON
    (``model_dump``) is the ``"memory"`` object of ``plan --json``.

    ``problem`` is set when no estimate could be made (a hub name with no local copy, an unreadable
    config); ``fits`` is None when the device's memory is unknown. ``sources`` names where each figure
    comes from (field name → source).
    """

    device: str  # "GPU" | "CPU"
    problem: str | None = None
    model_folder: str | None = None
    weights_bytes: int | None = None
    kv_bytes_per_token: int | None = None
    kv_budget_bytes: int | None = None
    kv_cache_tokens: int | None = None
    gpu_name: str | None = None
    gpu_total_bytes: int | None = None
    gpu_total_source: str | None = Field(default=None, exclude=True)  # written among the sources
    gpu_memory_utilization: float | None = None
    usable_bytes: int | None = Field(default=None, exclude=True)
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    tensor_parallel: int = 1
    block_size: int | None = None
    fits: bool | None = None
    parts: tuple[MemoryPart, ...] = ()
    sources: tuple[tuple[str, str], ...] = ()
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        """``fits``, ``will not fit`` or ``unknown`` (device memory or model not known)."""
        return "unknown" if self.fits is None else "fits" if self.fits else "will not fit"

    @property
    def concurrency(self) -> float | None:
        """Requests of the full ``--max-model-len`` the KV cache holds at once."""
        if not self.kv_cache_tokens or not self.max_model_len:
            return None
        return self.kv_cache_tokens / self.max_model_len

    def summary(self) -> str:
        """One line: ``fits: 1,048,576 KV tokens (1.00 GiB ÷ 1.00 KiB/token) on CPU``."""
        if self.problem:
            return self.problem
        if self.kv_cache_tokens is None:
            return (
                f"weights {fmt_bytes(self.weights_bytes)}, {fmt_bytes(self.kv_bytes_per_token)} of KV cache "
                f"per token; {self.device} memory unknown"
            )
        where = f"{self.gpu_name}" if self.gpu_name else self.device
        return (
            f"{self.verdict}: {self.kv_cache_tokens:,} KV tokens ({fmt_bytes(self.kv_budget_bytes)} ÷ "
            f"{fmt_bytes(self.kv_bytes_per_token)}/token) on {where}"
        )

    def lines(self) -> list[str]:
        """The estimate with its parts, for ``plan`` and the editor."""
        if self.problem:
            return [f"memory: {self.problem}"]
        out = [f"memory ({self.device}): {self.summary()}"]
        if self.gpu_total_bytes is not None:
            out.append(
                f"  {self.gpu_name}: {fmt_bytes(self.gpu_total_bytes)} ({self.gpu_total_source}) × "
                f"{self.gpu_memory_utilization:g} = {fmt_bytes(self.usable_bytes)} for vLLM"
                + (f", per GPU of {self.tensor_parallel}" if self.tensor_parallel > 1 else "")
            )
        for part in self.parts:
            out.append(f"  {part.name:<14} {fmt_bytes(part.bytes):>11}  {part.source}")
        src = dict(self.sources)
        out.append(
            f"  KV per token   {fmt_bytes(self.kv_bytes_per_token):>11}  {src.get('kv_bytes_per_token', '')}"
        )
        if self.max_model_len:
            conc = self.concurrency
            seqs = f" (--max-num-seqs {self.max_num_seqs})" if self.max_num_seqs else ""
            out.append(
                f"  max-model-len  {self.max_model_len:>11,}  "
                + (f"{conc:.2f} full-length requests at once{seqs}" if conc is not None else "")
            )
        out += [f"  note: {n}" for n in self.notes]
        return out

    @field_serializer("sources")
    def _sources(self, sources: tuple[tuple[str, str], ...]) -> dict[str, str]:
        total = {"gpu_total_bytes": self.gpu_total_source} if self.gpu_total_source else {}
        return {**dict(sources), **total}


@dataclass(frozen=True)
class KvComparison:
    """The estimate's KV capacity next to the one vLLM logged at start-up."""

    estimated: int | None
    logged: int | None

    @property
    def ratio(self) -> float | None:
        """logged / estimated (1.0: exact)."""
        if not self.estimated or self.logged is None:
            return None
        return self.logged / self.estimated

    def line(self) -> str:
        """``KV cache: vLLM 1,048,576 tokens · estimate 1,048,576 (100.0 %)``."""
        logged = f"vLLM {self.logged:,} tokens" if self.logged is not None else "vLLM: not logged yet"
        est = f"estimate {self.estimated:,}" if self.estimated is not None else "no estimate"
        ratio = f" ({self.ratio:.1%} of the estimate)" if self.ratio is not None else ""
        return f"KV cache: {logged} · {est}{ratio}"
