"""What a job tells its front end while it runs: one typed union, so a front end handles a closed set.

Each event comes from the part of the core that knows it: a benchmark's runs (:class:`ProgressEvent`),
a load level's requests (:class:`LevelStarted`, :class:`RequestDone`, :class:`LevelFinished`,
:class:`LoadMessage`), a tune's trials (:class:`TrialStarted`, :class:`TrialFinished`,
:class:`TuneMessage`) and the history (:class:`ResultStored`, :class:`StoreFailed`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:  # the union is for the type checker: importing its members at start cost 0.06 s
    from llm_dyno.core.bench.load_runner import LevelFinished, LevelStarted, LoadMessage, RequestDone
    from llm_dyno.core.bench.runner import ProgressEvent
    from llm_dyno.core.jobs.storing import ResultStored, StoreFailed
    from llm_dyno.core.tune.record import TrialFinished, TrialStarted, TuneMessage

JobEvent: TypeAlias = (
    "ProgressEvent | LevelStarted | RequestDone | LevelFinished | LoadMessage | TrialStarted | TrialFinished"
    " | TuneMessage | ResultStored | StoreFailed"
)
Emit: TypeAlias = Callable[["JobEvent"], None]
