"""Every workload kind, on the host and inside a tenant's vCluster, through __main__.py."""

from __future__ import annotations

import copy
from pathlib import Path

import pulumi
import pytest
import yaml
from platform_testlib import PYTORCHJOB, base_raw, inputs, merged, named, of_type, run_program

from components.workloads import kai_scheduled_operator
from kaistack.declaration import training_operator

TRAINING_OPERATOR_KUSTOMIZATION = training_operator.KUSTOMIZATION
# kubeflow/training-operator@v1.8.1:manifests/base/deployment.yaml (commit 0f8735fa).
OPERATOR_DEPLOYMENT = yaml.safe_load(
    (Path(__file__).parents[1] / "data/manifests/training-operator-v1.8.1-deployment.yaml").read_text()
)


def with_workloads(*workloads: dict, **changes) -> dict:
    raw = merged(base_raw(), workloads=list(workloads), **changes)
    raw.setdefault("tenants", [{"name": "t1", "queues": ["team"]}])
    return raw


def workload(name: str = "w", kind: str = "Pod", **fields) -> dict:
    return {"name": name, "kind": kind, "queue": "team", "image": "busybox:1.37.0", **fields}


def test_job_runs_replicas_in_parallel_to_completion(mocks):
    """parallelism = replicas, completions default to replicas, restartPolicy Never."""
    run_program(mocks, with_workloads(workload(kind="Job", replicas=3)))
    job = inputs(named(mocks.resources, "kaistack-workloads-w"))
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    assert (job["spec"]["parallelism"], job["spec"]["completions"]) == (3, 3)
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert job["spec"]["template"]["spec"]["schedulerName"] == "kai-scheduler"


def test_job_is_not_awaited_by_pulumi(mocks):
    """pulumi-kubernetes waits 10 minutes for a Job to complete (provider/pkg/await/job.go DefaultJobTimeoutMins);
    a longer training run would fail every `pulumi up` until it ends. A `pulumi.com/waitFor` condition replaces that
    wait (provider/pkg/await/await.go: the kind's awaiter runs only without one); `pulumi.com/skipAwait` would also
    skip the wait on delete for a Job (metadata/overrides.go allowsSkipAwaitWithDelete), and a replaced Job's
    successor would then be created under a name still taken."""
    run_program(mocks, with_workloads(workload(kind="Job", replicas=2), workload("d", "Deployment")))
    assert inputs(named(mocks.resources, "kaistack-workloads-w"))["metadata"]["annotations"] == {
        "pulumi.com/waitFor": "jsonpath={.metadata.uid}"
    }
    assert "annotations" not in inputs(named(mocks.resources, "kaistack-workloads-d"))["metadata"]


def test_pytorchjob_is_a_gang_of_master_and_workers(mocks):
    """kubeflow.org/v1: Master + Worker templates, container `pytorch`, minAvailable = pod count."""
    run_program(mocks, with_workloads(workload(kind="PyTorchJob", gpu=1, pytorch={"workers": 3})))
    job = named(mocks.resources, "kaistack-workloads-w")
    assert job.type == PYTORCHJOB
    spec = inputs(job)["spec"]
    assert spec["runPolicy"] == {"schedulingPolicy": {"minAvailable": 4}}
    assert {role: replica["replicas"] for role, replica in spec["pytorchReplicaSpecs"].items()} == {
        "Master": 1,
        "Worker": 3,
    }
    for replica in spec["pytorchReplicaSpecs"].values():
        pod = replica["template"]["spec"]
        assert replica["restartPolicy"] == "OnFailure"
        assert pod["schedulerName"] == "kai-scheduler"
        assert pod["containers"][0]["name"] == "pytorch"
        assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
        assert replica["template"]["metadata"]["labels"]["kai.scheduler/queue"] == "team"


def test_a_pytorchjob_whose_pod_templates_change_is_replaced_the_old_one_first(mocks):
    """The training operator never recreates a running replica's pod for a new template
    (kubeflow/training-operator@v1.8.1 pkg/controller.v1/common/pod.go:312-375: it creates missing indexes and
    deletes out-of-range ones), so an in-place update would leave the old image running. The provider names each
    changed field by its path (`spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].image`,
    pulumi/pulumi-kubernetes@v4.32.0 provider/pkg/provider/provider.go:3359-3374), which the engine matches against
    replaceOnChanges with `*` for any key (pulumi/pulumi@v3.259.0 sdk/go/common/resource/properties_path.go:310-340,
    pkg/resource/deploy/step_generator.go:3122-3160); same name, so delete first."""
    run_program(mocks, with_workloads(workload(kind="PyTorchJob", pytorch={"workers": 1}), workload(name="d")))
    job = named(mocks.resources, "kaistack-workloads-w")
    assert job.replace_on_changes == ("spec.pytorchReplicaSpecs.*.template",)
    assert job.delete_before_replace is True
    assert set(inputs(job)["spec"]["pytorchReplicaSpecs"]) == {"Master", "Worker"}  # the path's `*`
    deployment = named(mocks.resources, "kaistack-workloads-d")
    assert (deployment.replace_on_changes, deployment.delete_before_replace) == ((), False)


