"""Topology and subgroups as KAI receives them: the Topology CR, the pod-grouper's annotations, tenant PodGroups.

Upstream facts, all at kai-scheduler/KAI-Scheduler@v0.17.0 (f218c69b):
- the Topology CRD `deployments/kai-scheduler/crds/kai.scheduler_topologies.yaml` (copied to
  tests/data/schemas/), from `pkg/apis/kai/v1alpha1/topology_types.go`: 1-16 levels, nodeLabel unique,
  kubernetes.io/hostname only last (CEL rules, evaluated here with cel-python);
- `pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go` `GetPodGroupMetadata`: the
  PodGroup's topologyConstraint comes from the top owner's `kai.scheduler/topology`,
  `kai.scheduler/topology-required-placement`, `kai.scheduler/topology-preferred-placement` annotations;
- `pkg/podgrouper/podgrouper/plugins/kubeflow/pytorch/pytorch_grouper.go` `buildWorkerSubGroups`,
  `getSegmentSize`, `getTopology`, `getSegmentTopologyConstraints`: segments from the Worker template's
  `kai.scheduler/segment-size` and `kai.scheduler/segment-topology-*-placement`, the topology name from the
  template first;
- `pkg/common/constants/constants.go` SubGroupLabelKey `kai.scheduler/subgroup-name`, read by
  `pkg/scheduler/api/pod_info/pod_info.go` `NewTaskInfo`.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import celpy
import jsonschema
import pytest
import yaml
from platform_testlib import (
    PYTORCHJOB,
    SCHEMAS,
    base_raw,
    kube_object,
    named,
    of_type,
    pruning,
    run_program,
    validate_pod_template,
)

from components.cluster_eks import node_labels
from components.cluster_kind import kind_config
from kaistack.declaration.model import NodePool
from kaistack.declaration.parse import ConfigError, parse_config

TOPOLOGY = "kubernetes:kai.scheduler/v1alpha1:Topology"
PODGROUP = "kubernetes:scheduling.run.ai/v2alpha2:PodGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"
ZONE, RACK, HOST = "topology.kubernetes.io/zone", "kaistack.io/rack", "kubernetes.io/hostname"


def _raw(*workloads: dict[str, Any], version: str | None = None) -> dict[str, Any]:
    raw = base_raw()
    raw["cluster"]["nodePools"] = [
        {"name": "a", "count": 2, "gpus": 4, "cpu": "16", "memory": "64Gi", "labels": {ZONE: "z1", RACK: "r1"}},
        {"name": "b", "count": 2, "gpus": 4, "cpu": "16", "memory": "64Gi", "labels": {ZONE: "z1", RACK: "r2"}},
    ]
    raw["cluster"]["topology"] = {"name": "dc", "levels": [ZONE, RACK]}
    raw["tenants"] = [{"name": "t", "queues": ["team"]}]
    raw["workloads"] = list(workloads)
    raw["kai"] = {"capacityCheck": "off", **({"version": version} if version else {})}
    return raw


def _work(name: str, kind: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "kind": kind, "queue": "team", "image": "busybox:1.37.0", "gpu": 1, **fields}


IN_RACK = {"topology": {"required": RACK}}


@cache
def _crd_schema(filename: str, version: str) -> dict[str, Any]:
    crd = yaml.safe_load((SCHEMAS / filename).read_text())
    [served] = [v for v in crd["spec"]["versions"] if v["name"] == version]
    return pruning(served["schema"]["openAPIV3Schema"])


def _topology_cel_rules() -> list[dict[str, str]]:
    levels = _crd_schema("kai.scheduler_topologies.yaml", "v1alpha1")["properties"]["spec"]["properties"]["levels"]
    # The immutability rule compares with oldSelf: a transition rule, not checked on create.
    return [r for r in levels["x-kubernetes-validations"] if "oldSelf" not in r["rule"]]


def _cel_passes(rule: str, levels: list[dict[str, str]]) -> bool:
    env = celpy.Environment()
    return bool(env.program(env.compile(rule)).evaluate({"self": celpy.json_to_cel(levels)}))


# --- the Topology CR -------------------------------------------------------------------------------------


def test_the_topology_cr_lists_the_declared_levels_broadest_first(mocks) -> None:
    run_program(mocks, _raw())
    [topology] = of_type(mocks.resources, TOPOLOGY)
    assert kube_object(topology) == {
        "apiVersion": "kai.scheduler/v1alpha1",
        "kind": "Topology",
        "metadata": {"name": "dc"},
        "spec": {"levels": [{"nodeLabel": ZONE}, {"nodeLabel": RACK}]},
    }


def test_the_topology_cr_is_valid_for_kais_crd_schema_and_its_cel_rules(mocks) -> None:
    raw = _raw()
    raw["cluster"]["topology"]["levels"] = [ZONE, RACK, HOST]
    run_program(mocks, raw)
    [topology] = of_type(mocks.resources, TOPOLOGY)
    body = kube_object(topology)
    jsonschema.validate(body, _crd_schema("kai.scheduler_topologies.yaml", "v1alpha1"))
    assert [_cel_passes(r["rule"], body["spec"]["levels"]) for r in _topology_cel_rules()] == [True, True]


@pytest.mark.parametrize(
    ("levels", "refusal"),
    [([RACK, RACK], "levels must be unique"), ([HOST, RACK], "can only be the last")],
)
def test_the_declaration_refuses_what_the_crds_cel_rules_refuse(levels: list[str], refusal: str) -> None:
    """kaistack's own rule and KAI's CRD agree on the same levels."""
    nodes = [{"nodeLabel": level} for level in levels]
    assert not all(_cel_passes(r["rule"], nodes) for r in _topology_cel_rules())
    raw = _raw()
    raw["cluster"]["topology"]["levels"] = levels
    with pytest.raises(ConfigError, match=refusal):
        parse_config(raw)


def _immutability_rule() -> str:
    levels = _crd_schema("kai.scheduler_topologies.yaml", "v1alpha1")["properties"]["spec"]["properties"]["levels"]
    (rule,) = [r["rule"] for r in levels["x-kubernetes-validations"] if "oldSelf" in r["rule"]]
    return rule


def test_the_api_server_refuses_an_update_of_the_levels_node_labels() -> None:
    """The CRD's transition rule (KAI-Scheduler@v0.17.0 crds/kai.scheduler_topologies.yaml:97-99)."""
    env = celpy.Environment()
    program = env.program(env.compile(_immutability_rule()))

    def update_allowed(old: list[str], new: list[str]) -> bool:
        as_levels = [{"nodeLabel": level} for level in new], [{"nodeLabel": level} for level in old]
        return bool(
            program.evaluate({"self": celpy.json_to_cel(as_levels[0]), "oldSelf": celpy.json_to_cel(as_levels[1])})
        )

    assert update_allowed([ZONE, RACK], [ZONE, RACK])
    assert not update_allowed([ZONE, RACK], [ZONE, RACK, HOST])


