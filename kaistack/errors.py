"""kaistack's own error types and the one exit-code table every command uses.

| code | meaning |
|---|---|
| 0 | ok: the stack renders, fits, passes; the command did what was asked |
| 1 | findings: policy violations, workloads that stay Pending, failed live checks, a change that evicts |
| 2 | invalid input or usage: a bad stack file, manifest, scenario or flag (nothing was changed) |
| 3 | environment: a cluster, credentials, a tool or the disk the command needs is not usable |
| 70 | internal error: a bug in kaistack (the message says how to get the traceback) |
| 130 | interrupted (Ctrl-C) |

Every error a user can cause is a `KaistackError`; the CLI prints its message (one line per problem)
and exits with its `exit_code`, never with a traceback.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FINDINGS = 1
    INVALID_INPUT = 2
    ENVIRONMENT = 3
    INTERNAL = 70  # sysexits.h EX_SOFTWARE
    INTERRUPTED = 130


class KaistackError(Exception):
    """A problem the user can act on; `str(err)` is the whole message, `exit_code` the CLI's exit code."""

    exit_code: ExitCode = ExitCode.INVALID_INPUT


class InputError(KaistackError):
    """A file, flag or value that kaistack refuses (exit 2)."""

    exit_code = ExitCode.INVALID_INPUT


class EnvironmentProblem(KaistackError):
    """Something outside the input is not usable: a cluster, credentials, a tool, the disk (exit 3)."""

    exit_code = ExitCode.ENVIRONMENT
