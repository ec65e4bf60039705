"""Workload behaviour no other test pinned, found by a mutation run of components/workloads.py and
components/podspec.py: which objects a workload's resources wait for and belong to, the training operator's
queue in a tenant, and manifest fields only some declarations write.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pytest
from platform_testlib import base_raw, inputs, kube_object, merged, named, of_type, run_program

import components.workloads as workloads_component
from components.podspec import manifest
from kaistack.capacity.operator_pods import training_operators
from kaistack.declaration.parse import parse_config

PODGROUP = "kubernetes:scheduling.run.ai/v2alpha2:PodGroup"
ZONE, RACK = "topology.kubernetes.io/zone", "kaistack.io/rack"


def _stack(*workloads: dict[str, Any], **changes: Any) -> dict[str, Any]:
    raw = merged(base_raw(), workloads=list(workloads), **changes)
    raw.setdefault("tenants", [{"name": "t1", "queues": ["team"]}])
    return raw


def _work(name: str = "w", kind: str = "Pod", **fields: Any) -> dict[str, Any]:
    return {"name": name, "kind": kind, "queue": "team", "image": "busybox:1.37.0", **fields}


def _manifest(raw: dict[str, Any], name: str = "w") -> dict[str, Any]:
    config = parse_config(raw)
    [work] = [w for w in config.workloads if w.name == name]
    return manifest(config, work)


# --- podspec: fields only some declarations write ---------------------------------------------------------


def test_a_jobs_declared_completions_are_kept_apart_from_its_parallelism(mocks):
    """batch/v1 JobSpec: parallelism pods at a time until `completions` succeed; only an unset completions
    follows the replicas."""
    run_program(mocks, _stack(_work(kind="Job", replicas=2, completions=6)))
    spec = inputs(named(mocks.resources, "kaistack-workloads-w"))["spec"]
    assert (spec["parallelism"], spec["completions"]) == (2, 6)


def test_ephemeral_storage_is_requested_and_limited_alike(mocks):
    """The tenant's ResourceQuota counts requests.ephemeral-storage (kaistack.declaration.tenant_sizing); the limit
    equals the request, like cpu and memory without their own limits."""
    run_program(mocks, _stack(_work(cpu="1", memory="1Gi", ephemeralStorage="20Gi")))
    container = inputs(named(mocks.resources, "kaistack-workloads-w"))["spec"]["containers"][0]
    assert container["resources"] == {
        "requests": {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "20Gi"},
        "limits": {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "20Gi"},
    }


@pytest.mark.parametrize("provider", ["existing", "eks"])
def test_device_plugin_whole_gpu_pods_name_a_runtime_class_only_on_kind(provider):
    """Only nvkind leaves nvidia out of containerd's default runtime (components/podspec.py gpu_runtime_class);
    the EKS NVIDIA AMI makes it the default, and an existing cluster's runtime is its own."""
    cluster: dict[str, Any] = {"provider": "existing", "existing": {"context": "admin"}}
    cluster["nodePools"] = [{"name": "gpu", "gpus": 4}]
    if provider == "eks":
        cluster = {"provider": "eks", "name": "unit", "eks": {"region": "eu-west-1"}}
        cluster["nodePools"] = [{"name": "gpu", "count": 2, "gpus": 4, "instanceType": "g6.12xlarge"}]
    raw = merged(base_raw(), cluster=cluster, gpu={"mode": "device-plugin"}, workloads=[_work(gpu=1)])
    raw["kai"] = {"capacityCheck": "off"}
    assert "runtimeClassName" not in _manifest(raw)["spec"]


def test_a_whole_gpu_pod_without_a_runtime_class_to_name_has_no_runtime_class_field():
    """The dict is what the policy pack and `kaistack diff` read (components/podspec.py): no field, not a null one."""
    raw = merged(base_raw(), gpu={"mode": "gpu-operator"}, workloads=[_work(gpu=1)])
    assert "runtimeClassName" not in _manifest(raw)["spec"]


