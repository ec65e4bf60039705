"""Every team-workflow command documents itself with examples and exit codes in --help."""

from __future__ import annotations

import pytest

from kaistack.cli import main


@pytest.mark.parametrize("command", ["promote", "verify", "validate"])
def test_help_shows_examples_and_exit_codes(command, capsys):
    """`kaistack <command> --help` ends with runnable examples and the exit-code contract."""
    with pytest.raises(SystemExit, match="0"):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert f"\nexamples:\n  kaistack {command} " in out
    assert "exit codes: 0 " in out
