"""The one way kaistack reads YAML and JSON: bounded before the parser builds anything.

Every input a user or tenant hands kaistack (stack files, manifests for `lint`, scenarios for `simulate`, cluster
dumps) goes through here. PyYAML's composer recurses once per nesting level (the C loader segfaults around 50,000
levels) and expands aliases without limit (a "billion laughs" document takes gigabytes), so a first pass over the
parser's *event* stream — which libyaml produces without recursion — refuses, with the line:

- nesting deeper than `limits.MAX_DEPTH`;
- aliases that would expand past `limits.MAX_ALIAS_EXPANSION` nodes, and aliases to an anchor that
  is still open (a cycle, which PyYAML would build as a self-referencing object);
- `.nan` / `.inf` scalars (kaistack's numbers are finite, and JSON cannot carry them);
- more than `limits.MAX_DOCUMENTS` documents, or more than `limits.MAX_YAML_VALUES` values in all of them
  (JSON: `limits.MAX_JSON_VALUES`, counted on the text before it is parsed).

After building, a string holding a lone UTF-16 surrogate (JSON's `"\ud800"`) is refused too (JSON and YAML).

Only then is the document composed and constructed (with the C loader when present). Errors are
`InputError`s naming the source, the line and the problem; a stream's documents are read one by one,
so one broken document does not hide the others.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kaistack.declaration import limits
from kaistack.declaration.pipes import read_bounded
from kaistack.declaration.yaml_nodes import AmbiguousMerge, duplicate_key, failing_scalar, merging_loader
from kaistack.errors import InputError

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the parser (C when present)

# YAML 1.1 plain scalars PyYAML resolves to float infinity or NaN.
_NON_FINITE = re.compile(r"[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)")
# Half of a UTF-16 pair. The text was decoded as strict UTF-8, so only an escape (`\ud800`, YAML's `\U0000d800`)
# can put one in a string; JSON joins a well-formed pair into one character, so what stays is a lone half: not
# Unicode text, and printing or encoding it fails (or writes a raw byte) far from the input. libyaml refuses the
# escape itself; PyYAML's pure-Python scanner (no libyaml) and json do not.
_SURROGATE_ESCAPE = re.compile(r"\\(u|U0000)[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")
# A document starts at a `---` marker in column 0 (or at the top); `...` ends one.
_MARKER = re.compile(r"^(---|\.\.\.)(\s|$)")
_END = re.compile(r"^\.\.\.(\s+(#.*)?)?$")
_COMMENT = re.compile(r"^[ \t]*#")


class YamlInputError(InputError):
    """A YAML or JSON input kaistack refuses; the message names the source and line."""

    def __init__(self, message: str, *, line: int | None = None, problem: str | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.problem = problem or message


@dataclass(frozen=True)
class Document:
    """One document of a stream: 1-based index and start line, the data, and its node (for line numbers)."""

    index: int
    line: int
    data: Any
    node: Any


@dataclass(frozen=True)
class DocumentError:
    """A document that could not be read: `problem` names the document, `message` also the source and line."""

    index: int
    line: int | None
    problem: str
    message: str


def read_text(path: str | Path, *, max_bytes: int, what: str = "file") -> str:
    """A UTF-8 file (or stdin for "-"), refused before reading when it is larger than `max_bytes`."""
    name = str(path)
    try:
        if name == "-":
            if sys.stdin is None:  # started with its standard input closed (`<&-`)
                raise YamlInputError("-: cannot read standard input: it is closed")
            data = sys.stdin.buffer.read(max_bytes + 1)
        else:
            size = Path(path).stat().st_size
            if size > max_bytes:
                raise YamlInputError(f"{name}: {what} is {size} bytes; kaistack reads at most {max_bytes}")
            # A device or a FIFO says 0 bytes (and /dev/zero never ends): read no more than the limit allows.
            data = read_bounded(path, max_bytes)
    except OSError as err:
        raise YamlInputError(f"{name}: cannot read file: {err.strerror or err}") from err
    if len(data) > max_bytes:
        raise YamlInputError(f"{name}: {what} is larger than {max_bytes} bytes; kaistack reads at most that")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        if data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # a UTF-16 byte order mark, as Windows PowerShell 5's `>` writes
            raise YamlInputError(f"{name}: {what} is UTF-16 text, not UTF-8; re-save it as UTF-8") from err
        raise YamlInputError(f"{name}: not UTF-8 text (byte {err.start})") from err


def load_documents(text: str, source: str, *, kubectl: bool = False) -> tuple[list[Document], list[DocumentError]]:
    """Every document of a YAML stream; a document that cannot be read is an error, the rest still load.
    `kubectl`: Kubernetes manifests, whose plain scalars are read as kubectl reads them, not by YAML 1.1."""
    documents: list[Document] = []
    errors: list[DocumentError] = []
    budget = [limits.MAX_YAML_VALUES]  # what is left of the stream's values, spent by each document's prescan
    for index, (first_line, chunk) in enumerate(_chunks(text), start=1):
        if index > limits.MAX_DOCUMENTS:
            error = _error(source, first_line, f"document {index}: more than {limits.MAX_DOCUMENTS} documents")
            errors.append(DocumentError(index, first_line, error.problem, str(error)))
            break
        try:
            document = _load_chunk(chunk, source, index, first_line, budget, kubectl)
        except _TooManyValues as err:
            errors.append(DocumentError(index, err.line, err.problem, str(err)))
            break  # the stream's budget is spent: later documents would be refused one by one
        except YamlInputError as err:
            errors.append(DocumentError(index, err.line, err.problem, str(err)))
            continue
        if document is not None:
            documents.append(document)
    return documents, errors


def load_one(text: str, source: str) -> Any:
    """A single-document input (stack file, scenario): its data, None when empty; YamlInputError otherwise."""
    document = load_one_document(text, source)
    return document.data if document is not None else None


def load_one_document(text: str, source: str) -> Document | None:
    """load_one's document with its node tree (merges resolved), for checks over how it was written."""
    documents, errors = load_documents(text, source)
    if errors:
        raise YamlInputError(errors[0].message, line=errors[0].line, problem=errors[0].problem)
    if len(documents) > 1:
        raise YamlInputError(f"{source}: {len(documents)} YAML documents; expected one")
    return documents[0] if documents else None


