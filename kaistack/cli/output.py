"""What every command prints for machines: strict JSON (RFC 8259), never `NaN` or `Infinity`.

`json.dumps` writes `NaN`/`Infinity` for non-finite floats by default, which no JSON parser but
Python's accepts. Inputs are checked finite while loading (kaistack.declaration.yaml_load), so a
non-finite number here is a bug: `allow_nan=False` turns it into an internal error, never bad output.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from kaistack.markdown import INVISIBLE, code_point

# C0 controls but tab and newline, DEL, and C1. A stack value, a dump or a cluster object can carry an escape
# sequence (clear the screen, set the window title, return to the line start and write over it) that a
# terminal would obey when kaistack echoes it; they are written as visible \xNN instead.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return INVISIBLE.sub(lambda m: code_point(m.group()), text)


class _Visible:
    """A text stream that writes control characters as visible text; everything else is the stream's own.

    When the reader goes away (`kaistack check | head -1`), what is left to write is dropped: the command goes on
    to return its own exit code (1 for findings), which a BrokenPipeError escaping it would lose. Any other write
    error (a full disk, EIO) drops the rest too and is kept in `failure`: the output is incomplete, which
    main reports as an environment problem (exit 3) once the command is done."""

    def __init__(self, stream: TextIO | None) -> None:
        self._stream: TextIO = stream if stream is not None else io.StringIO()
        if "utf" not in str(getattr(self._stream, "encoding", "utf-8") or "utf-8").lower():
            # A stream in another encoding (PYTHONIOENCODING=latin-1, a C locale with PYTHONUTF8=0) cannot hold the
            # tree's box lines or a name's non-Latin letters: they are written as \u escapes, not a crash.
            with contextlib.suppress(AttributeError, ValueError, io.UnsupportedOperation):
                self._stream.reconfigure(errors="backslashreplace")  # type: ignore[attr-defined]
        self.reader_gone = stream is None  # started with the descriptor closed (`>&-`): Python gives None
        self.failure: OSError | None = OSError(errno.EBADF, "it is closed") if stream is None else None

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                return self._stream.write(visible(text))
            except OSError as err:
                self._drop_the_rest(err)
        return len(text)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self._stream.flush()
            except OSError as err:
                self._drop_the_rest(err)

    def _drop_the_rest(self, err: OSError) -> None:
        self.reader_gone = True
        if not isinstance(err, BrokenPipeError):
            self.failure = err
        # What the stream still buffers is flushed again at exit: into /dev/null, or Python would print
        # "Exception ignored ... BrokenPipeError" and exit 120.
        try:
            fd = self._stream.fileno()
        except (OSError, ValueError):  # not a file (a test's capture): nothing flushes it at exit
            return
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def visible_output() -> Iterator[_Visible]:
    """For one command: nothing it prints (reports, errors, progress) can drive the terminal. JSON already
    escapes every control character (json.dumps ensure_ascii), so machine output is unchanged. Output is flushed
    before the command's exit code is returned, so a reader that went away is noticed here, not at exit. Yields
    the wrapped stdout, whose `failure` says whether all of it was written."""
    out, err = sys.stdout, sys.stderr
    visible_out, visible_err = _Visible(out), _Visible(err)
    sys.stdout, sys.stderr = visible_out, visible_err  # type: ignore[assignment]
    try:
        yield visible_out
    finally:
        try:
            visible_out.flush()
            visible_err.flush()
        finally:
            sys.stdout, sys.stderr = out, err


def dumps(value: Any, *, compact: bool = False) -> str:
    text = _dumps(value, compact)
    if _SURROGATE_ESCAPE.search(text):
        # A path read from a non-UTF-8 file name holds lone surrogates (surrogateescape), which json writes as
        # \udcXX escapes that strict readers refuse: each such byte is written as \xXX text instead.
        text = _dumps(_without_lone_surrogates(value), compact)
    return text


def _dumps(value: Any, compact: bool) -> str:
    if compact:
        return json.dumps(value, allow_nan=False, separators=(",", ":"))
    return json.dumps(value, allow_nan=False, indent=2)


_SURROGATE = re.compile("[\ud800-\udfff]")
# How json writes any surrogate, paired (an emoji) or not; the rare document holding one is written again.
_SURROGATE_ESCAPE = re.compile(r"\\ud[89a-f]")


def _escaped_surrogate(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def _without_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub(_escaped_surrogate, value)
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_without_lone_surrogates(v) for v in value]
    return value


def print_json(value: Any, *, compact: bool = False) -> None:
    """The whole document is built before anything is written, so a failure prints nothing half-done."""
    text = dumps(value, compact=compact)
    sys.stdout.write(text + "\n")


def refuse(args: Any, message: object, code: int) -> int:
    """A command that stops on bad input or its environment: `message` on stderr and, under --json, a document on
    stdout too ({"ok": false, "exitCode", "error"}), so a machine reading stdout never gets an empty stream."""
    text = str(message)
    print(text, file=sys.stderr)
    if getattr(args, "json", False):
        print_json({"ok": False, "exitCode": int(code), "error": text})
    return int(code)
