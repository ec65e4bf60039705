"""What a mutation run of kai-capacity's adapter (capacity_adapter.py) and the tenant admission policy
(admission.py) found no test pinning: each test is one behaviour a surviving mutant changed.

The adapter rebuilds what KAI's pod-grouper reads (kai-scheduler/KAI-Scheduler@v0.17.0
pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go); the policy is evaluated as
test_policy_admission.py evaluates it (cel-python, an error denies).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from policy_builders import ONE_GPU_POOL, container, deployment, engine, one_pool_facts, planned, pod, queue, res
from test_policy_admission import PLAIN, SHARED, Case, _annotated, _relabelled, cel_allows, coredns

from kaistack.declaration import kai_api
from kaistack.declaration.marks import TENANT_LABEL
from kaistack.guardrails.admission import pod_validations, tenant_policy
from kaistack.guardrails.capacity_adapter import Declaration, declaration
from kaistack.guardrails.facts import StackFacts, TenantFacts
from kaistack.guardrails.podspec import Res
from kaistack.guardrails.settings import Settings

POOL = ONE_GPU_POOL
RACK = "kaistack.io/rack"
ZONE = "topology.kubernetes.io/zone"
TENANT = TenantFacts("alpha", "vcluster-alpha", ("team-a",))


def _work(*resources: Res, facts: StackFacts | None = None) -> dict[str, Any]:
    [work] = planned(*resources, facts=facts).raw["workloads"]
    return work


def _topology(name: Any = "racks", levels: list[dict[str, Any]] | None = None) -> Res:
    """A kai.scheduler/v1alpha1 Topology, its levels from the top down."""
    metadata = {} if name is None else {"name": name}
    spec = {"levels": [{"nodeLabel": ZONE}, {"nodeLabel": RACK}] if levels is None else levels}
    props = {"apiVersion": "kai.scheduler/v1alpha1", "kind": "Topology", "metadata": metadata, "spec": spec}
    return Res(type=kai_api.TOPOLOGY_CRD.pulumi_type, name="topology", props=engine(props), urn="urn:topology")


def _job(name: str = "j", annotations: dict[str, str] | None = None, **template: Any) -> Res:
    """A host batch/v1 Job whose top owner carries `annotations` (where the pod-grouper reads topology)."""
    t = deployment(**template)["spec"]["template"]
    props = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
        "spec": {"parallelism": 2, "template": t},
    }
    return res("Job", props)


def _pytorch_job(
    workers: int = 4, worker_annotations: dict[str, str] | None = None, master_annotations: Any = None, **top: Any
) -> Res:
    master = deployment(annotations=master_annotations)["spec"]["template"]
    worker = deployment(annotations=worker_annotations)["spec"]["template"]
    props = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "train", "namespace": "default", **top},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": master},
                "Worker": {"replicas": workers, "template": worker},
            }
        },
    }
    return res("PyTorchJob", props)


# --- capacity_adapter: what a workload's pods ask for ----------------------------------------------


def test_a_pods_node_selector_reaches_the_rebuilt_declaration() -> None:
    p = pod(name="sel")
    p["spec"]["nodeSelector"] = {"kaistack.io/node-pool": "gpu"}
    assert _work(res("Pod", p))["nodeSelector"] == {"kaistack.io/node-pool": "gpu"}


def test_the_rebuilt_workload_runs_its_first_containers_image() -> None:
    d = deployment(containers=[container(image="vllm/vllm-openai:v0.6.0", gpus=1), container(name="side")])
    assert _work(res("Deployment", d))["image"] == "vllm/vllm-openai:v0.6.0"


def test_a_workload_whose_container_names_no_image_is_still_planned() -> None:
    """The image is no capacity: a pod the API server would refuse for it is lint's finding, not a lost workload."""
    nameless = container(gpus=1)
    del nameless["image"]
    decl = planned(res("Deployment", deployment(containers=[nameless])))
    assert decl.left_out == []
    assert len(decl.raw["workloads"]) == 1


def test_a_jobs_completions_reach_the_rebuilt_declaration() -> None:
    job = _job()
    props = {**dict(job.props), "spec": {**dict(job.props["spec"]), "completions": 6}}
    work = _work(res("Job", props))
    assert (work["replicas"], work["completions"]) == (2, 6)


