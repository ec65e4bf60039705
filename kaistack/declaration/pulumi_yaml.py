"""A stack file means one thing to kaistack and to Pulumi, or kaistack refuses it.

kaistack reads `Pulumi.<stack>.yaml` with PyYAML (YAML 1.1 resolution); `pulumi up` reads it with go-yaml v2
(pulumi/pulumi sdk/go/common/encoding/marshal.go imports gopkg.in/yaml.v2) and hands the program the result as
JSON. The two resolve some plain scalars differently: `1:30` is 90 to PyYAML and the string "1:30" to go-yaml
(which dropped base-60); `y`/`n` are booleans to go-yaml and strings to PyYAML; `1e3`, `-.5` and `0o17` are
numbers to go-yaml and strings to PyYAML; `08` is a string to PyYAML and 8.0 to go-yaml; a date is a date to
PyYAML and its text to go-yaml (decode.go keeps timestamps as strings for interface{} targets). A declaration
that `kaistack check` reads one way and `pulumi up` another would make every offline answer wrong, so each such
value is refused with both readings and how to write it.

`go_yaml_v2` is go-yaml v2.4.0's `resolve` (resolve.go:86-200) for an untagged plain scalar, with Go's
strconv.ParseInt / ParseUint (base 0) and ParseFloat.
"""

from __future__ import annotations

import datetime
import functools
import math
import re
from typing import Any

import yaml

from kaistack.declaration.yaml_load import YamlInputError, loader_class

__all__ = ["go_yaml_v2", "refuse_ambiguous_scalars"]

# resolve.go:36-48: the values looked up in a map (booleans, nulls; .inf/.nan are refused before this).
_GO_MAP: dict[str, Any] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), None),
}
_GO_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")  # yamlStyleFloat, resolve.go:84
_GO_BASES = {"0x": (16, "0123456789abcdefABCDEF"), "0o": (8, "01234567"), "0b": (2, "01")}


def go_yaml_v2(value: str) -> Any:
    """What go-yaml v2 makes of an untagged plain scalar decoded into interface{}."""
    if value in _GO_MAP:
        return _GO_MAP[value]
    first = value[0]
    if first == ".":
        # ParseFloat reads ASCII only (Python's float would take other digits and strip other spaces).
        return _go_float(value, value) if value.isascii() and not value[-1:].isspace() else value
    if not (first in "+-" or "0" <= first <= "9"):
        return value  # hint 0, or 'M' (y/n/t/f/o/~) not in the map: a string
    # 'D' / 'S': a timestamp stays its text (decode.go:474-480); then ParseInt, ParseUint, a float, 0b.
    plain = value.replace("_", "")
    number = _go_int(plain)
    if number is not None:
        return number
    if _GO_FLOAT.fullmatch(plain):
        return _go_float(plain, value)
    return value


def _go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, 64), else ParseUint(text, 0, 64) (which takes no sign)."""
    sign, body = (text[0], text[1:]) if text[:1] in ("+", "-") else ("", text)
    base, digits = 10, "0123456789"
    prefix = body[:2].lower()
    if prefix in _GO_BASES:
        base, digits = _GO_BASES[prefix]
        body = body[2:]
    elif body.startswith("0") and len(body) > 1:
        base, digits = 8, "01234567"
        body = body[1:]
    if not body or any(c not in digits for c in body):
        return None
    number = int(body, base) * (-1 if sign == "-" else 1)
    if -(2**63) <= number < 2**63:
        return number
    if not sign and number < 2**64:
        return number
    return None


def _go_float(text: str, original: str) -> float | str:
    """strconv.ParseFloat: out of range (an infinity) is an error, and the scalar stays a string."""
    try:
        number = float(text)
    except ValueError:
        return original
    return number if math.isfinite(number) else original


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
    """(PyYAML's value, go-yaml v2's) for a plain scalar both read differently; None when they agree."""
    ours, pulumis = _pyyaml(yaml.ScalarNode(tag, value)), go_yaml_v2(value)
    return None if _same(ours, pulumis) else (ours, pulumis)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _read_by_kaistack(root: yaml.Node) -> list[yaml.ScalarNode]:
    """The scalars inside the `config:` values kaistack reads (`kaistack:*`, `aws:region`) that are mappings or
    lists. A top-level value is decoded by Pulumi into a string first (config.Value; go-yaml's decode.go keeps
    a scalar's raw text for a string target), so only the nested ones are resolved as go-yaml resolves them;
    the namespaces of other programs are theirs."""
    if not isinstance(root, yaml.MappingNode):
        return []
    config = next((v for k, v in root.value if isinstance(k, yaml.ScalarNode) and k.value == "config"), None)
    if not isinstance(config, yaml.MappingNode):
        return []
    stack: list[yaml.Node] = [
        v
        for k, v in config.value
        if isinstance(k, yaml.ScalarNode) and (k.value.startswith("kaistack:") or k.value == "aws:region")
        and isinstance(v, yaml.CollectionNode)
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


def refuse_ambiguous_scalars(text: str, source: str, node: yaml.Node | None = None) -> None:
    """YamlInputError naming every plain scalar kaistack reads that the two parsers read differently, one line
    each. `text` has been loaded once already (bounded, no duplicate keys); `node`, its node tree from that load
    (yaml_load.load_one_document), saves composing it again."""
    root = yaml.compose(text, Loader=loader_class()) if node is None else node
    if root is None:
        return
    problems: list[tuple[int, str]] = []
    for node in _read_by_kaistack(root):
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
                f"{_shown(pulumis)} to Pulumi's (go-yaml v2): {fix}",
            )
        )
    if problems:
        raise YamlInputError("\n".join(message for _, message in problems), line=problems[0][0])


def _shown(value: object) -> str:
    """A parsed value as a reader knows it: a date as the date, not as Python's repr."""
    if isinstance(value, datetime.date):
        return f"the {'time' if isinstance(value, datetime.datetime) else 'date'} {value.isoformat()}"
    return repr(value)
