"""Where a long simulation is, for progress lines: a heartbeat at most every `every` seconds.

An action on a busy cluster can run for many minutes inside one eviction search. A line per finished action
says nothing meanwhile. The heartbeat names the action, how many jobs the solver has searched and how many
scenarios it has simulated, and the job it is on. The session ticks it wherever it checks `--max-seconds`
(per job and per scenario), so a beat costs one clock read per check, and nothing when no one listens.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Beat", "Watch"]


@dataclass(frozen=True, slots=True)
class Beat:
    cycle: int
    action: str
    seconds: float  # since the action started
    jobs: int  # pending jobs the eviction solver has searched in this action
    scenarios: int  # scenarios simulated in this action
    job: str | None  # the job being searched (the last one, between searches)
    job_scenarios: int
    job_seconds: float


class Watch:
    def __init__(self, report: Callable[[Beat], None], every: float) -> None:
        self.report = report
        self.every = every
        self.cycle = 0
        self.action = ""
        self.jobs = 0
        self.scenarios = 0
        self.job: str | None = None
        self.job_scenarios = 0
        now = time.monotonic()
        self.action_start = self.job_start = now
        self.next = now + every

    def start_action(self, cycle: int, action: str) -> None:
        self.cycle, self.action = cycle, action
        self.jobs = self.scenarios = self.job_scenarios = 0
        self.job = None
        self.action_start = self.job_start = time.monotonic()

    def start_job(self, name: str) -> None:
        self.jobs += 1
        self.job = name
        self.job_scenarios = 0
        self.job_start = time.monotonic()

    def scenario(self) -> None:
        self.scenarios += 1
        self.job_scenarios += 1

    def tick(self) -> None:
        now = time.monotonic()
        if now < self.next or not self.action:
            return
        self.next = now + self.every
        self.report(
            Beat(
                self.cycle,
                self.action,
                now - self.action_start,
                self.jobs,
                self.scenarios,
                self.job,
                self.job_scenarios,
                now - self.job_start,
            )
        )
