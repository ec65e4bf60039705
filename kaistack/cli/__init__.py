"""The `kaistack` command line: one module per subcommand (kaistack.cli.<command>), each with `register(subparsers)`."""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import signal
import sys
import threading
import traceback
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

from kaistack import __version__
from kaistack.cli import check, diagnose, diff, kai_ready, lint, promote, render, schema, simulate, validate, verify
from kaistack.cli.output import refuse, visible_output
from kaistack.errors import ExitCode, KaistackError

# Order is the order shown in --help. Command modules import nothing heavy (pulumi, grpc) at import
# time, so building the parser stays fast.
COMMANDS = (render, check, diff, simulate, lint, validate, promote, verify, diagnose, kai_ready, schema)

EPILOG = """\
examples:
  kaistack render --stack dev --json        every resource `pulumi up --stack dev` would register
  kaistack check --stack dev                will the declared workloads fit the declared GPUs?
  kaistack diff --stack dev --base main     what this change does to capacity (for a PR)
  kaistack simulate scenario.yaml --json    run KAI's scheduling cycle on a scenario file
  kaistack lint manifests/*.yaml            the policy pack's rules on plain Kubernetes manifests
  kaistack validate --stack dev --markdown  render + policies + capacity, for a PR comment
  kaistack promote dev staging              copy tested release pins from dev into staging
  kaistack verify --stack dev               after `pulumi up`: does KAI schedule as declared?
  kaistack diagnose                         why are pods Pending on this cluster right now?
  kaistack kai-ready                        wait until KAI's webhooks answer (`pulumi up` runs it)
  kaistack schema > schema/stack.schema.json  the stack file's JSON Schema, for editors

exit codes: 0 ok, 1 findings (violations, pending workloads, failed checks), 2 bad input or config,
  3 environment (a cluster, credentials, a tool or the disk that cannot be used), 70 internal error
  (a bug: set KAISTACK_DEBUG=1 for the traceback), 130 interrupted
"""


class UsageError(Exception):
    """A command line argparse refused: its usage line and its `prog: error: message` line."""

    def __init__(self, usage: str, message: str) -> None:
        super().__init__(message)
        self.usage = usage
        self.message = message


