"""The GPU memory budget's records and how they read: text lines for ``plan``, one line per GPU for the
window's launch panel, JSON for ``plan --json``, and the refusal a launch gives (see :mod:`.gpu_budget`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from llm_dyno.core.runtime.memory_report import fmt_bytes

_EPS = 1e-9


@dataclass(frozen=True)
class LiveMemory:
    """A GPU's memory as its driver reports it now (NVML counts reserved memory as used)."""

    used_bytes: int
    total_bytes: int
    name: str
    source: str


@dataclass(frozen=True)
class Holder:
    """A running server's share of one GPU."""

    profile_name: str
    state: str
    fraction: float
    bytes: int | None
    source: str


@dataclass(frozen=True)
class GpuLine:
    """One GPU of the budget: its size, live use, the running servers' shares and the new one's."""

    gpu: int
    total_bytes: int | None
    total_source: str
    live: LiveMemory | None
    live_note: str  # why there is no live reading ("" when there is one)
    holders: tuple[Holder, ...]
    fraction: float  # the new server's share
    bytes: int | None

    def _held(self, h: Holder) -> float:
        if self.total_bytes is None:
            return h.fraction
        return float(h.bytes if h.bytes is not None else h.fraction * self.total_bytes)

    @property
    def records(self) -> float:
        """What the running servers hold here (bytes, or fractions of the GPU when its size is unknown)."""
        return sum(self._held(h) for h in self.holders)

    @property
    def taken(self) -> float:
        """What is in use before the new server starts: the records or the live use, the larger."""
        live = float(self.live.used_bytes) if self.live is not None and self.total_bytes else 0.0
        return max(self.records, live)

    @property
    def unexplained(self) -> float:
        """Live use no running server's record accounts for (another program, or the driver)."""
        return max(0.0, self.taken - self.records)

    @property
    def wanted(self) -> float:
        """What the new server takes here (bytes, or a fraction when the size is unknown)."""
        if self.total_bytes is None:
            return self.fraction
        return float(self.bytes if self.bytes is not None else self.fraction * self.total_bytes)

    @property
    def whole(self) -> float:
        """The GPU as a whole, in the line's unit."""
        return float(self.total_bytes) if self.total_bytes is not None else 1.0

    @property
    def free_after(self) -> float:
        """What is left once the new server holds its share (negative: it does not fit)."""
        return self.whole - self.taken - self.wanted

    @property
    def fits(self) -> bool:
        """Whether the new server's share fits in what is free."""
        return self.free_after >= -_EPS * self.whole

    @property
    def room_fraction(self) -> float:
        """The largest ``--gpu-memory-utilization`` that fits here now (two decimals, rounded down)."""
        return max(0.0, math.floor((self.whole - self.taken) / self.whole * 100 + _EPS) / 100)

    @property
    def live_source(self) -> str:
        """Where the live use was read (``NVML``), or ``unknown``."""
        return self.live.source if self.live is not None else "unknown"

    def amount(self, value: float) -> str:
        """``70.20 GiB`` where the size is known, else ``0.50 of the GPU``."""
        return fmt_bytes(value) if self.total_bytes is not None else f"{value:.2f} of the GPU"