def test_a_change_of_levels_replaces_the_topology_cr_deleting_it_first(mocks) -> None:
    """An update would be refused (above); the new object has the same name, so the old one goes first."""
    run_program(mocks, _raw())
    [topology] = of_type(mocks.resources, TOPOLOGY)
    assert topology.replace_on_changes == ("spec.levels",)
    assert topology.delete_before_replace is True


def test_no_topology_declared_renders_no_topology_cr(mocks) -> None:
    raw = _raw()
    del raw["cluster"]["topology"]
    run_program(mocks, raw)
    assert of_type(mocks.resources, TOPOLOGY) == []


def test_the_topology_cr_waits_for_kais_webhooks_and_workloads_wait_for_it(mocks) -> None:
    """KAI's admission validates Topologies, failing closed (KAI@v0.17.0 pkg/operator/operands/admission/
    resources.go:316-336): it is created once `kaistack kai-ready`, after KAI's release, says the webhooks answer."""
    run_program(mocks, _raw(_work("ddp", "PyTorchJob", **IN_RACK)))
    [topology] = of_type(mocks.resources, TOPOLOGY)
    [kai] = [r for r in of_type(mocks.resources, RELEASE) if r.name == "kaistack-kai-release"]
    ready = named(mocks.resources, "kaistack-kai-ready")
    assert ready.urn in topology.dependencies
    assert kai.urn in ready.dependencies
    assert topology.urn in named(mocks.resources, "kaistack-workloads-ddp").dependencies