def test_a_replicaset_is_planned_like_a_job() -> None:
    """KAI groups a ReplicaSet's pods as one PodGroup per owner, minMember 1, class train, as a Job."""
    rs = deployment(name="rs")
    rs["kind"] = "ReplicaSet"
    rs["spec"]["replicas"] = 3
    work = _work(res("ReplicaSet", rs))
    assert (work["kind"], work["replicas"]) == ("Job", 3)


def test_a_fractions_device_count_reaches_the_rebuilt_declaration() -> None:
    shared = deployment(annotations={"gpu-fraction": "0.5", "gpu-fraction-num-devices": "2"}, containers=[container()])
    work = _work(res("Deployment", shared))
    assert (work["gpuFraction"], work["gpuDevices"]) == (0.5, 2)


def test_a_workload_whose_name_keeps_no_dns_character_is_still_planned() -> None:
    """The declared name is only the checker's key: a name with nothing left of it must not drop the workload."""
    odd = res("Pod", pod(name="___"))
    decl = planned(odd)
    assert decl.left_out == []
    assert list(decl.origin.values()) == [odd]


def test_a_container_without_requests_or_limits_adds_nothing_to_the_workloads_requests() -> None:
    bare = container(name="bare")
    del bare["resources"]
    work = _work(res("Deployment", deployment(containers=[container(gpus=1), bare])))
    assert (work["cpu"], work["memory"]) == ("100m", str(128 * 2**20))
    assert "ephemeralStorage" not in work


def test_a_long_workload_name_is_cut_to_a_dns_label() -> None:
    """63 characters (RFC 1123 label) rather than a workload left out for its name."""
    decl = planned(res("Pod", pod(name="w" * 80)))
    [work] = decl.raw["workloads"]
    assert work["name"] == "w" * 63


def test_a_workload_in_an_exempt_namespace_is_not_planned() -> None:
    decl = planned(res("Pod", pod(name="sys", namespace="kube-system")))
    assert (decl.raw["workloads"], decl.left_out) == ([], [])


@pytest.mark.parametrize(
    ("kind", "spec", "pods"),
    [
        # apps/v1 DeploymentSpec.replicas and batch/v1 JobSpec.parallelism default to 1.
        ("Deployment", {}, 1),
        ("Job", {}, 1),
        ("StatefulSet", {}, 1),
    ],
)
def test_an_omitted_replica_count_is_the_api_servers_default_of_one(kind: str, spec: dict[str, Any], pods: int) -> None:
    d = deployment()
    d["kind"] = kind
    d["spec"] = {**spec, "template": d["spec"]["template"]}
    assert _work(res(kind, d))["replicas"] == pods


@pytest.mark.parametrize(
    ("replica_specs", "expected"),
    [
        ({"Worker": {"replicas": 3}}, {"master": 0, "workers": 3}),
        ({"Master": {}, "Worker": {}}, {"master": 1, "workers": 1}),
        ({"Master": {"replicas": 1}}, {"master": 1, "workers": 0}),
    ],
    ids=["no master", "replicas omitted (1 each)", "no worker"],
)
def test_a_pytorchjobs_roles_are_counted_as_the_training_operator_defaults_them(
    replica_specs: dict[str, Any], expected: dict[str, int]
) -> None:
    """kubeflow/training-operator v1: an omitted replicas is 1; a role that is not there has no pods."""
    job = _pytorch_job()
    template = job.props["spec"]["pytorchReplicaSpecs"]["Master"]["template"]
    specs = {role: {**spec, "template": template} for role, spec in replica_specs.items()}
    props = {**dict(job.props), "spec": {"pytorchReplicaSpecs": specs}}
    assert _work(res("PyTorchJob", props))["pytorch"] == expected


def test_a_pytorchjobs_min_available_reaches_the_rebuilt_declaration() -> None:
    job = _pytorch_job()
    spec = {**dict(job.props["spec"]), "runPolicy": {"schedulingPolicy": {"minAvailable": 3}}}
    work = _work(res("PyTorchJob", {**dict(job.props), "spec": spec}))
    assert work["pytorch"]["minAvailable"] == 3


def test_a_pytorchjob_without_min_available_declares_none() -> None:
    assert "minAvailable" not in _work(_pytorch_job())["pytorch"]


