"""`kaistack simulate SCENARIO`: run KAI's scheduling cycle on a scenario file.

The placement library is imported only when the command runs, so `kaistack --help` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kaistack.cli.output import print_json

EPILOG = """\
examples:
  kaistack simulate scenario.yaml                  table of pods, queues and pending reasons
  kaistack simulate scenario.yaml --json           {"tasks": {"<job>-<i>": {status, node, gpuGroups, gpus}}}
  kaistack simulate big.json --actions allocate --rounds 0
                                                   allocate only, until a cycle changes nothing

The file format is kai-conformance's FORMAT.md (YAML, or JSON for large scenarios).
exit codes: 0 ok, 1 stopped by --max-seconds (partial result, "partial": true in --json), 2 unreadable or
  malformed scenario
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="run KAI's scheduling cycle on a scenario file",
        description="Simulate NVIDIA KAI scheduler v0.17 cycles (allocate, consolidation, reclaim, preempt).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("scenario", metavar="SCENARIO", help="scenario file (.yaml, .yml or .json)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON (the scorer's format)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        metavar="N",
        help="override the scenario's cycle count; 0 = until a cycle changes nothing",
    )
    parser.add_argument(
        "--actions",
        default=None,
        metavar="LIST",
        help="override the scenario's actions, comma-separated (allocate,consolidation,reclaim,preempt)",
    )
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=None,
        metavar="S",
        help="stop after about S seconds with what was decided so far, marked partial (exit 1)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kaistack.ops.scenarios import load_scenario
    from placement.scenario import ScenarioError
    from placement.simulation import simulate

    try:
        scenario = load_scenario(args.scenario)
        actions = scenario.actions
        if args.actions is not None:
            actions = tuple(a.strip() for a in args.actions.split(",") if a.strip())
        rounds: int | None = scenario.rounds
        if args.rounds is not None:
            if args.rounds < 0:
                raise ScenarioError("--rounds: must be >= 0")
            rounds = args.rounds or None
        if args.max_seconds is not None and not args.max_seconds > 0:
            raise ScenarioError("--max-seconds: must be a positive number of seconds")
        result = simulate(
            scenario.snapshot,
            actions=actions,
            rounds=rounds,
            placement=scenario.placement,
            max_seconds=args.max_seconds,
        )
    except (ScenarioError, ValueError) as err:
        print(f"kaistack simulate: {err}", file=sys.stderr)
        return 2
    if args.json:
        print_json(result.to_json(), compact=True)
    else:
        sys.stdout.write(render_table(scenario.name, result))
    if result.partial:
        print(
            f"kaistack simulate: stopped after --max-seconds {args.max_seconds:g}: the result is partial "
            "(pods not reached yet are reported Pending)",
            file=sys.stderr,
        )
        return 1
    return 0


def render_table(name: str, result: Any) -> str:
    """A readable summary: pods, queues, then why pending jobs wait."""
    lines = [f"scenario {name}: {result.cycles} cycle(s)", ""]
    rows: list[tuple[str, ...]] = [("POD", "STATUS", "NODE", "GPUS", "GPU GROUPS")]
    for task in result.tasks.values():
        rows.append((task.name, task.status, task.node or "-", f"{task.gpus:g}", ",".join(task.gpu_groups) or "-"))
    lines += _columns(rows)
    lines.append("")
    queue_rows: list[tuple[str, ...]] = [("QUEUE", "PARENT", "GPU QUOTA", "GPU LIMIT", "FAIR SHARE", "ALLOCATED")]
    for q in result.queues.values():
        queue_rows.append(
            (
                q.name,
                q.parent or "-",
                _num(q.deserved.gpu),
                _num(q.limit.gpu),
                f"{q.fair_share.gpu:g}",
                f"{q.allocated.gpu:g}",
            )
        )
    lines += _columns(queue_rows)
    reasons = result.reasons
    if reasons:
        lines += ["", "pending:"]
        for job, reason in reasons.items():
            lines.append(f"  {job}: [{reason.code}] {reason.message}")
    return "\n".join(lines) + "\n"


def _num(value: float) -> str:
    return "unlimited" if value == -1 else f"{value:g}"


def _columns(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