def load_json(text: str, source: str) -> Any:
    """A JSON document, refused when it nests deeper than MAX_DEPTH or holds NaN/Infinity."""

    def refuse_constant(name: str) -> Any:
        raise YamlInputError(f"{source}: {name} is not a number kaistack accepts (numbers must be finite)")

    _check_json_values(text, source)
    try:
        data = json.loads(text, parse_constant=refuse_constant)
    except RecursionError:
        raise YamlInputError(f"{source}: nested deeper than {limits.MAX_DEPTH} levels") from None
    except json.JSONDecodeError as err:
        raise YamlInputError(f"{source}: not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}") from err
    except ValueError as err:  # a number too long to convert (int max str digits)
        raise YamlInputError(f"{source}: not valid JSON: {err}") from err
    _check_depth(data, source)
    if _SURROGATE_ESCAPE.search(text):
        _refuse_lone_surrogates(data, source)
    return data


def load_file(path: str | Path, *, max_bytes: int, what: str = "file") -> Any:
    """A single-document file: JSON when it ends in .json, YAML otherwise (JSON is YAML too)."""
    text = read_text(path, max_bytes=max_bytes, what=what)
    if str(path).lower().endswith(".json"):
        return load_json(text, str(path))
    return load_one(text, str(path))


# --- one document ----------------------------------------------------------------------------------


def _chunks(text: str) -> Iterator[tuple[int, str]]:
    """Documents of a stream as (first line, text), split at column-0 markers; empty ones dropped."""
    lines = text.splitlines(keepends=True)
    start = 0
    for i, line in enumerate(lines):
        if _MARKER.match(line) and i > start:
            if not _nothing_to_read(lines[start:i], start):
                yield start + 1, "".join(lines[start:i])
            start = i
    if not _nothing_to_read(lines[start:], start):
        yield start + 1, "".join(lines[start:])


def _nothing_to_read(lines: list[str], start: int) -> bool:
    """Blank, a header of comments before the first `---`, or a document end (`...`) after a document with only
    comments after it. Anything else after a `...` but a `---` is a parse error to PyYAML and go-yaml alike
    (go-yaml/yaml@v2.4.0 parserc.go:205-248), so it is kept for the loader to refuse, not dropped."""
    if not "".join(lines).strip():
        return True
    if start == 0:
        # A header of comments before the first `---` (a licence, a generator's note) is no document to PyYAML;
        # a `...` there, with no document before it, is its parse error.
        return all(not line.strip() or _COMMENT.match(line) for line in lines)
    return all(not line.strip() or _COMMENT.match(line) or _END.match(line) for line in lines)


