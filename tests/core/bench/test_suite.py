"""Suite files: the built-in ones match the community protocol; bad files name file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_dyno.core.bench.suite import SuiteError, available_suites, load_suite, suite_from_yaml


def test_community_suite_is_the_protocol_exactly() -> None:
    s = load_suite("community")
    assert (s.warmups, s.runs, s.endpoint) == (3, 5, "chat")
    narr, code = s.prompts
    assert narr.name == "narrative" and narr.max_tokens == 1000
    assert narr.messages[0].content == "Write a detailed 800-word essay explaining transformer attention."
    assert code.name == "code" and code.max_tokens == 800
    assert (
        code.messages[0].content
        == "Write a Python implementation of quicksort with comments explaining each step."
    )
    body = s.request_body(narr, "m")
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0.6 and body["top_p"] == 0.95
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert (
        body["messages"] == [{"role": "user", "content": narr.messages[0].content}]
        and body["max_tokens"] == 1000
    )


def test_quick_suite_and_counts_override() -> None:
    q = load_suite("quick")
    assert (q.warmups, q.runs) == (1, 2)
    assert q.with_counts(runs=7).runs == 7 and q.with_counts(runs=7).warmups == 1


def test_user_suites_shadow_builtin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_DYNO_HOME", str(tmp_path))
    (tmp_path / "data" / "suites").mkdir(parents=True)
    (tmp_path / "data" / "suites" / "quick.yaml").write_text(
        "name: mine\nprompts:\n  - {name: a, max_tokens: 5, messages: [{role: user, content: hi}]}\n"
    )
    assert load_suite("quick").name == "mine"
    assert "community" in available_suites()
    with pytest.raises(SuiteError, match="no suite named 'nope'"):
        load_suite("nope")


@pytest.mark.parametrize(
    ("text", "line", "field", "message"),
    [
        ("name: x\nprompts: []\n", 2, "prompts", "non-empty list"),
        (
            "name: x\nruns: two\nprompts:\n"
            "  - {name: a, max_tokens: 5, messages: [{role: user, content: hi}]}\n",
            2,
            "runs",
            "integer",
        ),
        (
            "name: x\nprompts:\n  - name: a\n    max_tokens: 0\n    messages: [{role: user, content: hi}]\n",
            4,
            "prompts[0].max_tokens",
            "≥ 1",
        ),
        (
            "name: x\nprompts:\n  - name: a\n    max_tokens: 5\n    messages:\n      - {role: user}\n",
            6,
            "prompts[0].messages[0]",
            "role",
        ),
        ("name: x\ncolour: red\nprompts: []\n", 2, "colour", "unknown field"),
        (
            "name: x\nprompts:\n  - {name: a, max_tokens: 5, messages: [{role: u, content: c}]}\n"
            "  - {name: a, max_tokens: 5, messages: [{role: u, content: c}]}\n",
            2,
            "prompts",
            "duplicate",
        ),
        ("name: x\nprompts: [\n", 3, None, "not valid YAML"),
    ],
)
def test_bad_suites_name_file_line_field(text: str, line: int, field: str | None, message: str) -> None:
    with pytest.raises(Exception, match=message) as exc:
        suite_from_yaml(text, "bad.yaml")
    where = exc.value.where  # type: ignore[attr-defined]
    assert where.file == "bad.yaml" and where.line == line and where.field == field
    assert "bad.yaml" in str(exc.value)
