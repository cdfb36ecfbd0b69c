"""The one mapping from pydantic's ``ValidationError`` to the app's message: what is wrong, and where
(file, line where the YAML loader recorded one, field path such as ``docker.image`` or ``args[3]``).

Every model the app reads from a file (profiles, references, the settings) and every copy made with
``with_changes`` goes through :func:`problem_of`, so a bad value reads the same wherever it is found.
A validator that knows a finer place than pydantic's location (the engine-flag check knows the
``args`` item) raises :class:`FieldProblem`, which carries that field and a hint through pydantic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from llm_dyno.core.errors import Location
from llm_dyno.core.profiles.yamlio import Path_, line_for
from llm_dyno.core.secrets import secret_argument


class FieldProblem(ValueError):
    """A validator's problem that names its own field (``args[3]``) and what to do."""

    def __init__(self, message: str, *, loc: Sequence[str | int], hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.loc: Path_ = tuple(loc)
        self.hint = hint


@dataclass(frozen=True)
class Problem:
    """The first problem of a validation error, as the user reads it."""

    message: str
    where: Location
    hint: str | None = None

    @property
    def field(self) -> str | None:
        """The field as written in messages: ``docker.image``, ``args[3]``."""
        return self.where.field


def field_name(loc: Path_) -> str | None:
    """``("args", 3)`` → ``args[3]``; ``("docker", "image")`` → ``docker.image``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or None


def problem_of(
    exc: ValidationError,
    *,
    source: str | None = None,
    lines: dict[Path_, int] | None = None,
    at: Path_ = (),
) -> Problem:
    """The user's message for ``exc``; ``at`` is where the validated mapping sits in the file."""
    errors = exc.errors()
    err = errors[0]
    loc: Path_ = tuple(err["loc"])
    msg = str(err["msg"]).removeprefix("Value error, ")
    hint: str | None = None
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, FieldProblem):
        msg, loc, hint = cause.message, (*loc, *cause.loc), cause.hint
    elif err["type"] == "extra_forbidden":
        msg = f"unknown field '{loc[-1]}'"
    elif err["type"] == "missing":
        msg = f"required field '{loc[-1]}' is missing"
    if len(errors) > 1:
        msg += f" (and {len(errors) - 1} more problem(s))"
    path = (*at, *loc)
    line = line_for(lines, path) if lines else None
    return Problem(msg, Location(source, line, field_name(path)), hint)


def refuse_secret_arguments(argv: Sequence[str], *, model_words: int) -> None:
    """Refuse a profile whose ``vllm serve`` arguments refer to a secret outside the secret flags
    (``--served-model-name ${HF_TOKEN}``): :class:`FieldProblem` naming the flag and its field
    (``model`` for the first ``model_words`` words of ``argv``, else ``args[i]``), never the value.

    The launch plan refuses the same arguments (:func:`~llm_dyno.core.secrets.split_secret_flags`);
    checking here too makes ``profile validate``, import and the editor say so before any launch."""
    found = secret_argument(argv)
    if found is None:
        return
    at = found.index - model_words
    loc: tuple[str | int, ...] = ("model",) if at < 0 else ("args", at)
    raise FieldProblem(found.message(), loc=loc, hint=found.hint())
