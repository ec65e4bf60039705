"""KAI's minruntime plugin: a job that started less than its min runtime ago is not evicted.

KAI@v0.17.0 pkg/scheduler/plugins/minruntime/minruntime.go and resolver.go (in the default plugin list,
conf_util/scheduler_conf_util.go:37-64). A queue's spec.preemptMinRuntime / spec.reclaimMinRuntime protect
its jobs for that long after the PodGroup's last start (the kai.scheduler/last-start-timestamp annotation;
allocate sets it when it starts a job that had nothing allocated, allocate.go:62-67).

- Preempt: the victim's queue's preemptMinRuntime, else its nearest ancestor's, else the plugin default.
- Reclaim, method "lca" (default): when reclaimer and victim are under different top-level queues, the
  victim's top-level queue's reclaimMinRuntime (else the default); otherwise, walking the victim's path up
  from the child of the lowest common ancestor on the victim's side, the first queue that sets one. Method
  "queue": as preempt, with reclaimMinRuntime.
- A protected job that is not elastic is no victim at all (the victim filters). A protected elastic job may
  lose pods, but not below any of its pod sets' minimum (the scenario validators, validVictimForMinAvailable).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from placement.subgroups import DEFAULT_POD_SET

if TYPE_CHECKING:
    from placement.model import Placement
    from placement.queues import QueueState
    from placement.tasks import JobState, TaskState
    from placement.victim_scenario import Scenario

__all__ = ["MinRuntime"]


class MinRuntime:
    def __init__(self, placement: Placement) -> None:
        self.default_preempt = placement.default_preempt_min_runtime
        self.default_reclaim = placement.default_reclaim_min_runtime
        self.method = placement.reclaim_resolve_method

    # ---- the victim filters (AddPreemptVictimFilterFn / AddReclaimVictimFilterFn) -------------------------

    def preempt_victim(self, victim: JobState) -> bool:
        return is_elastic(victim) or not self._protected(victim, self._preempt_min_runtime(victim.queue))

    def reclaim_victim(self, reclaimer: JobState, victim: JobState) -> bool:
        return is_elastic(victim) or not self._protected(victim, self._reclaim_min_runtime(reclaimer, victim))

    # ---- the scenario validators -------------------------------------------------------------------------

    def preempt_scenario(self, scenario: Scenario) -> bool:
        return all(
            not self._protected(job, self._preempt_min_runtime(job.queue)) or _leaves_min_available(job, tasks)
            for job, tasks in scenario.victims().values()
            if is_elastic(job)
        )

    def reclaim_scenario(self, scenario: Scenario) -> bool:
        reclaimer = scenario.preemptor.job
        return all(
            not self._protected(job, self._reclaim_min_runtime(reclaimer, job)) or _leaves_min_available(job, tasks)
            for job, tasks in scenario.victims().values()
            if is_elastic(job)
        )

    # ---- resolution (resolver.go) ------------------------------------------------------------------------

    @staticmethod
    def _protected(job: JobState, min_runtime: float) -> bool:
        # time.Now().Before(LastStartTimestamp + minRuntime); no start time protects nothing.
        started = job.started_ago
        return started is not None and started < min_runtime

    def _preempt_min_runtime(self, queue: QueueState | None) -> float:
        return _nearest(queue.path if queue else [], "preempt_min_runtime", self.default_preempt)

    def _reclaim_min_runtime(self, reclaimer: JobState, victim: JobState) -> float:
        if reclaimer.queue is None or victim.queue is None:
            return self.default_reclaim
        if self.method == "queue":
            return _nearest(victim.queue.path, "reclaim_min_runtime", self.default_reclaim)
        mine, theirs = reclaimer.queue.path[::-1], victim.queue.path[::-1]  # top-level queue first
        if mine[0] is not theirs[0]:
            return _nearest(theirs[:1], "reclaim_min_runtime", self.default_reclaim)
        lca = 0
        for i in range(min(len(mine), len(theirs))):
            if mine[i] is not theirs[i]:
                break
            lca = i
        if lca + 1 < len(theirs):
            lca += 1
        return _nearest(theirs[lca::-1], "reclaim_min_runtime", self.default_reclaim)


def _nearest(queues: list[QueueState], field: str, default: float) -> float:
    """The first of `queues` (walked in the order given) that sets `field`, else the plugin's default."""
    for queue in queues:
        value: float | None = getattr(queue.spec, field)
        if value is not None:
            return value
    return default


def is_elastic(job: JobState) -> bool:
    """PodGroupInfo.IsElastic: some pod set has fewer minimum pods than pods."""
    if job.tree is None:
        return job.min_member < len(job.tasks)
    return any(ps.min_available < len(ps.tasks) for ps in job.tree.pod_sets())


def _leaves_min_available(job: JobState, victims: list[TaskState]) -> bool:
    """validVictimForMinAvailable: per pod set, active-used pods less this scenario's victims stay at its minimum."""
    per_set: dict[str, int] = {}
    for task in victims:
        name = task.spec.sub_group or DEFAULT_POD_SET
        per_set[name] = per_set.get(name, 0) + 1
    if job.tree is None:
        sets = {DEFAULT_POD_SET: (job.min_member, job.n_active_used)}
    else:
        sets = {ps.name: (ps.min_available, ps.active_used()) for ps in job.tree.pod_sets()}
    for name, count in per_set.items():
        minimum, active = sets.get(name, (0, 0))
        if minimum > active - count:
            return False
    return True
