"""The one place that reads and writes YAML: safe loading with line numbers, readable dumping."""

from __future__ import annotations

from typing import Any

import yaml

from llm_dyno.core.errors import Location, ProfileError

Path_ = tuple[str | int, ...]


def load_with_lines(text: str, source: str | None = None) -> tuple[Any, dict[Path_, int]]:
    """Parse YAML safely; return the data and a map from field path to its 1-based line.

    Raises :class:`ProfileError` with the file and line of a syntax error.
    """
    loader: yaml.SafeLoader | None = None
    try:
        loader = yaml.SafeLoader(text)  # rejects unprintable characters already
        # compose once, construct from the same node tree: one parse gives both data and lines
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
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