@pytest.mark.parametrize(
    ("tolerations", "tolerated"),
    [
        ([], False),
        ([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], True),
        ([{"operator": "Exists"}], True),
        ([{"operator": "Equal", "value": "x"}], False),
        ([{"key": "dedicated", "operator": "Exists"}], False),
        ([{"key": "dedicated", "operator": "Exists"}, {"key": "nvidia.com/gpu", "operator": "Exists"}], True),
    ],
    ids=["none", "the gpu key", "every taint", "keyless but not Exists", "another key", "one of several"],
)
def test_a_pod_tolerates_the_gpu_taint_by_its_key_or_a_keyless_exists(
    tolerations: list[dict[str, Any]], tolerated: bool
) -> None:
    """core/v1 Toleration: an empty key with operator Exists matches every taint."""
    p = pod(name="tol")
    p["spec"]["tolerations"] = tolerations
    assert _work(res("Pod", p))["tolerateGpuTaint"] is tolerated


# --- capacity_adapter: priority and preemptibility where the owner has none ------------------------
# KAI@v0.17.0 default_grouper.go:322-331 (calcPodGroupPriorityClass): the owner's priorityClassName label, then
# the pod's label, then the pod's spec.priorityClassName; :243-249 the pod's preemptibility label after the owner's.


def test_a_pod_templates_priority_class_label_counts_when_its_owner_has_none() -> None:
    d = deployment(labels={kai_api.PRIORITY_CLASS_LABEL: "inference"})
    assert _work(res("Deployment", d))["priorityClass"] == "inference"


def test_a_pods_spec_priority_class_name_counts_without_a_priority_label() -> None:
    d = deployment()
    d["spec"]["template"]["spec"]["priorityClassName"] = "build"
    assert _work(res("Deployment", d))["priorityClass"] == "build"


def test_a_pod_templates_preemptibility_label_counts_when_its_owner_has_none() -> None:
    d = deployment(labels={kai_api.PREEMPTIBILITY_LABEL: "non-preemptible"})
    assert _work(res("Deployment", d))["preemptible"] is False


def test_a_preemptible_label_makes_the_workload_preemptible() -> None:
    d = deployment(top_labels={kai_api.PREEMPTIBILITY_LABEL: "preemptible"})
    assert _work(res("Deployment", d))["preemptible"] is True


# --- capacity_adapter: tenants, queues and pools ------------------------------------------------------


def test_a_host_workload_in_a_tenants_namespace_is_rebuilt_as_the_tenants() -> None:
    """No label needed: the namespace is the tenant's vCluster host namespace (facts.workload_tenant)."""
    d = deployment(namespace=TENANT.namespace)
    assert _work(res("Deployment", d), facts=one_pool_facts(tenants=(TENANT,)))["tenant"] == TENANT.name


def test_the_platforms_default_queue_names_reach_the_rebuilt_kai_config() -> None:
    names = {"parentName": "fallback-parent", "childName": "fallback"}
    platform = res("Platform", {"kai": {"defaultQueues": names}})
    assert planned(platform).raw["kai"]["defaultQueues"] == names


def test_a_queue_field_that_is_a_boolean_counts_as_omitted() -> None:
    """A boolean is no quantity (the Queue CRD's schema refuses it); KAI reads an omitted field as 0."""
    q = queue("team-a")
    q["spec"]["resources"]["gpu"]["quota"] = True
    decl = declaration([res("Queue", q)], Settings(), one_pool_facts())
    [entry] = decl.raw["queues"]
    assert entry["resources"]["gpu"]["quota"] == 0


def test_a_cpu_only_pool_takes_no_fake_gpu_memory_size() -> None:
    cpu = {"name": "cpu", "count": 1, "gpus": 0, "cpu": "8", "memory": "32Gi"}
    decl = planned(facts=one_pool_facts(node_pools=(cpu,), gpu_memory_mib=(11441,)))
    assert "gpuMemoryMiB" not in decl.raw["cluster"]["nodePools"][0]


# --- capacity_adapter: the Topology object and the constraints on it -----------------------------------


def test_the_stacks_topology_reaches_the_rebuilt_cluster() -> None:
    assert planned(_topology()).raw["cluster"]["topology"] == {"name": "racks", "levels": [ZONE, RACK]}


