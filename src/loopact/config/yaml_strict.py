"""YAML with duplicate keys refused: ``agent:`` written twice is an error, not a silent merge.

PyYAML's ``safe_load`` keeps the last of two equal keys, so a second ``agent:`` section
dropped the first without a word (a newcomer's audit). The YAML 1.2 spec says mapping keys
are unique; this loader enforces it for every file loopact reads as configuration (the
config file, ``--mcp-config``, hardware profiles, site maps, board files).
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that raises on a key given twice in one mapping."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, Node] = {}
        for key_node, _value in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # "<<: *base" is not a duplicate
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:  # an unhashable key: SafeLoader reports it below
                continue
            if first is not key_node:
                raise ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found key {key!r} twice (first at line {first.start_mark.line + 1}); "
                    "write each key once",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)


def safe_load_unique(stream: Any) -> Any:
    """``yaml.safe_load(stream)`` that refuses a key given twice in one mapping.

    Args:
        stream: YAML text or an open text file.

    Returns:
        The loaded document (None when it is empty).

    Raises:
        yaml.YAMLError: The text is not YAML, or a mapping has a key twice (a
            ``ConstructorError`` naming the key and both lines).
    """
    return yaml.load(stream, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
