"""Custom kinds whose pods kaistack cannot see, policy engines' objects, and Kubeflow Trainer runtimes.

A review found five custom kinds that ask for GPUs in shapes that are no pod template (Argo Workflow, Tekton TaskRun,
KServe InferenceService, TrainJob, SparkApplication) and passed every rule: kai-scheduler-name now holds them to
naming KAI's scheduler somewhere. Kyverno policies, whose `spec.containers` are patterns, were linted as pods.
A Trainer runtime was asked for a queue label KAI reads from each TrainJob instead (KAI@v0.17.0
pkg/podgrouper/podgrouper/hub/hub.go:322-327: a TrainJob's groups are its JobSet's, skiptopowner.go).
"""

from __future__ import annotations

from typing import Any

import pytest
from policy_builders import FACTS, UNKNOWN, engine, pod_template

from kaistack.guardrails.facts import StackFacts
from kaistack.guardrails.podspec import Res
from kaistack.guardrails.rules import kai_queue_label, kai_scheduler_name
from kaistack.guardrails.settings import Settings

NO_FACTS = StackFacts()
GPU_LIMITS = {"limits": {"nvidia.com/gpu": 1}}


def _res(type_token: str, spec: dict[str, Any], **meta: Any) -> Res:
    props = {"metadata": {"name": "w", "namespace": "ml", **meta}, "spec": spec}
    return Res(type=type_token, name="w", props=props, urn=f"urn:pulumi:dev::kaistack::{type_token}::w")


ARGO = "kubernetes:argoproj.io/v1alpha1:Workflow"


def _argo(**spec: Any) -> Res:
    template = {"name": "main", "container": {"image": "cuda", "resources": GPU_LIMITS}}
    return _res(ARGO, {"entrypoint": "main", "templates": [template], **spec})


def test_an_argo_workflow_asking_for_gpus_without_kais_scheduler_is_flagged_at_the_request() -> None:
    [found] = kai_scheduler_name(_argo(), Settings(), NO_FACTS)
    assert found.startswith(
        "spec.templates[0].container.resources.limits.nvidia.com/gpu asks for GPUs, but kaistack cannot read this "
        "Workflow's pods (its controller builds them) and nothing in it names schedulerName: kai-scheduler"
    )


def test_an_argo_workflow_is_read_through_the_engines_props_as_the_pack_sees_them() -> None:
    """The Analyzer hands rules proxies (Mapping/Sequence, not dict/list) that raise on a value unknown at preview."""
    plain = _argo()
    props = {**plain.props, "spec": {**plain.props["spec"], "serviceAccountName": UNKNOWN}}
    proxied = Res(type=ARGO, name="w", props=engine(props), urn=plain.urn)
    [found] = kai_scheduler_name(proxied, Settings(), NO_FACTS)
    assert found.startswith("spec.templates[0].container.resources.limits.nvidia.com/gpu asks for GPUs")


def test_an_argo_workflow_that_names_kais_scheduler_passes() -> None:
    assert kai_scheduler_name(_argo(schedulerName="kai-scheduler"), Settings(), NO_FACTS) == []


def test_an_argo_workflow_naming_another_scheduler_is_flagged() -> None:
    assert kai_scheduler_name(_argo(schedulerName="volcano"), Settings(), NO_FACTS)


@pytest.mark.parametrize(
    ("type_token", "spec", "path"),
    [
        (
            "kubernetes:tekton.dev/v1:TaskRun",
            {"taskSpec": {"steps": [{"name": "s", "image": "cuda", "computeResources": GPU_LIMITS}]}},
            "spec.taskSpec.steps[0].computeResources.limits.nvidia.com/gpu",
        ),
        (
            "kubernetes:serving.kserve.io/v1beta1:InferenceService",
            {"predictor": {"containers": [{"name": "m", "image": "llm", "resources": GPU_LIMITS}]}},
            "spec.predictor.containers[0].resources.limits.nvidia.com/gpu",
        ),
        (
            "kubernetes:sparkoperator.k8s.io/v1beta2:SparkApplication",
            {"executor": {"instances": 4, "gpu": {"name": "nvidia.com/gpu", "quantity": 1}}},
            "spec.executor.gpu.name",
        ),
    ],
    ids=["tekton-taskrun", "kserve", "spark"],
)
def test_other_controllers_gpu_requests_are_found_where_they_are_written(
    type_token: str, spec: dict[str, Any], path: str
) -> None:
    [found] = kai_scheduler_name(_res(type_token, spec), Settings(), NO_FACTS)
    assert found.startswith(f"{path} asks for GPUs")


def test_a_share_annotation_in_an_unread_shape_is_a_gpu_request() -> None:
    template = {"name": "main", "metadata": {"annotations": {"gpu-fraction": "0.5"}}, "container": {"image": "x"}}
    [found] = kai_scheduler_name(_res(ARGO, {"templates": [template]}), Settings(), NO_FACTS)
    assert found.startswith("spec.templates[0].metadata.annotations.gpu-fraction asks for GPUs")


