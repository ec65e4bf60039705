"""kai-capacity's adapter (kaistack.guardrails.capacity_adapter): behaviour a mutation run of the module found
unasserted.

Of 512 mutants, 34 survived the adapter's tests; 10 of them (9 behaviours) were real gaps, pinned here one behaviour
per test: which pod templates and objects the adapter reads (the template KAI schedules, a tenant gang's PodGroup and
no other object of its name, a tenant Job's pods as bare pods), what it reads from them (the Master count as declared,
a segment size's sign as Go's strconv.Atoi reads it, completions only on a batch Job), and what it hands the checker
(a tenant's declared queues only, a pool's null props as unset, unique names within a DNS label). KAI's behaviour is
cited at kai-scheduler/KAI-Scheduler@v0.17.0. The run also found a bug: a left-out workload's note was the last line
of pydantic's error, its docs URL, not the reason (two survivors there pinned nothing but that line).
"""

from __future__ import annotations

from typing import Any

import pytest
from policy_builders import ONE_GPU_POOL, container, deployment, engine, one_pool_facts, planned, pod, res

from kaistack.declaration import kai_api
from kaistack.declaration.marks import TENANT_LABEL
from kaistack.declaration.parse import parse_config
from kaistack.guardrails.facts import StackFacts, TenantFacts
from kaistack.guardrails.podspec import Res

POOL = ONE_GPU_POOL
RACK = "kaistack.io/rack"
ZONE = "topology.kubernetes.io/zone"
TENANT = TenantFacts("alpha", "vcluster-alpha", ("team-a",))
GANG = "kaistack-alpha-default-train"


def _work(*resources: Res, facts: StackFacts | None = None) -> dict[str, Any]:
    [work] = planned(*resources, facts=facts).raw["workloads"]
    return work


def _topology() -> Res:
    """A kai.scheduler/v1alpha1 Topology `racks`: zones, then racks."""
    props = {
        "apiVersion": "kai.scheduler/v1alpha1",
        "kind": "Topology",
        "metadata": {"name": "racks"},
        "spec": {"levels": [{"nodeLabel": ZONE}, {"nodeLabel": RACK}]},
    }
    return Res(type=kai_api.TOPOLOGY_CRD.pulumi_type, name="topology", props=engine(props), urn="urn:topology")


def _pod_group(name: str = GANG) -> Res:
    """The host-side PodGroup of a tenant gang, its constraint on rack level (tenant_gangs.pod_group)."""
    constraint = {"topology": "racks", "requiredTopologyLevel": RACK}
    props = {"metadata": {"name": name, "namespace": TENANT.namespace}, "spec": {"topologyConstraint": constraint}}
    return Res(type=kai_api.POD_GROUP.pulumi_type, name=name, props=engine(props), urn="urn:podgroup")


def _pytorch_job(
    workers: int = 4,
    masters: int | None = 1,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> Res:
    """A PyTorchJob whose Master (`masters` replicas; None: omitted) and Worker templates carry `annotations`."""
    master: dict[str, Any] = {"template": deployment(annotations=annotations)["spec"]["template"]}
    if masters is not None:
        master["replicas"] = masters
    worker = {"replicas": workers, "template": deployment(annotations=annotations)["spec"]["template"]}
    props = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "train", "namespace": "default", "labels": labels or {}},
        "spec": {"pytorchReplicaSpecs": {"Master": master, "Worker": worker}},
    }
    return res("PyTorchJob", props)


# --- which pod templates and objects are read ---------------------------------------------------------


def test_a_workload_whose_pods_another_scheduler_places_is_not_planned() -> None:
    """KAI places only the pods that name its scheduler; the default scheduler's are no part of its capacity."""
    decl = planned(res("Deployment", deployment(name="plain", scheduler=None)))
    assert (decl.raw["workloads"], decl.left_out) == ([], [])


def test_a_tenant_gangs_constraint_is_read_from_its_podgroup_not_another_object_of_that_name() -> None:
    """Names are unique per kind: a ConfigMap that shares the PodGroup's name holds no constraint of KAI's."""
    other = Res(
        type="kubernetes:core/v1:ConfigMap",
        name=GANG,
        props=engine({"metadata": {"name": GANG, "namespace": TENANT.namespace}, "data": {}}),
        urn="urn:configmap",
    )
    job = _pytorch_job(annotations={kai_api.POD_GROUP_NAME: GANG}, labels={TENANT_LABEL: TENANT.name})
    work = _work(_topology(), job, _pod_group(), other, facts=one_pool_facts(tenants=(TENANT,)))
    assert work["topology"] == {"required": RACK}


