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
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from kaistack.declaration.pipes import open_for_writing
from kaistack.errors import EnvironmentProblem


class FileChanged(Exception):
    """The file changed (or went away) after it was read; nothing was written."""


class WriteFailed(EnvironmentProblem):
    """The target could not be written (read-only, disk full, I/O error); it was left as it was (exit 3)."""


def refuse_read_only(target: Path) -> None:
    """A read-only target is someone's decision (a frozen environment): refuse, never replace it. A hard-linked one
    is refused too: it cannot be replaced without splitting it from its other names.

    Checked on the mode bits as well as with access(2), because root passes access() for any file.
    """
    try:
        mode = target.stat().st_mode
    except OSError as err:
        raise WriteFailed(f"cannot read {target}: {err.strerror}; nothing written") from err
    if mode & stat.S_IWUSR and _on_read_only_file_system(target):
        raise WriteFailed(f"{target} is on a read-only file system; nothing written")
    if not mode & stat.S_IWUSR or not os.access(target, os.W_OK):
        raise WriteFailed(
            f"{target} is read-only (mode {stat.S_IMODE(mode):04o}); kaistack does not replace read-only "
            f"files. Make it writable (chmod u+w {target}) to change it; nothing written"
        )
    if not os.access(_real(target).parent, os.W_OK | os.X_OK):
        raise WriteFailed(f"the directory of {target} is not writable; nothing written")
    links = os.stat(_real(target)).st_nlink
    if links > 1:
        # A rename gives this name a new file: the other names would keep the old text, and nothing would say so.
        raise WriteFailed(
            f"{target} has {links} hard links; replacing it would leave the other {links - 1} on the old text. "
            "Make it one file (or a symlink) to change it; nothing written"
        )


def _on_read_only_file_system(target: Path) -> bool:
    """Mounted read-only (statvfs ST_RDONLY): a chmod cannot help there."""
    try:
        return bool(os.statvfs(_real(target)).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # no statvfs (not POSIX): the mode check still stands
        return False


def _real(target: Path) -> Path:
    """The file a symlink names: it is the one replaced, and the link stays a link."""
    return Path(os.path.realpath(target))


def replace_if_unchanged(target: Path, new_text: str, digest: str) -> None:
    """Write `new_text` over `target` if its sha256 is still `digest`; FileChanged or WriteFailed otherwise."""
    ensure_unchanged(target, digest)
    refuse_read_only(target)
    _replace(target, new_text, target.stat().st_mode & 0o7777, lambda: ensure_unchanged(target, digest))


def write_generated(target: Path, text: str) -> None:
    """Write a file kaistack generates (a JSON Schema, an HTML report) the same atomic way: a disk that fills up
    or a directory that cannot be written leaves the old file whole (WriteFailed, exit 3)."""
    stream = {"/dev/stdout": sys.stdout, "/dev/stderr": sys.stderr}.get(str(target))
    if stream is not None:  # whatever it is redirected to (a pipe, or a file opened for appending)
        stream.write(text)
        stream.flush()
        return
    try:
        found = target.stat().st_mode
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        _replace(target, text, 0o666 & ~umask, lambda: None)
        return
    except OSError as err:
        raise WriteFailed(f"cannot write {target}: {err.strerror or err}; nothing written") from err
    if stat.S_ISREG(found):
        refuse_read_only(target)  # a rename would replace what a plain write may not
        _replace(target, text, found & 0o7777, lambda: None)
        return
    # A FIFO or a device: written into, never replaced by a file (a FIFO nobody reads is refused, not waited on).
    try:
        with os.fdopen(open_for_writing(target), "w", encoding="utf-8") as stream:
            stream.write(text)
    except OSError as err:
        raise WriteFailed(f"could not write {target}: {err.strerror or err}") from err


def _replace(target: Path, text: str, mode: int, last_look: Callable[[], None]) -> None:
    """`text` into a temporary file beside the real target, fsynced, given `mode`, renamed over it after
    `last_look` (which may refuse); on any failure the temporary file goes and the target is as it was."""
    real = _real(target)
    tmp: Path | None = None
    try:
        fd, tmp_name = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
        tmp = Path(tmp_name)
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        _keep_owner(tmp, real)
        last_look()  # right before the rename
        os.replace(tmp, real)
    except OSError as err:
        _discard(tmp)
        outcome = f"{target} is unchanged" if target.exists() else "nothing written"
        raise WriteFailed(f"could not write {target}: {err.strerror or err}; {outcome}") from err
    except BaseException:
        _discard(tmp)
        raise


def _keep_owner(tmp: Path, real: Path) -> None:
    """The new file gets the old one's owner and group where this process may give them (root, e.g. a container
    on a bind-mounted checkout, would otherwise leave the user a stack file they cannot edit)."""
    try:
        found = real.stat()
    except OSError:
        return  # a new file: this process's, as any file it creates
    if (found.st_uid, found.st_gid) != (os.getuid(), os.getgid()):
        with contextlib.suppress(OSError):  # not root: the file is the writer's, as an editor's save makes it
            os.chown(tmp, found.st_uid, found.st_gid)


def _discard(tmp: Path | None) -> None:
    if tmp is not None:
        # If even this fails the temporary file stays behind (.<target>.*.tmp); the target is intact.
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def ensure_unchanged(target: Path, digest: str) -> None:
    try:
        current = target.read_bytes()
    except FileNotFoundError as err:
        raise FileChanged(f"{target} was removed after it was read; nothing written") from err
    except OSError as err:  # made unreadable meanwhile (chmod, a dangling link's loop): the environment's problem
        raise WriteFailed(f"cannot read {target}: {err.strerror or err}; nothing written") from err
    if hashlib.sha256(current).hexdigest() != digest:
        raise FileChanged(
            f"{target} changed after it was read (sha256 {digest[:12]}…); nothing written. "
            "Re-run `kaistack promote` on the current file."
        )
