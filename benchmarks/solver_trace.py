"""Which pending jobs the eviction search spends its time on: one line per slow solve, totals per action.

    .venv/bin/python benchmarks/solver_trace.py benchmarks/out/busy-S.json --max-seconds 420
    .venv/bin/python benchmarks/solver_trace.py /tmp/busy-512.json --slower-than 0.5 --json

Runs `simulate` on the scenario in this process with the solver wrapped (placement.solver.JobSolver): for
every solve it counts the scenarios simulated and the victim pods each evicted. A solve slower than
`--slower-than` seconds is printed as it ends (job, queue, solved or not, seconds, scenarios, mean victims per
scenario); each action's totals follow the run. The wrapping adds a little time; the figures are for
finding the expensive jobs, not for the README's timings (cycle_bench.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from kaistack.ops.scenarios import load_scenario
from placement import solver
from placement.simulation import simulate


class Trace:
    def __init__(self, slower_than: float, as_json: bool) -> None:
        self.slower_than = slower_than
        self.as_json = as_json
        self.simulations = 0
        self.victims = 0
        self.action = "?"
        self.totals: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.slow: list[dict[str, Any]] = []

    def install(self) -> None:
        simulate_scenario = solver.JobSolver._simulate
        solve = solver.JobSolver.solve
        trace = self

        def counted(self: Any, stmt: Any, scenario: Any, feasible: Any, victims: Any) -> Any:
            trace.simulations += 1
            trace.victims += len(victims)
            return simulate_scenario(self, stmt, scenario, feasible, victims)

        def timed(self: Any, job: Any) -> Any:
            sims, victims, started = trace.simulations, trace.victims, time.perf_counter()
            statement = solve(self, job)
            trace.record(
                job,
                statement is not None,
                time.perf_counter() - started,
                trace.simulations - sims,
                trace.victims - victims,
            )
            return statement

        solver.JobSolver._simulate = counted  # type: ignore[method-assign]
        solver.JobSolver.solve = timed  # type: ignore[method-assign]

    def record(self, job: Any, solved: bool, seconds: float, simulations: int, victims: int) -> None:
        totals = self.totals[self.action]
        totals["solves"] += 1
        totals["solved"] += solved
        totals["seconds"] += seconds
        totals["simulations"] += simulations
        if seconds < self.slower_than:
            return
        row = {
            "job": job.name,
            "queue": job.queue_name,
            "action": self.action,
            "solved": solved,
            "seconds": round(seconds, 2),
            "simulations": simulations,
            "meanVictims": round(victims / simulations, 1) if simulations else 0.0,
        }
        self.slow.append(row)
        if not self.as_json:
            print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", type=Path)
    parser.add_argument("--slower-than", type=float, default=2.0, help="seconds (default 2)")
    parser.add_argument("--max-seconds", type=float, help="stop the simulation cleanly after this long")
    parser.add_argument("--json", action="store_true", help="one JSON document at the end")
    args = parser.parse_args()
    trace = Trace(args.slower_than, args.json)
    trace.install()
    scenario = load_scenario(str(args.scenario))
    actions = list(scenario.actions)
    started = time.perf_counter()

    # on_step reports an action when it ends; the next one is the action now running.
    def on_step(cycle: int, action: str, seconds: float) -> None:
        following = actions.index(action) + 1
        trace.action = actions[following] if following < len(actions) else "?"

    trace.action = actions[0]
    result = simulate(
        scenario.snapshot,
        actions=scenario.actions,
        rounds=scenario.rounds,
        placement=scenario.placement,
        on_step=on_step,
        max_seconds=args.max_seconds,
    )
    summary = {
        "seconds": round(time.perf_counter() - started, 2),
        "partial": result.partial,
        "actions": {name: {k: round(v, 2) for k, v in t.items()} for name, t in trace.totals.items()},
        "slow": trace.slow,
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(json.dumps({k: v for k, v in summary.items() if k != "slow"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