def test_pytorchjob_min_available_can_be_smaller_than_the_job(mocks):
    """An elastic gang: the declared minAvailable wins."""
    run_program(mocks, with_workloads(workload(kind="PyTorchJob", pytorch={"workers": 4, "minAvailable": 2})))
    spec = inputs(named(mocks.resources, "kaistack-workloads-w"))["spec"]
    assert spec["runPolicy"]["schedulingPolicy"]["minAvailable"] == 2


def test_pytorchjob_waits_for_the_training_operator_when_it_is_installed(mocks):
    """cluster.trainingOperator: the pinned standalone kustomization, before the job."""
    raw = with_workloads(workload(kind="PyTorchJob"))
    raw["cluster"]["trainingOperator"] = True
    run_program(mocks, raw)
    operator = named(mocks.resources, "kaistack-workloads-training-operator")
    assert inputs(operator)["directory"] == TRAINING_OPERATOR_KUSTOMIZATION
    assert operator.urn in named(mocks.resources, "kaistack-workloads-w").dependencies


def test_training_operator_in_a_tenant_is_installed_with_the_kai_transform(mocks):
    """Inside a tenant the operator's pod reaches the host, whose admission policy admits only KAI pods of
    the tenant's queues (tests/guardrails/test_policy_admission.py has both pods); on the host it needs none."""
    raw = with_workloads(workload(kind="PyTorchJob", tenant="t1"), workload(name="h", kind="PyTorchJob"))
    raw["cluster"]["trainingOperator"] = True
    run_program(mocks, raw)
    assert named(mocks.resources, "kaistack-workloads-t1-training-operator").transforms == 1
    assert named(mocks.resources, "kaistack-workloads-training-operator").transforms == 0


def test_training_operator_is_installed_in_the_host_and_every_tenant_without_a_pytorchjob(mocks):
    """The operator brings the PyTorchJob CRD (kubeflow/training-operator@v1.8.1 manifests/base/kustomization.yaml
    `- ./crds`); installed only where a PyTorchJob is declared, removing the last one would delete the CRD and
    every PyTorchJob a team made by hand. So it follows the option, not the declared jobs."""
    raw = with_workloads(workload(kind="Deployment"))
    raw["tenants"] = [{"name": "t1", "queues": ["team"]}, {"name": "t2", "queues": ["team"]}]
    raw["cluster"]["trainingOperator"] = True
    run_program(mocks, raw)
    directories = sorted(r.name for r in mocks.resources if r.type == "kubernetes:kustomize/v2:Directory")
    assert directories == [
        "kaistack-workloads-t1-training-operator",
        "kaistack-workloads-t2-training-operator",
        "kaistack-workloads-training-operator",
    ]
    assert (
        named(mocks.resources, "kaistack-workloads-t2-training-operator").provider
        == named(mocks.resources, "kaistack-t2-provider").urn + "::" + "kaistack-t2-provider-id"
    )


def _transformed(props: dict, type_: str = "kubernetes:apps/v1:Deployment") -> dict | None:
    transform = kai_scheduled_operator("kai.scheduler/queue", "team")
    result = transform(pulumi.ResourceTransformArgs(True, type_, "x", props, pulumi.ResourceOptions()))
    return None if result is None else result.props


def _upstream_deployment() -> dict:
    deployment = copy.deepcopy(OPERATOR_DEPLOYMENT)
    deployment["metadata"]["namespace"] = "kubeflow"  # manifests/overlays/standalone/kustomization.yaml
    return deployment


def test_kai_transform_schedules_the_operator_pods_in_the_tenant_queue():
    props = _transformed(_upstream_deployment())
    assert props is not None
    template = props["spec"]["template"]
    assert template["spec"]["schedulerName"] == "kai-scheduler"
    assert template["metadata"]["labels"] == {
        "control-plane": "kubeflow-training-operator",
        "kai.scheduler/queue": "team",
    }