@pytest.mark.parametrize("kind", ["Pod", "Deployment", "Job", "PyTorchJob"])
def test_a_workload_is_created_in_its_declared_namespace(mocks, kind):
    """Without metadata.namespace pulumi-kubernetes puts the object in its provider's default namespace."""
    run_program(mocks, _stack(_work(kind=kind, namespace="ml")))
    assert inputs(named(mocks.resources, "kaistack-workloads-w"))["metadata"]["namespace"] == "ml"


def test_declared_labels_are_on_the_object_and_its_pods(mocks):
    run_program(mocks, _stack(_work(kind="Deployment", labels={"app.kubernetes.io/part-of": "demo"})))
    deployment = inputs(named(mocks.resources, "kaistack-workloads-w"))
    assert deployment["metadata"]["labels"]["app.kubernetes.io/part-of"] == "demo"
    assert deployment["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/part-of"] == "demo"


def test_a_deployment_selects_its_own_pods_by_a_label_of_their_template(mocks):
    """apps/v1 refuses a Deployment whose selector is empty or does not match its template's labels (Kubernetes
    pkg/apis/apps/validation ValidateDeploymentSpec), which a schema check does not see."""
    run_program(mocks, _stack(_work(kind="Deployment"), _work("other", kind="Deployment")))
    for name in ("w", "other"):
        spec = inputs(named(mocks.resources, f"kaistack-workloads-{name}"))["spec"]
        selector = spec["selector"]["matchLabels"]
        assert selector
        assert selector.items() <= spec["template"]["metadata"]["labels"].items()
    selectors = [inputs(named(mocks.resources, f"kaistack-workloads-{n}"))["spec"]["selector"] for n in ("w", "other")]
    assert selectors[0] != selectors[1]