@pytest.mark.parametrize(
    "topology",
    [_topology(name=None), _topology(levels=[]), _topology(levels=[{"nodeLabel": ZONE}, {}])],
    ids=["without a name", "without levels", "with a level naming no node label"],
)
def test_a_topology_object_kai_cannot_use_is_not_planned(topology: Res) -> None:
    assert "topology" not in planned(topology).raw["cluster"]


def _constrained(**annotations: str) -> dict[str, Any]:
    decl = planned(_topology(), _job(annotations={kai_api.TOPOLOGY: "racks", **annotations}))
    assert decl.left_out == []
    [work] = decl.raw["workloads"]
    return work


def test_a_preferred_level_below_the_required_one_is_kept() -> None:
    work = _constrained(**{kai_api.TOPOLOGY_REQUIRED_PLACEMENT: ZONE, kai_api.TOPOLOGY_PREFERRED_PLACEMENT: RACK})
    assert work["topology"] == {"required": ZONE, "preferred": RACK}


def test_a_preferred_level_equal_to_the_required_one_is_kept() -> None:
    """KAI walks the levels from the lowest up and stops at the required one, so a preferred level equal to it
    is found (KAI@v0.17.0 pkg/scheduler/plugins/topology/job_filtering.go:389-430)."""
    work = _constrained(**{kai_api.TOPOLOGY_REQUIRED_PLACEMENT: RACK, kai_api.TOPOLOGY_PREFERRED_PLACEMENT: RACK})
    assert work["topology"] == {"required": RACK, "preferred": RACK}


@pytest.mark.parametrize(
    ("empty", "kept"),
    [
        (kai_api.TOPOLOGY_REQUIRED_PLACEMENT, kai_api.TOPOLOGY_PREFERRED_PLACEMENT),
        (kai_api.TOPOLOGY_PREFERRED_PLACEMENT, kai_api.TOPOLOGY_REQUIRED_PLACEMENT),
    ],
)
def test_an_empty_placement_annotation_counts_as_unset(empty: str, kept: str) -> None:
    """The pod-grouper copies the annotation's value as is (default_grouper.go:87-89), and KAI's topology plugin
    takes an empty level for none (KAI@v0.17.0 pkg/scheduler/plugins/topology/job_filtering.go:393-397,425-430)."""
    work = _constrained(**{empty: "", kept: RACK})
    assert work["topology"] == {"required" if kept == kai_api.TOPOLOGY_REQUIRED_PLACEMENT else "preferred": RACK}


# --- capacity_adapter: PyTorchJob segments (pytorch_grouper.go getSegmentSize) ------------------------------


def _segmented(size: str, workers: int = 4) -> Declaration:
    return planned(_topology(), _pytorch_job(workers, {kai_api.SEGMENT_SIZE: size}))


def test_a_host_pytorchjobs_segment_size_reaches_the_rebuilt_declaration() -> None:
    [work] = _segmented("2").raw["workloads"]
    assert work["pytorch"]["segmentSize"] == 2


@pytest.mark.parametrize("size", ["+2", "0002", "+003"])
def test_a_segment_size_strconv_atoi_reads_is_read(size: str) -> None:
    """Go's strconv.Atoi takes a sign and leading zeros (KAI@v0.17.0 pytorch_grouper.go:252)."""
    [work] = _segmented(size).raw["workloads"]
    assert work["pytorch"]["segmentSize"] == int(size)


@pytest.mark.parametrize("size", ["\u00b2", "\u0662", "2" * 5000])
def test_a_segment_size_in_digits_go_does_not_read_is_not_read(size: str) -> None:
    """str.isdigit() is true of a superscript or an Arabic-Indic digit, which Atoi refuses (and int() of '²'
    raised, failing kai-capacity); a number past int64 is refused by Atoi too."""
    [work] = _segmented(size).raw["workloads"]
    assert "segmentSize" not in work["pytorch"]


@pytest.mark.parametrize("size", ["2.5", " 2", "two"])
def test_a_segment_size_that_is_no_plain_integer_is_not_read(size: str) -> None:
    """KAI@v0.17.0 pytorch_grouper.go:258-260: strconv.Atoi refuses it, and the pod-grouper makes no segments."""
    decl = _segmented(size)
    [work] = decl.raw["workloads"]
    assert "segmentSize" not in work["pytorch"]