def test_a_gpu_count_of_zero_and_a_gpu_label_are_no_request() -> None:
    spec = {
        "templates": [{"container": {"resources": {"limits": {"nvidia.com/gpu": 0}}}}],
        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
    }
    assert kai_scheduler_name(_res(ARGO, spec), Settings(), NO_FACTS) == []


def test_what_a_controller_reports_in_status_is_no_request() -> None:
    r = _res("kubernetes:example.com/v1:GpuReport", {})
    r.props["status"] = {"allocated": GPU_LIMITS}
    assert kai_scheduler_name(r, Settings(), NO_FACTS) == []


@pytest.mark.parametrize(
    "type_token",
    [
        "kubernetes:core/v1:Node",  # allocatable nvidia.com/gpu
        "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate",
        "kubernetes:helm.sh/v3:Release",  # chart values, judged where rendered
        "kubernetes:nvidia.com/v1:ClusterPolicy",
        "kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob",  # its pods come from its runtime's template
    ],
)
def test_kubernetes_own_kinds_platform_objects_and_trainjobs_are_not_held_to_it(type_token: str) -> None:
    assert kai_scheduler_name(_res(type_token, {"x": {"resources": GPU_LIMITS}}), Settings(), NO_FACTS) == []


def test_an_unread_shape_in_a_platform_namespace_is_exempt_unless_a_tenants() -> None:
    system = _argo()
    system.props["metadata"]["namespace"] = "kube-system"
    assert kai_scheduler_name(system, Settings(), NO_FACTS) == []
    system.props["metadata"]["labels"] = {"kaistack.io/tenant": "alpha"}
    assert kai_scheduler_name(system, Settings(), NO_FACTS)


def test_a_kyverno_policy_is_no_pod_to_schedule() -> None:
    """A mutate rule's patch and a validate pattern hold pod specs to apply or match, not pods."""
    rule = {
        "name": "kai",
        "mutate": {"patchStrategicMerge": {"spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "*"}]}}},
        "validate": {"pattern": {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "?*"}}}]}}},
    }
    policy = _res("kubernetes:kyverno.io/v1:ClusterPolicy", {"rules": [rule]})
    assert kai_scheduler_name(policy, Settings(), NO_FACTS) == []
    assert kai_queue_label(policy, Settings(), NO_FACTS) == []


RUNTIME = "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime"


def _runtime(pod_queue: str | None = None, **meta: Any) -> Res:
    job = {"name": "node", "template": {"spec": {"template": pod_template(queue=pod_queue)}}}
    return _res(RUNTIME, {"template": {"spec": {"replicatedJobs": [job]}}}, **meta)


def test_a_training_runtime_needs_no_queue_label_of_its_own() -> None:
    assert kai_queue_label(_runtime(), Settings(), FACTS) == []


def test_a_training_runtimes_own_queue_label_is_named_as_unread() -> None:
    """Trainer builds the JobSet's labels from the runtime's spec.template.metadata alone (kubeflow/trainer@067e5c66
    pkg/runtime/core/trainingruntime.go newRuntimeInfo: RuntimeInfo is given trainingRuntime.Spec.Template)."""
    [found] = kai_queue_label(_runtime(labels={"kai.scheduler/queue": "team-a"}), Settings(), FACTS)
    assert found.startswith(
        "kai.scheduler/queue is on the ClusterTrainingRuntime's own metadata.labels, which KAI's pod-grouper does not "
        "read: put it on each TrainJob's metadata.labels, or on the ClusterTrainingRuntime's "
        "spec.template.metadata.labels (the JobSet's)"
    )


def _runtime_with_jobset_label(queue: str) -> Res:
    runtime = _runtime()
    runtime.props["spec"]["template"]["metadata"] = {"labels": {"kai.scheduler/queue": queue}}
    return runtime


def test_a_queue_on_a_training_runtimes_jobset_template_is_checked() -> None:
    """The JobSet carries it (propagationLabels := jobSetTemplateSpec.Labels), and KAI reads the JobSet's labels
    before the pod's, once it skips the TrainJob (KAI@v0.17.0 hub.go:322-327, skiptopowner.go)."""
    [found] = kai_queue_label(_runtime_with_jobset_label("nosuch"), Settings(), FACTS)
    assert found.startswith("spec.template.metadata.labels kai.scheduler/queue: nosuch is not a declared leaf queue")


def test_a_declared_queue_on_a_training_runtimes_jobset_template_passes() -> None:
    assert kai_queue_label(_runtime_with_jobset_label("team-a"), Settings(), FACTS) == []


def test_a_queue_in_a_training_runtimes_pod_template_is_still_checked() -> None:
    [found] = kai_queue_label(_runtime(pod_queue="nosuch"), Settings(), FACTS)
    assert "kai.scheduler/queue: nosuch is not a declared leaf queue" in found