def test_kai_transform_changes_nothing_else_of_the_operator():
    upstream = _upstream_deployment()
    props = _transformed(copy.deepcopy(upstream))
    assert props is not None
    del props["spec"]["template"]["spec"]["schedulerName"]
    del props["spec"]["template"]["metadata"]["labels"]["kai.scheduler/queue"]
    assert props == upstream


def test_kai_transform_reads_props_without_kind():
    """The engine hands a Deployment's fields; only the type says what it is."""
    props = _upstream_deployment()
    del props["apiVersion"], props["kind"]
    assert _transformed(props)["spec"]["template"]["spec"]["schedulerName"] == "kai-scheduler"


@pytest.mark.parametrize(
    ("type_", "change"),
    [
        ("kubernetes:core/v1:Service", {}),
        ("kubernetes:apps/v1:Deployment", {"name": "some-other-deployment"}),
        ("kubernetes:apps/v1:Deployment", {"namespace": "elsewhere"}),
    ],
)
def test_kai_transform_leaves_other_objects_alone(type_, change):
    props = _upstream_deployment()
    props["metadata"].update(change)
    assert _transformed(props, type_) is None


def test_training_operator_url_is_a_kustomize_remote_at_the_pinned_ref():
    """kustomize's repospec splits repo and path at `//` and reads `?ref=` (kustomize api v0.21.1
    internal/git/repospec.go, its repospec_test.go case `...//examples/multibases/dev/?ref=v1.0.6`);
    `/tree/<ref>/` is a GitHub web page and would be read as a path (pulumi/pulumi-kubernetes#3358).
    The overlay exists at the tag: kubeflow/training-operator@v1.8.1:manifests/overlays/standalone."""
    assert TRAINING_OPERATOR_KUSTOMIZATION == (
        "https://github.com/kubeflow/training-operator//manifests/overlays/standalone?ref=v1.8.1"
    )
    assert "/tree/" not in TRAINING_OPERATOR_KUSTOMIZATION


def test_pytorchjob_without_the_operator_option_assumes_the_crd_exists(mocks):
    """No kustomization unless asked for (OpenShift AI and others ship the operator)."""
    run_program(mocks, with_workloads(workload(kind="PyTorchJob")))
    assert not [r for r in mocks.resources if r.type.startswith("kubernetes:kustomize")]
    assert len(of_type(mocks.resources, PYTORCHJOB)) == 1


def test_tenant_pytorchjob_gets_the_training_operator_inside_the_vcluster(mocks):
    """The operator is installed through the tenant's provider, where its PyTorchJobs live."""
    raw = with_workloads(workload(kind="PyTorchJob", tenant="t1"))
    raw["cluster"]["trainingOperator"] = True
    run_program(mocks, raw)
    operator = named(mocks.resources, "kaistack-workloads-t1-training-operator")
    assert operator.provider.startswith(named(mocks.resources, "kaistack-t1-provider").urn + "::")


def test_gpu_memory_request_is_an_annotation_with_device_count(mocks):
    """gpu-memory in MiB and gpu-fraction-num-devices on the pod template."""
    run_program(mocks, with_workloads(workload(kind="Deployment", gpuMemoryMiB=2000, gpuDevices=2)))
    template = inputs(named(mocks.resources, "kaistack-workloads-w"))["spec"]["template"]
    assert template["metadata"]["annotations"] == {"gpu-memory": "2000", "gpu-fraction-num-devices": "2"}
    assert "nvidia.com/gpu" not in template["spec"]["containers"][0]["resources"]["limits"]


def test_priority_class_is_set_in_the_spec_and_as_kais_label(mocks):
    """spec.priorityClassName plus the priorityClassName label on object and template."""
    run_program(mocks, with_workloads(workload(kind="Deployment", priorityClass="build")))
    deployment = inputs(named(mocks.resources, "kaistack-workloads-w"))
    template = deployment["spec"]["template"]
    assert template["spec"]["priorityClassName"] == "build"
    assert template["metadata"]["labels"]["priorityClassName"] == "build"
    assert deployment["metadata"]["labels"]["priorityClassName"] == "build"


@pytest.mark.parametrize(("preemptible", "label"), [(True, "preemptible"), (False, "non-preemptible")])
def test_preemptibility_is_a_kai_label(mocks, preemptible, label):
    """kai.scheduler/preemptibility on the object and its pods."""
    run_program(mocks, with_workloads(workload(kind="Job", preemptible=preemptible)))
    job = inputs(named(mocks.resources, "kaistack-workloads-w"))
    assert job["metadata"]["labels"]["kai.scheduler/preemptibility"] == label
    assert job["spec"]["template"]["metadata"]["labels"]["kai.scheduler/preemptibility"] == label


