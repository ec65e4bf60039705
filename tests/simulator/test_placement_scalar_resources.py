"""Scalar resources (RDMA devices, hugepages, ephemeral storage, any extended resource): a dimension like CPU.

KAI@v0.17.0 facts stated here:
- the session's resource vector takes every name in a node's allocatable or a pod's request
  (pkg/scheduler/cache/cluster_info/cluster_info.go:284, 532; pkg/scheduler/api/resource_info/resource_vector.go:
  160-182), and a pod is compared with a node on every dimension: regular and MIG pods through
  lessEqualTaskToNodeResources, shared-GPU pods through lessEqualVectorsExcludingGPU
  (pkg/scheduler/api/node_info/node_info.go:347-359, 372-389, 755-761);
- a pod's scalar request is MilliValue() for Kubernetes' scalar names and Value() for (ephemeral-)storage
  (pkg/scheduler/api/resource_info/resource_requirment.go:45-70), a node's the same
  (resource_info.go:53-79): maxNodeResources_test.go:601-665 expects example.com/foo: 5 on a node as 5000;
- IsScalarResourceName is Kubernetes' v1helper: extended (a domain-qualified name outside kubernetes.io/, no
  "requests." prefix), hugepages-*, *kubernetes.io/*, attachable-volumes-*
  (pkg/scheduler/k8s_internal/kubernetes_helpers.go:12-15; kubernetes pkg/apis/core/v1/helper/helpers.go);
- MaxNodePoolResources refuses a pod asking more of any dimension than the largest node offers
  (pkg/scheduler/k8s_internal/predicates/maxNodeResources.go:96-114; maxNodeResources_test.go:279-327, 667-697),
  and the evicting actions skip such a job (actions/common/action_eligibility.go);
- queues count cpu, memory and GPUs only (plugins/proportion), so scalar resources never touch a quota.
"""

from __future__ import annotations

from typing import Any

import pytest
from placement_testlib import queue, run, scenario

from placement.scalar_resources import counted, kai_units
from placement.scenario import ScenarioError
from placement.session import Session
from placement.signatures import _less_equal, _vector
from placement.tasks import JobState


@pytest.mark.parametrize(
    ("name", "is_counted"),
    [
        ("rdma/ib", True),
        ("example.com/foo", True),
        ("nvidia.com/hostdev", True),
        ("hugepages-2Mi", True),
        ("attachable-volumes-aws-ebs", True),
        ("kubernetes.io/batch-slots", True),
        ("ephemeral-storage", True),
        ("storage", True),
        ("foo", False),  # no domain: a native name KAI does not know
        ("requests.example.com/foo", False),  # the quota prefix
        ("Example.com/foo", False),  # the prefix must be a lower-case DNS subdomain
        ("a/b/c", False),
        ("cpu", False),
        ("pods", False),
        ("nvidia.com/gpu", False),  # the GPU dimension
        ("amd.com/gpu", False),
        ("nvidia.com/mig-1g.10gb", False),  # a MIG dimension
    ],
)
def test_which_resource_names_kai_counts_as_scalar_dimensions(name: str, is_counted: bool) -> None:
    assert counted(name) is is_counted


def test_extended_resources_and_hugepages_are_thousandths_and_storage_is_bytes() -> None:
    assert kai_units("example.com/foo", "5") == 5000  # maxNodeResources_test.go:660
    assert kai_units("hugepages-2Mi", "1Gi") == 1000 * 2**30
    assert kai_units("ephemeral-storage", "25G") == 25 * 10**9


def _doc(nodes: list[dict[str, Any]], jobs: list[dict[str, Any]], actions: list[str] | None = None) -> dict[str, Any]:
    return {"actions": actions or ["allocate"], "nodes": nodes, "queues": [queue("q")], "jobs": jobs}


def _job(name: str, *, node: str | None = None, state: str = "Pending", **request: Any) -> dict[str, Any]:
    task: dict[str, Any] = {"state": state}
    if node:
        task["node"] = node
    return {"name": name, "queue": "q", **request, "tasks": [task]}


RDMA = {"scalarResources": {"rdma/ib": 1}}


def test_a_pod_asking_an_rdma_device_goes_to_the_node_that_has_one() -> None:
    # Binpack prefers the node with fewer free GPUs (n0); only n1 has the device.
    nodes = [{"name": "n0", "gpus": 2}, {"name": "n1", "gpus": 8, **RDMA}]
    result = run(_doc(nodes, [_job("j", gpu=1, **RDMA)]))
    assert result.tasks["j-0"].node == "n1"


def test_a_pod_asking_more_of_a_resource_than_is_free_stays_pending_and_says_which() -> None:
    nodes = [{"name": "n0", "gpus": 8, **RDMA}]
    result = run(_doc(nodes, [_job("a", gpu=1, **RDMA), _job("b", gpu=1, **RDMA)]))
    assert (result.tasks["a-0"].status, result.tasks["b-0"].status) == ("Binding", "Pending")
    assert result.reasons["b"].message == "no node has 1 rdma/ib free (none has any)"


