"""A stack as it was: the same load path over a stack file at another git commit, or another file.

`kaistack diff --base REF` compares a pull request's stack with its base. The file is taken from git
(`git show SHA:<path>` of the one commit REF names), never checked out, and resolved exactly like
the current one (kaistack.stack.load), so both sides differ only by what the change changed.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import IO

from kaistack.declaration import limits
from kaistack.declaration.parse import NAMESPACE, ConfigError
from kaistack.declaration.yaml_load import YamlInputError, read_text
from kaistack.errors import EnvironmentProblem
from kaistack.stack.files import project_name, stack_file, stack_settings
from kaistack.stack.load import LoadOptions, ResolvedStack, resolve_settings

# A git revision as a user types it (branch, tag, sha, HEAD~2, origin/main); never an option.
_REF = re.compile(r"[A-Za-z0-9_.@{}~^/][A-Za-z0-9_.@{}~^/-]{0,254}")
GIT_TIMEOUT_S = 60
_MAX_GIT_ERROR_BYTES = 64 * 1024  # what an error message needs; the rest is read and dropped
_MAX_LINKS = 8  # symlink hops followed inside a commit, as the kernel's own limit stops a loop
_SYMLINK_MODE = b"120000"
_FILE_MODES = (b"100644", b"100755")


def _commit(git: str, project_dir: Path, ref: str) -> str:
    """The one commit `ref` names. A range (`A..B`), an exclusion (`^A`) or `A^@` names none, and `git show`
    would print nothing for it with success; `rev-parse --verify` takes a single revision only."""
    code, out, err = _git(
        [git, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], project_dir, 200
    )
    sha = out.decode("ascii", "replace").strip()
    if code == 0 and re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha):
        return sha
    detail = " ".join(err.split())[:300]
    if "not a git repository" in detail:
        raise EnvironmentProblem(f"{project_dir} is not in a git repository; --base needs one ({detail})")
    if "dubious ownership" in detail or "safe.directory" in detail:
        raise EnvironmentProblem(f"git refuses to read {project_dir}: {detail}")
    said = f" (git: {detail})" if detail else ""
    raise ConfigError(
        [f"--base {ref!r}: not a commit of this repository (a branch, tag, commit or HEAD~N; not a range){said}"]
    )


def stack_text_at(project_dir: Path, stack: str, ref: str) -> str:
    """The text of `Pulumi.<stack>.yaml` at git revision `ref` of the repository holding `project_dir`."""
    if not _REF.fullmatch(ref):
        raise ConfigError([f"--base {ref[:80]!r}: not a git revision (a branch, tag, commit or HEAD~N)"])
    git = shutil.which("git")
    if git is None:
        raise EnvironmentProblem("git is not installed; --base needs it (or pass --base-file FILE)")
    name = stack_file(project_dir, stack).name
    commit = _commit(git, project_dir, ref)
    path = _followed(git, project_dir, commit, name, ref)
    # `git show SHA:./PATH` resolves PATH against the working directory, wherever the repository root is.
    code, out, err = _git([git, "show", f"{commit}:./{path}"], project_dir, limits.MAX_STACK_FILE_BYTES)
    if code != 0:
        detail = " ".join(err.split())[:300]
        if "does not exist" in detail or "exists on disk, but not in" in detail:
            raise ConfigError([f"{name} does not exist at {ref}"])
        if "not a git repository" in detail:
            raise EnvironmentProblem(f"{project_dir} is not in a git repository; --base needs one ({detail})")
        raise ConfigError([f"--base {ref}: git cannot show {name} there: {detail}"])
    if len(out) > limits.MAX_STACK_FILE_BYTES:
        raise ConfigError([f"{name} at {ref}: larger than {limits.MAX_STACK_FILE_BYTES} bytes"])
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError as decode_error:
        raise ConfigError([f"{name} at {ref}: not UTF-8 text (byte {decode_error.start})"]) from None


def _followed(git: str, project_dir: Path, commit: str, name: str, ref: str) -> str:
    """Where the stack file's text is at `commit`, relative to `project_dir`: a committed symlink is a blob
    holding its target's path, which `git show` would hand over as the stack; the current side reads the
    file system, which follows the link. Targets stay inside the repository (git refuses any other path)."""
    path = name
    for _ in range(_MAX_LINKS):
        code, out, _err = _git([git, "ls-tree", "-z", commit, "--", f"./{path}"], project_dir, 8192)
        mode = out.split(b" ", 1)[0]
        if code != 0 or not out or mode in _FILE_MODES:
            return path  # a plain file, or nothing (git show says which)
        if mode != _SYMLINK_MODE:
            # `git show` prints a tree's listing (exit 0), which would be read as the stack file.
            what = {b"040000": "a directory", b"160000": "a submodule"}.get(mode, f"not a file (mode {mode.decode()})")
            raise ConfigError([f"{name} at {ref}: {path} is {what}, not a stack file"])
        code, target_bytes, _err = _git([git, "show", f"{commit}:./{path}"], project_dir, 4096)
        target = target_bytes.decode("utf-8", "replace")
        if code != 0 or not target or target.startswith("/"):
            raise ConfigError([f"{name} at {ref}: a link to {target[:200]!r}, outside the repository"])
        path = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    raise ConfigError([f"{name} at {ref}: more than {_MAX_LINKS} links in a row (a loop?)"])


def load_stack_at(project_dir: Path, stack: str, ref: str, options: LoadOptions | None = None) -> ResolvedStack:
    """The stack as it was at `ref`, through the one load path."""
    source = f"{stack_file(project_dir, stack).name} at {ref}"
    settings = stack_settings(stack_text_at(project_dir, stack, ref), source, project_name(project_dir))
    return resolve_settings(settings, stack=stack, source=source, options=options)


def load_stack_file(
    path: Path, stack: str, options: LoadOptions | None = None, project: str = NAMESPACE
) -> ResolvedStack:
    """A stack from any file with a stack file's shape (`--base-file`), through the one load path; `project` names
    the keys it writes without a namespace (the project's Pulumi.yaml name)."""
    try:
        text = read_text(path, max_bytes=limits.MAX_STACK_FILE_BYTES, what="stack file")
    except YamlInputError as err:
        raise ConfigError([str(err)]) from None
    settings = stack_settings(text, str(path), project)
    return resolve_settings(settings, stack=stack, source=str(path), options=options)


def _git(command: list[str], cwd: Path, max_bytes: int) -> tuple[int, bytes, str]:
    """Exit code, at most `max_bytes + 1` bytes of stdout (a larger blob is not read whole), and stderr.

    Both pipes are read at once (a git that fills stderr first would otherwise wait on us for ever), and
    the whole run is bounded by GIT_TIMEOUT_S: a lazy fetch in a partial clone or a credential helper that
    hangs ends in an error, not a hung CI job. Git runs in a process group of its own, which is killed
    whole, since its helpers (`git fetch`, `git-remote-https`, a credential helper) hold the pipes too.
    Git never prompts (no terminal, GIT_TERMINAL_PROMPT=0)."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        git = subprocess.Popen(
            command,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
    except OSError as problem:
        raise EnvironmentProblem(f"git failed: {problem}") from problem
    stdout, stderr = git.stdout, git.stderr
    if stdout is None or stderr is None:  # both are pipes: never, but the types say maybe
        _kill_group(git)
        raise EnvironmentProblem("git failed: its output could not be read")
    out, err = bytearray(), bytearray()
    readers = [
        threading.Thread(target=_drain, args=(stdout, out, max_bytes + 1, git), daemon=True),
        threading.Thread(target=_drain, args=(stderr, err, _MAX_GIT_ERROR_BYTES, None), daemon=True),
    ]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + GIT_TIMEOUT_S
    try:
        for reader in readers:
            reader.join(max(0.0, deadline - time.monotonic()))
        if any(reader.is_alive() for reader in readers):
            raise subprocess.TimeoutExpired(command, GIT_TIMEOUT_S)
        code = git.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired as timeout:
        _stop(git, readers)
        raise EnvironmentProblem(
            f"git failed: {shlex.join(timeout.cmd)} did not finish in {GIT_TIMEOUT_S} s"
        ) from timeout
    except BaseException:
        # Ctrl-C: git has a session of its own (start_new_session), so the terminal's SIGINT never reached it.
        _stop(git, readers)
        raise
    stdout.close()
    stderr.close()
    too_big = len(out) > max_bytes
    return (0 if too_big else code), bytes(out), err.decode(errors="replace")


def _stop(git: subprocess.Popen[bytes], readers: list[threading.Thread]) -> None:
    """Kill git's process group, reap git, and close its pipes once nothing reads them any more (a helper that
    left the group may still hold them: its reader, a daemon thread, then keeps its pipe)."""
    _kill_group(git)
    with contextlib.suppress(subprocess.TimeoutExpired):
        git.wait(5)
    for reader, pipe in zip(readers, (git.stdout, git.stderr), strict=True):
        reader.join(0.5)
        if not reader.is_alive() and pipe is not None:
            pipe.close()


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the process and everything it started (its own session: start_new_session)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


def _drain(pipe: IO[bytes], into: bytearray, limit: int, stop: subprocess.Popen[bytes] | None) -> None:
    """Read `pipe` to its end, keeping its first `limit` bytes; past them, stop the process if given."""
    while chunk := pipe.read1(65536):  # type: ignore[attr-defined]
        if len(into) < limit:
            into += chunk[: limit - len(into)]
        if len(into) >= limit and stop is not None:
            _kill_group(stop)
            return
