"""Issue 28: causes ranked by the split, through `llm-dyno diagnose --json` in a child process.

Cases from the issue: a 230 W cap against the founding post's 330 W numbers with equal acceptance (the
cap is the first cause, sized from the post's own 230 W figures); acceptance clearly worse with time per
pass equal (acceptance first; build, graph and capture causes not the cause, their findings demoted).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import cli

REPO = Path(__file__).resolve().parents[1]
FOUNDING_LOG = REPO / "tests" / "fixtures" / "diagnose" / "founding_launch.log"
ORDER = ["likely", "possible", "unknown", "too small alone", "not the cause"]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    done = cli(tmp_path, "profile", "import", str(REPO / "profiles" / "qwen36-27b-mtp.yaml"))
    assert done.returncode == 0, done.stderr
    return tmp_path


def _json(home: Path, *args: str) -> dict[str, Any]:
    done = cli(home, "diagnose", "qwen36-27b-mtp", *args, "--json")
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_a_lower_cap_with_equal_acceptance_is_the_first_cause_sized(home: Path) -> None:
    data = _json(
        home, "--reference", "founding-post-3090-330w", "--tps", "33", "40",
        "--acceptance", "93,86.6,73.9", "--mean-acceptance-length", "3.55", "--power-cap", "230",
    )  # fmt: skip
    causes = data["causes"]
    first = causes[0]
    assert first["id"] == "power" and first["verdict"] == "likely"
    assert first["explains"] == pytest.approx(1.0, abs=0.1)
    assert "33 → 43" in first["reason"] and "230 to 330 W" in first["reason"]
    assert "×0.77 expected at 230 W, yours ×0.77" in first["reason"]
    acceptance = next(c for c in causes if c["id"] == "acceptance")
    assert acceptance["verdict"] == "not the cause"
    assert data["gap_split"]["acceptance_is_cause"] is False
    finding = next(f for f in data["findings"] if f["id"] == "power-cap-below-reference")
    assert finding["impact"]["tps_pct"] == pytest.approx(23.3, abs=0.1)  # 1 - 33/43
    assert [c["verdict"] for c in causes] == sorted((c["verdict"] for c in causes), key=ORDER.index)


def test_at_the_references_cap_the_cap_is_not_the_cause(home: Path) -> None:
    data = _json(home, "--reference", "founding-post-3090-330w", "--tps", "43", "54", "--power-cap", "330")
    power = next(c for c in data["causes"] if c["id"] == "power")
    assert power["verdict"] == "not the cause"
    assert "power-cap-below-reference" not in [f["id"] for f in data["findings"]]


def test_worse_acceptance_with_equal_time_per_pass_puts_acceptance_first(home: Path) -> None:
    # the reference: 3.37 tokens per pass at 66 / 84 TPS; yours 1 + 0.60 + 0.45 + 0.34 = 2.39 (×0.71)
    # at 46.8 / 59.6 TPS: the same 51.1 / 40.1 ms per pass
    data = _json(
        home, "--reference", "recipe-3090-claimed", "--log", str(FOUNDING_LOG),
        "--tps", "46.8", "59.6", "--acceptance", "60,45,34",
    )  # fmt: skip
    split = data["gap_split"]
    assert split["held_by"] == "acceptance" and split["acceptance_is_cause"] is True
    causes = data["causes"]
    assert causes[0]["id"] == "acceptance" and causes[0]["verdict"] == "likely"
    by_id = {c["id"]: c for c in causes}
    assert len(by_id) == len(causes)  # one cause per mechanism
    for mechanism in ("build", "piecewise", "capture"):
        assert by_id[mechanism]["verdict"] == "not the cause", by_id[mechanism]
        assert "time per pass equals the reference's" in by_id[mechanism]["reason"]
    # the build finding says the same as the build cause: ruled out once, not ranked high on its own
    build = next(f for f in data["findings"] if f["id"] == "image-differs-from-reference")
    assert build["severity"] == "info" and build["impact"]["basis"].startswith("not the difference here")
    assert by_id["build"]["finding"] == "image-differs-from-reference"
