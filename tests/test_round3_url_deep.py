"""``diagnose --url`` and ``watch --url`` against a server whose every answer is JSON nested 20,000
deep (issue 29, class 1): each exits non-zero with an error naming what it read, never a traceback and
never exit 0 as if all was fine. Through the CLI in a subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import cli
from tests.support.deep_json_server import DeepJSONServer


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


@pytest.mark.parametrize("json_lines", [False, True])
def test_watch_url_of_a_deep_json_server_fails_naming_its_metrics(tmp_path: Path, json_lines: bool) -> None:
    with DeepJSONServer(lifetime_s=40) as server:
        ran = cli(tmp_path, "watch", "--url", server.url, "--count", "2", *(["--json"] if json_lines else []))
    assert "Traceback" not in ran.stderr and "RecursionError" not in ran.stdout + ran.stderr
    assert ran.returncode == 1, ran.stdout
    errors = _errors(ran.stderr)
    assert len(errors) == 1, ran.stderr
    assert f"{server.url}/metrics: the answer is not Prometheus text" in errors[0]
    assert "/metrics" in server.paths


def test_diagnose_url_of_a_deep_json_server_fails_naming_the_source(tmp_path: Path) -> None:
    with DeepJSONServer(lifetime_s=40) as server:
        ran = cli(tmp_path, "diagnose", "--url", server.url)
        as_json = cli(tmp_path, "diagnose", "--url", server.url, "--json")
    for run in (ran, as_json):
        assert "Traceback" not in run.stderr and "RecursionError" not in run.stdout + run.stderr
        assert run.returncode != 0, run.stdout
        errors = _errors(run.stderr)
        assert len(errors) == 1, run.stderr
        assert f"{server.url}/metrics: the answer is not Prometheus text" in errors[0]
        assert "no findings" not in run.stdout  # no diagnosis printed as if the server had been read
