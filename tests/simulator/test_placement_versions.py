"""Rules that differ between the KAI versions the simulator knows (Placement.kai_version).

"v0.18.0" is KAI main after v0.17.0 (kai-scheduler/KAI-Scheduler@d5bc503). The one scheduling rule that
changed there is PodGroup minMember 0 (commit 62c594bf, #1989): `setSubGroups` in
pkg/scheduler/api/podgroup_info/job_info.go used `max(minMember, 1)` at v0.17.0 and `minMember` after.
The rows below are that commit's own table, TestSetPodGroupMinMember in job_info_test.go@d5bc503, with
the v0.17.0 outcome from the code before it.
"""

from __future__ import annotations

import pytest

from placement import Job, Node, Queue, QueueResource, Snapshot, Task
from placement.model import Placement
from placement.session import Session

UNLIMITED = QueueResource(-1, -1, 1)

# (test name upstream, minMember, default pod set minAvailable at v0.17.0, after #1989)
SET_POD_GROUP_MIN_MEMBER = [
    ("zero minMember is honored", 0, 1, 0),
    ("positive minMember is honored", 3, 3, 3),
]


def _session(min_member: int, version: str) -> Session:
    job = Job("group-1", "queue-1", (Task(gpu=1),) * 4, min_member=min_member)
    queue = Queue("queue-1", gpu=UNLIMITED, cpu=UNLIMITED, memory=UNLIMITED)
    return Session(Snapshot((Node("n", gpus=4),), (queue,), (job,)), Placement(kai_version=version))


@pytest.mark.parametrize(("name", "min_member", "v017", "v018"), SET_POD_GROUP_MIN_MEMBER, ids=lambda v: str(v))
def test_min_member_of_the_default_pod_set_follows_each_version(
    name: str, min_member: int, v017: int, v018: int
) -> None:
    assert _session(min_member, "v0.17.0").jobs["group-1"].min_member == v017
    assert _session(min_member, "v0.18.0").jobs["group-1"].min_member == v018


def test_a_min_member_zero_job_is_ready_with_no_pods_alive_only_after_v0_17_0() -> None:
    for version, ready in (("v0.17.0", False), ("v0.18.0", True)):
        job = _session(0, version).jobs["group-1"]
        for task in job.tasks:
            job.set_status(task, "Failed")
        assert job.is_ready() is ready