@pytest.mark.parametrize("kind", ["Pod", "Deployment", "Job"])
def test_a_workloads_container_is_named_main(mocks, kind):
    """README's `kaistack verify` example reads a failing workload's logs with `kubectl logs ... -c main`."""
    run_program(mocks, _stack(_work(kind=kind)))
    spec = inputs(named(mocks.resources, "kaistack-workloads-w"))["spec"]
    pod = spec if kind == "Pod" else spec["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["main"]


def test_a_container_writes_out_only_the_fields_the_workload_declares(mocks):
    """No empty command, args, env, ports or nodeSelector: the dict is what the policy pack and diff read."""
    run_program(mocks, _stack(_work(kind="Deployment")))
    pod = inputs(named(mocks.resources, "kaistack-workloads-w"))["spec"]["template"]["spec"]
    assert set(pod["containers"][0]) == {"name", "image", "resources"}
    assert "nodeSelector" not in pod


def test_a_pytorchjob_without_a_master_has_no_master_replica_spec(mocks):
    """The training operator's webhook refuses a Master spec whose replicas are not 1
    (kubeflow/trainer@v1.8.1:pkg/webhooks/pytorch/pytorchjob_webhook.go:140-143)."""
    run_program(mocks, _stack(_work(kind="PyTorchJob", pytorch={"master": 0, "workers": 2})))
    replicas = inputs(named(mocks.resources, "kaistack-workloads-w"))["spec"]["pytorchReplicaSpecs"]
    assert list(replicas) == ["Worker"]


def _topology_stack(*workloads: dict[str, Any]) -> dict[str, Any]:
    raw = _stack(*workloads)
    raw["cluster"]["nodePools"] = [
        {"name": "a", "count": 2, "gpus": 4, "cpu": "16", "memory": "64Gi", "labels": {ZONE: "z1", RACK: "r1"}},
    ]
    raw["cluster"]["topology"] = {"name": "dc", "levels": [ZONE, RACK]}
    raw["kai"] = {"capacityCheck": "off"}
    return raw


def test_a_tenant_gangs_pytorchjob_leaves_its_constraint_to_the_host_podgroup(mocks):
    """Inside the vCluster the job is no pod's top owner on the host (its pods sync as bare pods): the constraint
    is the PodGroup's (tests/platform/test_topology_render.py), not an annotation of the virtual job."""
    run_program(mocks, _topology_stack(_work("tddp", "PyTorchJob", tenant="t1", topology={"required": RACK})))
    [group] = of_type(mocks.resources, PODGROUP)
    assert kube_object(group)["spec"]["topologyConstraint"]["requiredTopologyLevel"] == RACK
    assert "annotations" not in kube_object(named(mocks.resources, "kaistack-workloads-tddp"))["metadata"]


# --- workloads: what the objects belong to and wait for ----------------------------------------------------


def test_a_tenant_workload_in_a_namespace_named_like_a_tenants_host_namespace_gets_it_inside_the_vcluster(mocks):
    """`vcluster-t1` is a host namespace the Tenant creates; inside t1's vCluster it does not exist, so the
    workload's namespace is created there, through the tenant's provider."""
    run_program(mocks, _stack(_work(kind="Job", tenant="t1", namespace="vcluster-t1")))
    namespace = named(mocks.resources, "kaistack-workloads-t1-ns-vcluster-t1")
    assert namespace.provider.startswith(named(mocks.resources, "kaistack-t1-provider").urn + "::")
    assert namespace.urn in named(mocks.resources, "kaistack-workloads-w").dependencies
    assert (
        named(mocks.resources, "kaistack-t1-namespace").urn
        not in named(mocks.resources, "kaistack-workloads-w").dependencies
    )


def test_every_object_of_the_workloads_component_is_its_child(mocks):
    """A resource's URN names its parent chain: an object outside the component would be another object. On the
    host and in a tenant alike: workloads, their namespaces, a tenant gang's PodGroup, the training operators."""
    raw = _stack(_work("h", kind="Deployment", namespace="ml"), _work("t", "PyTorchJob", tenant="t1", namespace="ml"))
    raw["cluster"]["trainingOperator"] = True
    run_program(mocks, raw)
    [component] = of_type(mocks.resources, "kaistack:index:Workloads")
    children = [r for r in mocks.resources if r.name.startswith("kaistack-workloads-")]
    assert {r.name for r in children} >= {
        "kaistack-workloads-h",
        "kaistack-workloads-t",
        "kaistack-workloads-ns-ml",
        "kaistack-workloads-t1-ns-ml",
        "kaistack-workloads-t-podgroup",
        "kaistack-workloads-training-operator",
        "kaistack-workloads-t1-training-operator",
    }
    assert {r.name: r.parent for r in children} == {r.name: component.urn for r in children}


def test_a_workloads_namespace_is_created_after_kais_webhooks_answer_like_the_workload(mocks):
    run_program(mocks, _stack(_work(kind="Deployment", namespace="ml"), _work("b", tenant="t1", namespace="ml")))
    ready = named(mocks.resources, "kaistack-kai-ready")
    assert ready.urn in named(mocks.resources, "kaistack-workloads-ns-ml").dependencies
    assert ready.urn in named(mocks.resources, "kaistack-workloads-t1-ns-ml").dependencies


def test_a_workload_waits_for_its_own_queue_and_no_other(mocks):
    raw = _stack(_work(kind="Deployment", queue="second"), queues=[{"name": "team"}, {"name": "second"}])
    run_program(mocks, raw)
    dependencies = named(mocks.resources, "kaistack-workloads-w").dependencies
    assert named(mocks.resources, "kaistack-queues-second").urn in dependencies
    assert named(mocks.resources, "kaistack-queues-team").urn not in dependencies


def test_only_a_pytorchjob_waits_for_the_training_operator(mocks):
    """The operator brings the PyTorchJob CRD; other kinds need nothing of it."""
    raw = _stack(_work("job", kind="PyTorchJob"), _work("web", kind="Deployment"))
    raw["cluster"]["trainingOperator"] = True
    run_program(mocks, raw)
    operator = named(mocks.resources, "kaistack-workloads-training-operator")
    assert operator.urn in named(mocks.resources, "kaistack-workloads-job").dependencies
    assert operator.urn not in named(mocks.resources, "kaistack-workloads-web").dependencies


def test_a_tenant_gangs_podgroup_is_created_after_its_queue(mocks):
    """KAI leaves a PodGroup of a missing queue unscheduled (the workload itself waits for its queue too)."""
    raw = _stack(_work("tddp", "PyTorchJob", tenant="t1"))
    run_program(mocks, raw)
    [group] = of_type(mocks.resources, PODGROUP)
    assert named(mocks.resources, "kaistack-queues-team").urn in group.dependencies


def test_a_tenant_gangs_podgroup_is_created_after_the_tenants_host_namespace(mocks):
    """The PodGroup lives in the tenant's host namespace, which the Tenant creates."""
    run_program(mocks, _stack(_work("tddp", "PyTorchJob", tenant="t1")))
    [group] = of_type(mocks.resources, PODGROUP)
    assert named(mocks.resources, "kaistack-t1-namespace").urn in group.dependencies


def test_a_workload_in_a_namespace_the_cluster_has_creates_no_namespace(mocks):
    """`default` exists in every cluster and vCluster; a Namespace object of that name would fail to create
    (AlreadyExists) and delete the namespace with the stack."""
    run_program(mocks, _stack(_work("host"), _work("virtual", tenant="t1")))
    names = [inputs(r)["metadata"]["name"] for r in of_type(mocks.resources, "kubernetes:core/v1:Namespace")]
    assert "default" not in names


def test_a_tenants_training_operator_is_installed_after_kais_webhooks_answer(mocks):
    """Its pod is KAI's to schedule (the transform sets schedulerName and the tenant's queue)."""
    raw = _stack()
    raw["cluster"]["trainingOperator"] = True
    run_program(mocks, raw)
    ready = named(mocks.resources, "kaistack-kai-ready")
    assert ready.urn in named(mocks.resources, "kaistack-workloads-t1-training-operator").dependencies


def test_a_tenants_training_operator_runs_in_the_queue_the_capacity_check_counts_it_in(mocks, monkeypatch):
    """README "PyTorchJob": the tenant's first queue; `kaistack check` counts the operator's pod there
    (kaistack.capacity.operator_pods). The transform itself is tested in test_platform_workloads.py."""
    given: list[tuple[str, str]] = []
    real = workloads_component.kai_scheduled_operator

    def recording(queue_label_key: str, queue: str) -> pulumi.ResourceTransform:
        given.append((queue_label_key, queue))
        return real(queue_label_key, queue)

    monkeypatch.setattr(workloads_component, "kai_scheduled_operator", recording)
    raw = merged(base_raw(), queues=[{"name": "team"}, {"name": "second"}])
    raw["tenants"] = [{"name": "t1", "queues": ["team", "second"]}]
    raw["cluster"]["trainingOperator"] = True
    raw["kai"] = {"queueLabelKey": "example.com/queue"}
    run_program(mocks, raw)
    config = parse_config(raw)
    [operator] = training_operators(config)
    assert given == [("example.com/queue", config.queue_of(operator))]


@pytest.mark.parametrize(
    ("type_", "metadata"),
    [("kubernetes:core/v1:Service", {}), ("kubernetes:apps/v1:Deployment", {"name": "web", "namespace": "kubeflow"})],
)
def test_the_operator_transform_leaves_any_other_object_to_the_engine(type_, metadata):
    """A transform returns None to leave a resource as it is (pulumi ResourceTransform); a result would replace
    the resource's properties."""
    transform = workloads_component.kai_scheduled_operator("kai.scheduler/queue", "team")
    props = {"metadata": metadata, "spec": {"template": {"spec": {"containers": []}}}}
    args = pulumi.ResourceTransformArgs(True, type_, "x", props, pulumi.ResourceOptions())
    assert transform(args) is None


@pytest.mark.parametrize("kind", ["Pod", "Deployment", "Job", "PyTorchJob"])
def test_the_manifest_names_the_type_the_engine_registers(mocks, kind):
    """`manifest` is the full object (the update-hazard check compares two of them); its apiVersion and kind are
    those of the resource the program registers, whose type token is kubernetes:<group/version>:<kind>."""
    raw = _stack(_work(kind=kind))
    run_program(mocks, raw)
    body = _manifest(raw)
    group_version = "core/v1" if body["apiVersion"] == "v1" else body["apiVersion"]
    assert named(mocks.resources, "kaistack-workloads-w").type == f"kubernetes:{group_version}:{body['kind']}"
