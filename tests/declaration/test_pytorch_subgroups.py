"""A PyTorchJob's subgroups as KAI's pod-grouper builds them, and which subgroup each pod joins.

kai-scheduler/KAI-Scheduler@v0.17.0:pkg/podgrouper/podgrouper/plugins/kubeflow/pytorch/pytorch_grouper.go
(`buildSubGroups`, `buildMasterSubGroup`, `buildWorkerSubGroups`, `getPodSegmentIndex`) and the worked
example in @v0.17.0:docs/topology/segments.md ("Elasticity": 20 replicas, MinMember 12, segment-size 4).
"""

from __future__ import annotations

from typing import Any

from kaistack.declaration.model import Workload
from kaistack.declaration.subgroups import SubGroupSpec, pytorch_pod_sub_group, pytorch_sub_groups


def _job(**pytorch: Any) -> Workload:
    return Workload.model_validate({"name": "w", "kind": "PyTorchJob", "image": "x", "pytorch": pytorch})


def test_master_and_workers_are_two_subgroups_with_their_replica_counts() -> None:
    assert pytorch_sub_groups(_job(master=1, workers=4)) == (
        SubGroupSpec("master", min_member=1),
        SubGroupSpec("worker", min_member=4),
    )


def test_min_available_lowers_only_the_workers_minimum() -> None:
    """workerMinAvailable = max(0, totalMinAvailable - masterReplicas)."""
    assert pytorch_sub_groups(_job(master=1, workers=4, minAvailable=3))[1] == SubGroupSpec("worker", min_member=2)


def test_a_job_without_a_master_has_only_the_worker_subgroup() -> None:
    assert [g.name for g in pytorch_sub_groups(_job(master=0, workers=2))] == ["worker"]


def test_segments_make_worker_a_parent_of_one_subgroup_per_segment() -> None:
    groups = pytorch_sub_groups(_job(master=1, workers=10, segmentSize=4))
    assert groups[1] == SubGroupSpec("worker", min_sub_group=3)
    assert [(g.name, g.parent, g.min_member) for g in groups[2:]] == [
        ("worker-0", "worker", 4),
        ("worker-1", "worker", 4),
        ("worker-2", "worker", 2),
    ]


def test_segments_past_the_workers_minimum_are_elastic() -> None:
    """segments.md: 20 replicas, MinMember 12, segment-size 4 -> segments 0-2 need 4, segments 3-4 need 0."""
    groups = pytorch_sub_groups(_job(master=0, workers=20, minAvailable=12, segmentSize=4))
    assert [g.min_member for g in groups[1:]] == [4, 4, 4, 0, 0]


def test_every_segment_carries_the_segment_constraint() -> None:
    job = _job(master=1, workers=4, segmentSize=2, segmentTopology={"required": "kaistack.io/rack"})
    segments = pytorch_sub_groups(job)[2:]
    assert {(g.required, g.preferred) for g in segments} == {("kaistack.io/rack", None)}


def test_pods_join_master_then_their_workers_segment_by_replica_index() -> None:
    job = _job(master=1, workers=5, segmentSize=2)
    assert [pytorch_pod_sub_group(job, i) for i in range(6)] == [
        "master",
        "worker-0",
        "worker-0",
        "worker-1",
        "worker-1",
        "worker-2",
    ]


def test_without_segments_every_worker_pod_joins_worker() -> None:
    job = _job(master=1, workers=3)
    assert {pytorch_pod_sub_group(job, i) for i in range(1, 4)} == {"worker"}


def test_a_tenant_gangs_podgroup_name_is_kept_whole_up_to_63_characters_and_hashed_past_them() -> None:
    """The name is written as a label value (kaistack/declaration/tenant_gangs.py, pod-group-name): 63 at most."""
    from kaistack.declaration.model.workloads import gang_name

    def work(name: str) -> Workload:
        return Workload.model_validate(
            {"name": name, "kind": "PyTorchJob", "queue": "q", "image": "x", "tenant": "t", "namespace": "ns"}
        )

    fits = "a" * (63 - len("kaistack-t-ns-"))
    assert gang_name(work(fits)) == f"kaistack-t-ns-{fits}"
    longer = gang_name(work(fits + "b"))
    assert len(longer) == 63
    assert longer != f"kaistack-t-ns-{fits}"[:63]
    assert longer.startswith("kaistack-t-ns-a")
