"""Files that are pipes: read and written without waiting for ever on a peer that never comes.

`open()` on a FIFO blocks until the other end is opened too: `kaistack lint f` on a named pipe nobody writes to,
or `kaistack schema --output f` on one nobody reads, would wait for ever. Process substitution
(`kaistack lint <(kubectl get pods -o yaml)`) hands over a pipe whose writer is already there, and must work.
"""

from __future__ import annotations

import errno
import os
import select
import stat
import time
from pathlib import Path

# How long a pipe with no writer (reader) yet may take to get one: a process started just before (after) kaistack.
WRITER_WAIT_SECONDS = 2.0


class NoPeer(OSError):
    """The pipe has no process at its other end."""


def read_bounded(path: str | Path, max_bytes: int) -> bytes:
    """At most `max_bytes + 1` bytes of a file, a device or a pipe. A pipe that has no writer within
    WRITER_WAIT_SECONDS is NoPeer; one whose writer is there but slow is waited on, as a file read would be."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # never blocks, even on a FIFO with no writer
    try:
        chunks = [_await_writer(fd, str(path))] if stat.S_ISFIFO(os.fstat(fd).st_mode) else []
        os.set_blocking(fd, True)
        size = sum(len(c) for c in chunks)
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _await_writer(fd: int, name: str) -> bytes:
    """What a first read of the pipe gave (perhaps nothing), once it has a writer; NoPeer if none comes."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    if poller.poll(int(WRITER_WAIT_SECONDS * 1000)):
        return b""  # data, or a writer that came and went (the end of the input): the reads that follow tell
    try:
        first = os.read(fd, 1)
    except BlockingIOError:
        return b""  # a writer holds the other end, silent so far
    if not first:  # the end of input with no writer ever: Linux reports no POLLHUP for that
        raise NoPeer(errno.ENXIO, f"{name} is a pipe no process writes to")
    return first  # it arrived between the poll and the read


def open_for_writing(path: str | Path) -> int:
    """A descriptor to write `path` (a FIFO or a device) through; a FIFO nobody reads within WRITER_WAIT_SECONDS (a
    reader started just after kaistack) is NoPeer, not a wait."""
    deadline = time.monotonic() + WRITER_WAIT_SECONDS
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as err:
            if err.errno != errno.ENXIO:
                raise
            if time.monotonic() >= deadline:
                raise NoPeer(errno.ENXIO, f"{path} is a pipe no process reads from") from err
            time.sleep(0.05)
    os.set_blocking(fd, True)
    return fd
