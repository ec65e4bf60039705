"""Surgical edits of YAML text: change one scalar, or add one missing key, and leave every other byte alone.

PyYAML's round trip (load + dump) drops comments, reorders nothing but restyles everything, and
ruamel.yaml is not a kaistack dependency. Stack files carry comments and `secure:` ciphertext that
must survive a `kaistack promote` untouched, so edits here work on the text: `yaml.compose` gives
each node's start/end position, and only the span of the edited scalar changes (or new lines are
inserted after the last entry of the mapping that lacks the key). `set_values` then re-parses the
result and refuses (`YamlEditError`) unless it equals the original data with exactly the requested
values changed, so a layout this module does not understand fails loudly instead of corrupting the file.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from kaistack.declaration.go_yaml import go_yaml_v2, go_yaml_v3

PathKey = str | int
Path = tuple[PathKey, ...]
_MERGE = "tag:yaml.org,2002:merge"
# A node's properties before its value: an optional tag, then an anchor.
_ANCHOR = re.compile(r"(![^\s]*\s+)?&")
_TAG = re.compile(r"![^\s]*\s+")
_STR = "tag:yaml.org,2002:str"


class YamlEditError(Exception):
    """The edit could not be made safely; the text was not changed."""


def set_values(text: str, edits: Sequence[tuple[Path, str]]) -> str:
    """`text` with each `(path, value)` applied (string values), verified by re-parsing."""
    try:
        original = yaml.safe_load(text)
        edited_text = _apply(text, edits)  # refuses a path it cannot edit before the data is compared
        expected = copy.deepcopy(original)
        for path, value in edits:
            expected = _set_in_data(expected, path, value)
        edited = yaml.safe_load(edited_text)
    except yaml.YAMLError as err:
        # The pure-Python parser the edits need (node positions) is stricter than libyaml in places (a tab
        # before a comment); its message is not echoed, as it may quote a line of the file.
        line = getattr(getattr(err, "problem_mark", None), "line", None)
        where = f" at line {line + 1}" if line is not None else ""
        raise YamlEditError(f"the editor cannot parse the file{where}; make the change by hand") from None
    if edited != expected:
        raise YamlEditError("the edited file does not parse to the expected values; nothing was changed")
    return edited_text


def _apply(text: str, edits: Sequence[tuple[Path, str]]) -> str:
    """Every value that exists is replaced from one parse of the text (a parse per edit made a promotion of
    hundreds of workloads take minutes); only keys to add take a parse each, as each insert moves the text."""
    latest = dict(edits)  # a path edited twice ends with its last value, as edits applied in turn would
    root = _compose(text)
    spans: list[tuple[int, int, str]] = []
    inserts: list[tuple[Path, str]] = []
    for path, value in latest.items():
        found = _locate(text, root, path, value)
        if isinstance(found, tuple):
            spans.append(found)
        else:
            inserts.append((path, value))
    spans.sort()
    pieces, done = [], 0
    for start, end, replacement in spans:
        if start < done:  # two paths through one aliased node: edits in turn would have moved each other
            raise YamlEditError("two edits reach the same value (through an alias); make the change by hand")
        pieces += [text[done:start], replacement]
        done = end
    text = "".join([*pieces, text[done:]])
    for path, value in inserts:
        text = set_value(text, path, value)
    return text


def set_value(text: str, path: Path, value: str) -> str:
    """Replace the scalar at `path` (keys and list indexes) or insert the missing keys at the end of its mapping."""
    found = _locate(text, _compose(text), path, value)
    if isinstance(found, tuple):
        start, end, replacement = found
        return text[:start] + replacement + text[end:]
    return _insert(text, found.mapping, found.rest, value)


@dataclass(frozen=True)
class _Missing:
    """Where a path leaves the document: the mapping that lacks `rest[0]`."""

    mapping: yaml.MappingNode
    rest: Path


def _compose(text: str) -> yaml.Node:
    root = yaml.compose(text)
    if root is None:
        raise YamlEditError("the file is empty")
    return root


def _locate(text: str, root: yaml.Node, path: Path, value: str) -> tuple[int, int, str] | _Missing:
    """The span of the scalar at `path` and its replacement text, or where the missing keys go."""
    node: yaml.Node = root
    flow = False
    for depth, key in enumerate(path):
        where = _show_path(path[:depth]) or "the document"
        flow = flow or bool(getattr(node, "flow_style", False))
        if isinstance(node, yaml.MappingNode) and isinstance(key, str):
            if any(k.tag == _MERGE or (isinstance(k, yaml.ScalarNode) and k.value == "<<") for k, _ in node.value):
                # Its keys live where the alias points; an insert here would land there.
                raise YamlEditError(f"{where} takes keys from a merge (<<); make the change by hand")
            child = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)
            if child is None:
                return _Missing(node, path[depth:])
            node = child
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int):
            if not 0 <= key < len(node.value):
                raise YamlEditError(f"{where} has no item {key}")
            node = node.value[key]
        else:
            raise YamlEditError(f"{where} is not a {'mapping' if isinstance(key, str) else 'list'}")
    if not isinstance(node, yaml.ScalarNode) or node.style in ("|", ">"):
        raise YamlEditError(f"{_show_path(path)} is not a single-line value")
    if node.tag == "tag:yaml.org,2002:null" and node.value == "":
        raise YamlEditError(f"{_show_path(path)} is empty; set a value by hand first")
    start, end = node.start_mark.index, node.end_mark.index
    if _ANCHOR.match(text, start, end):
        # The node's span starts at its properties: replacing it would drop the anchor its aliases name.
        raise YamlEditError(f"{_show_path(path)} is anchored (&) or an alias (*); make the change by hand")
    tag = _TAG.match(text, start, end)
    if tag is not None and node.tag == _STR:
        start = tag.end()  # `!!str v1` stays tagged: the new value is a string too (another tag goes with its value)
    return start, end, format_scalar(value, node.style, flow=flow)


def format_scalar(value: str, style: str | None = None, *, flow: bool = False) -> str:
    """A YAML scalar that reads back as the string `value` to kaistack and to Pulumi (go-yaml v3; v2's reading is
    held to as well, quoting `y` and `n` that v3 would take as text), keeping the original quoting style if any.
    Inside a flow collection ([...], {...}) a plain scalar cannot hold its indicators."""
    if style == "'":
        return "'" + value.replace("'", "''") + "'"
    plain_ok = style != '"' and value and "\n" not in value and value == value.strip()
    read_as_written = go_yaml_v2(value) == value and go_yaml_v3(value) == value
    if plain_ok and read_as_written and not (flow and any(c in value for c in ",[]{}#")):
        try:
            if yaml.safe_load(f"k: {value}\n") == {"k": value}:
                return value
        except yaml.YAMLError:
            pass
    return json.dumps(value)  # a JSON string is a valid double-quoted YAML scalar


def _insert(text: str, mapping: yaml.MappingNode, rest: Path, value: str) -> str:
    if any(not isinstance(k, str) for k in rest):
        raise YamlEditError(f"cannot create list items ({_show_path(rest)}); add them by hand")
    keys = [str(k) for k in rest]
    if mapping.flow_style:
        body = format_scalar(value, flow=True)
        for key in reversed(keys):
            body = f"{_format_key(key)}: {body}" if key == keys[-1] else f"{_format_key(key)}: {{{body}}}"
        close = mapping.end_mark.index - 1
        if text[close] != "}":
            raise YamlEditError("unexpected flow mapping layout")
        sep = ", " if mapping.value else ""
        return text[:close] + sep + body + text[close:]
    indent = mapping.value[0][0].start_mark.column
    lines = [" " * (indent + 2 * i) + f"{_format_key(k)}:" for i, k in enumerate(keys[:-1])]
    lines.append(" " * (indent + 2 * (len(keys) - 1)) + f"{_format_key(keys[-1])}: {format_scalar(value)}")
    pos = _end_of_last_entry(text, mapping)
    newline = _newline(text)
    prefix = "" if pos == 0 or text[pos - 1] == newline[-1] else newline
    return text[:pos] + prefix + newline.join(lines) + newline + text[pos:]


def _end_of_last_entry(text: str, mapping: yaml.MappingNode) -> int:
    """Index just past the line holding the mapping's last content (before trailing comments/blank lines)."""
    node: yaml.Node = mapping
    while isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and not node.flow_style and node.value:
        last = node.value[-1]
        node = last[1] if isinstance(node, yaml.MappingNode) else last
    pos = node.end_mark.index
    end = _newline(text)[-1]
    if pos > 0 and text[pos - 1] == end:
        return pos
    newline = text.find(end, pos)
    return len(text) if newline == -1 else newline + 1


def _newline(text: str) -> str:
    """The file's own line break (YAML reads CR, LF and CRLF alike; an inserted line keeps the file's)."""
    return "\r\n" if "\r\n" in text else "\r" if "\r" in text else "\n"


def _format_key(key: str) -> str:
    return format_scalar(key)


def _set_in_data(data: Any, path: Path, value: str) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(data, Mapping) and isinstance(head, str):
        result = dict(data)
        result[head] = _set_in_data(data.get(head) if isinstance(data.get(head), (Mapping, list)) else {}, rest, value)
        if not rest:
            result[head] = value
        return result
    if isinstance(data, list) and isinstance(head, int):
        result_list = list(data)
        result_list[head] = _set_in_data(data[head], rest, value)
        return result_list
    raise YamlEditError(f"{_show_path(path)}: unexpected structure")


def _show_path(path: Path) -> str:
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else key)
    return text