class _Parser(argparse.ArgumentParser):
    """argparse's parser, raising instead of printing and exiting, so that `main` can print a usage error the way
    it prints every refusal: also as a document on stdout under --json. Subcommand parsers are of this class too
    (argparse makes them of the parent's class)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self.format_usage(), f"{self.prog}: error: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="kaistack",
        description="GPU-sharing Kubernetes platforms (KAI scheduler + vCluster) from one Pulumi stack.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"kaistack {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    with visible_output():  # an invalid choice is echoed back: the user's text cannot drive the terminal either
        args = _parse(build_parser(), argv)
    command = f"kaistack {args.command}"
    with _interrupts() as interrupted, visible_output() as stdout:
        code = _run(args, command, interrupted)
        if interrupted.is_set():
            if code != int(ExitCode.INTERRUPTED):
                # Ctrl-C landed inside an event loop that swallowed it (the Pulumi mocks): still an interruption.
                print("interrupted", file=sys.stderr)
            code = int(ExitCode.INTERRUPTED)
    if stdout.failure is not None and code in (int(ExitCode.OK), int(ExitCode.FINDINGS)):
        # The verdict was decided but not all of it written (a full disk): what a reader has is not the report.
        # Other codes (bad input, a bug, an interrupt) say more than the lost output does, and stay.
        wrote = getattr(args, "wrote", None)
        written = f"; {wrote} was written all the same" if wrote else ""
        with contextlib.suppress(OSError, AttributeError):  # stderr full or closed too: the exit code still says it
            reason = stdout.failure.strerror or stdout.failure
            print(f"{command}: cannot write its output: {reason}{written}", file=sys.stderr)
        return int(ExitCode.ENVIRONMENT)
    return code


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """The parsed flags; a usage error is argparse's two lines on stderr and, under --json, the refusal document on
    stdout, then exit 2 as argparse exits (SystemExit)."""
    try:
        return parser.parse_args(argv)
    except UsageError as err:
        sys.stderr.write(err.usage)
        sys.exit(refuse(argparse.Namespace(json=_asks_for_json(argv)), err.message, int(ExitCode.INVALID_INPUT)))


def _asks_for_json(argv: list[str]) -> bool:
    """--json (or an abbreviation argparse would take for it) among the options, before any `--`. The flags did not
    parse, so this reads the tokens; a command without --json that is given it was asked for JSON all the same."""
    options = argv[: argv.index("--")] if "--" in argv else argv
    return any(len(token) > 2 and "--json".startswith(token) for token in options)


# Seconds an interrupted command has to unwind before the process ends with 130 regardless: a KeyboardInterrupt
# that lands inside the import machinery or an event loop can leave a lock held or a future that never resolves
# (a worker thread waiting on the module lock the main thread held), and the command would hang for ever.
INTERRUPT_GRACE_S = 10.0


def _end_interrupted() -> None:
    with contextlib.suppress(OSError):
        os.write(2, b"interrupted (stopped waiting for the command to unwind)\n")
    os._exit(int(ExitCode.INTERRUPTED))


@contextlib.contextmanager
def _interrupts() -> Iterator[threading.Event]:
    """Remember a SIGINT (then raise KeyboardInterrupt as Python does), for as long as the command runs; if the
    command has not unwound INTERRUPT_GRACE_S later, end the process with 130."""
    seen = threading.Event()
    deadline: list[threading.Timer] = []

    def on_interrupt(signum: int, frame: Any) -> None:
        if not seen.is_set():
            seen.set()
            timer = threading.Timer(INTERRUPT_GRACE_S, _end_interrupted)
            timer.daemon = True
            timer.start()
            deadline.append(timer)
        # The stopped run leaves the Pulumi mocks' tasks pending: asyncio would log each one it destroys, and
        # their finalizers would print "Exception ignored" at exit; neither is news after a Ctrl-C.
        logging.getLogger("asyncio").setLevel(logging.CRITICAL + 1)
        sys.unraisablehook = lambda _: None
        raise KeyboardInterrupt

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # started with Ctrl-C ignored (`cmd &`): keep it so
        yield seen
        return
    try:
        previous = signal.signal(signal.SIGINT, on_interrupt)
    except ValueError:  # not the main thread (an embedding caller): leave its handler alone
        yield seen
        return
    asyncio_logger = logging.getLogger("asyncio")
    level = asyncio_logger.level
    try:
        yield seen
    finally:
        for timer in deadline:
            timer.cancel()
        signal.signal(signal.SIGINT, previous)
        if not seen.is_set():  # interrupted, the pending tasks are logged when the loop is collected, later
            asyncio_logger.setLevel(level)


def _run(args: argparse.Namespace, command: str, interrupted: threading.Event) -> int:
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    except Exception as err:
        if interrupted.is_set():  # whatever Ctrl-C broke on its way out: neither bad input nor a bug
            print("interrupted", file=sys.stderr)
            return int(ExitCode.INTERRUPTED)
        if not isinstance(err, KaistackError):
            _debug_traceback(err)
        said = io.StringIO()
        with contextlib.redirect_stderr(said):
            code = _failure(command, err)
        if not said.getvalue() or code == int(ExitCode.OK):
            sys.stderr.write(said.getvalue())
            return code
        return refuse(args, said.getvalue().rstrip("\n"), code)  # stderr, and a document under --json


def _failure(command: str, err: Exception) -> int:
    """The exit code and the one line for an exception the command raised."""
    if isinstance(err, KaistackError):
        print(f"{command}: {err}", file=sys.stderr)
        return int(err.exit_code)
    if isinstance(err, ValueError):
        # The placement library is pure (no kaistack import); its ScenarioError/QuantityError are ValueErrors.
        if type(err).__module__.startswith("placement."):
            print(f"{command}: {err}", file=sys.stderr)
            return int(ExitCode.INVALID_INPUT)
        return _internal_error(command, err)
    if isinstance(err, OSError):
        # A file or device the command needed and could not use (the commands turn the usual ones into
        # KaistackErrors; this is the net under them).
        where = f"{err.filename}: " if err.filename else ""
        print(f"{command}: {where}{err.strerror or err}", file=sys.stderr)
        return int(ExitCode.ENVIRONMENT)
    return _internal_error(command, err)


def _debug_traceback(err: BaseException) -> None:
    """With KAISTACK_DEBUG set, the traceback on stderr; the exit code stays the one the error means (a raise would
    end Python with 1, which reads as "findings")."""
    if os.environ.get("KAISTACK_DEBUG"):
        traceback.print_exception(err, file=sys.stderr)


def _internal_error(command: str, err: BaseException) -> int:
    """A bug, not the user's input: one line (and, before it, the traceback when KAISTACK_DEBUG is set)."""
    print(
        f"{command}: internal error ({type(err).__name__}: {str(err)[:200]}); this is a bug in kaistack. "
        "Run again with KAISTACK_DEBUG=1 for the traceback and report it.",
        file=sys.stderr,
    )
    return int(ExitCode.INTERNAL)


if __name__ == "__main__":
    sys.exit(main())
