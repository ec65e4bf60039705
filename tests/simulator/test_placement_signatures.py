"""Scheduling signatures: which pending jobs the evicting actions skip after a failure (placement.signatures).

KAI@v0.17.0: pkg/scheduler/actions/common/minimal_job_comparison.go keeps, per signature, the smallest job that
failed; a job with the same signature that is not easier is skipped. The signature
(api/podgroup_info/job_info.go:639-661, subgroup_info/podset.go:155-200) covers each pod set's topology
constraint and its parents', and is taken once when the snapshot is built (cache/cluster_info/cluster_info.go:
255-258).
"""

from __future__ import annotations

from typing import Any

from placement_testlib import queue, run, scenario

from placement import Placement
from placement.allocate import allocate
from placement.session import Session
from placement.signatures import job_signature


def _preempt_for_two_jobs(first: dict[str, Any]) -> dict[str, str]:
    # One GPU per rack: a job needing both GPUs in one rack cannot be placed; one without that constraint can.
    running = {"priority": 50, "gpu": 1}
    pending = {"priority": 75, "gpu": 1, "tasks": 2}
    doc = {
        "actions": ["preempt"],
        "placement": {"useSchedulingSignatures": True},
        "topologies": [{"name": "topo", "levels": [{"nodeLabel": "rack"}]}],
        "nodes": [{"name": n, "gpus": 1, "labels": {"rack": r}} for n, r in (("n1", "r1"), ("n2", "r2"))],
        "queues": [queue("q")],
        "jobs": [
            {"name": "v1", "queue": "q", **running, "tasks": [{"state": "Running", "node": "n1"}]},
            {"name": "v2", "queue": "q", **running, "tasks": [{"state": "Running", "node": "n2"}]},
            {"name": "a", "queue": "q", **pending, **first},
            {"name": "b", "queue": "q", **pending},
        ],
    }
    return {name: t.status for name, t in run(doc).tasks.items()}


def test_a_job_with_a_topology_constraint_that_failed_does_not_skip_one_without() -> None:
    statuses = _preempt_for_two_jobs({"topologyConstraint": {"topology": "topo", "requiredTopologyLevel": "rack"}})
    assert (statuses["a-0"], statuses["b-0"], statuses["b-1"]) == ("Pending", "Pipelined", "Pipelined")


def test_a_non_preemptible_job_refused_for_its_queue_s_quota_becomes_the_failed_representative() -> None:
    # KAI@v0.17.0 actions/preempt/preempt.go:123-127 returns no search result, and the loop then records the job
    # as failed (:106-108). x (fewer GPUs, more CPU) is not easier than a, so it is skipped.
    limited = queue("q", {"quota": 2, "limit": -1, "overQuotaWeight": 1})
    doc = {
        "actions": ["preempt"],
        "placement": {"useSchedulingSignatures": True},
        "nodes": [{"name": "n1", "gpus": 4}],
        "queues": [limited],
        "jobs": [
            {"name": "v", "queue": "q", "priority": 50, "gpu": 4, "tasks": [{"state": "Running", "node": "n1"}]},
            {"name": "a", "queue": "q", "priority": 125, "gpu": 4, "cpu": "1"},
            {"name": "x", "queue": "q", "priority": 125, "gpu": 1, "cpu": "2"},
        ],
    }
    statuses = {name: t.status for name, t in run(doc).tasks.items()}
    assert (statuses["v-0"], statuses["x-0"]) == ("Running", "Pending")


def test_a_job_s_signature_is_the_one_it_had_when_the_session_opened() -> None:
    s = scenario(
        {
            "actions": ["allocate"],
            "nodes": [{"name": "n1", "gpus": 1}],
            "queues": [queue("q")],
            "jobs": [{"name": "a", "queue": "q", "gpu": 1, "tasks": 3, "minMember": 1}],
        }
    )
    ssn = Session(s.snapshot, Placement(use_scheduling_signatures=True))
    ssn.open()
    job = ssn.jobs["a"]
    at_open = job.signature
    allocate(ssn)
    assert job.n_active_alloc == 1
    assert job.signature == at_open
    assert job_signature(job, ssn._resolve_level) != at_open


def _running(job: dict[str, Any], **task: Any) -> dict[str, Any]:
    return {"queue": "q", **job, "tasks": [{"state": "Running", "node": "n1", **task}]}


def _preempt_after_a_failure(
    node: dict[str, Any], victims: list[dict[str, Any]], a: dict[str, Any], b: dict[str, Any]
) -> dict[str, str]:
    doc = {
        "actions": ["preempt"],
        "placement": {"useSchedulingSignatures": True},
        "nodes": [{"name": "n1", **node}],
        "queues": [queue("q", {"quota": 10, "limit": -1, "overQuotaWeight": 0})],
        "jobs": [
            *victims,
            {"name": "a", "queue": "q", "priority": 100, **a},
            {"name": "b", "queue": "q", "priority": 100, **b},
        ],
    }
    return {name: t.status for name, t in run(doc).tasks.items()}


def test_gpu_memory_is_no_dimension_so_a_smaller_gpu_memory_job_is_not_easier() -> None:
    # KAI's ResReqVector (resource_vector.go:225-245) holds GPUs(), which is 0 for a gpu-memory pod
    # (pod_info.go:521-524): b's vector equals a's, so after a fails b is skipped and the train job keeps running.
    victims = [
        _running({"name": "build", "priority": 100, "gpuMemoryMiB": 30}, gpuGroups=["0"]),
        _running({"name": "train", "priority": 50, "gpuMemoryMiB": 40}, gpuGroups=["0"]),
    ]
    statuses = _preempt_after_a_failure({"gpus": 1}, victims, {"gpuMemoryMiB": 80}, {"gpuMemoryMiB": 50})
    assert (statuses["a-0"], statuses["b-0"], statuses["train-0"]) == ("Pending", "Pending", "Running")


def test_each_mig_profile_is_its_own_dimension_so_another_profile_is_not_easier() -> None:
    # resource_vector.go:238-242: one dimension per MIG profile. b (2g: 1) and a (1g: 2) are not ordered, so b is
    # not easier than the failed a and is skipped (summing devices made 1 < 2 and evicted the train job).
    node = {"gpus": 2, "migStrategy": "mixed", "mig": {"nvidia.com/mig-1g.10gb": 2, "nvidia.com/mig-2g.20gb": 1}}
    victims = [
        _running({"name": "build", "priority": 100, "mig": {"nvidia.com/mig-1g.10gb": 1}}),
        _running({"name": "train", "priority": 50, "mig": {"nvidia.com/mig-2g.20gb": 1}}),
    ]
    a, b = {"mig": {"nvidia.com/mig-1g.10gb": 2}}, {"mig": {"nvidia.com/mig-2g.20gb": 1}}
    statuses = _preempt_after_a_failure(node, victims, a, b)
    assert (statuses["a-0"], statuses["b-0"], statuses["train-0"]) == ("Pending", "Pending", "Running")
