"""Per-request acceptance, where the server reports it (vLLM ``--per-request-spec-decode-metrics``).

The final usage chunk of a streamed response then carries ``metrics.speculative_decoding``:
``mean_acceptance_length``, ``draft_acceptance_rate``, ``acceptance_histogram`` (index j: verify steps
that accepted exactly j drafts), ``num_spec_steps``, ``num_accepted_draft_tokens``, ``num_draft_tokens``,
``num_spec_tokens`` (vLLM 0.32.0, ``vllm/entrypoints/generate/base/protocol.py``; experimental there).
It is the request's own figure, beside the ``/metrics`` deltas that also count any other request.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from llm_dyno.core.records import Record


class RequestAcceptance(Record):
    """One request's acceptance as the server reported it (or several requests' summed); stored as a
    run's ``request_acceptance`` (``model_dump`` / ``model_validate``)."""

    mean_length: float
    rate: float
    steps: int
    accepted: int
    drafted: int
    spec_tokens: int
    histogram: tuple[int, ...] = ()
    requests: int = 1

    @staticmethod
    def of(chunk: dict[str, Any]) -> RequestAcceptance | None:
        """From a response chunk's ``metrics.speculative_decoding`` (None when it has none or it is
        malformed: the field is experimental, a changed shape must not fail a benchmark)."""
        metrics = chunk.get("metrics")
        spec = metrics.get("speculative_decoding") if isinstance(metrics, dict) else None
        if not isinstance(spec, dict):
            return None
        try:
            found = RequestAcceptance(
                mean_length=float(spec["mean_acceptance_length"]),
                rate=float(spec["draft_acceptance_rate"]),
                steps=int(spec["num_spec_steps"]),
                accepted=int(spec["num_accepted_draft_tokens"]),
                drafted=int(spec["num_draft_tokens"]),
                spec_tokens=int(spec["num_spec_tokens"]),
                histogram=tuple(int(x) for x in spec.get("acceptance_histogram") or ()),
            )
        except (KeyError, TypeError, ValueError, OverflowError):
            return None
        return found if found.possible else None

    @property
    def possible(self) -> bool:
        """Whether these figures can all be true: counts >= 0, no more accepted than drafted, a rate
        from 0 to 1 and a mean length of at least 1 (0 allowed with no step), all finite numbers."""
        counts = (self.steps, self.accepted, self.drafted, self.spec_tokens, *self.histogram)
        return (
            min(counts) >= 0
            and self.accepted <= self.drafted
            and 0.0 <= self.rate <= 1.0
            and (1.0 <= self.mean_length < math.inf or (self.steps == 0 and self.mean_length == 0.0))
        )


def combine(items: Iterable[RequestAcceptance | None]) -> RequestAcceptance | None:
    """Several requests' acceptance from their summed counts (a prompt kind's figure); figures that
    cannot be true (:attr:`RequestAcceptance.possible`, e.g. stored before it was checked) left out."""
    found = [a for a in items if a is not None and a.possible]
    if not found:
        return None
    steps = sum(a.steps for a in found)
    accepted = sum(a.accepted for a in found)
    drafted = sum(a.drafted for a in found)
    width = max(len(a.histogram) for a in found)
    histogram = tuple(sum(a.histogram[i] for a in found if i < len(a.histogram)) for i in range(width))
    return RequestAcceptance(
        mean_length=1 + accepted / steps if steps else 1.0, rate=accepted / drafted if drafted else 0.0,
        steps=steps, accepted=accepted, drafted=drafted, spec_tokens=found[0].spec_tokens,
        histogram=histogram, requests=len(found),
    )  # fmt: skip
