"""`kaistack simulate SCENARIO`: run KAI's scheduling cycle on a scenario file.

The placement library is imported only when the command runs, so `kaistack --help` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kaistack.cli.output import print_json, refuse
from kaistack.cli.sim_progress import simulation_progress

EPILOG = """\
examples:
  kaistack simulate scenario.yaml                  table of pods, queues and pending reasons
  kaistack simulate scenario.yaml --json           {"tasks": {"<job>-<i>": {status, node, gpuGroups, gpus}}}
  kaistack simulate big.json --actions allocate --rounds 0
                                                   allocate only, until a cycle changes nothing
  kaistack simulate big.json --summary --json      counts by status and the first 20 pending jobs' reasons,
                                                   not every pod (output size independent of the cluster)
  kaistack simulate big.json --max-seconds 60      stop after about a minute, partial result, exit 1

On a terminal each action's time is shown on stderr as it ends ("cycle 1: reclaim 4.2 s"), and every 5 s
while it runs, where it is ("cycle 1: reclaim 95 s, 412 jobs searched, 18301 scenarios; on job-004072
(3100 scenarios, 80 s)"). KAISTACK_PROGRESS=1 shows them when stderr is not a terminal.

With --rounds 0, a cluster that is still changing after 50 cycles is reported as it is then, with the jobs
that still move and whether the cycles loop ("unsettled" in --json): KAI would go on moving them, e.g. allocate
placing a job that reclaim evicts again in the same cycle.

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
        "--summary",
        action="store_true",
        help="counts by status and the first pending jobs' reasons instead of every pod (with --json: as JSON)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        metavar="N",
        help="override the scenario's cycle count, 1 to 1000; 0 = until a cycle changes nothing (at most 50)",
    )
    parser.add_argument(
        "--actions",
        default=None,
        metavar="LIST",
        help="override the scenario's actions, comma-separated, 1 to 20 of allocate, consolidation, reclaim, "
        "preempt, stalegangeviction",
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
    from kaistack.progress import Progress
    from placement.scenario import ScenarioError
    from placement.scenario_reader import Reader, read_actions, read_rounds
    from placement.simulation import simulate

    progress = Progress.for_cli()

    try:
        with progress.step(f"loading {args.scenario}"):
            scenario = load_scenario(args.scenario)
        # The flags are held to the file's limits (the same readers); a flag's errors name the flag.
        flags = Reader("")
        actions = scenario.actions
        if args.actions is not None:
            actions = read_actions(flags, [a.strip() for a in args.actions.split(",") if a.strip()], "--actions")
        rounds: int | None = scenario.rounds
        if args.rounds is not None:
            rounds = read_rounds(flags, args.rounds, "--rounds", minimum=0) or None  # 0: until nothing changes
        if args.max_seconds is not None and not args.max_seconds > 0:
            raise ScenarioError("--max-seconds: must be a positive number of seconds")
        result = simulate(
            scenario.snapshot,
            actions=actions,
            rounds=rounds,
            placement=scenario.placement,
            max_seconds=args.max_seconds,
            **simulation_progress(progress),
        )
    except (ScenarioError, ValueError) as err:
        return refuse(args, f"kaistack simulate: {err}", 2)
    if args.summary and args.json:
        print_json({"name": scenario.name, **result.summary()})
    elif args.summary:
        sys.stdout.write(render_summary(scenario.name, result.summary(), args.max_seconds))
    elif args.json:
        print_json(result.to_json(), compact=True)
    else:
        sys.stdout.write(render_table(scenario.name, result, args.max_seconds))
    if result.partial:
        print(f"kaistack simulate: {partial_note(args.max_seconds)}", file=sys.stderr)
        return 1
    return 0


def partial_note(max_seconds: float | None) -> str:
    """What a partial result is, for the text outputs (stdout) and stderr alike."""
    limit = f"--max-seconds {max_seconds:g}" if max_seconds is not None else "--max-seconds"
    return f"stopped after {limit}: the result is partial (pods not reached yet are reported Pending)"


def unsettled_note(unsettled: dict[str, Any]) -> str:
    """A run to a steady state (--rounds 0) that never reached one, from its JSON form."""
    from placement.result import Unsettled

    return Unsettled(tuple(unsettled["moving"]), unsettled["period"]).describe(unsettled["cycles"])


def render_summary(name: str, summary: dict[str, Any], max_seconds: float | None = None) -> str:
    pods = ", ".join(f"{n} {status}" for status, n in summary["pods"].items())
    jobs = summary["jobs"]
    lines = [
        f"scenario {name}: {summary['cycles']} cycle(s){' (partial)' if summary.get('partial') else ''}",
        *([f"partial: {partial_note(max_seconds)}"] if summary.get("partial") else []),
        *([unsettled_note(summary["unsettled"])] if summary.get("unsettled") else []),
        f"pods: {pods or 'none'}",
        f"jobs: {jobs['total']}, {jobs['pending']} with pending pods",
        f"GPUs: {summary['gpus']['total']}, {summary['gpus']['wholeFree']} whole GPUs free",
    ]
    if summary["pending"]:
        shown = len(summary["pending"])
        lines.append(f"pending (first {shown} of {jobs['pending']}):" if shown < jobs["pending"] else "pending:")
        lines += [f"  {p['job']}: [{p['code']}] {p['reason']}" for p in summary["pending"]]
    return "\n".join(lines) + "\n"


def render_table(name: str, result: Any, max_seconds: float | None = None) -> str:
    """A readable summary: pods, queues, then why pending jobs wait; a partial result says so at the top."""
    reasons = result.reasons  # first: explaining past the time limit can make the result partial
    lines = [f"scenario {name}: {result.cycles} cycle(s){' (partial)' if result.partial else ''}"]
    if result.partial:
        lines.append(f"partial: {partial_note(max_seconds)}")
    if result.unsettled is not None:
        lines.append(result.unsettled.describe(result.cycles))
    lines.append("")
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
