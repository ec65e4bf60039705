"""Every file a command reads goes through the one bounded reader, and every file it generates is written whole.

A device such as /dev/zero says it holds 0 bytes and never ends, so a size check before reading is not enough:
the reader stops at the limit. A generated file (a JSON Schema, an HTML report) is written beside the target and
renamed over it, so a full disk leaves the old one whole; a symlink keeps pointing where it did; a device or a
pipe (/dev/stdout) is written into, not replaced.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kaistack.cli import main
from kaistack.declaration import limits, pipes
from kaistack.ops import safe_write

ZERO = Path("/dev/zero")
# The repository's own project, named so that a test does not depend on the directory pytest runs in.
PROJECT = ("--project", str(Path(__file__).resolve().parents[2]))


@pytest.mark.skipif(not ZERO.exists(), reason="needs /dev/zero")
def test_a_device_that_never_ends_is_read_no_further_than_the_limit() -> None:
    """In a child limited to 1 GiB of address space, so that reading the device whole fails the test, not CI."""
    script = (
        "import resource; resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))\n"
        "from kaistack.declaration.yaml_load import YamlInputError, read_text\n"
        "try:\n    read_text('/dev/zero', max_bytes=1024, what='stack file')\n"
        "except YamlInputError as err:\n    print(err)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.strip() == "/dev/zero: stack file is larger than 1024 bytes; kaistack reads at most that"


def test_lint_refuses_a_file_over_the_limit_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n" + "# padding\n" * 20)
    monkeypatch.setattr(limits, "MAX_MANIFEST_FILE_BYTES", 100)
    assert main(["lint", str(big)]) == 2
    assert "manifest file is 245 bytes; kaistack reads at most 100" in capsys.readouterr().err


def test_lint_says_a_file_is_not_utf8_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"kind: \xff\n")
    assert main(["lint", str(binary)]) == 2
    assert "bin.yaml: error: not UTF-8 text (byte 6)" in capsys.readouterr().err


def test_a_kubeconfig_that_is_not_utf8_is_an_environment_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_bytes(b"\x00\xff")
    assert main(["verify", "--stack", "dev", "--kubeconfig", str(kubeconfig), *PROJECT]) == 3
    assert "cannot read kubeconfig" in capsys.readouterr().err


def test_schema_check_reads_no_more_than_a_schema_can_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    big = tmp_path / "schema.json"
    big.write_text("{}" * 100)
    monkeypatch.setattr(limits, "MAX_SMALL_FILE_BYTES", 10)
    assert main(["schema", "--check", str(big)]) == 1
    assert "schema file is 200 bytes; kaistack reads at most 10" in capsys.readouterr().err


def test_schema_output_on_a_full_disk_leaves_the_old_file_whole_and_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "stack.schema.json"
    target.write_text("old\n")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(safe_write.os, "fsync", full)
    assert main(["schema", "--output", str(target)]) == 3
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stack.schema.json"]
    assert "No space left on device" in capsys.readouterr().err


def test_a_write_into_a_missing_directory_names_the_whole_path_and_says_nothing_was_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "no-such-dir" / "stack.schema.json"
    assert main(["schema", "--output", str(target)]) == 3
    err = capsys.readouterr().err
    assert f"could not write {target}: No such file or directory; nothing written" in err


def test_schema_output_through_a_symlink_writes_the_file_it_names(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old\n")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert main(["schema", "--output", str(link)]) == 0
    assert link.is_symlink()
    assert real.read_text().startswith("{")


def test_schema_output_refuses_a_read_only_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "frozen.json"
    target.write_text("old\n")
    target.chmod(0o444)
    assert main(["schema", "--output", str(target)]) == 3
    assert target.read_text() == "old\n"
    assert "frozen.json is read-only" in capsys.readouterr().err


def test_a_file_on_a_read_only_file_system_is_not_told_to_chmod(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only mount (statvfs ST_RDONLY): the file's mode is writable and a chmod cannot help."""
    target = tmp_path / "schema.json"
    target.write_text("old\n")
    real = os.statvfs

    class ReadOnly:
        def __init__(self, path: object) -> None:
            self.f_flag = real(path).f_flag | os.ST_RDONLY  # type: ignore[arg-type]

    monkeypatch.setattr(safe_write.os, "statvfs", ReadOnly)
    assert main(["schema", "--output", str(target)]) == 3
    err = capsys.readouterr().err
    assert "schema.json is on a read-only file system; nothing written" in err
    assert "chmod" not in err
    assert target.read_text() == "old\n"