def _check_json_values(text: str, source: str) -> None:
    """Refuse JSON of more than MAX_JSON_VALUES values before json builds them: commas and opening brackets
    bound the count, and only past the limit are strings (which may hold them too) taken out to count exactly."""
    limit = limits.MAX_JSON_VALUES
    if text.count(",") + text.count("[") + text.count("{") < limit:
        return
    bare = _JSON_STRING.sub('""', _JSON_ESCAPE.sub("", text) if "\\" in text else text)
    if bare.count(",") + bare.count("[") + bare.count("{") >= limit:
        raise YamlInputError(
            f"{source}: more than {limit:,} values (numbers, strings, objects, lists); kaistack reads at most that"
        )


def _load_chunk(
    chunk: str, source: str, index: int, first_line: int, budget: list[int], kubectl: bool = False
) -> Document | None:
    _prescan(chunk, source, index, first_line, budget)
    loader = loader_class(kubectl)(chunk)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        twice = duplicate_key(node)
        if twice is not None:
            line, key = twice
            raise _error(
                source,
                first_line + line,
                f"document {index}: key {key!r} appears twice in one mapping (check the indentation)",
            )
        data = loader.construct_document(node)
    except yaml.YAMLError as err:
        raise _yaml_error(err, source, index, first_line, chunk) from None
    except (ValueError, TypeError, RecursionError) as err:  # a constructor's own error (huge ints, bad dates)
        detail = "a number longer than 4300 digits" if "integer string conversion" in str(err) else str(err)
        line = first_line + failing_scalar(loader.construct_object, node).start_mark.line
        raise _error(source, line, f"document {index}: cannot read a value: {detail}") from None
    finally:
        loader.dispose()
    if _SURROGATE_ESCAPE.search(chunk):
        _refuse_lone_surrogates(data, f"{source}:{first_line + node.start_mark.line}: document {index}")
    return Document(index, first_line + node.start_mark.line, data, node)


def loader_class(kubectl: bool = False) -> Any:
    """The loader kaistack composes and builds YAML with (the C parser when present); `kubectl`: plain scalars
    read as kubectl reads them (yaml_nodes.merging_loader)."""
    return merging_loader(_Loader, kubectl)


def _prescan(chunk: str, source: str, index: int, first_line: int, budget: list[int]) -> None:
    """Walk the event stream once (no recursion, nothing built) and refuse what would hurt; spend `budget[0]`
    on this document's values."""
    open_sizes: list[int] = []  # nodes so far in each open collection, outermost first
    open_anchors: list[str | None] = []
    anchor_sizes: dict[str, int] = {}  # nodes an alias of the anchor stands for, its own aliases expanded
    # Nodes the aliases add. Plain nodes are bounded by the file's size; a real `kubectl get -A -o yaml` of a
    # large cluster is one List document of millions of them.
    aliased = 0
    try:
        for event in yaml.parse(chunk, Loader=_Loader):
            if isinstance(event, yaml.NodeEvent):
                budget[0] -= 1
                if budget[0] < 0:
                    problem = f"document {index}: more than {limits.MAX_YAML_VALUES:,} {TOO_MANY_VALUES}"
                    line = first_line + event.start_mark.line
                    raise _TooManyValues(f"{source}:{line}: {problem}; kaistack reads at most that", line=line,
                                         problem=problem)  # fmt: skip
            if isinstance(event, yaml.CollectionStartEvent):
                if len(open_sizes) >= limits.MAX_DEPTH:
                    raise _error(source, first_line + event.start_mark.line, f"document {index}: {_DEPTH}")
                open_sizes.append(1)
                open_anchors.append(event.anchor)
            elif isinstance(event, yaml.CollectionEndEvent):
                size = open_sizes.pop()
                anchor = open_anchors.pop()
                if anchor is not None:
                    anchor_sizes[anchor] = size
                if open_sizes:
                    open_sizes[-1] += size
            elif isinstance(event, yaml.ScalarEvent | yaml.AliasEvent):
                size = 1
                if isinstance(event, yaml.AliasEvent):
                    if event.anchor in open_anchors:
                        message = f"alias *{event.anchor} refers to its own anchor (a cycle)"
                        raise _error(source, first_line + event.start_mark.line, f"document {index}: {message}")
                    size = anchor_sizes.get(event.anchor, 1)
                    aliased += size
                    if aliased > limits.MAX_ALIAS_EXPANSION:
                        message = f"aliases expand to more than {limits.MAX_ALIAS_EXPANSION} nodes"
                        raise _error(source, first_line + event.start_mark.line, f"document {index}: {message}")
                elif event.implicit[0] and not event.style and _NON_FINITE.fullmatch(event.value):
                    message = f"{event.value} is not a number kaistack accepts (numbers must be finite)"
                    raise _error(source, first_line + event.start_mark.line, f"document {index}: {message}")
                elif event.anchor is not None:
                    anchor_sizes[event.anchor] = 1
                if open_sizes:
                    open_sizes[-1] += size
    except yaml.YAMLError as err:
        raise _yaml_error(err, source, index, first_line, chunk) from None


