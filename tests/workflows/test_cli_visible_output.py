"""Nothing kaistack echoes from its input can drive the terminal (kaistack.cli.output.visible_output)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kaistack.cli import main
from kaistack.cli.output import dumps, visible, visible_output

ROOT = Path(__file__).resolve().parents[2]
ESCAPES = "a\x1b]0;owned\x07b\x1b[2J\rc\x9bd"


def test_control_characters_are_written_as_visible_text() -> None:
    assert visible(ESCAPES) == "a\\x1b]0;owned\\x07b\\x1b[2J\\x0dc\\x9bd"


def test_tabs_and_newlines_are_kept() -> None:
    assert visible("a\tb\nc") == "a\tb\nc"


def test_a_command_that_echoes_a_name_writes_its_escapes_visibly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "pod.json"
    container = {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{ESCAPES}"}, "spec": {"containers": [container]}}
    manifest.write_text(json.dumps(pod))
    main(["lint", str(manifest)])
    out, err = capsys.readouterr()
    assert "\\x1b]0;owned" in out + err
    assert "\x1b" not in out + err
    assert "\x07" not in out + err


def test_json_output_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    with visible_output():
        print(json.dumps({"name": ESCAPES}))
    assert json.loads(capsys.readouterr().out) == {"name": ESCAPES}


def test_format_characters_are_written_as_their_code_points() -> None:
    """A bidi override in a name echoed to a terminal would display the rest of the line reversed."""
    assert visible("zone\u202ex\u200by") == "zone\\u202ex\\u200by"


def test_json_holds_no_lone_surrogate_from_a_non_utf8_file_name() -> None:
    """surrogateescape turns the byte 0xff of a file name into U+DCFF, which json writes as an escape strict readers
    refuse; it is written as the text \\xff."""
    text = dumps({"file": "bad\udcffname.yaml", "emoji": "\U0001f480", "high": "a\ud800b"})
    assert json.loads(text) == {"file": "bad\\xffname.yaml", "emoji": "\U0001f480", "high": "a\\ud800b"}
    text.encode("utf-8")
    json.loads(text)["file"].encode("utf-8")


def test_a_stdout_in_another_encoding_gets_escapes_not_an_internal_error() -> None:
    """PYTHONIOENCODING=latin-1 (or a C locale with UTF-8 mode off): the tree's box lines were a UnicodeEncodeError,
    exit 70 "a bug in kaistack"."""
    env = {**os.environ, "PYTHONIOENCODING": "latin-1"}
    done = subprocess.run(
        [sys.executable, "-m", "kaistack", "render", "--stack", "dev", "--project", str(ROOT)],
        capture_output=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert b"\\u2514\\u2500\\u2500 kaistack  [kaistack:index:Platform]" in done.stdout