def test_check_html_into_a_missing_directory_is_an_environment_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "no" / "page.html"
    assert main(["check", "--stack", "dev", "--html", str(page), *PROJECT]) == 3
    assert f"could not write {page}" in capsys.readouterr().err


def test_a_pipe_is_written_into_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        safe_write.write_generated(fifo, "through the pipe\n")
        assert os.read(reader, 100) == b"through the pipe\n"
    finally:
        os.close(reader)
    assert fifo.is_fifo()


@pytest.mark.parametrize("kind", ["directory", "dangling symlink", "device"])
def test_a_stack_file_that_is_not_a_file_says_what_it_is(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "Pulumi.odd.yaml"
    if kind == "directory":
        target.mkdir()
    elif kind == "dangling symlink":
        target.symlink_to(tmp_path / "gone")
    else:
        target.symlink_to(ZERO)
    (tmp_path / "Pulumi.yaml").write_text("name: kaistack\nruntime: python\n")
    assert main(["check", "--stack", "odd", "--project", str(tmp_path)]) == 2
    words = {"directory": "is a directory", "dangling symlink": "is a symlink to nothing", "device": "is not a file"}
    assert f"Pulumi.odd.yaml in {tmp_path} {words[kind]}; a stack file is a file" in capsys.readouterr().err


def test_lint_of_a_directory_without_manifests_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("not a manifest\n")
    assert main(["lint", str(tmp_path)]) == 2
    assert "a directory with no manifest files (.json, .yaml, .yml) in it" in capsys.readouterr().err


def test_validate_with_a_policy_pack_that_is_not_there_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", "--stack", "dev", "--policy-pack", str(tmp_path / "nope"), *PROJECT]) == 2
    assert "no policy pack there (no __main__.py)" in capsys.readouterr().err


def test_dev_stdout_is_written_through_the_stream_keeping_what_it_appends_to(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`kaistack schema --output /dev/stdout >> log` must not replace log (a rename would)."""
    assert main(["schema", "--output", "/dev/stdout"]) == 0
    assert capsys.readouterr().out.startswith("{")


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["check", "--stack", "nope", *PROJECT], 2),
        (["render", "--stack", "nope", *PROJECT], 2),
        (["simulate", "/nonexistent/scenario.yaml"], 2),
        (["diagnose", "--from-dump", "/nonexistent/dump.yaml"], 2),
        (["verify", "--stack", "dev", "--kubeconfig", "/nonexistent/kubeconfig", *PROJECT], 3),
        (["lint", "/nonexistent/pod.yaml", "--stack", "nope", *PROJECT], 2),
        (["promote", "dev", "staging", *PROJECT], 2),
    ],
    ids=["check", "render", "simulate", "diagnose", "verify", "lint-unknown-stack", "promote-without-yes"],
)
def test_json_output_is_a_document_even_when_the_command_is_refused(
    argv: list[str], code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """A machine reading --json gets {"ok": false, "exitCode", "error"} on stdout, not an empty stream."""
    import json

    assert main([*argv, "--json"]) == code
    out, err = capsys.readouterr()
    document = json.loads(out)
    assert (document["ok"], document["exitCode"]) == (False, code)
    assert document["error"] == err.strip()


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "x.json", "--max-seconds", "abc"],
        ["check", "--stack", "dev", "--markdown"],
        ["lint"],
        ["verify", "--stack", "dev", "--wait", "nan"],
        ["render", "--stack", "dev", "--no-such-flag"],
    ],
    ids=["bad-value", "exclusive-flags", "missing-argument", "out-of-range", "unknown-flag"],
)
def test_a_usage_error_under_json_is_a_document_too(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's own refusals (exit 2) print the same {"ok": false} document as the commands' refusals."""
    import json

    with pytest.raises(SystemExit) as caught:
        main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert caught.value.code == 2
    document = json.loads(out)
    assert (document["ok"], document["exitCode"]) == (False, 2)
    assert document["error"] == err.strip().splitlines()[-1]
    assert err.startswith("usage: kaistack ")


def test_a_usage_error_without_json_prints_nothing_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["simulate", "x.json", "--max-seconds", "abc", "--", "--json"])
    out, err = capsys.readouterr()
    assert (caught.value.code, out) == (2, "")
    assert err.endswith("kaistack simulate: error: argument --max-seconds: invalid float value: 'abc'\n")


# --- named pipes: a peer that never comes is refused, not waited on ---------------------------------------


def test_a_named_pipe_no_process_writes_to_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """open() on a FIFO blocks until a writer opens it too; kaistack gives a writer a moment, then says so."""
    monkeypatch.setattr(pipes, "WRITER_WAIT_SECONDS", 0.2)
    fifo = tmp_path / "pods.yaml"
    os.mkfifo(fifo)
    assert main(["simulate", str(fifo)]) == 2
    assert f"{fifo} is a pipe no process writes to" in capsys.readouterr().err


def test_a_named_pipe_whose_writer_is_slow_is_read_to_its_end(tmp_path: Path) -> None:
    """As process substitution (`kaistack lint <(kubectl get ...)`) hands over: the writer holds the pipe open and
    takes its time; the reader waits for it, past the time a missing writer is given."""
    fifo = tmp_path / "in.yaml"
    os.mkfifo(fifo)
    writer = subprocess.Popen(
        [sys.executable, "-c", f"import time; f = open({str(fifo)!r}, 'w'); time.sleep(0.5); f.write('a: 1\\n')"]
    )
    try:
        assert pipes.read_bounded(fifo, 100) == b"a: 1\n"
    finally:
        writer.wait(timeout=10)


def test_a_named_pipe_no_process_reads_from_is_refused_as_a_write_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "schema.json"
    os.mkfifo(fifo)
    assert main(["schema", "--output", str(fifo)]) == 3
    assert f"{fifo} is a pipe no process reads from" in capsys.readouterr().err


def _written_stack_file(tmp_path: Path) -> tuple[Path, str]:
    target = tmp_path / "Pulumi.staging.yaml"
    target.write_text("old\n")
    return target, safe_write.hashlib.sha256(target.read_bytes()).hexdigest()


@pytest.mark.skipif(os.getuid() != 0, reason="only root can give a file to another user")
def test_a_replaced_file_keeps_its_owner_when_root_writes_it(tmp_path: Path) -> None:
    """Root in a container on a bind-mounted checkout left the user a stack file owned by root."""
    target, digest = _written_stack_file(tmp_path)
    os.chown(target, 1234, 1234)
    safe_write.replace_if_unchanged(target, "new\n", digest)
    assert (target.stat().st_uid, target.stat().st_gid) == (1234, 1234)
    assert target.read_text() == "new\n"


def test_a_replaced_written_stack_file_is_given_back_where_the_process_may(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As any user: the new file is handed to the old one's owner (the chown fails quietly where not allowed)."""
    target, digest = _written_stack_file(tmp_path)
    owner = (target.stat().st_uid, target.stat().st_gid)
    given: list[tuple[int, int]] = []
    monkeypatch.setattr(safe_write.os, "getuid", lambda: owner[0] + 1)
    monkeypatch.setattr(safe_write.os, "chown", lambda path, uid, gid: given.append((uid, gid)))
    safe_write.replace_if_unchanged(target, "new\n", digest)
    assert given == [owner]
    assert target.read_text() == "new\n"


def test_a_hard_linked_file_is_refused_not_split_from_its_other_names(tmp_path: Path) -> None:
    """Replaced by a rename, the other name kept the old text and nothing said so (promote's stack file)."""
    target, digest = _written_stack_file(tmp_path)
    other = tmp_path / "Pulumi.staging.yaml.link"
    os.link(target, other)
    with pytest.raises(safe_write.WriteFailed, match=r"has 2 hard links; replacing it would leave the other 1 on"):
        safe_write.replace_if_unchanged(target, "new\n", digest)
    assert target.read_text() == other.read_text() == "old\n"
