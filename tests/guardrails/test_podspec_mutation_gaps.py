"""What a tenant's pod asks for, and where the rules find its template (mutation tests found these unasserted)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from policy_builders import FACTS, UNKNOWN, container, deployment, engine, pod, pod_template, release, res
from pulumi_policy.proxy import UnknownValueError

from kaistack.guardrails.facts import StackFacts
from kaistack.guardrails.helm_rules import vcluster_set_owner_false
from kaistack.guardrails.podspec import Res, builtin_kind, kind_of, patched_kind, split_type, workload
from kaistack.guardrails.rules import gpu_memory_utilization_within_fraction, kai_scheduler_name
from kaistack.guardrails.settings import Settings

NO_FACTS = StackFacts()


def _res(token: str, props: dict[str, Any]) -> Res:
    return Res(type=token, name="w", props=engine(props), urn=f"urn:pulumi:dev::kaistack::{token}::w")


# --- what makes a GPU pod --------------------------------------------------------------------------------------


@pytest.mark.parametrize("annotation", [{"gpu-fraction": "0.5"}, {"gpu-memory": "2000"}])
def test_a_share_annotation_alone_makes_a_pod_off_kai_a_gpu_pod(annotation: dict[str, str]) -> None:
    """No nvidia.com/gpu and no queue label: the share annotation is the only thing that asks KAI for a GPU."""
    props = pod(scheduler=None, queue=None, annotations=annotation, containers=[container()])
    found = kai_scheduler_name(res("Pod", props), Settings(), NO_FACTS)
    assert len(found) == 1
    assert "but the pod requests GPUs" in found[0]


@pytest.mark.parametrize("resource", ["nvidia.com/gpu.shared", "nvidia.com/mig-1g.10gb"])
def test_a_renamed_time_slice_or_a_mig_slice_alone_makes_a_pod_off_kai_a_gpu_pod(resource: str) -> None:
    """The device plugin's renamed time slices and MIG slices are GPUs a pod reaches; KAI counts MIG slices by
    their prefix (kai-scheduler/KAI-Scheduler@v0.17.0:pkg/common/constants/constants.go:12)."""
    c = container()
    c["resources"]["limits"] = {resource: "1"}
    found = kai_scheduler_name(res("Pod", pod(scheduler=None, queue=None, containers=[c])), Settings(), NO_FACTS)
    assert len(found) == 1
    assert "but the pod requests GPUs" in found[0]


def test_a_gpu_memory_share_with_thousands_of_leading_zeros_is_read_as_its_number() -> None:
    """KAI parses gpu-memory with strconv.ParseUint/ParseInt, which take any number of leading zeros
    (kai-scheduler/KAI-Scheduler@v0.17.0:pkg/binder/plugins/gpusharing/gpu-request/gpu_request_validator.go:68,
    pkg/scheduler/api/pod_info/pod_info.go:521); Python's int() refuses a string of more than 4,300 digits."""
    memory = "0" * 5000 + "2000"
    vllm = container(name="vllm", image="vllm/vllm-openai:latest", args=["--gpu-memory-utilization=0.5"])
    r = res("Deployment", deployment(annotations={"gpu-memory": memory}, containers=[vllm]))
    found = gpu_memory_utilization_within_fraction(r, Settings(), FACTS)
    assert len(found) == 1
    assert "MiB of a 11441 MiB GPU = 0.175" in found[0]


# --- where each kind keeps its pod template ---------------------------------------------------------------------


def _kubeflow(key: str, role: str) -> tuple[dict[str, Any], str]:
    return {"spec": {key: {role: {"replicas": 1, "template": pod_template()}}}}, f"spec.{key}.{role}.template"


_BUILT_IN = [
    ("kubernetes:core/v1:ReplicationController", {"spec": {"template": pod_template()}}, "spec.template"),
    ("kubernetes:core/v1:PodTemplate", {"template": pod_template()}, "template"),
    ("kubernetes:apps/v1:StatefulSet", {"spec": {"template": pod_template()}}, "spec.template"),
    ("kubernetes:apps/v1:ReplicaSet", {"spec": {"template": pod_template()}}, "spec.template"),
    ("kubernetes:apps/v1:DaemonSet", {"spec": {"template": pod_template()}}, "spec.template"),
    ("kubernetes:extensions/v1beta1:Deployment", {"spec": {"template": pod_template()}}, "spec.template"),
    ("kubernetes:extensions/v1beta1:ReplicaSet", {"spec": {"template": pod_template()}}, "spec.template"),
    ("kubernetes:extensions/v1beta1:DaemonSet", {"spec": {"template": pod_template()}}, "spec.template"),
    ("kubernetes:batch/v1:Job", {"spec": {"template": pod_template()}}, "spec.template"),
    (
        "kubernetes:batch/v1:CronJob",
        {"spec": {"jobTemplate": {"spec": {"template": pod_template()}}}},
        "spec.jobTemplate.spec.template",
    ),
    ("kubernetes:kubeflow.org/v1:TFJob", *_kubeflow("tfReplicaSpecs", "Worker")),
    ("kubernetes:kubeflow.org/v2beta1:MPIJob", *_kubeflow("mpiReplicaSpecs", "Launcher")),
    ("kubernetes:kubeflow.org/v1:XGBoostJob", *_kubeflow("xgbReplicaSpecs", "Master")),
    ("kubernetes:kubeflow.org/v1:PaddleJob", *_kubeflow("paddleReplicaSpecs", "Worker")),
    ("kubernetes:kubeflow.org/v1:JAXJob", *_kubeflow("jaxReplicaSpecs", "Worker")),
]


