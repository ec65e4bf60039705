"""Progress lines on stderr for the CLI's long steps ("rendering…", "analyzing 42 resources…").

One rule for every command: progress goes to **stderr**, and only when stderr is a terminal. Output
formats (`--json`, `--markdown`, tables) go to stdout, so they never mix with progress, and CI logs
(stderr is not a TTY there) stay free of it. `KAISTACK_PROGRESS=1` forces it on (e.g. to see the
timings in CI), `KAISTACK_PROGRESS=0` forces it off.

    progress = Progress.for_cli()
    with progress.step("rendering stack dev"):
        rendered = render_stack(project, "dev")
    # stderr (TTY): "rendering stack dev… done (1.2 s)"
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

ENV_VAR = "KAISTACK_PROGRESS"


class Progress:
    """Writes `<message>… done (<seconds> s)` per step to `stream` when `enabled`; otherwise silent."""

    def __init__(self, stream: TextIO | None = None, *, enabled: bool = True) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.timings: dict[str, float] = {}

    @classmethod
    def for_cli(cls, stream: TextIO | None = None) -> Progress:
        """Enabled when the stream is a TTY, unless KAISTACK_PROGRESS says otherwise."""
        stream = stream if stream is not None else sys.stderr
        forced = os.environ.get(ENV_VAR, "").strip()
        if forced in ("0", "1"):
            return cls(stream, enabled=forced == "1")
        isatty = getattr(stream, "isatty", None)
        return cls(stream, enabled=bool(isatty and isatty()))

    @classmethod
    def quiet(cls) -> Progress:
        return cls(enabled=False)

    @contextmanager
    def step(self, message: str) -> Iterator[None]:
        """Announce `message`, run the block, then report how long it took (or that it failed)."""
        self._write(f"{message}…")
        start = time.perf_counter()
        try:
            yield
        except BaseException:
            self._write(" failed\n")
            raise
        finally:
            self.timings[message] = time.perf_counter() - start
        self._write(f" done ({self.timings[message]:.1f} s)\n")

    def note(self, message: str) -> None:
        self._write(f"{message}\n")

    def _write(self, text: str) -> None:
        if self.enabled:
            self.stream.write(text)
            self.stream.flush()