def test_a_tenants_job_takes_no_constraint_from_a_podgroup_its_pods_name() -> None:
    """Only a tenant's PyTorchJob is a gang with a PodGroup of kaistack's (tenant_gangs.GANG_KINDS); a tenant's Job
    reaches the host as bare pods (model/topology.py refuses a constraint on it)."""
    props = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "default", "labels": {TENANT_LABEL: TENANT.name}},
        "spec": {
            "parallelism": 2,
            "template": deployment(annotations={kai_api.POD_GROUP_NAME: GANG})["spec"]["template"],
        },
    }
    decl = planned(_topology(), res("Job", props), _pod_group(), facts=one_pool_facts(tenants=(TENANT,)))
    assert decl.left_out == []
    [work] = decl.raw["workloads"]
    assert work["tenant"] == TENANT.name
    assert "topology" not in work


# --- what is read from them ---------------------------------------------------------------------------


def test_a_pytorchjob_declaring_two_masters_is_left_out() -> None:
    """The Master count is read as declared: the training operator runs one Master at most, and the model refuses
    more, so the job is named as one the check cannot express rather than planned with one Master."""
    decl = planned(_pytorch_job(masters=2))
    assert decl.raw["workloads"] == []
    [note] = decl.left_out
    assert note == "PyTorchJob/train (workload.pytorch.master: Input should be less than or equal to 1)"


def test_a_left_out_workloads_note_gives_the_reason_not_pydantics_docs_link() -> None:
    """str(ValidationError) ends in "For further information visit https://errors.pydantic.dev/..." unless
    PYDANTIC_ERRORS_INCLUDE_URL is off: that line was the whole note users saw through kai-capacity."""
    both = deployment(name="both", annotations={"gpu-fraction": "0.5"}, containers=[container(gpus=1)])
    [note] = planned(res("Deployment", both)).left_out
    assert note.startswith("Deployment/both (workload: use one of gpu, gpuFraction, gpuMemoryMiB; got gpu and ")
    assert "errors.pydantic.dev" not in note


@pytest.mark.parametrize("size", ["-2", "-0004"])
def test_a_negative_segment_size_is_not_read(size: str) -> None:
    """strconv.Atoi reads the sign (KAI@v0.17.0 pytorch_grouper.go:252): -2 is below 2, so KAI makes no segments."""
    [work] = planned(_topology(), _pytorch_job(annotations={kai_api.SEGMENT_SIZE: size})).raw["workloads"]
    assert "segmentSize" not in work["pytorch"]


def test_only_a_batch_jobs_completions_are_read() -> None:
    """A StatefulSet is planned like a Job, but completions is a batch/v1 JobSpec field: a StatefulSet's pods are
    its replicas."""
    sts = deployment(name="db")
    sts["kind"] = "StatefulSet"
    sts["spec"]["replicas"] = 3
    sts["spec"]["completions"] = 6
    work = _work(res("StatefulSet", sts))
    assert (work["kind"], work["replicas"]) == ("Job", 3)
    assert "completions" not in work


# --- what the checker is handed -----------------------------------------------------------------------


def test_a_tenants_queues_missing_from_the_stack_are_left_out_of_the_rebuilt_tenant() -> None:
    """kai-queue-tree and tenant-queue-binding name a missing queue; the checker plans with the queues KAI has."""
    tenant = TenantFacts("alpha", "vcluster-alpha", ("team-a", "ghost"))
    decl = planned(facts=one_pool_facts(tenants=(tenant,)))
    assert decl.raw["tenants"] == [{"name": "alpha", "namespace": "vcluster-alpha", "queues": ["team-a"]}]


def test_a_pools_null_props_are_read_as_unset() -> None:
    """The checker then takes the model's defaults (110 pods a node, no MIG, no extra labels)."""
    pool = {**POOL, "pods": None, "migStrategy": None, "labels": None}
    decl = planned(facts=one_pool_facts(node_pools=(pool,)))
    assert decl.raw["cluster"]["nodePools"] == [POOL]
    [rebuilt] = parse_config(decl.raw).cluster.node_pools
    assert (rebuilt.pods, rebuilt.mig_strategy, rebuilt.labels) == (110, "none", {})


@pytest.mark.parametrize(
    ("name", "second"),
    [("web", "web-1"), ("w" * 70, "w" * 58 + "-1")],
    ids=["short", "cut to a dns label"],
)
def test_workloads_whose_names_meet_are_both_planned_the_later_one_numbered(name: str, second: str) -> None:
    """Two namespaces may hold one name, and a cut can make two names one: the later is numbered, cut short enough
    (58 characters) that the number fits in a 63-character DNS label."""
    pods = [res("Pod", pod(name=name, namespace=ns), name=f"{ns}-{name}") for ns in ("default", "other")]
    decl = planned(*pods)
    assert decl.left_out == []
    assert [w["name"] for w in decl.raw["workloads"]] == [name[:63], second]
    assert list(decl.origin.values()) == pods
