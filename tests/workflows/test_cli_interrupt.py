"""Ctrl-C is exit 130 and one line, wherever it lands.

Landing inside an import or the Pulumi mocks' event loop, KeyboardInterrupt used to surface as another error (a
half-imported module's AttributeError: exit 70 with an 'internal error' line, and hundreds of lines of asyncio's
pending tasks). The CLI remembers the signal itself.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from typing import Any

import pytest

from kaistack import cli
from kaistack.cli import main
from kaistack.cli import schema as schema_command


@pytest.fixture(autouse=True)
def _restore_what_an_interrupt_mutes(monkeypatch: pytest.MonkeyPatch) -> Any:
    """An interrupted command keeps asyncio's logger and unraisable hook quiet until the process exits. And pytest
    started with SIGINT ignored (`pytest &` from a script) would make every os.kill below do nothing: the tests
    run with Python's own handler."""
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)
    asyncio_logger = logging.getLogger("asyncio")
    monkeypatch.setattr(asyncio_logger, "level", asyncio_logger.level)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _interrupted_then(error: BaseException | None) -> Any:
    def run(args: Any) -> int:
        try:
            os.kill(os.getpid(), signal.SIGINT)
        except KeyboardInterrupt:
            if error is not None:
                raise error from None
            return 0  # an event loop that swallowed it and carried on
        return 0

    return run


@pytest.mark.parametrize(
    "error",
    [AttributeError("module 'pulumi_aws.eks' has no attribute 'ClusterUpgradePolicyArgs'"), None],
    ids=["turned-into-another-error", "swallowed"],
)
def test_an_interrupt_is_exit_130_whatever_it_became(
    error: BaseException | None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(schema_command, "run", _interrupted_then(error))
    assert main(["schema"]) == 130
    assert capsys.readouterr().err == "interrupted\n"


def test_a_plain_interrupt_is_exit_130(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def run(args: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(schema_command, "run", run)
    assert main(["schema"]) == 130
    assert capsys.readouterr().err == "interrupted\n"


def test_the_previous_handler_is_back_after_the_command() -> None:
    before = signal.getsignal(signal.SIGINT)
    main(["schema", "--check", os.devnull])
    assert signal.getsignal(signal.SIGINT) is before


def test_a_run_started_with_interrupts_ignored_keeps_ignoring_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """A shell starts `kaistack ... &` with SIGINT ignored; a terminal's Ctrl-C must not stop it."""
    during: list[Any] = []

    def run(args: Any) -> int:
        during.append(signal.getsignal(signal.SIGINT))
        return 0

    monkeypatch.setattr(schema_command, "run", run)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert main(["schema"]) == 0
    finally:
        signal.signal(signal.SIGINT, previous)
    assert during == [signal.SIG_IGN]


def _interrupt_and(then: Any) -> Any:
    def run(args: Any) -> int:
        with contextlib.suppress(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
        return int(then())

    return run


def test_a_command_that_does_not_unwind_after_an_interrupt_is_ended_with_130(monkeypatch: pytest.MonkeyPatch) -> None:
    """Interrupted inside the import machinery, promote's main thread waited for ever on a worker stuck on the module
    lock it held: after INTERRUPT_GRACE_S the process ends (here: the stand-in for os._exit(130) runs)."""
    ended = threading.Event()
    monkeypatch.setattr(cli, "INTERRUPT_GRACE_S", 0.1)
    monkeypatch.setattr(cli, "_end_interrupted", ended.set)
    monkeypatch.setattr(schema_command, "run", _interrupt_and(lambda: ended.wait(10) and 0))
    assert main(["schema"]) == 130
    assert ended.is_set()


def test_a_command_that_unwinds_in_time_is_not_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    ended = threading.Event()
    monkeypatch.setattr(cli, "INTERRUPT_GRACE_S", 0.2)
    monkeypatch.setattr(cli, "_end_interrupted", ended.set)
    monkeypatch.setattr(schema_command, "run", _interrupt_and(lambda: 0))
    assert main(["schema"]) == 130
    time.sleep(0.4)
    assert not ended.is_set()


def test_an_interrupt_keeps_asyncio_quiet_after_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pending tasks are logged when the loop is collected, after main returns: 60-117 lines of traceback."""
    monkeypatch.setattr(schema_command, "run", _interrupt_and(lambda: 0))
    main(["schema"])
    assert logging.getLogger("asyncio").level > logging.CRITICAL


@pytest.mark.parametrize("debug", ["", "1"])
def test_a_bug_is_exit_70_with_the_traceback_only_under_kaistack_debug(
    debug: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under KAISTACK_DEBUG the error was raised again, and Python ended with 1, which reads as "findings"."""

    def run(args: Any) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setenv("KAISTACK_DEBUG", debug)
    monkeypatch.setattr(schema_command, "run", run)
    assert main(["schema"]) == 70
    err = capsys.readouterr().err
    assert ("Traceback (most recent call last)" in err) is bool(debug)
    assert err.rstrip().endswith("Run again with KAISTACK_DEBUG=1 for the traceback and report it.")
