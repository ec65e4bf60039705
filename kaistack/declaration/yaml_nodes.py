"""Checks over a YAML document's node tree, before it is built (a key twice in one mapping) and after building it
failed (which value it failed on): kaistack.declaration.yaml_load raises what they find, with the line."""

from __future__ import annotations

from collections.abc import Callable, Hashable

import yaml

__all__ = ["duplicate_key", "failing_scalar"]

_MERGE = "tag:yaml.org,2002:merge"
_STR = "tag:yaml.org,2002:str"


def _key_identity(key: yaml.ScalarNode) -> object:
    """What a key means once built, as the dict it goes into compares keys: `1` and `0x1`, `on` and `true`, even
    `1` and `true`, are one key there (the last would win); `1` and `'1'` are two."""
    if key.tag == _STR:
        return key.value
    try:
        value = yaml.constructor.SafeConstructor().construct_object(key)
    except (yaml.YAMLError, ValueError, TypeError):
        return (key.tag, key.value)  # the constructor refuses it later, with the line
    return value if isinstance(value, Hashable) else (key.tag, key.value)


def duplicate_key(root: yaml.Node) -> tuple[int, str] | None:
    """A key twice in one mapping, which PyYAML and Pulumi's go-yaml v2 resolve silently (the last wins;
    go-yaml refuses only in strict mode, decode.go:686) and kubectl's strict field validation refuses: nearly
    always a mistake (mis-indentation), and one that loses a value unseen. `<<` merge keys are YAML's way to
    override, not duplicates. Walked without recursion; a node aliases share is seen once.

    The first repeated key as (its line in the document, from 0; the key), or None."""
    seen_nodes: set[int] = set()
    stack: list[yaml.Node] = [root]
    twice: list[tuple[int, str]] = []
    while stack:
        node = stack.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys: set[object] = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != _MERGE:
                    same = _key_identity(key)
                    if same in keys:
                        twice.append((key.start_mark.line, key.value))
                    keys.add(same)
                if isinstance(value, yaml.CollectionNode):
                    stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(child for child in node.value if isinstance(child, yaml.CollectionNode))
    return min(twice) if twice else None  # the first in the file, whatever order the walk took


def failing_scalar(construct: Callable[[yaml.Node], object], node: yaml.Node) -> yaml.Node:
    """The first scalar under `node` whose own construction fails (the value to point at), else `node`."""
    stack, seen = [node], set()
    while stack:
        current = stack.pop()
        if id(current) in seen:  # an alias: the same node again, or a recursive one
            continue
        seen.add(id(current))
        if isinstance(current, yaml.ScalarNode):
            try:
                construct(current)
            except (ValueError, TypeError, yaml.YAMLError):
                return current
        elif isinstance(current, yaml.MappingNode):
            stack.extend(n for pair in reversed(current.value) for n in reversed(pair))
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(reversed(current.value))
    return node
