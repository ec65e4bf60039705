"""A stack as it was at another git commit, or in another file, loads through the same path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from workflow_testlib import FIXTURES

from kaistack.declaration.parse import ConfigError
from kaistack.errors import EnvironmentProblem
from kaistack.stack.history import load_stack_at, load_stack_file, stack_text_at
from kaistack.stack.load import LoadOptions

OFFLINE = LoadOptions(discover=False)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The fixture project in a git repository with two commits: dev's stack file changes in the second."""
    project = tmp_path / "repo" / "project"
    shutil.copytree(FIXTURES / "project", project)
    _git(project.parent, "init", "-q", "-b", "main")
    _git(project.parent, "-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    _git(project.parent, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    dev = project / "Pulumi.dev.yaml"
    dev.write_text(dev.read_text() + "# changed in the second commit\n")
    _git(project.parent, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "change")
    return project


def test_a_stack_loads_as_it_was_at_an_earlier_commit(repo: Path) -> None:
    before = load_stack_at(repo, "dev", "HEAD~1", OFFLINE)
    assert "changed in the second commit" not in stack_text_at(repo, "dev", "HEAD~1")
    assert "changed in the second commit" in stack_text_at(repo, "dev", "HEAD")
    assert before.source == "Pulumi.dev.yaml at HEAD~1"
    assert before.config.cluster.provider == "kind"


def test_a_stack_missing_at_the_ref_is_named(repo: Path) -> None:
    (repo / "Pulumi.qa.yaml").write_text((repo / "Pulumi.dev.yaml").read_text())
    with pytest.raises(ConfigError, match=r"Pulumi\.qa\.yaml does not exist at HEAD"):
        load_stack_at(repo, "qa", "HEAD", OFFLINE)


@pytest.mark.parametrize("ref", ["--output=/tmp/x", "-p", "a b", ""])
def test_a_ref_that_is_not_a_revision_is_refused(repo: Path, ref: str) -> None:
    with pytest.raises(ConfigError, match="not a git revision"):
        stack_text_at(repo, "dev", ref)


def test_an_unknown_ref_is_an_input_error(repo: Path) -> None:
    with pytest.raises(ConfigError, match="not a commit of this repository"):
        stack_text_at(repo, "dev", "no-such-branch")


@pytest.mark.parametrize("ref", ["HEAD~1..HEAD", "^HEAD", "HEAD^@", "HEAD...HEAD~1"])
def test_a_range_names_no_single_commit_and_is_refused(repo: Path, ref: str) -> None:
    """`git show` prints nothing and succeeds for these; the stack would then read as empty."""
    with pytest.raises(ConfigError, match="not a commit of this repository"):
        load_stack_at(repo, "dev", ref)


def test_outside_a_repository_is_an_environment_problem(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "project", tmp_path / "p")
    with pytest.raises(EnvironmentProblem, match="not in a git repository"):
        stack_text_at(tmp_path / "p", "dev", "HEAD")


def test_a_base_file_loads_like_a_stack_file(tmp_path: Path) -> None:
    base = tmp_path / "base.yaml"
    base.write_text((FIXTURES / "project" / "Pulumi.dev.yaml").read_text())
    loaded = load_stack_file(base, "dev", OFFLINE)
    assert loaded.source == str(base)
    assert loaded.config.cluster.provider == "kind"


def test_a_stack_file_at_a_ref_that_is_not_utf8_is_an_input_error(repo: Path) -> None:
    dev = repo / "Pulumi.dev.yaml"
    dev.write_bytes(dev.read_bytes() + b"# \xff\n")
    _git(repo.parent, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "binary")
    with pytest.raises(ConfigError, match=r"Pulumi\.dev\.yaml at HEAD: not UTF-8 text \(byte \d+\)"):
        stack_text_at(repo, "dev", "HEAD")


def test_a_stack_file_at_a_ref_larger_than_the_limit_is_refused_without_reading_it_whole(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kaistack.declaration import limits

    monkeypatch.setattr(limits, "MAX_STACK_FILE_BYTES", 64)
    with pytest.raises(ConfigError, match=r"Pulumi\.dev\.yaml at HEAD: larger than 64 bytes"):
        stack_text_at(repo, "dev", "HEAD")


def test_git_refusing_the_repository_is_an_environment_problem_with_its_words(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkout owned by another user (container CI): git's own message, with its safe.directory fix, is kept."""
    from kaistack.stack import history

    said = "fatal: detected dubious ownership in repository at '/w' To add an exception: git config --global --add"
    monkeypatch.setattr(history, "_git", lambda command, cwd, max_bytes: (128, b"", said + " safe.directory /w\n"))
    with pytest.raises(EnvironmentProblem, match=r"git refuses to read .*safe\.directory /w"):
        stack_text_at(repo, "dev", "HEAD~1")


def test_an_unknown_ref_names_what_git_said(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kaistack.stack import history

    monkeypatch.setattr(
        history, "_git", lambda command, cwd, max_bytes: (128, b"", "fatal: log for 'main' only has 3\n")
    )
    with pytest.raises(
        ConfigError, match=r"not a commit of this repository .*\(git: fatal: log for 'main' only has 3\)"
    ):
        stack_text_at(repo, "dev", "main@{9}")


def _commit_link(repo: Path, name: str, target: str) -> None:
    (repo / name).symlink_to(target)
    _git(repo.parent, "-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
    _git(repo.parent, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "link")


def test_a_committed_symlink_is_followed_to_its_target_as_the_file_system_follows_it(repo: Path) -> None:
    """git stores a link as a blob of its target's path; the stack is the target's text."""
    shutil.copy(repo / "Pulumi.dev.yaml", repo.parent / "shared.yaml")
    _commit_link(repo, "Pulumi.link.yaml", "../shared.yaml")
    _commit_link(repo, "Pulumi.hop.yaml", "Pulumi.link.yaml")
    assert stack_text_at(repo, "hop", "HEAD") == (repo / "Pulumi.dev.yaml").read_text()
    assert load_stack_at(repo, "hop", "HEAD", OFFLINE).config.cluster.provider == "kind"


@pytest.mark.parametrize("target", ["/etc/passwd", "../../outside.yaml"])
def test_a_committed_symlink_out_of_the_repository_is_refused(repo: Path, target: str) -> None:
    _commit_link(repo, "Pulumi.out.yaml", target)
    with pytest.raises(ConfigError, match=r"Pulumi\.out\.yaml"):
        stack_text_at(repo, "out", "HEAD")


def test_a_loop_of_committed_symlinks_is_refused(repo: Path) -> None:
    _commit_link(repo, "Pulumi.a.yaml", "Pulumi.b.yaml")
    _commit_link(repo, "Pulumi.b.yaml", "Pulumi.a.yaml")
    with pytest.raises(ConfigError, match=r"Pulumi\.a\.yaml at HEAD: more than 8 links in a row"):
        stack_text_at(repo, "a", "HEAD")


@pytest.mark.parametrize("link", [False, True], ids=["directory", "link-to-directory"])
def test_a_stack_file_that_is_a_directory_at_the_ref_is_refused_as_one(repo: Path, link: bool) -> None:
    """`git show REF:dir` prints the tree's listing and exits 0; read as YAML it was "'config' must be a mapping"."""
    stacks = repo / ("stacks" if link else "Pulumi.dir.yaml")
    stacks.mkdir()
    shutil.copy(repo / "Pulumi.dev.yaml", stacks / "dev.yaml")
    if link:
        _commit_link(repo, "Pulumi.dir.yaml", "stacks")
    else:
        _git(repo.parent, "-c", "user.name=t", "-c", "user.email=t@t", "add", ".")
        _git(repo.parent, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "dir")
    shown = "stacks" if link else "Pulumi.dir.yaml"
    with pytest.raises(ConfigError, match=rf"Pulumi\.dir\.yaml at HEAD: {shown} is a directory, not a stack file"):
        stack_text_at(repo, "dir", "HEAD")


# --- the git process itself -------------------------------------------------------------------------------


def _python(script: str) -> list[str]:
    return [sys.executable, "-c", script]


def test_a_git_that_never_finishes_is_stopped_at_the_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lazy fetch in a partial clone, a hung credential helper: an environment problem, not a hung job."""
    from kaistack.stack import history

    monkeypatch.setattr(history, "GIT_TIMEOUT_S", 0.5)
    never = _python("import sys, time; time.sleep(20); sys.stdout.write('late')")
    with pytest.raises(EnvironmentProblem, match=r"did not finish in 0\.5 s"):
        history._git(never, tmp_path, 100)


def test_a_git_that_fills_stderr_before_stdout_is_read_to_its_end(tmp_path: Path) -> None:
    """Both pipes are read at once: 1 MiB of warnings first (more than a pipe holds) does not block it.
    The script gives up after 10 s, so a reader of stdout alone fails here instead of hanging."""
    from kaistack.stack import history

    chatty = _python(
        "import signal, sys; signal.alarm(10); sys.stderr.write('w' * (1 << 20)); sys.stderr.flush(); "
        "sys.stdout.write('the file')"
    )
    code, out, err = history._git(chatty, tmp_path, 100)
    assert (code, out) == (0, b"the file")
    assert err == "w" * (64 * 1024)


def test_git_is_told_not_to_prompt(tmp_path: Path) -> None:
    from kaistack.stack import history

    code, out, _ = history._git(
        _python("import os, sys; sys.stdout.write(os.environ['GIT_TERMINAL_PROMPT'])"), tmp_path, 10
    )
    assert (code, out) == (0, b"0")


def test_output_past_the_limit_stops_git_and_is_not_read_whole(tmp_path: Path) -> None:
    from kaistack.stack import history

    code, out, _ = history._git(_python("import sys\nwhile True: sys.stdout.write('x' * 65536)"), tmp_path, 1000)
    assert (code, len(out)) == (0, 1001)


def test_the_timeout_also_stops_what_git_started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lazy fetch's `git fetch` or a credential helper holds git's pipes after git itself is killed: the whole
    process group goes, helpers included (they would otherwise run on, and the error wait for them)."""
    from kaistack.stack import history

    monkeypatch.setattr(history, "GIT_TIMEOUT_S", 0.5)
    pid_file = tmp_path / "helper.pid"
    spawning = ["sh", "-c", f"sleep 10 & echo $! > {pid_file}; sleep 10"]
    with pytest.raises(EnvironmentProblem, match=r"did not finish in 0\.5 s"):
        history._git(spawning, tmp_path, 100)
    helper = int(pid_file.read_text())
    time.sleep(0.2)  # SIGKILL is delivered asynchronously
    assert not _running(helper)


def _running(pid: int) -> bool:
    """Alive and not a zombie (a killed orphan stays one until init reaps it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return state != "Z"


def test_a_git_that_closes_its_pipes_but_does_not_exit_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kaistack.stack import history

    monkeypatch.setattr(history, "GIT_TIMEOUT_S", 0.5)
    started = time.monotonic()
    with pytest.raises(EnvironmentProblem, match="did not finish"):
        history._git(["sh", "-c", "exec >&- 2>&-; sleep 10"], tmp_path, 100)
    assert time.monotonic() - started < 5


def test_an_interrupt_stops_git_and_what_it_started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """git runs in a session of its own, so the terminal's Ctrl-C does not reach it: kaistack stops it."""
    from kaistack.stack import history

    pid_file = tmp_path / "helper.pid"
    spawning = ["sh", "-c", f"sleep 30 & echo $! > {pid_file}; sleep 30"]
    real_join = threading.Thread.join
    interrupts = [KeyboardInterrupt()]

    def interrupted_join(self: threading.Thread, timeout: float | None = None) -> None:
        if not interrupts:  # the clean-up's own joins
            return real_join(self, timeout)
        while not pid_file.exists():
            time.sleep(0.01)
        raise interrupts.pop()

    monkeypatch.setattr(threading.Thread, "join", interrupted_join)
    with pytest.raises(KeyboardInterrupt):
        history._git(spawning, tmp_path, 100)
    monkeypatch.setattr(threading.Thread, "join", real_join)
    helper = int(pid_file.read_text())
    time.sleep(0.2)
    assert not _running(helper)
