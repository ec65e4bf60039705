"""Every team-workflow command documents itself with examples and exit codes in --help."""

from __future__ import annotations

import pytest

from kaistack.cli import main


@pytest.mark.parametrize("command", ["promote", "verify", "validate", "kai-ready"])
def test_help_shows_examples_and_exit_codes(command, capsys):
    """`kaistack <command> --help` ends with runnable examples and the exit-code contract."""
    with pytest.raises(SystemExit, match="0"):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert f"\nexamples:\n  kaistack {command} " in out
    assert "exit codes: 0 " in out


@pytest.mark.parametrize("command", ["check", "render", "validate", "diff"])
def test_help_of_a_command_that_reads_an_existing_clusters_nodes_lists_exit_3(command, capsys):
    """Each exits 3 when they cannot be read (tests/workflows/test_existing_cluster.py): the contract says so."""
    with pytest.raises(SystemExit, match="0"):
        main([command, "--help"])
    codes = capsys.readouterr().out.split("exit codes:", 1)[1]
    assert "3 " in codes
    assert "an existing cluster whose nodes" in " ".join(codes.split())


def test_help_of_diff_counts_an_update_hazard_as_exit_1(capsys):
    """A bare Pod's gpuFraction 0.5 -> 0.4 deletes nothing yet exits 1 (workload-not-updated); the help said 0."""
    with pytest.raises(SystemExit, match="0"):
        main(["diff", "--help"])
    codes = " ".join(capsys.readouterr().out.split("exit codes:", 1)[1].split())
    assert codes.startswith("0 nothing becomes Pending or is evicted and `pulumi up` would meet no hazard, 1 ")