# --- host workloads: what KAI's pod-grouper reads -----------------------------------------------------------


def test_a_host_pytorchjob_carries_its_constraint_on_the_top_owner(mocks) -> None:
    run_program(mocks, _raw(_work("ddp", "PyTorchJob", topology={"required": ZONE, "preferred": RACK})))
    job = kube_object(named(mocks.resources, "kaistack-workloads-ddp"))
    assert job["metadata"]["annotations"] == {
        "kai.scheduler/topology": "dc",
        "kai.scheduler/topology-required-placement": ZONE,
        "kai.scheduler/topology-preferred-placement": RACK,
    }


def test_a_host_job_carries_its_constraint_on_the_top_owner(mocks) -> None:
    run_program(mocks, _raw(_work("batch", "Job", replicas=2, topology={"preferred": RACK})))
    job = kube_object(named(mocks.resources, "kaistack-workloads-batch"))
    assert job["metadata"]["annotations"] == {
        "kai.scheduler/topology": "dc",
        "kai.scheduler/topology-preferred-placement": RACK,
        "pulumi.com/waitFor": "jsonpath={.metadata.uid}",
    }


def test_a_pod_is_its_own_top_owner_so_the_pod_carries_the_constraint(mocks) -> None:
    run_program(mocks, _raw(_work("one", "Pod", **IN_RACK)))
    pod = kube_object(named(mocks.resources, "kaistack-workloads-one"))
    assert pod["metadata"]["annotations"]["kai.scheduler/topology-required-placement"] == RACK


def test_a_tenant_pod_carries_the_constraint_the_host_pod_grouper_reads(mocks) -> None:
    """vCluster syncs the pod as a bare host pod: the pod is its own top owner there."""
    run_program(mocks, _raw(_work("one", "Pod", tenant="t", **IN_RACK)))
    pod = kube_object(named(mocks.resources, "kaistack-workloads-one"))
    assert pod["metadata"]["annotations"]["kai.scheduler/topology"] == "dc"


def test_a_workload_without_a_constraint_gets_no_topology_annotation(mocks) -> None:
    run_program(mocks, _raw(_work("ddp", "PyTorchJob")))
    job = kube_object(named(mocks.resources, "kaistack-workloads-ddp"))
    assert "annotations" not in job["metadata"]


def test_segments_are_annotated_on_the_worker_template_only(mocks) -> None:
    segments = {"workers": 8, "segmentSize": 4, "segmentTopology": {"required": RACK}}
    run_program(mocks, _raw(_work("ddp", "PyTorchJob", pytorch=segments)))
    replicas = kube_object(named(mocks.resources, "kaistack-workloads-ddp"))["spec"]["pytorchReplicaSpecs"]
    assert replicas["Worker"]["template"]["metadata"]["annotations"] == {
        "kai.scheduler/topology": "dc",
        "kai.scheduler/segment-size": "4",
        "kai.scheduler/segment-topology-required-placement": RACK,
    }
    assert "annotations" not in replicas["Master"]["template"]["metadata"]


def test_segments_without_a_job_constraint_leave_the_top_owner_bare(mocks) -> None:
    """A topology name on the top owner with no level would be a constraint KAI refuses."""
    segments = {"workers": 8, "segmentSize": 4, "segmentTopology": {"required": RACK}}
    run_program(mocks, _raw(_work("ddp", "PyTorchJob", pytorch=segments)))
    job = kube_object(named(mocks.resources, "kaistack-workloads-ddp"))
    assert "annotations" not in job["metadata"]


