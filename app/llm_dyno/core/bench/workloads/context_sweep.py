"""Decode speed against context length: the suite's first prompt behind filler text that brings the
prompt to each length of the suite's list (1K, 8K, 32K …), and per length the decode TPS and the time
per decode pass, one curve per profile in the history.

Lengths whose prompt and answer would pass the server's ``--max-model-len`` are skipped, saying so.
How many tokens the filler takes is measured first: two one-token calibration requests (warm-ups,
without and with 64 copies of it) read the server's own prompt token counts. Every request starts with
a new random salt, so each length is prefilled in full, never read from the prefix cache.

Settings (the suite's ``workload:``): ``contexts`` (prompt lengths in tokens, required), ``filler``
(the text repeated, a plain sentence by default).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_dyno.core.bench.suite import Message, SuitePrompt
from llm_dyno.core.bench.workloads.common import salted, save, server_limit, setting, step_of
from llm_dyno.core.bench.workloads.records import WorkloadReport

if TYPE_CHECKING:
    from llm_dyno.core.bench.workloads.protocol import WorkloadRunner

DEFAULT_FILLER = "The quick brown fox jumps over the lazy dog while the river runs past the old mill. "
CALIBRATION_UNITS = 64


def _messages(question: tuple[Message, ...], filler: str, units: int) -> tuple[Message, ...]:
    last = question[-1]
    padded = Message(last.role, filler * units + "\n\n" + last.content)
    return salted((*question[:-1], padded))


def run(runner: WorkloadRunner) -> None:
    """Run every length of the list into ``runner.result`` (see the module docstring)."""
    contexts = [int(c) for c in setting(runner, "contexts", [])]
    filler = str(setting(runner, "filler", DEFAULT_FILLER))
    limit, limit_from = server_limit(runner)
    report = WorkloadReport(kind="context-sweep", max_model_len=limit, max_model_len_from=limit_from)
    source = runner.suite.prompts[0]
    answer = source.max_tokens
    runnable = []
    for length in contexts:
        if limit is not None and length + answer > limit:
            report = report.with_note(
                f"{length:,} tokens: with the {answer:,}-token answer past the server's max-model-len "
                f"{limit:,}; not run",
                skipped=True,
            )
        else:
            runnable.append(length)
    save(runner, report)
    counts = []
    for i, units in enumerate((0, CALIBRATION_UNITS), start=1):
        probe = runner.step(
            SuitePrompt("calibration", 1, _messages(source.messages, filler, units)), i, 2, True
        )
        if probe is None:
            return
        counts.append(probe.run.prompt_tokens)
    if counts[0] is None or counts[1] is None or counts[1] <= counts[0]:
        save(runner, report.with_note("the server did not count the filler's tokens: no length was run"))
        return
    bare, per_unit = counts[0], (counts[1] - counts[0]) / CALIBRATION_UNITS
    report = report.with_note(
        f"the filler is {per_unit:.2f} tokens a copy, the bare prompt {bare} tokens (calibration)"
    )
    total = runner.suite.warmups + runner.suite.runs
    for length in runnable:
        units = max(0, round((length - bare) / per_unit))
        for i in range(1, total + 1):
            # a new salt each run: every run prefills its whole context
            prompt = SuitePrompt(f"ctx {length}", answer, _messages(source.messages, filler, units))
            measured = runner.step(prompt, i, total, i <= runner.suite.warmups)
            if measured is None:
                save(runner, report)
                return
            if not measured.run.warmup:
                report = report.with_step(step_of(measured, str(length), repeat=i, target=length))
                save(runner, report)
    save(runner, report)
