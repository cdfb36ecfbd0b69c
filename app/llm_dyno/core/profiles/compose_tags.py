"""Compose v2's ``!reset`` and ``!override`` YAML tags: what the loader builds for them, and how a
value is read once ``extends:`` has been applied (the markers removed).

Below both the YAML reader (:mod:`~llm_dyno.core.profiles.yamlio`, which registers the tags on its
loader) and the ``extends:`` merge (:mod:`~llm_dyno.core.profiles.compose_extends`, which obeys them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml


class Reset:
    """``!reset``: the key is removed, as if never written (also what ``extends`` brings)."""


@dataclass(frozen=True)
class Override:
    """``!override VALUE``: replaces what ``extends`` brings instead of merging with it."""

    value: Any


def _construct_reset(loader: yaml.SafeLoader, node: yaml.Node) -> Reset:
    return Reset()


def _construct_override(loader: yaml.SafeLoader, node: yaml.Node) -> Override:
    if isinstance(node, yaml.MappingNode):
        return Override(loader.construct_mapping(node, deep=True))
    if isinstance(node, yaml.SequenceNode):
        return Override(loader.construct_sequence(node, deep=True))
    return Override(loader.construct_scalar(node))  # type: ignore[arg-type]


def register_tags(loader: type[yaml.SafeLoader]) -> None:
    """Teach a YAML loader Compose's ``!reset`` and ``!override``."""
    loader.add_constructor("!reset", _construct_reset)
    loader.add_constructor("!override", _construct_override)


def strip_tags(value: Any) -> Any:
    """``value`` without the tag markers: ``!reset`` keys gone, ``!override`` values unwrapped."""
    if isinstance(value, Override):
        return strip_tags(value.value)
    if isinstance(value, dict):
        return {k: strip_tags(v) for k, v in value.items() if not isinstance(v, Reset)}
    if isinstance(value, list):
        return [strip_tags(v) for v in value if not isinstance(v, Reset)]
    return value