def test_host_pytorchjob_pods_get_no_subgroup_label_from_kaistack(mocks) -> None:
    """KAI's pod-grouper labels them itself (pod_controller.go assignPodToGroupAndSubGroup)."""
    run_program(mocks, _raw(_work("ddp", "PyTorchJob", **IN_RACK)))
    replicas = kube_object(named(mocks.resources, "kaistack-workloads-ddp"))["spec"]["pytorchReplicaSpecs"]
    assert all("kai.scheduler/subgroup-name" not in r["template"]["metadata"]["labels"] for r in replicas.values())


# --- tenant gangs: the PodGroup kaistack writes -------------------------------------------------------------


def _tenant_gang(mocks, version: str | None = None, **fields: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    run_program(mocks, _raw(_work("tddp", "PyTorchJob", tenant="t", **fields), version=version))
    [group] = of_type(mocks.resources, PODGROUP)
    return kube_object(group), kube_object(named(mocks.resources, "kaistack-workloads-tddp"))


def test_a_tenant_gangs_podgroup_carries_the_topology_constraint(mocks) -> None:
    group, _ = _tenant_gang(mocks, topology={"required": ZONE, "preferred": RACK})
    assert group["spec"]["topologyConstraint"] == {
        "topology": "dc",
        "requiredTopologyLevel": ZONE,
        "preferredTopologyLevel": RACK,
    }


def test_a_tenant_gangs_podgroup_has_the_pod_groupers_master_and_worker_subgroups(mocks) -> None:
    group, _ = _tenant_gang(mocks, pytorch={"master": 1, "workers": 4, "minAvailable": 3})
    assert group["spec"]["minMember"] == 3
    assert group["spec"]["subGroups"] == [{"name": "master", "minMember": 1}, {"name": "worker", "minMember": 2}]


def test_a_tenant_gangs_podgroup_is_valid_for_kais_podgroup_crd(mocks) -> None:
    group, _ = _tenant_gang(mocks, **IN_RACK)
    jsonschema.validate(group, _crd_schema("scheduling.run.ai_podgroups.yaml", "v2alpha2"))


def test_each_replica_template_of_a_tenant_gang_names_its_subgroup(mocks) -> None:
    _, job = _tenant_gang(mocks, **IN_RACK)
    replicas = job["spec"]["pytorchReplicaSpecs"]
    labels = {role: r["template"]["metadata"]["labels"]["kai.scheduler/subgroup-name"] for role, r in replicas.items()}
    assert labels == {"Master": "master", "Worker": "worker"}


def test_a_tenant_gang_under_kai_before_v0_17_keeps_a_flat_podgroup(mocks) -> None:
    raw = _raw(_work("tddp", "PyTorchJob", tenant="t"), version="v0.16.8")
    del raw["cluster"]["topology"]
    run_program(mocks, raw)
    [group] = of_type(mocks.resources, PODGROUP)
    assert "subGroups" not in kube_object(group)["spec"]
    job = kube_object(named(mocks.resources, "kaistack-workloads-tddp"))
    assert (
        "kai.scheduler/subgroup-name"
        not in job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["metadata"]["labels"]
    )


def test_every_rendered_pytorchjob_with_topology_is_still_a_valid_training_operator_shape(mocks) -> None:
    segments = {"workers": 4, "segmentSize": 2, "segmentTopology": {"required": RACK}}
    run_program(mocks, _raw(_work("ddp", "PyTorchJob", pytorch=segments, topology={"required": ZONE})))
    for job in of_type(mocks.resources, PYTORCHJOB):
        for replica in kube_object(job)["spec"]["pytorchReplicaSpecs"].values():
            validate_pod_template(replica["template"])


# --- node labels: the nodes really carry the levels -----------------------------------------------------------


def test_kind_workers_carry_their_pools_topology_labels() -> None:
    config = parse_config(_raw())
    workers = [n for n in kind_config(config)["nodes"] if n["role"] == "worker"]
    assert [(w["labels"][ZONE], w["labels"][RACK]) for w in workers] == [("z1", "r1")] * 2 + [("z1", "r2")] * 2


def test_eks_node_groups_carry_their_pools_topology_labels() -> None:
    pool = NodePool(name="a", gpus=8, instance_type="p5.48xlarge", labels={RACK: "r1"})
    assert node_labels(pool)[RACK] == "r1"