def _containers_unknown(props: dict[str, Any], path: str) -> dict[str, Any]:
    props = copy.deepcopy(props)
    node: Any = props
    for key in path.split("."):
        node = node[key]
    node["spec"]["containers"] = UNKNOWN
    return props


@pytest.mark.parametrize(("token", "props", "path"), _BUILT_IN, ids=[t.split(":", 1)[1] for t, _, _ in _BUILT_IN])
def test_a_built_in_kinds_template_is_found_while_its_containers_are_unknown(
    token: str, props: dict[str, Any], path: str
) -> None:
    """Each kind's template is read at its documented place, not searched for by its containers: at preview the
    containers may be unknown, and the rules must then see the template (and raise for the SDK), not pass."""
    wl = workload(_res(token, _containers_unknown(props, path)))
    assert wl is not None
    assert [t.path for t in wl.templates] == [path]


def test_a_deployment_whose_containers_are_unknown_is_left_to_the_sdk_not_passed() -> None:
    props = deployment(scheduler=None)
    props["spec"]["template"]["spec"]["containers"] = UNKNOWN
    with pytest.raises(UnknownValueError) as err:
        kai_scheduler_name(res("Deployment", props), Settings(), NO_FACTS)
    assert "containers" in err.value.message


def test_a_training_job_role_without_a_template_has_no_pods() -> None:
    props = {"spec": {"pytorchReplicaSpecs": {"Master": {"template": pod_template()}, "Worker": {"replicas": 2}}}}
    wl = workload(_res("kubernetes:kubeflow.org/v1:PyTorchJob", props))
    assert wl is not None
    assert [t.path for t in wl.templates] == ["spec.pytorchReplicaSpecs.Master.template"]


def test_a_custom_objects_own_spec_listing_containers_is_not_a_pod() -> None:
    """Only a {metadata, spec: {containers}} nested inside a custom object is a pod template; an object whose own
    spec lists containers (OpenKruise's SidecarSet injects them into other pods) is not itself a pod."""
    props = {"metadata": {"name": "w"}, "spec": {"selector": {}, "containers": [container(gpus=1)]}}
    assert workload(_res("kubernetes:apps.kruise.io/v1alpha1:SidecarSet", props)) is None


def test_a_custom_object_without_a_pod_template_is_not_a_workload() -> None:
    props = {"metadata": {"name": "w"}, "spec": {"secretName": "tls", "dnsNames": ["a.example"]}}
    assert workload(_res("kubernetes:cert-manager.io/v1:Certificate", props)) is None


def test_a_workload_without_a_metadata_name_takes_its_resource_name() -> None:
    """Pulumi auto-names an object whose metadata.name is unset after the resource."""
    props = deployment()
    del props["metadata"]["name"]
    wl = workload(res("Deployment", props, name="trainer"))
    assert wl is not None
    assert wl.describe() == "Deployment/trainer"


def test_a_helm_v3_chart_component_is_read_as_a_chart() -> None:
    r = Res(
        type="kubernetes:helm.sh/v3:Chart",
        name="team-a-vcluster",
        props=engine(release("team-a", "vcluster", {})),
        urn="urn:pulumi:dev::kaistack::kubernetes:helm.sh/v3:Chart::team-a-vcluster",
    )
    found = vcluster_set_owner_false(r, Settings(), NO_FACTS)
    assert len(found) == 1
    assert "setOwner is unset" in found[0]


# --- type tokens ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "token", ["kaistack:index:Platform", "acme:apps/v1:Deployment", "kubernetes:apps/v1", "kubernetes"]
)
def test_a_token_of_another_package_or_malformed_has_no_kubernetes_kind(token: str) -> None:
    assert split_type(token) is None
    assert builtin_kind(token) is None
    assert patched_kind(token + "Patch") is None


def test_the_kind_of_another_packages_token_is_its_last_segment() -> None:
    assert kind_of("kaistack:index:Platform") == "Platform"