@pytest.mark.parametrize("size", ["1", "5"])
def test_a_segment_size_outside_two_to_the_workers_is_not_read_and_the_job_is_still_planned(size: str) -> None:
    decl = _segmented(size, workers=4)
    assert decl.left_out == []
    [work] = decl.raw["workloads"]
    assert "segmentSize" not in work["pytorch"]


def test_a_tenants_pytorchjob_segments_are_not_read() -> None:
    """Its pods reach the host without their PyTorchJob and join the PodGroup kaistack writes, so KAI's
    PyTorchJob grouper never sees the Worker template (model/topology.py refuses tenant segments)."""
    job = _pytorch_job(4, {kai_api.SEGMENT_SIZE: "2"}, labels={TENANT_LABEL: TENANT.name})
    [work] = planned(_topology(), job, facts=one_pool_facts(tenants=(TENANT,))).raw["workloads"]
    assert work["tenant"] == TENANT.name
    assert "segmentSize" not in work["pytorch"]


def test_a_host_workload_in_a_tenants_namespace_still_takes_its_top_owners_priority() -> None:
    """Written straight into the host namespace it keeps its owner, whose labels KAI reads first, tenant label or
    not (default_grouper.go:322-331)."""
    labels = {TENANT_LABEL: TENANT.name, kai_api.PRIORITY_CLASS_LABEL: "inference"}
    d = deployment(namespace=TENANT.namespace, top_labels=labels)
    assert _work(res("Deployment", d), facts=one_pool_facts(tenants=(TENANT,)))["priorityClass"] == "inference"


def test_a_workload_on_a_queue_the_stack_does_not_declare_is_left_out_and_named() -> None:
    decl = planned(res("Deployment", deployment(name="lost", queue="nowhere")))
    assert decl.raw["workloads"] == []
    assert decl.left_out == ["Deployment/lost (queue nowhere is not one it may use)"]


def test_a_tenants_workload_on_a_queue_not_the_tenants_is_left_out() -> None:
    facts = one_pool_facts(leaf_queues=frozenset({"team-a", "team-b"}), tenants=(TENANT,))
    stray = res("Deployment", deployment(name="stray", queue="team-b", top_labels={TENANT_LABEL: TENANT.name}))
    decl = declaration([stray, res("Queue", queue("team-a")), res("Queue", queue("team-b"))], Settings(), facts)
    assert decl.raw["workloads"] == []
    assert decl.left_out == ["Deployment/stray (queue team-b is not one it may use)"]


def test_a_gpu_pool_without_a_memory_size_on_a_stack_without_fake_gpus_keeps_none() -> None:
    pool = {k: v for k, v in POOL.items() if k != "gpuMemoryMiB"}
    decl = planned(facts=one_pool_facts(node_pools=(pool,)))
    assert "gpuMemoryMiB" not in decl.raw["cluster"]["nodePools"][0]


@pytest.mark.parametrize("key", ["version", "placementStrategy"])
def test_the_platforms_kai_version_and_placement_strategy_reach_the_rebuilt_kai_config(key: str) -> None:
    value = {"version": "v0.17.0", "placementStrategy": "spread"}[key]
    platform = res("Platform", {"kai": {key: value}})
    assert planned(platform).raw["kai"][key] == value


def test_a_level_outside_the_topology_is_dropped_and_named() -> None:
    decl = planned(_topology(), _job(annotations={kai_api.TOPOLOGY: "racks", kai_api.TOPOLOGY_REQUIRED_PLACEMENT: "x"}))
    [work] = decl.raw["workloads"]
    assert "topology" not in work
    assert decl.left_out == ["Job/j (its topology constraint names levels KAI would refuse)"]


def test_a_pods_own_topology_annotations_are_its_constraint() -> None:
    """A bare Pod is its own top owner (default_grouper.go:87-89 reads the top owner's annotations)."""
    constrained = pod(name="solo", annotations={kai_api.TOPOLOGY: "racks", kai_api.TOPOLOGY_REQUIRED_PLACEMENT: RACK})
    assert _work(_topology(), res("Pod", constrained))["topology"] == {"required": RACK}