@dataclass(frozen=True)
class GpuBudget:
    """The budget of a planned server's GPUs beside the servers running on them."""

    profile_name: str
    gpus: tuple[GpuLine, ...]

    @property
    def fits(self) -> bool:
        """Whether the new server fits on every one of its GPUs."""
        return all(line.fits for line in self.gpus)

    def lines(self) -> list[str]:
        """The budget as ``plan`` prints it: per GPU its size, each holder, this one and what is left."""
        out = ["GPU budget (each vLLM server may use its --gpu-memory-utilization share of the whole GPU):"]
        for g in self.gpus:
            size = (
                f"{fmt_bytes(g.total_bytes)} ({g.total_source})"
                if g.total_bytes is not None
                else "size unknown"
            )
            live = (
                f"live use {fmt_bytes(g.live.used_bytes)} ({g.live.source})"
                if g.live is not None
                else f"live memory unknown ({g.live_note}); budgeted from the records only"
            )
            out.append(f"  GPU {g.gpu}: {size}; {live}")
            for h in g.holders:
                out.append(_row(f"{h.profile_name!r} ({h.state})", g.amount(g._held(h)), h.source))
            if g.unexplained > 0:
                out.append(_row("other programs", g.amount(g.unexplained), "live use beyond the records"))
            out.append(
                _row(f"{self.profile_name!r} (this one)", g.amount(g.wanted), f"{g.fraction:g} of the GPU")
            )
            out.append(_row("free after", g.amount(g.free_after), "fits" if g.fits else "does not fit"))
        return out

    def summary(self) -> list[str]:
        """One line per GPU, for the window's launch panel: ``GPU 0 of 140.40 GiB: 'a' 70.20 GiB, this
        one 70.20 GiB; 0 B free after``."""
        out = []
        for g in self.gpus:
            size = f" of {fmt_bytes(g.total_bytes)}" if g.total_bytes is not None else ""
            held = [f"{h.profile_name!r} {g.amount(g._held(h))}" for h in g.holders]
            if g.unexplained > 0:
                held.append(f"other programs {g.amount(g.unexplained)}")
            held.append(f"this one {g.amount(g.wanted)}")
            live = "" if g.live is not None else " (live memory unknown: from the records)"
            out.append(f"GPU {g.gpu}{size}: {', '.join(held)}; {g.amount(g.free_after)} free after{live}")
        return out

    def to_dict(self) -> dict[str, Any]:
        """The ``"gpu_budget"`` object of ``plan --json``."""
        return {
            "fits": self.fits,
            "gpus": [
                {
                    "gpu": g.gpu,
                    "total_bytes": g.total_bytes,
                    "total_source": g.total_source,
                    "live_used_bytes": g.live.used_bytes if g.live is not None else None,
                    "live": "unknown" if g.live is None else g.live.source,
                    "live_note": g.live_note,
                    "unit": "bytes" if g.total_bytes is not None else "fraction",
                    "held": [
                        {
                            "profile": h.profile_name,
                            "state": h.state,
                            "amount": g._held(h),
                            "fraction": h.fraction,
                        }
                        for h in g.holders
                    ],
                    "other": g.unexplained,
                    "this": {"profile": self.profile_name, "amount": g.wanted, "fraction": g.fraction},
                    "free_after": g.free_after,
                    "fits": g.fits,
                }
                for g in self.gpus
            ],
        }

    def _enough(self, names: list[str]) -> str:
        """Whose stop alone makes room (``'a' or 'b'``), else all of them (``'a' and 'b'``)."""
        short = [g for g in self.gpus if not g.fits]

        def frees(name: str, g: GpuLine) -> float:
            return sum(g._held(h) for h in g.holders if h.profile_name == name)

        alone = [n for n in names if all(frees(n, g) + g.free_after >= -_EPS * g.whole for g in short)]
        return " or ".join(map(repr, alone)) if alone else " and ".join(map(repr, names))

    def refusal(self) -> tuple[str, str]:
        """Why the new server does not fit and what would make it fit: (message, hint)."""
        problems: list[str] = []
        names: list[str] = []
        room = 1.0
        for g in (g for g in self.gpus if not g.fits):
            held = [f"{h.profile_name!r} holds {g.amount(g._held(h))}" for h in g.holders]
            if g.unexplained > 0:
                held.append(f"other programs hold {g.amount(g.unexplained)} (live use, {g.live_source})")
            problems.append(
                f"GPU {g.gpu}"
                + (f" ({fmt_bytes(g.total_bytes)})" if g.total_bytes is not None else "")
                + f": {', '.join(held) or 'nothing is recorded'}; {self.profile_name!r} would take "
                + g.amount(g.wanted)
                + (f" ({g.fraction:g} of the GPU)" if g.total_bytes is not None else "")
                + f", {g.amount(g.whole - g.taken)} is free"
            )
            names += [h.profile_name for h in g.holders if h.profile_name not in names]
            room = min(room, g.room_fraction)
        who = self._enough(names)
        # the message says what would make it fit in words any front end can show; the hint, in the CLI's
        ways = [f"{who} {'is' if ' and ' not in who else 'are'} stopped or asleep"] if names else []
        if room >= 0.01:
            ways.append(f"its GPU memory utilization is {room:.2f} or less")
        fits_when = (
            f"it fits once {', or once '.join(ways)}"
            if ways
            else "other programs hold the GPU: free it or give the profile other GPUs"
        )
        message = (
            f"cannot launch {self.profile_name!r}: it does not fit beside what runs on its GPU(s): "
            + "; ".join(problems)
            + f"; {fits_when}"
        )
        fixes = [f"stop or sleep {who} (`llm-dyno stop NAME`)"] if names else []
        if room >= 0.01:
            fixes.append(f"lower --gpu-memory-utilization of {self.profile_name!r} to {room:.2f} or less")
        if not fixes:
            fixes.append("free the GPU (other programs hold it) or set other gpus: in the profile")
        return message, "; or ".join(fixes)


def _row(label: str, amount: str, note: str) -> str:
    return f"    {label:<32} {amount:>18}  {note}"
