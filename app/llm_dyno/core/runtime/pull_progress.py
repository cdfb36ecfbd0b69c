"""How far a ``docker pull`` has got, from the engine's progress events.

The engine first lists the layers it will fetch ("Pulling fs layer", "Waiting"), then reports bytes
per layer ("Downloading" with current / total), and a layer small enough may jump straight to
"Download complete" without a total. A fraction is given only once every layer's size is known
(else a small first layer would show 100 % before the big ones start), and it never goes back.
Layers the engine already has ("Already exists") count for nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

_LISTED = ("Pulling fs layer", "Waiting")
_DONE = ("Download complete", "Verifying Checksum", "Extracting", "Pull complete", "Already exists")


@dataclass
class PullProgress:
    """Feed it every event of a pull; read :attr:`fraction` and :meth:`describe`."""

    image: str
    layers: dict[str, tuple[int, int | None]] = field(default_factory=dict)  # id -> (bytes, total)
    fraction: float | None = None

    def feed(self, event: dict[str, Any]) -> bool:
        """Take one event; True when the shown progress changed."""
        layer, status = str(event.get("id") or ""), str(event.get("status") or "")
        detail = event.get("progressDetail") or {}
        before = (self.fraction, self.describe())
        if not layer or " " in layer:  # "Pulling from …", "Digest: …": not a layer
            return False
        if status in _LISTED:
            self.layers.setdefault(layer, (0, None))
        elif status == "Downloading" and detail.get("total"):
            self.layers[layer] = (int(detail.get("current", 0)), int(detail["total"]))
        elif status in _DONE:
            _, total = self.layers.get(layer, (0, None))
            size = 0 if status == "Already exists" or total is None else total
            self.layers[layer] = (size, size)
        totals = [t for _, t in self.layers.values()]
        if totals and all(t is not None for t in totals) and sum(t or 0 for t in totals) > 0:
            done = sum(c for c, _ in self.layers.values())
            now = done / sum(t or 0 for t in totals)
            self.fraction = now if self.fraction is None else max(self.fraction, now)
        return (self.fraction, self.describe()) != before

    def describe(self) -> str:
        """``pulling IMAGE: 12 / 345 MB`` once the sizes are known, else the number of layers."""
        totals = [t for _, t in self.layers.values()]
        if totals and all(t is not None for t in totals):
            done = sum(c for c, _ in self.layers.values())
            return f"pulling {self.image}: {done / 1e6:.0f} / {sum(t or 0 for t in totals) / 1e6:.0f} MB"
        count = len(self.layers)
        return f"pulling {self.image}" + (f" ({count} layer{'s' if count != 1 else ''})" if count else "")