def test_a_deployments_topology_annotations_are_not_read() -> None:
    """KAI's deployment grouper makes each pod its own PodGroup, so a constraint would hold one pod, not the
    replicas (model/topology.py refuses it for a Deployment)."""
    d = deployment(name="web")
    d["metadata"]["annotations"] = {kai_api.TOPOLOGY: "racks", kai_api.TOPOLOGY_REQUIRED_PLACEMENT: RACK}
    assert "topology" not in _work(_topology(), res("Deployment", d))


def test_a_tenants_job_owner_topology_annotations_are_not_read() -> None:
    """Synced through the vCluster (setOwner: false) its pods reach the host without the Job that carries them."""
    job = _job(annotations={kai_api.TOPOLOGY: "racks", kai_api.TOPOLOGY_REQUIRED_PLACEMENT: RACK})
    props = {**dict(job.props), "metadata": {**dict(job.props["metadata"]), "labels": {TENANT_LABEL: TENANT.name}}}
    work = _work(_topology(), res("Job", props), facts=one_pool_facts(tenants=(TENANT,)))
    assert work["tenant"] == TENANT.name
    assert "topology" not in work


def _segment(worker: dict[str, str], **top: Any) -> dict[str, Any]:
    [work] = planned(_topology(), _pytorch_job(4, {kai_api.SEGMENT_SIZE: "2", **worker}, **top)).raw["workloads"]
    return work["pytorch"]


SEGMENT_RACK = {kai_api.SEGMENT_TOPOLOGY_REQUIRED_PLACEMENT: RACK}


def test_a_segment_size_equal_to_the_workers_is_read() -> None:
    assert _segmented("4", workers=4).raw["workloads"][0]["pytorch"]["segmentSize"] == 4


@pytest.mark.parametrize(
    ("worker", "top"),
    [({kai_api.TOPOLOGY: "racks"}, {}), ({}, {"annotations": {kai_api.TOPOLOGY: "racks"}})],
    ids=["named on the worker template", "named on the pytorchjob"],
)
def test_a_segments_placement_is_read_on_the_topology_the_worker_or_its_job_names(
    worker: dict[str, str], top: dict[str, Any]
) -> None:
    """KAI@v0.17.0 pytorch_grouper.go:268-320: getTopology reads the pod, the Worker template, then the top owner."""
    assert _segment({**SEGMENT_RACK, **worker}, **top)["segmentTopology"] == {"required": RACK}


def test_a_segments_placement_on_another_topology_is_not_read() -> None:
    assert "segmentTopology" not in _segment({**SEGMENT_RACK, kai_api.TOPOLOGY: "elsewhere"})


def test_a_segments_placement_kai_would_refuse_is_not_read() -> None:
    refused = {kai_api.SEGMENT_TOPOLOGY_REQUIRED_PLACEMENT: "x", kai_api.TOPOLOGY: "racks"}
    assert "segmentTopology" not in _segment(refused)


def test_a_job_without_completions_declares_none() -> None:
    assert "completions" not in _work(_job())


def test_a_container_with_only_limits_requests_its_limits() -> None:
    """The API server defaults a missing request to the limit (core/v1 ResourceRequirements)."""
    limited = container(name="limited")
    limited["resources"] = {"limits": {"cpu": "2", "memory": "1Gi", "ephemeral-storage": "10Gi"}}
    work = _work(res("Deployment", deployment(containers=[limited])))
    assert (work["cpu"], work["memory"], work["ephemeralStorage"]) == ("2000m", str(2**30), str(10 * 2**30))


@pytest.mark.parametrize(
    ("name", "dns_name"),
    [("my_job", "my-job"), ("_job_", "job"), ("w" * 62 + "_x", "w" * 62), ("_" + "w" * 63, "w" * 63)],
)
def test_a_workload_name_is_made_a_dns_label(name: str, dns_name: str) -> None:
    [work] = planned(res("Pod", pod(name=name))).raw["workloads"]
    assert work["name"] == dns_name


def test_a_queues_cpu_and_memory_blocks_reach_the_rebuilt_declaration() -> None:
    q = queue("team-a", cpu={"quota": 4000, "limit": 8000, "overQuotaWeight": 2})
    decl = declaration([res("Queue", q)], Settings(), one_pool_facts())
    [entry] = decl.raw["queues"]
    assert entry["resources"]["cpu"] == {"quota": 4000, "limit": 8000, "overQuotaWeight": 2}
    assert set(entry["resources"]) == {"gpu", "cpu", "memory"}


