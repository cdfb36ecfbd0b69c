"""Pull progress from the engine's events: a recorded real pull, and the same with a layer the engine
already had."""

from __future__ import annotations

import json
from pathlib import Path

from llm_dyno.core.runtime.pull_progress import PullProgress

EVENTS = Path(__file__).resolve().parents[2] / "fixtures" / "docker" / "pull_events.jsonl"
IMAGE = "127.0.0.1:5000/llm-dyno-test/pulled:1"


def events() -> list[dict[str, object]]:
    return [json.loads(line) for line in EVENTS.read_text().splitlines() if line.strip()]


def replay(evs: list[dict[str, object]]) -> list[tuple[float | None, str]]:
    p = PullProgress(IMAGE)
    return [(p.fraction, p.describe()) for e in evs if p.feed(e)]


def test_recorded_pull_never_shows_done_before_the_big_layer_starts() -> None:
    shown = replay(events())
    fractions = [f for f, _ in shown if f is not None]
    # the small layer's 1,559 of 1,559 bytes come first: no fraction until the big layer's size is known
    first_known = next(i for i, (f, _) in enumerate(shown) if f is not None)
    assert first_known > 0 and all(text.endswith(("layer)", "layers)")) for _, text in shown[:first_known])
    assert fractions[0] < 0.1 and fractions == sorted(fractions) and fractions[-1] == 1.0
    assert shown[-1][1] == f"pulling {IMAGE}: 2 / 2 MB"


def test_layers_the_engine_has_count_for_nothing() -> None:
    evs = events()
    small = next(e["id"] for e in evs if e.get("status") == "Download complete")
    # as when the engine already had the small layer (a real pull's events, that one layer changed)
    changed = [e for e in evs if e.get("id") != small or e.get("status") == "Pulling fs layer"]
    changed.insert(2, {"status": "Already exists", "progressDetail": {}, "id": small})
    p = PullProgress(IMAGE)
    for e in changed:
        p.feed(e)
    assert p.layers[str(small)] == (0, 0) and p.fraction == 1.0
    assert p.describe() == f"pulling {IMAGE}: 2 / 2 MB"


def test_non_layer_events_change_nothing() -> None:
    p = PullProgress(IMAGE)
    assert not p.feed({"status": "Pulling from llm-dyno-test/pulled", "id": "1"})
    assert not p.feed({"status": "Digest: sha256:0123"})
    assert p.fraction is None and p.describe() == f"pulling {IMAGE}"
