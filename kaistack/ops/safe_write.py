"""Replacing a file the user owns: atomically, only if nobody changed it since it was read, never a read-only one.

The new text goes to a temporary file in the same directory, is fsynced, and is renamed over the
target (rename is atomic on POSIX file systems). Any failure (disk full, read-only file system, I/O
error) removes the temporary file and leaves the target as it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from pathlib import Path

from kaistack.errors import EnvironmentProblem


class FileChanged(Exception):
    """The file changed (or went away) after it was read; nothing was written."""


class WriteFailed(EnvironmentProblem):
    """The target could not be written (read-only, disk full, I/O error); it was left as it was (exit 3)."""


def refuse_read_only(target: Path) -> None:
    """A read-only target is someone's decision (a frozen environment): refuse, never replace it.

    Checked on the mode bits as well as with access(2), because root passes access() for any file.
    """
    try:
        mode = target.stat().st_mode
    except OSError as err:
        raise WriteFailed(f"cannot read {target.name}: {err.strerror}; nothing written") from err
    if not mode & stat.S_IWUSR or not os.access(target, os.W_OK):
        raise WriteFailed(
            f"{target.name} is read-only (mode {stat.S_IMODE(mode):04o}); kaistack does not replace read-only "
            f"files. Make it writable (chmod u+w {target.name}) to change it; nothing written"
        )
    if not os.access(target.parent, os.W_OK | os.X_OK):
        raise WriteFailed(f"the directory of {target.name} is not writable; nothing written")


def replace_if_unchanged(target: Path, new_text: str, digest: str) -> None:
    """Write `new_text` over `target` if its sha256 is still `digest`; FileChanged or WriteFailed otherwise."""
    ensure_unchanged(target, digest)
    refuse_read_only(target)
    tmp: Path | None = None
    try:
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        tmp = Path(tmp_name)
        with os.fdopen(fd, "wb") as handle:
            handle.write(new_text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, target.stat().st_mode & 0o7777)
        ensure_unchanged(target, digest)  # last look right before the rename
        os.replace(tmp, target)
    except OSError as err:
        _discard(tmp)
        raise WriteFailed(f"could not write {target.name}: {err.strerror or err}; {target.name} is unchanged") from err
    except BaseException:
        _discard(tmp)
        raise


def _discard(tmp: Path | None) -> None:
    if tmp is not None:
        # If even this fails the temporary file stays behind (.<target>.*.tmp); the target is intact.
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def ensure_unchanged(target: Path, digest: str) -> None:
    try:
        current = target.read_bytes()
    except FileNotFoundError as err:
        raise FileChanged(f"{target.name} was removed after it was read; nothing written") from err
    if hashlib.sha256(current).hexdigest() != digest:
        raise FileChanged(
            f"{target.name} changed after it was read (sha256 {digest[:12]}…); nothing written. "
            "Re-run `kaistack promote` on the current file."
        )
