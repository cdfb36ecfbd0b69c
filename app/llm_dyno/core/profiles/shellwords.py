"""Split pasted shell text the way a POSIX shell reads it, and find where one command ends.

Quotes, backslash escapes and ``\\``-newline continuations are honoured; ``#`` starts a comment at the
start of a word; control operators (``;`` ``&&`` ``||`` ``|`` ``&``, redirections, a newline that is
not continued) end a command. Splitting expands nothing: ``$X``, ``$(…)`` and backquotes stay as
written and are flagged, so callers can warn about them; :func:`expand_word` fills them in where a
value must mean what the shell would have made of it (a volume's host folder).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from llm_dyno.core.errors import ImportFormatError, Location

_OPERATOR_CHARS = frozenset(";&|<>()")
_TWO_CHAR_OPS = frozenset({"&&", "||", ";;", ">>", "<<", ">&", "<&", "|&"})
NEWLINE = "\n"


@dataclass(frozen=True)
class Word:
    """A word (or a control operator) of shell text, with the line it starts on and its offsets."""

    text: str
    line: int
    start: int
    end: int
    operator: bool = False
    substitution: bool = False  # it holds $(…) or `…`, which a shell would run
    literal_dollar: bool = False  # it holds a $ a shell passes as written (single-quoted, or \$)


@dataclass
class Split:
    """The words of a text, and the comment lines found inside continued commands (skipped)."""

    words: list[Word] = field(default_factory=list)
    skipped_comment_lines: list[int] = field(default_factory=list)


class _Reader:
    def __init__(self, text: str, source: str | None, skip_comment_lines: bool) -> None:
        self.text, self.source, self.skip = text, source, skip_comment_lines
        self.i, self.line = 0, 1
        self.out = Split()
        self.buf: list[str] = []
        self.literal_dollar = False  # a $ of the word is one a shell passes as written
        self.in_word = False
        self.word_start = self.word_line = 0
        self.subst = False

    def _begin(self) -> None:
        if not self.in_word:
            self.buf, self.word_start, self.word_line, self.subst = [], self.i, self.line, False
            self.literal_dollar = False
            self.in_word = True

    def _end(self) -> None:
        if self.in_word:
            self.out.words.append(
                Word(
                    "".join(self.buf),
                    self.word_line,
                    self.word_start,
                    self.i,
                    substitution=self.subst,
                    literal_dollar=self.literal_dollar,
                )
            )
            self.in_word = False

    def _put(self, text: str, *, literal: bool = False) -> None:
        """Add text to the word; ``literal``: the shell passes its $ as written."""
        self.buf.append(text)
        self.literal_dollar = self.literal_dollar or (literal and "$" in text)

    def _op(self, text: str) -> None:
        self._end()
        self.out.words.append(Word(text, self.line, self.i, self.i + len(text), operator=True))
        self.i += len(text)

    def _unclosed(self, what: str, line: int) -> ImportFormatError:
        return ImportFormatError(
            f"unbalanced quotes: a {what} opened here is never closed",
            where=Location(self.source, line, "command"),
            hint="close the ' or \" (a JSON value needs single quotes around it)",
        )

    def _continuation(self) -> None:
        """After a backslash-newline: a comment-only line there is skipped (and reported)."""
        self.i += 2
        self.line += 1
        while self.skip:
            rest = self.text[self.i :]
            stripped = rest.split("\n", 1)[0].strip()
            if not stripped.startswith("#"):
                return
            self.out.skipped_comment_lines.append(self.line)
            nl = self.text.find("\n", self.i)
            if nl < 0:
                self.i = len(self.text)
                return
            self.i, self.line = nl + 1, self.line + 1

    def _single(self) -> None:
        line = self.line
        end = self.text.find("'", self.i + 1)
        if end < 0:
            raise self._unclosed("'", line)
        chunk = self.text[self.i + 1 : end]
        self._put(chunk, literal=True)
        self.line += chunk.count("\n")
        self.i = end + 1

    def _double(self) -> None:
        line = self.line
        self.i += 1
        while True:
            if self.i >= len(self.text):
                raise self._unclosed('"', line)
            c = self.text[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\" and self.text[self.i + 1 : self.i + 2] in ('"', "\\", "$", "`", "\n"):
                nxt = self.text[self.i + 1]
                if nxt == "\n":
                    self.line += 1
                else:
                    self._put(nxt, literal=True)
                self.i += 2
                continue
            if c in "$`":
                self._substitution()
                continue
            if c == "\n":
                self.line += 1
            self._put(c)
            self.i += 1

    def _ansi_c(self) -> None:
        """``$'…'``, bash's quoting with backslash escapes (``$'a\\'b'`` is ``a'b``): the word's text,
        not a variable (read as ``$`` and a quoted word, a value written this way would pass for a
        reference)."""
        line, text = self.line, self.text
        i = self.i + 2
        while True:
            if i >= len(text):
                raise self._unclosed("$'", line)
            c = text[i]
            if c == "'":
                self.i = i + 1
                return
            if c == "\\" and i + 1 < len(text):
                nxt = text[i + 1]
                m = _ANSI_NUMERIC.match(text, i + 1)
                if m is not None:
                    digits = m.group()
                    self.buf.append(chr(int(digits[1:], 16) if digits[0] == "x" else int(digits, 8)))
                    i = m.end()
                    continue
                self.buf.append(_ANSI_ESCAPES.get(nxt, "\\" + nxt))
                i += 2
                continue
            if c == "\n":
                self.line += 1
            self.buf.append(c)
            i += 1

    def _substitution(self) -> None:
        """``$(…)`` or ``…`` copied as written (a ``$`` alone is an ordinary character here)."""
        text, i = self.text, self.i
        if text[i] == "`":
            end = text.find("`", i + 1)
        elif text[i + 1 : i + 2] == "(":
            depth, end = 0, -1
            for j in range(i + 1, len(text)):
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                if depth == 0:
                    end = j
                    break
        else:
            self._put("$")
            self.i += 1
            return
        if end < 0:
            raise self._unclosed("command substitution", self.line)
        chunk = text[i : end + 1]
        self._put(chunk)
        self.line += chunk.count("\n")
        self.subst = True
        self.i = end + 1

    def read(self) -> Split:
        text = self.text
        while self.i < len(text):
            c = text[self.i]
            if c == "\\":
                if text[self.i + 1 : self.i + 2] == "\n":
                    self._continuation()
                    continue
                self._begin()
                self._put(text[self.i + 1 : self.i + 2], literal=True)
                self.i += 2
            elif c in " \t\r":
                self._end()
                self.i += 1
            elif c == "\n":
                self._op(NEWLINE)
                self.line += 1
            elif c == "#" and not self.in_word:
                nl = text.find("\n", self.i)
                self.i = len(text) if nl < 0 else nl
            elif c in _OPERATOR_CHARS:
                two = text[self.i : self.i + 2]
                self._op(two if two in _TWO_CHAR_OPS else c)
            else:
                self._begin()
                if c == "'":
                    self._single()
                elif c == '"':
                    self._double()
                elif text.startswith("$'", self.i):
                    self._ansi_c()
                elif c in "$`":
                    self._substitution()
                else:
                    self._put(c)
                    self.i += 1
        self._end()
        return self.out


_ANSI_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b"}
_ANSI_ESCAPES |= {"f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_ANSI_NUMERIC = re.compile(r"x[0-9A-Fa-f]{1,2}|[0-7]{1,3}")


def split_shell(text: str, source: str | None = None, *, skip_comment_lines: bool = False) -> Split:
    """The words and operators of shell text. ``skip_comment_lines``: a ``#`` line right after a
    ``\\`` continuation is skipped and the command goes on (a shell would end the command there)."""
    return _Reader(text, source, skip_comment_lines).read()


def first_command(words: list[Word]) -> tuple[list[Word], list[Word]]:
    """The first command's words (leading blank lines skipped) and every word and operator after its
    end (empty when only line ends follow)."""
    i = 0
    while i < len(words) and words[i].operator and words[i].text == NEWLINE:
        i += 1
    j = i
    while j < len(words) and not words[j].operator:
        j += 1
    rest = words[j:]
    if all(w.operator and w.text == NEWLINE for w in rest):
        rest = []
    return words[i:j], rest


def commands(words: list[Word]) -> list[list[Word]]:
    """The text split into simple commands at every control operator (operators dropped)."""
    out: list[list[Word]] = [[]]
    for w in words:
        if w.operator:
            if out[-1]:
                out.append([])
        else:
            out[-1].append(w)
    return [c for c in out if c]


def rest_text(text: str, rest: list[Word]) -> str:
    """The source text from the first word of ``rest`` on, on one line, for a warning."""
    rest = [w for w in rest if not (w.operator and w.text == NEWLINE)]
    if not rest:
        return ""
    tail = " ".join(text[rest[0].start :].replace("\\\n", " ").split())  # continuations joined
    return tail if len(tail) <= 80 else tail[:77] + "…"


_PARAM = re.compile(
    r"\$\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?-)(?P<default>[^}]*))?\}"
    r"|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)"
)
_PWD_SUBSTITUTION = re.compile(r"\$\(\s*pwd\s*\)")


def expand_word(text: str, environ: Mapping[str, str], cwd: str, where: Location) -> tuple[str, list[str]]:
    """A word with the expansions a shell performs when the pasted line runs, and what was filled in.

    ``text`` is an unquoted or double-quoted word (none of its ``$`` passed as written): ``$(pwd)``,
    ``$PWD`` and ``${PWD}`` become ``cwd``; ``$name``, ``${name}`` and ``${name:-default}`` come from
    ``environ``. A leading ``~`` is left as written (launch and every export read it as the home
    folder). Any other command substitution (``$(id -u)``, backquotes) is never run, and a variable
    that is unset or empty (the shell would mount a broken path) is refused, naming it.
    """
    filled: list[str] = []
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        m = _PWD_SUBSTITUTION.match(text, i)
        if m is not None:
            out.append(cwd)
            filled.append(f"{m.group()} = {cwd}")
            i = m.end()
            continue
        if c == "`" or text.startswith("$(", i):
            raise ImportFormatError(
                f"{text!r} holds a command substitution ({_substitution_text(text, i)}) that a shell "
                "would run; LLM Dyno never runs commands from an imported line",
                where=where,
                hint="replace it with the value it prints (only $(pwd) is filled in, with this folder)",
            )
        if c != "$":
            out.append(c)
            i += 1
            continue
        m = _PARAM.match(text, i)
        if m is None:
            if text[i + 1 : i + 2] in ("", "/", ":", ",", "."):
                out.append(c)  # a $ before no name is passed as written
                i += 1
                continue
            raise ImportFormatError(
                f"{text!r} holds {text[i : i + 2]!r}, a shell expansion LLM Dyno cannot fill in",
                where=where,
                hint="write the folder it stands for",
            )
        name = m.group("braced") or m.group("bare")
        value = cwd if name == "PWD" else environ.get(name, "")
        # ${name:-d}: d when unset or empty; ${name-d}: d when unset only
        if not value and m.group("op") in (":-", "-") and (m.group("op") == ":-" or name not in environ):
            value = m.group("default")
        if not value:
            raise ImportFormatError(
                f"{text!r}: ${name} is not set here (or is empty), so a shell would mount "
                f"{text[:i] + text[m.end() :]!r}, a broken path",
                where=where,
                hint=f"set {name} in the environment the import runs in, or write the folder instead",
            )
        out.append(value)
        filled.append(f"{m.group()} = {value}")
        i = m.end()
    return "".join(out), filled


def _substitution_text(text: str, i: int) -> str:
    """The command substitution starting at ``i``, for an error message."""
    close = text.find("`" if text[i] == "`" else ")", i + 1)
    return text[i : close + 1] if close >= 0 else text[i:]