def test_container_fields_are_written_out(mocks):
    """command, args, env, ports, requests and explicit limits, node selector."""
    fields = {
        "command": ["python"],
        "args": ["-m", "http.server"],
        "env": {"MODE": "test"},
        "ports": [8000],
        "cpu": "500m",
        "memory": "1Gi",
        "cpuLimit": "2",
        "memoryLimit": "2Gi",
        "nodeSelector": {"kaistack.io/node-pool": "gpu"},
    }
    run_program(mocks, with_workloads(workload(**fields)))
    spec = inputs(named(mocks.resources, "kaistack-workloads-w"))["spec"]
    container = spec["containers"][0]
    assert (container["command"], container["args"]) == (["python"], ["-m", "http.server"])
    assert container["env"] == [{"name": "MODE", "value": "test"}]
    assert container["ports"] == [{"containerPort": 8000, "protocol": "TCP"}]
    assert container["resources"] == {
        "requests": {"cpu": "500m", "memory": "1Gi"},
        "limits": {"cpu": "2", "memory": "2Gi"},
    }
    assert spec["nodeSelector"] == {"kaistack.io/node-pool": "gpu"}


def test_secret_env_references_the_secret_and_never_holds_a_value(mocks):
    """The token stays in the cluster's Secret; the pod spec names it (valueFrom.secretKeyRef)."""
    run_program(mocks, with_workloads(workload(secretEnv={"HF_TOKEN": {"secret": "hf", "key": "token"}})))
    container = inputs(named(mocks.resources, "kaistack-workloads-w"))["spec"]["containers"][0]
    assert container["env"] == [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}]


def test_gpu_toleration_can_be_turned_off(mocks):
    """tolerateGpuTaint false leaves the pod without the nvidia.com/gpu toleration."""
    run_program(mocks, with_workloads(workload(gpu=1, tolerateGpuTaint=False)))
    assert "tolerations" not in inputs(named(mocks.resources, "kaistack-workloads-w"))["spec"]


def test_unlabelled_queue_defaults_to_kais_default_queue(mocks):
    """A workload without a queue is labelled with KAI's default-queue explicitly."""
    run_program(mocks, with_workloads({"name": "w", "kind": "Pod", "image": "x"}))
    labels = inputs(named(mocks.resources, "kaistack-workloads-w"))["metadata"]["labels"]
    assert labels["kai.scheduler/queue"] == "default-queue"


def test_tenant_workload_namespace_is_created_inside_the_vcluster(mocks):
    """The namespace goes through the tenant's provider; the workload is labelled with the tenant."""
    run_program(mocks, with_workloads(workload(kind="Job", tenant="t1", namespace="ml")))
    tenant = named(mocks.resources, "kaistack-t1-provider").urn
    namespace = named(mocks.resources, "kaistack-workloads-t1-ns-ml")
    assert inputs(namespace)["metadata"] == {"name": "ml"}
    assert namespace.provider.startswith(tenant + "::")
    job = named(mocks.resources, "kaistack-workloads-w")
    assert namespace.urn in job.dependencies
    assert inputs(job)["metadata"]["labels"]["kaistack.io/tenant"] == "t1"
    assert inputs(job)["spec"]["template"]["metadata"]["labels"]["kaistack.io/tenant"] == "t1"


def test_same_namespace_on_host_and_in_a_tenant_are_two_namespaces(mocks):
    """ns `ml` on the host and `ml` inside t1 are distinct resources."""
    raw = with_workloads(workload("a", namespace="ml"), workload("b", namespace="ml", tenant="t1"))
    run_program(mocks, raw)
    assert named(mocks.resources, "kaistack-workloads-ns-ml").provider != (
        named(mocks.resources, "kaistack-workloads-t1-ns-ml").provider
    )


def test_a_host_pod_in_a_tenants_host_namespace_uses_the_tenants_namespace_object(mocks):
    """The Tenant creates its host namespace; a second Namespace object of that name would fail with AlreadyExists."""
    raw = with_workloads(workload(namespace="vcluster-t1"))
    run_program(mocks, raw)
    namespaces = [r for r in of_type(mocks.resources, "kubernetes:core/v1:Namespace")]
    assert [r.name for r in namespaces if r.inputs["metadata"]["name"] == "vcluster-t1"] == ["kaistack-t1-namespace"]
    assert (
        named(mocks.resources, "kaistack-t1-namespace").urn
        in named(mocks.resources, "kaistack-workloads-w").dependencies
    )
