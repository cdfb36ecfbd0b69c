"""Reading the caps a user types for a sweep (no Qt)."""

from __future__ import annotations


def parse_caps(text: str) -> list[float]:
    """``"230, 260 290"`` → [230.0, 260.0, 290.0]; ValueError with a readable message otherwise."""
    parts = [p for p in text.replace(",", " ").split() if p]
    if not parts:
        raise ValueError("enter caps in watts, e.g. 230, 260, 290, 330")
    try:
        caps = [float(p.rstrip("Ww")) for p in parts]
    except ValueError:
        raise ValueError(f"caps must be numbers in watts, got {text!r}") from None
    if any(c <= 0 for c in caps):
        raise ValueError("caps must be positive")
    return caps
