"""Checks over a YAML document's node tree, before it is built (a key twice in one mapping, `<<` merges) and after
building it failed (which value it failed on): kaistack.declaration.yaml_load raises what they find, with the line."""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any

import yaml

from kaistack.declaration.go_yaml import go_yaml_v2

__all__ = ["AmbiguousMerge", "duplicate_key", "failing_scalar", "flatten_merges", "key_identity", "merging_loader"]

_MERGE = "tag:yaml.org,2002:merge"
_STR = "tag:yaml.org,2002:str"
_VALUE = "tag:yaml.org,2002:value"


def key_identity(key: yaml.ScalarNode) -> object:
    """What a key means once built, as the dict it goes into compares keys: `1` and `0x1`, `on` and `true`, even
    `1` and `true`, are one key there (the last would win); `1` and `'1'` are two."""
    if key.tag == _STR:
        return key.value
    if key.tag == GO_PLAIN:  # a manifest's plain key, built as kubectl builds it
        built = go_yaml_v2(key.value)
        return built if isinstance(built, Hashable) else (key.tag, key.value)
    try:
        value = yaml.constructor.SafeConstructor().construct_object(key)
    except (yaml.YAMLError, ValueError, TypeError):
        return (key.tag, key.value)  # the constructor refuses it later, with the line
    return value if isinstance(value, Hashable) else (key.tag, key.value)


def duplicate_key(root: yaml.Node) -> tuple[int, str] | None:
    """A key twice in one mapping, which PyYAML and kubectl's go-yaml v2 resolve silently (the last wins; v2
    refuses only in strict mode, decode.go:686), Pulumi's go-yaml v3 refuses (decode.go:769-776) and kubectl's strict
    field validation refuses: nearly
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
                    same = key_identity(key)
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


def flatten_merges(node: yaml.MappingNode) -> None:
    """Resolve a mapping's `<<` merge key in place as the readers of a manifest do, refusing what they disagree on.

    kubectl and Pulumi read YAML with go-yaml v2 (go-yaml/yaml@v2.4.0 decode.go:661-664, 786-811): a merge sets
    its keys where it stands, over keys set before it, and in a list of mappings the first to set a key wins.
    go-yaml v3 (decode.go@v3.0.1:816-856, 959-996) and the YAML merge spec let a mapping's own keys win wherever
    they stand, and v3 reads only the last of two `<<` keys. PyYAML 6.0 lets the *last* mapping of a list win
    for most keys (its flatten_mapping compares key strings by id()), so a tenant could show kaistack
    `nvidia.com/gpu: 0` and the cluster `4`. So: first wins in a list, a mapping's keys after the merge win, and a
    key set before a `<<` that sets it too, or a second `<<`, is a ConstructorError (the readers disagree).
    """
    merges = [i for i, (key, _) in enumerate(node.value) if key.tag == _MERGE]
    for key, _ in node.value:
        if key.tag == _VALUE:  # PyYAML's own `=` key handling, kept
            key.tag = _STR
    if not merges:
        return
    if len(merges) > 1:
        raise _ambiguous(
            node.value[merges[1]][0],
            "a second `<<` merge key in one mapping (go-yaml v2, which kubectl uses, merges both; go-yaml v3 only "
            "the last): write one, `<<: [*a, *b]`",
        )
    at = merges[0]
    value = node.value[at][1]
    sources = value.value if isinstance(value, yaml.SequenceNode) else [value]
    merged: dict[object, tuple[yaml.Node, yaml.Node]] = {}
    for source in sources:
        if not isinstance(source, yaml.MappingNode):
            raise _merge_error(node, source, f"expected a mapping or list of mappings for merging, found {source.id}")
        flatten_merges(source)
        for pair in source.value:
            merged.setdefault(key_identity(pair[0]), pair)  # the first mapping to set a key wins
    before, after = node.value[:at], node.value[at + 1 :]
    for key, _ in before:
        if key_identity(key) in merged:
            raise _ambiguous(key, f"key {key.value!r} is set before a `<<` merge that sets it too (go-yaml "
                               "v2, which kubectl uses, takes the merged value; other readers this one): put the "
                               "key after the merge")  # fmt: skip
    own = {key_identity(key) for key, _ in [*before, *after]}
    node.value = [pair for identity, pair in merged.items() if identity not in own] + before + after


class AmbiguousMerge(yaml.constructor.ConstructorError):  # type: ignore[misc]
    """Valid YAML whose `<<` merge the readers of a manifest resolve differently."""


def _merge_error(node: yaml.Node, at: yaml.Node, problem: str) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError("while constructing a mapping", node.start_mark, problem, at.start_mark)


def _ambiguous(at: yaml.Node, problem: str) -> AmbiguousMerge:
    return AmbiguousMerge(None, None, problem, at.start_mark)


@functools.cache
def merging_loader(base: Any, kubectl: bool = False) -> Any:
    """`base` (a PyYAML loader class) with `<<` merges read as kubectl reads them (flatten_merges), not as PyYAML
    does, and plain scalars' tags resolved once per distinct text (libyaml's parser calls PyYAML's resolver, in
    Python, for every scalar: a generated file's million repeats of one name took seconds).

    `kubectl`: plain scalars built as kubectl's go-yaml v2 builds them (go_yaml.go_yaml_v2), not by YAML 1.1: an
    annotation `window: 10:30` is the text kubectl sends, not PyYAML's base-60 630."""

    def resolve(self: Any, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode and isinstance(value, str):
            if kubectl and implicit[0] and value != "<<":
                return GO_PLAIN
            return _scalar_tag(value, tuple(implicit))
        return base.resolve(self, kind, value, implicit)

    def flatten_mapping(_self: Any, node: yaml.MappingNode) -> None:
        flatten_merges(node)

    name = f"{'Kubectl' if kubectl else 'Merging'}{base.__name__}"
    loader: Any = type(name, (base,), {"flatten_mapping": flatten_mapping, "resolve": resolve})
    if kubectl:
        loader.add_constructor(GO_PLAIN, lambda _self, node: go_yaml_v2(node.value))
    return loader


GO_PLAIN = "tag:kaistack.dev,2026:go-yaml-v2-plain"  # a plain scalar to build as go-yaml v2 does


_RESOLVER = yaml.resolver.Resolver()


@functools.lru_cache(maxsize=1 << 16)
def _scalar_tag(value: str, implicit: tuple[bool, bool]) -> str:
    """Resolver.resolve for a scalar: SafeLoader has no path resolvers, so the tag depends on the text alone."""
    return str(_RESOLVER.resolve(yaml.ScalarNode, value, implicit))