def test_a_gpu_pool_without_a_memory_size_takes_the_stacks_largest_gpu_size() -> None:
    pool = {k: v for k, v in POOL.items() if k != "gpuMemoryMiB"}
    decl = planned(facts=one_pool_facts(node_pools=(pool,), gpu_memory_mib=(8000, 24000)))
    assert decl.raw["cluster"]["nodePools"][0]["gpuMemoryMiB"] == 24000


def test_a_workload_on_a_parent_queue_is_left_out() -> None:
    """KAI schedules pods only into leaf queues."""
    queues = [res("Queue", queue("org")), res("Queue", queue("team-a", parent="org"))]
    decl = declaration([res("Deployment", deployment(queue="org")), *queues], Settings(), one_pool_facts())
    assert [q["name"] for q in decl.raw["queues"]] == ["org", "team-a"]
    assert decl.raw["workloads"] == []
    assert decl.left_out == ["Deployment/d (queue org is not one it may use)"]


@pytest.mark.parametrize(
    "names",
    [{}, {"parentName": "fallback-parent", "childName": "fallback"}],
    ids=["kai's own names", "the platform's names"],
)
def test_kais_default_queues_are_not_the_stacks_and_take_a_workload_without_a_queue(names: dict[str, str]) -> None:
    """KAI creates its default pair itself (kai.defaultQueues); an unlabelled pod goes to the child."""
    parent, child = names.get("parentName", "default-parent-queue"), names.get("childName", "default-queue")
    platform = res("Platform", {"kai": {"defaultQueues": names} if names else {}})
    defaults = [res("Queue", queue(parent)), res("Queue", queue(child, parent=parent))]
    decl = declaration([platform, *defaults, res("Deployment", deployment(queue=None))], Settings(), one_pool_facts())
    assert decl.raw["queues"] == []
    assert (len(decl.raw["workloads"]), decl.left_out) == (1, [])


def test_a_tenant_gangs_required_and_preferred_levels_are_read_from_its_podgroup() -> None:
    """Its pods name the PodGroup kaistack writes (tenant_gangs), whose spec.topologyConstraint KAI reads."""
    group = "kaistack-alpha-default-train"
    named = {kai_api.POD_GROUP_NAME: group}
    job = _pytorch_job(4, named, master_annotations=named, labels={TENANT_LABEL: TENANT.name})
    constraint = {"topology": "racks", "requiredTopologyLevel": ZONE, "preferredTopologyLevel": RACK}
    props = {"metadata": {"name": group, "namespace": TENANT.namespace}, "spec": {"topologyConstraint": constraint}}
    pod_group = Res(type=kai_api.POD_GROUP.pulumi_type, name=group, props=engine(props), urn="urn:podgroup")
    work = _work(_topology(), job, pod_group, facts=one_pool_facts(tenants=(TENANT,)))
    assert work["topology"] == {"required": ZONE, "preferred": RACK}


# --- admission: the tenant's pod policy ---------------------------------------------------------------


def _policy() -> dict[str, Any]:
    return tenant_policy("team-a", ["team-a"], "kai.scheduler/queue")


def test_a_tenant_without_queues_gets_no_policy() -> None:
    with pytest.raises(ValueError, match="tenant team-a has no queues"):
        pod_validations("team-a", [], "kai.scheduler/queue")


@pytest.mark.parametrize(
    "user", ["system:serviceaccount:kube-system:statefulset-controller", "system:kube-controller-manager"]
)
def test_the_host_statefulset_controller_is_skipped_with_or_without_its_own_service_account(user: str) -> None:
    """kube-controller-manager acts as statefulset-controller with --use-service-account-credentials (kubeadm,
    kind, EKS), as itself without: the vCluster control plane is a StatefulSet in the tenant's namespace."""
    unqueued = _relabelled(PLAIN)
    del unqueued["metadata"]["labels"]["kai.scheduler/queue"]
    unqueued["metadata"]["ownerReferences"] = [{"kind": "StatefulSet", "name": "team-a", "controller": True}]
    assert not cel_allows(_policy(), Case(unqueued, False))
    assert cel_allows(_policy(), Case(unqueued, True, user=user))


