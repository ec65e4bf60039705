"""The program's capacity gate, and the report it hands to `kaistack validate` in the same process.

`validate` runs the program in-process (kaistack.ops.mocks), and the program's gate simulates the declaration: the
verdict validate reports is that simulation's, not a second one (on a large declaration each takes as long as
`kaistack check`). `validate --max-seconds` bounds the gate's simulation through `limit`; `pulumi up` runs it
to the end unless the stack sets `kai.capacityCheckMaxSeconds` (the smaller of the two applies).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kaistack.capacity.check import CapacityReport, check
from kaistack.declaration.model import StackConfig
from kaistack.declaration.parse import NAMESPACE

__all__ = ["CapacityError", "bounded_check", "gate", "last_report", "limit"]

STACK_LIMIT = f"{NAMESPACE}:kai.capacityCheckMaxSeconds"


class CapacityError(Exception):
    """The declared work does not fit: raised by `gate` so the program stops before creating anything."""

    def __init__(self, report: CapacityReport) -> None:
        self.report = report
        lines = [f"kaistack capacity check failed for stack {report.stack}: {report.summary()}"]
        if report.partial:
            # Every workload not reached yet would be listed as Pending: the clock, not the capacity, stopped it.
            lines.append(
                f"  (raise the limit, or run kaistack check --stack {report.stack or 'NAME'} to see how long the "
                "check takes; set kaistack:kai.capacityCheck to 'warn' to deploy anyway)"
            )
            super().__init__("\n".join(lines))
            return
        lines += [f"  {reason}" for reason in report.reasons]
        lines.append(
            f"  (kaistack check --stack {report.stack or 'NAME'} shows where everything lands; set "
            "kaistack:kai.capacityCheck to 'warn' to deploy anyway, e.g. on an autoscaling cluster)"
        )
        super().__init__("\n".join(lines))


_limit: float | None = None
_last: tuple[tuple[str, str, float | None], CapacityReport] | None = None


def bounded_check(config: StackConfig, stack: str, max_seconds: float | None) -> tuple[CapacityReport, bool]:
    """The check under the smaller of `max_seconds` (the CLI's) and the stack's own limit, and whether the stack's
    applied: its partial report is what `pulumi up` would stop on too."""
    declared = config.kai.capacity_check_max_seconds
    if max_seconds is not None and (declared is None or max_seconds < declared):
        return check(config, stack, max_seconds=max_seconds), False
    return check(config, stack, max_seconds=declared, limit_name=STACK_LIMIT), declared is not None


def gate(config: StackConfig, stack: str) -> CapacityReport | None:
    """The program's pre-flight: the report when it fits or only warns, else raises. None when skipped, and when
    validate's own shorter limit stopped it: that verdict is validate's to give (`last_report`), after the
    policies have run; stopping or warning here would leave nothing rendered to analyze, or say it twice."""
    global _last
    if config.kai.capacity_check == "off":
        return None
    report, stacks_own = bounded_check(config, stack, _limit)
    _last = (_key(config, stack, _limit), report)
    if report.partial and not stacks_own:
        return None
    if report.ok or config.kai.capacity_check != "enforce":
        return report
    raise CapacityError(report)  # the stack's own limit stops `pulumi up` too, so it stops the program here


def last_report(config: StackConfig, stack: str, max_seconds: float | None = None) -> CapacityReport | None:
    """The gate's report in this process for this very declaration and stack, run under `limit(max_seconds)`."""
    if _last is not None and _last[0] == _key(config, stack, max_seconds):
        return _last[1]
    return None


@contextmanager
def limit(max_seconds: float | None) -> Iterator[None]:
    """The gate's simulations in this block stop after about `max_seconds` (None: no limit), partial."""
    global _limit
    before, _limit = _limit, max_seconds
    try:
        yield
    finally:
        _limit = before


def _key(config: StackConfig, stack: str, max_seconds: float | None) -> tuple[str, str, float | None]:
    return stack, config.model_dump_json(), max_seconds
