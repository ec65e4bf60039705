"""Helpers shared by the placement tests: build scenarios inline and check expectations like score.py."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import yaml

from placement import Result, simulate
from placement.scenario import Scenario, parse_scenario

DATA = Path(__file__).resolve().parents[1] / "data"
UNLIMITED = {"quota": -1, "limit": -1, "overQuotaWeight": 1}


def queue(name: str, gpu: dict[str, float] | None = None, **extra: Any) -> dict[str, Any]:
    """A queue with unlimited cpu/memory (the format's omitted resource is 0, i.e. blocked)."""
    return {"name": name, "gpu": gpu or dict(UNLIMITED), "cpu": dict(UNLIMITED), "memory": dict(UNLIMITED), **extra}


def scenario(text_or_doc: str | dict[str, Any], source: str = "t.yaml") -> Scenario:
    doc = yaml.safe_load(text_or_doc) if isinstance(text_or_doc, str) else text_or_doc
    return parse_scenario(doc, source)


def run(text_or_doc: str | dict[str, Any]) -> Result:
    s = scenario(text_or_doc)
    return simulate(s.snapshot, actions=s.actions, rounds=s.rounds, placement=s.placement)


class GroupMap:
    """score.py's rule: expected shared-GPU labels match actual ids up to a per-node one-to-one renaming."""

    def __init__(self) -> None:
        self.fwd: dict[tuple[Any, str], tuple[Any, str]] = {}
        self.back: dict[tuple[Any, str], tuple[Any, str]] = {}

    def fit(self, node: Any, expected: list[Any], actual: list[Any]) -> bool:
        if len(expected) != len(actual):
            return False
        for perm in itertools.permutations(actual):
            fwd, back = dict(self.fwd), dict(self.back)
            ok = True
            for e, a in zip(expected, perm, strict=True):
                key_e, key_a = (node, str(e)), (node, str(a))
                if fwd.setdefault(key_e, key_a) != key_a or back.setdefault(key_a, key_e) != key_e:
                    ok = False
                    break
            if ok:
                self.fwd, self.back = fwd, back
                return True
        return False


def _task_names(job: dict[str, Any]) -> list[str]:
    tasks = job.get("tasks", 1)
    count = tasks if isinstance(tasks, int) else len(tasks)
    return [f"{job['name']}-{i}" for i in range(count)]


def _check_task(name: str, want: dict[str, Any], got: dict[str, Any] | None, groups: GroupMap) -> list[str]:
    if got is None:
        return [f"{name}: missing from output"]
    problems = []
    if "status" in want and got["status"] != want["status"]:
        problems.append(f"{name}: status {got['status']!r}, expected {want['status']!r}")
    if "node" in want and got["node"] != want["node"]:
        problems.append(f"{name}: node {got['node']!r}, expected {want['node']!r}")
    if "gpuGroups" in want and not groups.fit(got["node"], list(want["gpuGroups"]), list(got["gpuGroups"])):
        problems.append(f"{name}: gpuGroups {got['gpuGroups']!r}, expected {want['gpuGroups']!r} up to renaming")
    return problems


def expectation_problems(doc: dict[str, Any], tasks: dict[str, dict[str, Any]]) -> list[str]:
    """Every way `tasks` (the --json "tasks" map) misses the scenario's `expect` block."""
    jobs = {job["name"]: job for job in doc.get("jobs", [])}
    expect = doc.get("expect") or {}
    groups, problems = GroupMap(), []
    for job_name, want in (expect.get("jobs") or {}).items():
        names = _task_names(jobs[job_name])
        for name in names:
            per_task = {k: v for k, v in want.items() if k != "gpus"}
            problems += _check_task(name, per_task, tasks.get(name), groups)
        if "gpus" in want:
            total = sum(float((tasks.get(n) or {}).get("gpus") or 0) for n in names)
            if abs(total - float(want["gpus"])) >= 1e-6:
                problems.append(f"{job_name}: {total} GPUs allocated, expected {want['gpus']}")
    for name, want in (expect.get("tasks") or {}).items():
        problems += _check_task(name, want, tasks.get(name), groups)
    return problems