class _TooManyValues(YamlInputError):
    """The stream's value budget is spent: no later document is read."""


_DEPTH = f"nested deeper than {limits.MAX_DEPTH} levels"
TOO_MANY_VALUES = "values in the input"  # ends a DocumentError.problem that spent the stream's value budget
# A JSON string once its escapes are gone: what may hold commas and brackets that are not the document's.
_JSON_ESCAPE = re.compile(r"\\.", re.S)  # taken out first: one pattern for both backtracks quadratically
_JSON_STRING = re.compile(r'"[^"]*"')


def _check_depth(data: Any, source: str) -> None:
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limits.MAX_DEPTH:
            raise YamlInputError(f"{source}: {_DEPTH}")
        for child in node.values() if isinstance(node, dict) else node if isinstance(node, list) else ():
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
            elif isinstance(child, float) and not math.isfinite(child):
                raise YamlInputError(f"{source}: {child} is not a number kaistack accepts (numbers must be finite)")
    if isinstance(data, float) and not math.isfinite(data):
        raise YamlInputError(f"{source}: {data} is not a number kaistack accepts (numbers must be finite)")


def _refuse_lone_surrogates(data: Any, where: str) -> None:
    """Refuse the first string (a key or a value, in document order) holding a lone surrogate, naming its key path.
    Walked without recursion, only when the text holds such an escape."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        node, path = stack.pop()
        children: list[tuple[Any, str]] = []
        if isinstance(node, dict):
            for key, value in node.items():
                at = f"{path}.{_shown(key)}" if path else _shown(key)
                if isinstance(key, str) and _SURROGATE.search(key):
                    raise _surrogate_error(where, at, "the key")
                children.append((value, at))
        elif isinstance(node, list):
            children = [(value, f"{path}[{i}]") for i, value in enumerate(node)]
        elif isinstance(node, str) and _SURROGATE.search(node):
            raise _surrogate_error(where, path or "the document", _shown(node)[:80])
        stack.extend(reversed(children))


def _shown(value: object) -> str:
    """Printable text for a key or value: a lone surrogate as its escape (\\ud800)."""
    return str(value).encode("utf-8", "backslashreplace").decode("utf-8")


def _surrogate_error(where: str, path: str, value: str) -> YamlInputError:
    problem = (
        f"{path}: {value} holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape without its pair); "
        "strings must be Unicode text"
    )
    return YamlInputError(f"{where}: {problem}", problem=problem)


def _error(source: str, line: int | None, problem: str) -> YamlInputError:
    where = f"{source}:{line}" if line is not None else source
    return YamlInputError(f"{where}: {problem}", line=line, problem=problem)


def _yaml_error(err: yaml.YAMLError, source: str, index: int, first_line: int, chunk: str) -> YamlInputError:
    if isinstance(err, yaml.reader.ReaderError):
        line = first_line + chunk.count("\n", 0, max(err.position, 0))
        character = err.character if isinstance(err.character, int) else ord(str(err.character)[:1] or " ")
        detail = f"control character #x{character:04x} is not allowed"
        return _error(source, line, f"not valid YAML (document {index}): {detail}")
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    context = getattr(err, "context", None)
    detail = f"{context}: {problem}" if context else str(problem)
    # libyaml words two messages differently from PyYAML; say them one way whichever parser ran.
    detail = detail.replace("not allowed in this context", "not allowed here")
    if "cannot start any token" in detail:
        detail += " (tabs cannot indent YAML)"
    elif "mapping values are not allowed" in detail or "expected <block end>" in detail:
        detail += " (check the indentation)"
    detail = " ".join(detail.split())
    at = first_line + int(mark.line) if mark is not None else None
    what = "YAML that its readers read differently" if isinstance(err, AmbiguousMerge) else "not valid YAML"
    return _error(source, at, f"{what} (document {index}): {detail}")
