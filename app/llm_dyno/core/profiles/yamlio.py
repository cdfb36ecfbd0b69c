"""The one place that reads and writes YAML: safe loading with line numbers, readable dumping.

Every YAML file the app reads (profiles, settings, suites, references, compose files) comes through
:func:`load_with_lines`, which bounds what a file can cost before anything is built from it: nesting
depth (``a: [[[[…`` 5,000 deep overflows the recursive composer), the length of one line or value (a
2 MB one-line ``notes`` stalls every widget that shows it), recursive aliases (``n: &n [*n]`` makes
every walker loop for ever) and alias expansion (a 317-byte "billion laughs" file expands to
gigabytes). Each refusal is a :class:`ProfileError` naming the file and line.

Mappings are read as Compose reads them (go-yaml v3): a key written twice in one mapping is refused,
naming both lines (PyYAML would keep the later one without a word), and merge keys follow the YAML
merge-key spec: keys written in the mapping win over merged ones, and in ``<<: [*a, *b]`` the EARLIER
mapping wins (PyYAML 6.0.4 gives the later one); a second ``<<`` in one mapping is a duplicate key.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from llm_dyno.core.errors import Location, ProfileError
from llm_dyno.core.profiles.compose_tags import register_tags

Path_ = tuple[str | int, ...]

MAX_DEPTH = 64  # a compose file's deepest real path (deploy.resources.reservations.devices[0]…) is ~8
MAX_NODES = 100_000  # values after alias expansion; the largest real files have a few thousand
MAX_VALUE_CHARS = 64 * 1024  # one line or one value; a long chat template is ~10 KB
# the pure-Python parser reads ~1 MB/s of the worst YAML: a bigger file would stall whoever reads it
MAX_FILE_CHARS = 1024 * 1024


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses nesting deeper than ``MAX_DEPTH`` and values longer than the limit
    while it composes (the composer recurses once per level, so the check must come before)."""

    def __init__(self, text: str, max_value_chars: int) -> None:
        super().__init__(text)
        self._depth = 0
        self._max_value = max_value_chars
        self._flattened: set[int] = set()  # mappings already merged (an alias constructs them again)

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.ScalarEvent) and len(event.value) > self._max_value:
            raise _Refused(
                f"a value of {len(event.value):,} characters (the limit is {self._max_value:,})", event
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(f"nesting deeper than {MAX_DEPTH} levels", event)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        """Refuse duplicate keys (naming both lines) and apply ``<<`` merge keys as the spec has them."""
        if id(node) in self._flattened:
            return
        self._flattened.add(id(node))
        own: list[tuple[yaml.Node, yaml.Node]] = []
        seen: dict[Any, yaml.Node] = {}
        merge: tuple[yaml.Node, yaml.Node] | None = None
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                if merge is not None:
                    raise _duplicate("<<", merge[0], key_node)
                merge = (key_node, value_node)
                continue
            if key_node.tag == "tag:yaml.org,2002:value":  # "=" as a key: a string, as PyYAML reads it
                key_node.tag = "tag:yaml.org,2002:str"
            key = self._key_of(key_node)
            if key in seen:
                raise _duplicate(_shown(key_node), seen[key], key_node)
            seen[key] = key_node
            own.append((key_node, value_node))
        if merge is None:
            return
        sources = merge[1].value if isinstance(merge[1], yaml.SequenceNode) else [merge[1]]
        merged: list[tuple[yaml.Node, yaml.Node]] = []
        for source in sources:  # the earlier mapping wins: a key is taken from the first that has it
            if not isinstance(source, yaml.MappingNode):
                raise _Refused("a merge key (<<) takes a mapping or a list of mappings", source)
            self.flatten_mapping(source)
            for key_node, value_node in source.value:
                key = self._key_of(key_node)
                if key not in seen:
                    seen[key] = key_node
                    merged.append((key_node, value_node))
        node.value = merged + own  # constructed in order: the mapping's own keys come last and win

    def _key_of(self, key_node: yaml.Node) -> Any:
        """What a key is once constructed (``1``, ``0x1`` and ``true`` are one key of the dict built),
        or the node itself."""
        if isinstance(key_node, yaml.ScalarNode):
            value = self.construct_object(key_node)
            try:
                hash(value)
            except TypeError:
                return id(key_node)
            return value
        return id(key_node)


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _shown(key_node: yaml.Node) -> str:
    text = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "a complex key"
    return text if len(text) <= 60 else text[:57] + "…"


def _duplicate(key: str, first: yaml.Node, again: yaml.Node) -> _Refused:
    first_line = first.start_mark.line + 1 if first.start_mark is not None else "?"
    return _Refused(
        f"the key '{key}' is written twice in one mapping (line {first_line} and line "
        f"{again.start_mark.line + 1 if again.start_mark is not None else '?'}); "
        "YAML keeps only one, and Docker Compose refuses the file",
        again,
        "keep the one you mean and delete the other",
    )


register_tags(_BoundedLoader)  # Compose's !reset and !override


class _Refused(Exception):
    """A bound broken at an event or node (carries its mark for the line)."""

    def __init__(
        self, problem: str, at: yaml.Event | yaml.Node, hint: str = "simplify the YAML at that line"
    ) -> None:
        super().__init__(problem)
        self.problem, self.hint = problem, hint
        self.line = at.start_mark.line + 1 if at.start_mark is not None else None


def _check_graph(root: yaml.Node) -> None:
    """Refuse a recursive alias or an expansion past ``MAX_NODES``, without recursion."""
    seen = 0
    # (node, entering): a node is on the current path between its enter and its exit
    # the line reported is that of the top-level entry being walked: an alias's target node carries
    # the line of its anchor, which may sit far above the entry that expands it
    stack: list[tuple[yaml.Node, bool, yaml.Node]] = [(root, True, root)]
    on_path: set[int] = set()
    while stack:
        node, entering, entry = stack.pop()
        if not entering:
            on_path.discard(id(node))
            continue
        if id(node) in on_path:
            raise _Refused("an alias that contains itself (a recursive alias)", entry)
        seen += 1
        if seen > MAX_NODES:
            raise _Refused(f"aliases that expand to more than {MAX_NODES:,} values (an alias bomb?)", entry)
        if isinstance(node, yaml.SequenceNode | yaml.MappingNode):
            on_path.add(id(node))
            stack.append((node, False, entry))
            children = (
                node.value
                if isinstance(node, yaml.SequenceNode)
                else [n for pair in node.value for n in pair]
            )
            stack.extend((child, True, child if node is root else entry) for child in reversed(children))


_BRACKETS = re.compile(r"[\[\]{}]")


def _deep_flow(text: str) -> int | None:
    """The line where ``[``/``{`` nesting passes ``MAX_DEPTH`` (None if it never does). PyYAML's
    scanner looks ahead through a run of flow openers before the composer sees the first one, in
    time quadratic in the run (3,000 of them take seconds), so deep flow nesting is refused before
    parsing. Brackets inside quoted or plain text count too: 64 unbalanced ones do not occur in a
    real file."""
    depth = 0
    for m in _BRACKETS.finditer(text):
        depth = depth + 1 if m.group() in "[{" else max(depth - 1, 0)
        if depth > MAX_DEPTH:
            return text.count("\n", 0, m.start()) + 1
    return None


def _long_line(text: str, limit: int) -> int | None:
    """The 1-based number of the first line longer than ``limit``, if any (cheap: no parsing)."""
    if len(text) <= limit:
        return None
    for number, line in enumerate(text.split("\n"), 1):
        if len(line) > limit:
            return number
    return None


def load_with_lines(
    text: str,
    source: str | None = None,
    *,
    max_value_chars: int = MAX_VALUE_CHARS,
    max_file_chars: int = MAX_FILE_CHARS,
) -> tuple[Any, dict[Path_, int]]:
    """Parse YAML safely; return the data and a map from field path to its 1-based line.

    Raises :class:`ProfileError` with the file and line of a syntax error or of a broken bound
    (depth, alias, size; see the module docstring). ``max_value_chars`` bounds one line or value
    and ``max_file_chars`` the file (suites with long prompts pass more).
    """
    long_line = _long_line(text, max_value_chars)
    if long_line is not None:
        raise ProfileError(
            f"refused: a line longer than {max_value_chars:,} characters",
            where=Location(source, long_line),
            hint="shorten it (a note, a prompt or a template belongs in a file of its own)",
        )
    if len(text) > max_file_chars:
        raise ProfileError(
            f"refused: {len(text):,} characters (the limit for this YAML file is {max_file_chars:,})",
            where=Location(source),
        )
    deep = _deep_flow(text)
    if deep is not None:
        raise ProfileError(
            f"refused: nesting deeper than {MAX_DEPTH} levels",
            where=Location(source, deep),
            hint="simplify the YAML at that line",
        )
    loader: _BoundedLoader | None = None
    try:
        loader = _BoundedLoader(text, max_value_chars)  # rejects unprintable characters already
        # compose once, construct from the same node tree: one parse gives both data and lines
        node = loader.get_single_node()
        if node is not None:
            _check_graph(node)
        data = loader.construct_document(node) if node is not None else None
    except _Refused as exc:
        raise ProfileError(
            f"refused: {exc.problem}", where=Location(source, exc.line), hint=exc.hint
        ) from None
    except RecursionError:  # a bound above should come first; never let one escape as a crash
        raise ProfileError("refused: nested too deeply", where=Location(source)) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "malformed YAML"
        raise ProfileError(
            f"not valid YAML: {problem}",
            where=Location(source, line),
            hint="fix the YAML syntax at that line",
        ) from None
    except yaml.YAMLError as exc:
        raise ProfileError(f"not valid YAML: {exc}", where=Location(source)) from None
    finally:
        if loader is not None:
            loader.dispose()
    lines: dict[Path_, int] = {}
    if node is not None:
        _walk(node, (), lines)
    return data, lines


def _walk(node: yaml.Node, path: Path_, lines: dict[Path_, int]) -> None:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                key = str(key_node.value)
                lines.setdefault((*path, key), key_node.start_mark.line + 1)
                _walk(value_node, (*path, key), lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, (*path, i), lines)


def line_for(lines: dict[Path_, int], path: Path_) -> int | None:
    """The line of ``path`` or of its nearest parent that has one."""
    p = tuple(path)
    while p:
        if p in lines:
            return lines[p]
        p = p[:-1]
    return lines.get(())


class _Dumper(yaml.SafeDumper):
    """Block style, literal blocks for multi-line strings, no aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def dump(data: Any) -> str:
    """Dump data as human-friendly YAML, keeping key order."""
    return yaml.dump(
        data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100
    )
