"""What the eviction solver simulates: a pending (partial) job and the victims offered for it.

KAI@v0.17.0 pkg/scheduler/actions/common/solvers/scenario (BaseScenario, ByNodeScenario) and
scenario_fingerprint.go. Victims come in two kinds: recorded ones, which a previous probe of the same job
needed and every later scenario keeps, and potential ones, added one victim job (or elastic slice) at a
time. Each add is a chunk (KAI's per-call job representative); chunks are what the solver records and
what the multi-node generator picks whole, so a gang is never split.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from placement.tasks import ACTIVE_ALLOCATED, JobState, TaskState
from placement.victims_order import VictimJob

if TYPE_CHECKING:
    from placement.subgroups import SubGroupSet

__all__ = ["Fingerprint", "PartialJob", "Scenario"]

Fingerprint = tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]


class PartialJob:
    """The first k pods of a pending job, with minMember k (getPartialJobRepresentative).

    KAI's representative also holds the job's placed pods with minAvailable min(original, pods held); for a
    job without subgroups both give the same batch of k pods, so only the tree form (subgroups, topology)
    carries the placed pods, where the topology filter and the leaves' minimums read them.
    """

    def __init__(self, job: JobState, tasks: list[TaskState]) -> None:
        self.job = job
        self.tasks = list(tasks)
        self.name = job.name
        self.queue = job.queue
        self.priority = job.priority
        self.creation = job.creation
        self.min_member = len(tasks)
        self._init_cache: tuple[int, tuple[float, float, float]] | None = None
        self.tree: SubGroupSet | None = None
        if job.tree is not None:
            placed = [t for t in job.tasks if t.status in ACTIVE_ALLOCATED]
            self.tree = job.tree.clone([*placed, *tasks], representative=True)

    @property
    def version(self) -> int:
        return self.job.version

    def order_key(self) -> tuple[int, int, int, str]:
        return (-self.priority, 0, self.creation, self.name)

    def tasks_to_allocate(self, real: bool) -> list[TaskState]:
        if self.tree is not None:
            return self.tree.tasks_to_allocate(real)
        return self.job.tasks_to_allocate(real, tasks=self.tasks, min_member=self.min_member)


class Scenario:
    """A pending (partial) job and the victims considered for it: recorded ones and potential ones."""

    def __init__(self, preemptor: PartialJob, pending: list[TaskState], recorded: list[VictimJob]) -> None:
        self.preemptor = preemptor
        self.pending = pending
        self.recorded_jobs = recorded
        self.recorded_tasks = [t for v in recorded for t in v.tasks]
        self.potential_tasks: list[TaskState] = []
        # Potential chunks in the order they were added; `groups` also holds the recorded ones, first.
        self.chunks: list[VictimJob] = []
        self.groups: dict[str, list[VictimJob]] = {}
        self.jobs_by_node: dict[str, list[str]] = {}
        for chunk in recorded:
            self.groups.setdefault(chunk.job.name, []).append(chunk)

    def add_potential(self, job: JobState, tasks: list[TaskState]) -> None:
        if not tasks:
            return
        chunk = VictimJob(job, tasks)
        self.potential_tasks.extend(tasks)
        self.chunks.append(chunk)
        self.groups.setdefault(job.name, []).append(chunk)
        for task in tasks:
            names = self.jobs_by_node.setdefault(task.node or "", [])
            if job.name not in names:
                names.append(job.name)

    def emit(self, chunks: Iterable[list[TaskState]]) -> Scenario:
        """A sub-scenario: the same pending pods and recorded victims, these potential victims."""
        sub = Scenario(self.preemptor, self.pending, self.recorded_jobs)
        for tasks in chunks:
            sub.add_potential(tasks[0].job, tasks)
        return sub

    def latest_job(self) -> JobState | None:
        """LatestPotentialVictim: the session job of the last potential victim pod."""
        return self.potential_tasks[-1].job if self.potential_tasks else None

    def tasks_on_node(self, node: str) -> list[TaskState]:
        """VictimsTasksFromNodes: every pod of every chunk of each job with a potential victim there."""
        tasks: list[TaskState] = []
        for name in self.jobs_by_node.get(node, []):
            for chunk in self.groups[name]:
                tasks.extend(chunk.tasks)
        return tasks

    def victims(self) -> dict[str, tuple[JobState, list[TaskState]]]:
        """GetVictims: per victim job, all its recorded and potential pods."""
        out: dict[str, tuple[JobState, list[TaskState]]] = {}
        for name, chunks in self.groups.items():
            out[name] = (chunks[0].job, [t for c in chunks for t in c.tasks])
        return out

    def chunk_of(self, task: TaskState) -> VictimJob:
        """GetVictimJobRepresentativeById: the first chunk of the task's job that holds it."""
        for chunk in self.groups[task.job.name]:
            if task in chunk.tasks:
                return chunk
        raise KeyError(task.name)

    def fingerprint(self) -> Fingerprint:
        """scenarioFingerprint: the preemptor and the sorted pod names of each section.

        KAI hashes the same sections with sha256; only equality matters (a failed scenario is not simulated
        again for the same job), so the sections themselves serve as the key.
        """
        return (
            self.preemptor.name,
            tuple(sorted(t.name for t in self.pending)),
            tuple(sorted(t.name for t in self.recorded_tasks)),
            tuple(sorted(t.name for t in self.potential_tasks)),
        )
