"""The rule registry: ids written once, refused twice or malformed at import; each rule's reading named
in ``diagnose --json``; a rule added at runtime reaches the CLI."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llm_dyno.cli import run as run_cli
from llm_dyno.core.diagnose import registry
from llm_dyno.core.diagnose import rules as rules_module
from llm_dyno.core.diagnose.diagnosis_input import DiagnosisInput
from llm_dyno.core.diagnose.evidence import Finding, Impact, Severity
from llm_dyno.core.diagnose.registry import THIS_RULE, Rule
from llm_dyno.core.profiles.store import ProfileStore
from tests.core.diagnose.helpers import founding_profile

REPO = Path(__file__).resolve().parents[3]


def _import(path: Path, text: str) -> None:
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


def test_every_rule_has_one_id_and_says_what_it_looks_at() -> None:
    ids = [r.id for r in rules_module.RULES]
    assert len(ids) == len(set(ids)) == len(registry.registered()) >= 20
    assert all(r.looks_at for r in rules_module.RULES)
    assert "kv-dtype-differs-from-reference" in ids  # was made by the spec-decode rule under another id


@pytest.mark.parametrize(
    ("rule_id", "message"),
    [
        ("enforce-eager", "rule id 'enforce-eager' is registered twice"),
        ("Enforce Eager", "lower-case words joined by dashes"),
    ],
)
def test_a_duplicate_or_malformed_id_is_refused_when_its_module_is_imported(
    tmp_path: Path, rule_id: str, message: str
) -> None:
    before = registry.registered()
    module = (
        "from llm_dyno.core.diagnose.registry import rule\n\n"
        f"@rule({rule_id!r}, 'profile')\n"
        "def again(inp):\n    return []\n"
    )
    with pytest.raises(ValueError, match=message):
        _import(tmp_path / "more_rules.py", module)
    assert registry.registered() == before


def test_a_finding_under_an_unknown_id_is_refused_and_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_REGISTERED", dict(registry._REGISTERED))

    @registry.rule("test-made-up", "nothing")
    def made_up(inp: DiagnosisInput) -> list[Finding]:
        return [Finding("enforce-eager", "t", Severity.LOW, Impact(basis="b"), (), "a")]

    with pytest.raises(
        ValueError, match="rule 'test-made-up' made a finding with the unknown id 'enforce-eager'"
    ):
        made_up(DiagnosisInput())
    from llm_dyno.core.diagnose.engine import diagnose

    rule = registry._REGISTERED["test-made-up"]
    result = diagnose(DiagnosisInput(), (rule,))
    assert result.rule_errors[0][0] == "test-made-up" and "unknown id" in result.rule_errors[0][1]


def test_diagnose_json_says_what_each_rule_looked_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the CLI in a subprocess: the founding post's compose exposes the server without a key."""
    monkeypatch.setenv("LLM_DYNO_HOME", str(tmp_path))
    ProfileStore().save(founding_profile())
    env = {**os.environ, "PYTHONPATH": str(REPO / "app")}
    argv = [sys.executable, "-m", "llm_dyno", "diagnose", founding_profile().name, "--json"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    listed = {r["id"]: r for r in out["rules"]}
    assert list(listed) == [r.id for r in rules_module.RULES]
    assert listed["enforce-eager"]["looks_at"] == "profile, launch log"
    found = {f["id"] for f in out["findings"] + out["security"]}
    assert found and all(listed[i]["found"] >= 1 for i in found)
    assert sum(r["found"] for r in out["rules"]) == len(out["findings"]) + len(out["security"])


def test_a_rule_added_to_the_registry_reaches_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The "Extending" section's claim: one registered function, and ``diagnose`` runs and lists it."""
    monkeypatch.setenv("LLM_DYNO_HOME", str(tmp_path))
    monkeypatch.setattr(registry, "_REGISTERED", dict(registry._REGISTERED))

    @registry.rule("model-name-has-a-slash", "profile")
    def slash(inp: DiagnosisInput) -> list[Finding]:
        if inp.profile is None or "/" not in inp.profile.model:
            return []
        return [
            Finding(THIS_RULE, f"Model {inp.profile.model}", Severity.LOW, Impact(basis="test"), (), "none")
        ]

    added: Rule = registry._REGISTERED["model-name-has-a-slash"]
    monkeypatch.setattr(rules_module, "RULES", (*rules_module.RULES, added))
    ProfileStore().save(founding_profile())
    assert run_cli(["diagnose", founding_profile().name, "--json"]) == 0  # the in-process CLI entry
    out = json.loads(capsys.readouterr().out)
    assert out["rules"][-1] == {"id": "model-name-has-a-slash", "looks_at": "profile", "found": 1}
    assert "model-name-has-a-slash" in [f["id"] for f in out["findings"]]
