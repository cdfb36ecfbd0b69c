"""Multi-turn chat: each turn sends the whole conversation so far (the server's earlier answers as
assistant messages) and one more user message, so the context grows turn by turn, as in a long chat or
an agent's session. Per turn: TTFT, decode TPS, cached prompt tokens, acceptance.

Settings (the suite's ``workload:``): ``turns`` (default 8). The user messages are the suite's prompts'
in turn (cycled); the first prompt's messages open the chat. The turns stop before the next one would
pass the server's ``--max-model-len`` (its prompt estimated from the last turn's), saying so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_dyno.core.bench.suite import Message, SuitePrompt
from llm_dyno.core.bench.workloads.common import (
    DEFAULT_TURNS,
    salted,
    save,
    server_limit,
    setting,
    step_of,
    warm_up,
)
from llm_dyno.core.bench.workloads.records import WorkloadReport

if TYPE_CHECKING:
    from llm_dyno.core.bench.workloads.protocol import WorkloadRunner


def run(runner: WorkloadRunner) -> None:
    """Run the conversation into ``runner.result`` (see the module docstring)."""
    turns = int(setting(runner, "turns", DEFAULT_TURNS))
    limit, limit_from = server_limit(runner)
    report = WorkloadReport(kind="multi-turn", max_model_len=limit, max_model_len_from=limit_from)
    save(runner, report)
    if not warm_up(runner):
        return
    prompts = runner.suite.prompts
    # a salt opens the chat: an earlier run of this suite on the same server leaves nothing cached
    history: tuple[Message, ...] = ()
    opening_tokens = last_prompt = last_answer = 0
    base = runner.suite.warmups
    for turn in range(1, turns + 1):
        source = prompts[(turn - 1) % len(prompts)]
        said = source.messages if turn == 1 else tuple(m for m in source.messages if m.role != "system")
        messages = salted(said) if turn == 1 else (*history, *said)
        if turn > 1 and limit is not None:
            expected = last_prompt + last_answer + opening_tokens + source.max_tokens
            if expected > limit:
                report = report.with_note(
                    f"turns {turn}–{turns}: turn {turn} would need about {expected:,} tokens "
                    f"(prompt and answer), past the server's max-model-len {limit:,}; stopped after turn "
                    f"{turn - 1}",
                    skipped=True,
                )
                break
        prompt = SuitePrompt(f"turn {turn}", source.max_tokens, messages)
        measured = runner.step(prompt, base + turn, base + turns, False)
        if measured is None:
            break
        step = step_of(measured, f"turn {turn}")
        report = report.with_step(step)
        save(runner, report)
        last_prompt = step.context_tokens or last_prompt
        last_answer = step.completion_tokens
        opening_tokens = opening_tokens or last_prompt
        history = (*messages, Message("assistant", measured.outcome.text))
    save(runner, report)
