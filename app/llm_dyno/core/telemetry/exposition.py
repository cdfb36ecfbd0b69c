"""Read the wanted samples of Prometheus exposition text, cheaply, with prometheus_client's parser.

A vLLM scrape has ~650 lines (histograms, comments) of which a snapshot needs ~35, and a server
exposes the same few dozen series on every scrape with only their values changing. So a
:class:`SampleReader` keeps only the lines of the names it wants, and sends each distinct series
(a sample line up to its value) through the parser once; later scrapes reuse the parsed name and
labels and read only the value. A value the parser would read differently (``_``, extra tokens, a bad
timestamp) still goes to the parser, so the result is always what the parser alone gives.
"""

from __future__ import annotations

Sample = tuple[str, dict[str, str], float]  # name, labels, value

# A vLLM server exposes a few hundred samples of the wanted names (per engine, model and draft
# position); a scrape with far more is refused before any is parsed, so that its cost stays bounded.
MAX_WANTED_SAMPLES = 10_000


class TooManySamples(ValueError):
    """A scrape holds more samples of the wanted names than :data:`MAX_WANTED_SAMPLES`."""


def _series_key(line: str) -> tuple[str, str]:
    """Split a sample line into its series (name and label set) and the rest (value, timestamp)."""
    cut = line.rfind("}") + 1 if "{" in line else line.find(" ")
    return (line, "") if cut <= 0 else (line[:cut], line[cut:])


def _plain_value(rest: str) -> float | None:
    """The value of ``rest`` (`` value [timestamp]``) when it is one the parser reads the same way
    (a float without ``_`` and an optional numeric timestamp); None sends the line to the parser."""
    parts = rest.split()
    if rest[:1] not in (" ", "\t") or not 1 <= len(parts) <= 2 or "_" in rest:
        return None
    try:
        value = float(parts[0])
        if len(parts) == 2:
            float(parts[1])
    except ValueError:
        return None
    return value


def _parsed(line: str) -> list[Sample]:
    """One sample line through prometheus_client's text parser (raises ValueError when invalid)."""
    # imported here: a series reaches the parser once, and the window starts without prometheus_client
    from prometheus_client.parser import text_string_to_metric_families

    return [
        (s.name, s.labels, float(s.value))
        for family in text_string_to_metric_families(line + "\n")
        for s in family.samples
    ]


class SampleReader:
    """Reads the samples named in ``wanted`` (all starting with ``prefix``) from exposition text.

    ``series`` maps a series key to its parsed name and labels; it is bounded by ``cache_max``
    (cleared when full). Not locked: a dict's reads and writes are atomic, and its entries never change.
    """

    def __init__(self, wanted: frozenset[str], *, prefix: str, cache_max: int = 4096) -> None:
        self.wanted = wanted
        self.prefix = prefix
        self.cache_max = cache_max
        self.series: dict[str, tuple[str, dict[str, str]]] = {}
        self._families: dict[str, bool] = {}

    def _may_hold_wanted(self, family: str) -> bool:
        """Whether a sample whose name starts with ``family`` can be a wanted one."""
        found = self._families.get(family)
        if found is None:
            if len(self._families) >= self.cache_max:
                self._families.clear()
            found = self._families[family] = any(name.startswith(family) for name in self.wanted)
        return found

    def _wanted_in(self, lines: list[str]) -> list[str]:
        return [
            line
            for line in lines
            if line.startswith(self.prefix)
            and line.split("{", 1)[0].split(" ", 1)[0].rstrip("\r\t") in self.wanted
        ]

    def wanted_lines(self, text: str) -> list[str]:
        """The sample lines of wanted names. Samples are matched by their own names; the HELP lines
        only let whole families be skipped without a look at each line: a family none of whose
        lines can be wanted (it has no line with the prefix, or every one starts with its name and no
        wanted name does) is passed over. Text without HELP lines, or with samples out of place, is
        read line by line."""
        chunks = text.split("\n# HELP ")
        out = self._wanted_in(chunks[0].split("\n"))
        marker = "\n" + self.prefix
        for chunk in chunks[1:]:
            prefixed = chunk.count(marker)
            if prefixed == 0:
                continue
            family = chunk[: chunk.find(" ")] if " " in chunk else chunk
            if not self._may_hold_wanted(family) and prefixed == chunk.count("\n" + family):
                continue
            out.extend(self._wanted_in(chunk.split("\n")[1:]))  # the first line is the HELP text
        return out

    def read(self, text: str) -> list[Sample]:
        """Every wanted sample of ``text``. Raises ValueError where the parser refuses a line."""
        out: list[Sample] = []
        lines = self.wanted_lines(text)
        if len(lines) > MAX_WANTED_SAMPLES:
            raise TooManySamples(
                f"{len(lines):,} samples of the series LLM Dyno reads, more than {MAX_WANTED_SAMPLES:,} "
                "(a vLLM server has a few hundred); refused"
            )
        for raw in lines:
            line = raw.rstrip("\r")
            key, rest = _series_key(line)
            series = self.series.get(key)
            value = _plain_value(rest) if series is not None else None
            if series is not None and value is not None:
                out.append((series[0], series[1], value))
                continue
            parsed = _parsed(line)
            out.extend(parsed)
            if len(parsed) == 1 and _plain_value(rest) is not None:
                if len(self.series) >= self.cache_max:
                    self.series.clear()
                self.series[key] = parsed[0][:2]
        return out