def test_a_shared_gpu_pod_is_refused_by_a_node_without_its_scalar_resource() -> None:
    # The shared path compares every dimension but the GPU (lessEqualVectorsExcludingGPU).
    nodes = [{"name": "n0", "gpus": 1}, {"name": "n1", "gpus": 1, "scalarResources": {"hugepages-2Mi": "1Gi"}}]
    job = _job("half", gpuFraction=0.5, scalarResources={"hugepages-2Mi": "512Mi"})
    assert run(_doc(nodes, [job])).tasks["half-0"].node == "n1"


def test_an_over_committed_scalar_resource_refuses_a_pod_that_asks_none_of_it() -> None:
    # A running pod holds 2 devices of a node that offers 1 (a device went away): idle is -1, and LessEqual
    # compares every dimension, so 0 > -1 refuses even a CPU pod.
    nodes = [{"name": "n0", "gpus": 0, **RDMA}]
    running = _job("old", node="n0", state="Running", scalarResources={"rdma/ib": 2})
    result = run(_doc(nodes, [running, _job("cpu")]))
    assert result.tasks["cpu-0"].status == "Pending"


def test_a_running_pod_is_not_charged_a_resource_its_node_does_not_offer() -> None:
    # addTaskResources zeroes every dimension the node's allocatable lacks (node_info.go:475-481), so node n0
    # keeps no negative fpga count and still takes a CPU pod.
    running = _job("old", node="n0", state="Running", scalarResources={"example.com/fpga": 1})
    result = run(_doc([{"name": "n0", "gpus": 0}], [running, _job("cpu")]))
    assert result.tasks["cpu-0"].status == "Binding"


def test_a_pod_that_needs_a_releasing_pods_device_is_pipelined() -> None:
    nodes = [{"name": "n0", "gpus": 8, **RDMA}]
    leaving = _job("old", node="n0", state="Releasing", **RDMA)
    result = run(_doc(nodes, [leaving, _job("new", gpu=1, **RDMA)]))
    assert result.tasks["new-0"].status == "Pipelined"


def _session(nodes: list[dict[str, Any]], request: dict[str, Any]) -> tuple[Session, JobState]:
    s = scenario(_doc(nodes, [_job("want", **request)]))
    ssn = Session(s.snapshot, s.placement)
    ssn.open()
    return ssn, ssn.jobs["want"]


def test_a_pod_asking_more_than_the_largest_node_offers_is_refused_before_any_eviction() -> None:
    nodes = [{"name": "n1", "scalarResources": {"example.com/foo": 5}}, {"name": "n2"}]
    ssn, job = _session(nodes, {"scalarResources": {"example.com/foo": 10}})
    assert ssn.victim_invariant_failure(job.tasks) is job.tasks[0]


def test_a_pod_within_the_largest_node_s_offer_is_not_refused_up_front() -> None:
    nodes = [{"name": "n1", "scalarResources": {"example.com/foo": 5}}, {"name": "n2"}]
    ssn, job = _session(nodes, {"scalarResources": {"example.com/foo": 1}})
    assert ssn.victim_invariant_failure(job.tasks) is None


def test_ephemeral_storage_beyond_every_node_is_refused_up_front() -> None:
    # maxNodeResources_test.go:279-327: 25G asked, nodes of 10Gi and 20Gi.
    nodes = [
        {"name": "n1", "scalarResources": {"ephemeral-storage": "10Gi"}},
        {"name": "n2", "scalarResources": {"ephemeral-storage": "20Gi"}},
    ]
    ssn, job = _session(nodes, {"scalarResources": {"ephemeral-storage": "25G"}})
    assert ssn.victim_invariant_failure(job.tasks) is job.tasks[0]


def test_a_preemptor_asking_a_resource_no_node_has_evicts_nobody() -> None:
    nodes = [{"name": "n0", "gpus": 1}]
    low = {"name": "low", "queue": "q", "priority": 10, "gpu": 1, "tasks": [{"state": "Running", "node": "n0"}]}
    high = {"name": "high", "queue": "q", "priority": 90, "gpu": 1, "scalarResources": {"example.com/bar": 1}}
    result = run(_doc(nodes, [low, high], actions=["allocate", "preempt"]))
    assert (result.tasks["low-0"].status, result.tasks["high-0"].status) == ("Running", "Pending")


def test_a_job_asking_a_scalar_resource_is_not_easier_than_one_that_asked_none() -> None:
    # Scheduling signatures compare ResReqVectors, which carry the scalar dimensions.
    nodes = [{"name": "n0"}]
    s = scenario(_doc(nodes, [_job("plain"), _job("rdma", **RDMA)]))
    ssn = Session(s.snapshot, s.placement)
    plain, rdma = (_vector(ssn.jobs[name].tasks[0]) for name in ("plain", "rdma"))
    assert (_less_equal(plain, rdma), _less_equal(rdma, plain)) == (True, False)


def test_a_scenario_naming_a_resource_kai_ignores_is_refused_with_what_is_allowed() -> None:
    with pytest.raises(ScenarioError, match=r"nodes\[0\]\.scalarResources\.foo: must be a resource KAI counts"):
        scenario(_doc([{"name": "n0", "scalarResources": {"foo": 1}}], []))


def test_a_scenario_s_scalar_amount_must_be_a_quantity() -> None:
    with pytest.raises(ScenarioError, match=r"jobs\[0\]\.scalarResources\.rdma/ib: invalid quantity 'lots'"):
        scenario(_doc([{"name": "n0"}], [_job("j", scalarResources={"rdma/ib": "lots"})]))
