"""A stack file means one thing to kaistack and to Pulumi, or kaistack refuses it.

kaistack reads `Pulumi.<stack>.yaml` with PyYAML (YAML 1.1 resolution); `pulumi up` reads it with go-yaml v3
(pulumi/pulumi@1b594989 sdk/go/common/encoding/marshal.go imports gopkg.in/yaml.v3, since pulumi/pulumi commit
5666684 of 2022; workspace/loaders.go LoadProjectStackBytes) and hands the program the result as JSON. The two
resolve some plain scalars differently: `1:30` is 90 to PyYAML and the string "1:30" to go-yaml (no base 60);
`yes`, `on` and `off` are booleans to PyYAML and strings to go-yaml v3; `1e3`, `-.5` and `0o17` are numbers to
go-yaml and strings to PyYAML; `08` is a string to PyYAML and 8.0 to go-yaml; a date is a date to PyYAML and a
time.Time to go-yaml v3, which the program receives as Go's time.String(). A declaration that `kaistack check`
reads one way and `pulumi up` another would make every offline answer wrong, so each such value is refused with
both readings and how to write it.

`go_yaml_v3` is go-yaml v3.0.1's `resolve` (resolve.go) for an untagged plain scalar, with Go's
strconv.ParseInt / ParseUint (base 0) and ParseFloat (kaistack.declaration.go_yaml).
"""

from __future__ import annotations

import datetime
import functools
from typing import Any

import yaml

from kaistack.declaration.go_yaml import go_yaml_v3
from kaistack.declaration.yaml_load import YamlInputError, loader_class

__all__ = ["go_yaml_v3", "refuse_ambiguous_scalars"]

_RESOLVER = yaml.resolver.Resolver()  # the implicit resolver CSafeLoader uses too
_MERGE = "tag:yaml.org,2002:merge"


def _pyyaml(node: yaml.ScalarNode) -> Any:
    """What PyYAML's SafeLoader makes of a scalar node."""
    return yaml.constructor.SafeConstructor().construct_object(node)


# A generated stack file repeats its scalars (a queue's name in every tenant): each distinct one is read once.
@functools.lru_cache(maxsize=1 << 16)
def _implicit_tag(value: str) -> str:
    return str(_RESOLVER.resolve(yaml.ScalarNode, value, (True, False)))


@functools.lru_cache(maxsize=1 << 16)
def _readings(tag: str, value: str) -> tuple[Any, Any] | None:
    """(PyYAML's value, go-yaml v3's) for a plain scalar both read differently; None when they agree."""
    ours, pulumis = _pyyaml(yaml.ScalarNode(tag, value)), go_yaml_v3(value)
    return None if _same(ours, pulumis) else (ours, pulumis)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _kaistacks(key: str, project: str) -> bool:
    """A `config:` key kaistack reads: `kaistack:*`, one without a namespace in kaistack's own project (Pulumi reads
    it as the project's), and `aws:region`."""
    return key.startswith("kaistack:") or key == "aws:region" or (":" not in key and project == "kaistack")


def _read_by_kaistack(root: yaml.Node, project: str = "kaistack") -> list[yaml.ScalarNode]:
    """The scalars inside the `config:` values kaistack reads (`kaistack:*`, `aws:region`) that are mappings or
    lists. Every kaistack key is such a value; a top-level scalar (Pulumi resolves it too, config/value.go
    UnmarshalYAML through object.go, and hands a number or boolean to the program as its JSON text) is one kaistack
    does not read, and the namespaces of other programs are theirs."""
    if not isinstance(root, yaml.MappingNode):
        return []
    config = next((v for k, v in root.value if isinstance(k, yaml.ScalarNode) and k.value == "config"), None)
    if not isinstance(config, yaml.MappingNode):
        return []
    stack: list[yaml.Node] = [
        v
        for k, v in config.value
        if isinstance(k, yaml.ScalarNode) and _kaistacks(k.value, project) and isinstance(v, yaml.CollectionNode)
    ]  # fmt: skip
    seen: set[int] = set()
    out: dict[int, yaml.ScalarNode] = {}
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        children = [c for pair in node.value for c in pair] if isinstance(node, yaml.MappingNode) else node.value
        for child in children:
            if isinstance(child, yaml.ScalarNode):
                out[id(child)] = child  # once: a `<<` merge leaves its pairs in both mappings
            elif isinstance(child, yaml.CollectionNode):
                stack.append(child)
    return sorted(out.values(), key=lambda n: (n.start_mark.line, n.start_mark.column))


def refuse_ambiguous_scalars(text: str, source: str, node: yaml.Node | None = None, project: str = "kaistack") -> None:
    """YamlInputError naming every plain scalar kaistack reads that the two parsers read differently, one line
    each. `text` has been loaded once already (bounded, no duplicate keys); `node`, its node tree from that load
    (yaml_load.load_one_document), saves composing it again."""
    root = yaml.compose(text, Loader=loader_class()) if node is None else node
    if root is None:
        return
    problems: list[tuple[int, str]] = []
    for node in _read_by_kaistack(root, project):
        if node.style or node.tag == _MERGE:
            continue  # quoted or block text; `<<` merges in both parsers
        if node.tag != _implicit_tag(node.value):
            continue  # explicitly tagged: both parsers take the tag
        readings = _readings(node.tag, node.value)
        if readings is None:
            continue
        ours, pulumis = readings
        fix = f"quote it ('{node.value}') for a string"
        if isinstance(pulumis, int | float) and not isinstance(pulumis, bool):
            fix = f"write {pulumis!r} for that number, or {fix}"
        line = node.start_mark.line + 1
        problems.append(
            (
                line,
                f"{source}:{line}: {node.value} is {_shown(ours)} to kaistack's YAML parser (PyYAML, YAML 1.1) but "
                f"{_shown(pulumis)} to Pulumi's (go-yaml v3): {fix}",
            )
        )
    if problems:
        raise YamlInputError("\n".join(message for _, message in problems), line=problems[0][0])


def _shown(value: object) -> str:
    """A parsed value as a reader knows it: a date as the date, not as Python's repr."""
    if isinstance(value, datetime.date):
        return f"the {'time' if isinstance(value, datetime.datetime) else 'date'} {value.isoformat()}"
    return repr(value)