@pytest.mark.parametrize(
    ("owner", "why"),
    [
        ({"kind": "StatefulSet", "name": "team-b", "controller": True}, "another set"),
        ({"kind": "Deployment", "name": "team-a", "controller": True}, "another kind"),
        ({"kind": "StatefulSet", "name": "team-a"}, "not the controller"),
        ({"kind": "StatefulSet", "name": "team-a", "controller": False}, "controller false"),
    ],
)
def test_the_controllers_pods_of_anything_but_the_vclusters_own_set_are_checked(
    owner: dict[str, Any], why: str
) -> None:
    """Only a pod whose controller is the StatefulSet named after the release (the tenant) is skipped."""
    unqueued = _relabelled(PLAIN)
    del unqueued["metadata"]["labels"]["kai.scheduler/queue"]
    unqueued["metadata"]["ownerReferences"] = [owner]
    assert not cel_allows(_policy(), Case(unqueued, False, user="system:kube-controller-manager")), why


def test_kais_binder_in_kais_namespace_may_label_a_pod_with_its_gpu_group() -> None:
    """KAI@v0.17.0 pkg/operator/operands/binder/resources.go:33,72: the binder's ServiceAccount is `binder`."""
    labelled = Case(
        _relabelled(SHARED, **{"runai-gpu-group": "g1"}),
        True,
        operation="UPDATE",
        user="system:serviceaccount:kai-scheduler:binder",
        old=SHARED,
    )
    assert cel_allows(_policy(), labelled)


@pytest.mark.parametrize(
    "annotation",
    [
        "kai.scheduler/last-start-timestamp",
        "kai.scheduler/last-eviction-timestamp",
        "kai.scheduler/stale-podgroup-timestamp",
    ],
)
def test_a_tenant_pod_may_not_carry_kais_podgroup_state(annotation: str) -> None:
    """KAI@v0.17.0 pkg/common/constants/constants.go:62-64; the pod-grouper copies a bare pod's annotations onto
    its PodGroup (default_grouper.go:64-65)."""
    assert not cel_allows(_policy(), Case(_annotated(PLAIN, **{annotation: "2099-01-01T00:00:00Z"}), False))


def test_a_spark_app_selector_without_a_spark_app_name_is_admitted() -> None:
    """KAI@v0.17.0 plugins/spark/spark.go:15-16,29-44: only a pod with both labels is grouped by the selector."""
    assert cel_allows(_policy(), Case(_relabelled(PLAIN, **{"spark-app-selector": "kaistack-team-b-x"}), True))


def test_every_refusal_is_forbidden() -> None:
    """Validation.reason: the API server answers 403 Forbidden, the denial of an authorized request."""
    assert {v["reason"] for v in _policy()["spec"]["validations"]} == {"Forbidden"}


def test_a_cpu_only_pod_in_virtual_kube_system_naming_another_scheduler_is_refused() -> None:
    """The kube-system exemption is for the default scheduler only (CoreDNS's): any other scheduler would place
    the pod outside KAI."""
    assert cel_allows(_policy(), Case(coredns(), True))
    rogue = coredns(spec={"schedulerName": "my-scheduler"})
    rogue["spec"]["schedulerName"] = "my-scheduler"
    assert not cel_allows(_policy(), Case(rogue, False))


def test_a_label_that_only_starts_like_kais_gpu_group_is_the_tenants() -> None:
    """KAI@v0.17.0 pkg/common/constants/constants.go:75-76: `runai-gpu-group` and the `runai-gpu-group/` prefix."""
    assert cel_allows(_policy(), Case(_relabelled(PLAIN, **{"runai-gpu-groups": "mine"}), True))
    assert not cel_allows(_policy(), Case(_relabelled(PLAIN, **{"runai-gpu-group/0": "g1"}), False))


def test_the_match_condition_is_named() -> None:
    """admissionregistration/v1 MatchCondition.name is required: a qualified name, unique in the policy."""
    [condition] = _policy()["spec"]["matchConditions"]
    # k8s.io/apimachinery validation.IsQualifiedName (no prefix): at most 63 characters.
    assert re.fullmatch(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]", condition["name"])
    assert len(condition["name"]) <= 63
