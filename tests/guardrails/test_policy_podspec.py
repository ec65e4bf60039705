"""Finding pod templates in every workload kind, through engine proxies."""

from __future__ import annotations

import pytest
from policy_builders import TYPES, UNKNOWN, container, deployment, engine, pod, pod_template, res

from kaistack.guardrails.podspec import (
    Res,
    pod_templates,
    split_type,
    type_token,
    workload,
)


def _template_owner(kind: str) -> dict:
    t = pod_template()
    spec = {
        "Deployment": {"template": t},
        "StatefulSet": {"template": t},
        "ReplicaSet": {"template": t},
        "DaemonSet": {"template": t},
        "Job": {"template": t},
        "CronJob": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": t}}},
        "PyTorchJob": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": t}, "Worker": {"template": t}}},
        "JobSet": {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": t}}}]},
    }[kind]
    return {"metadata": {"name": "w"}, "spec": spec}


@pytest.mark.parametrize(
    ("kind", "paths"),
    [
        ("Deployment", ["spec.template"]),
        ("StatefulSet", ["spec.template"]),
        ("ReplicaSet", ["spec.template"]),
        ("DaemonSet", ["spec.template"]),
        ("Job", ["spec.template"]),
        ("CronJob", ["spec.jobTemplate.spec.template"]),
        ("PyTorchJob", ["spec.pytorchReplicaSpecs.Master.template", "spec.pytorchReplicaSpecs.Worker.template"]),
        ("JobSet", ["spec.replicatedJobs[0].template.spec.template"]),
    ],
)
def test_pod_templates_are_found_in_every_workload_kind(kind: str, paths: list[str]) -> None:
    """Known kinds by their documented path; any other kind by searching for {spec: {containers}}."""
    templates = list(pod_templates(kind, engine(_template_owner(kind))))
    assert [t.path for t in templates] == paths
    assert all(t.spec["schedulerName"] == "kai-scheduler" for t in templates)


def test_a_pod_is_its_own_template() -> None:
    wl = workload(res("Pod", pod(name="solo", namespace="ml")))
    assert wl is not None
    assert (wl.kind, wl.name, wl.namespace, [t.path for t in wl.templates]) == ("Pod", "solo", "ml", [""])
    assert wl.templates[0].at("spec.schedulerName") == "spec.schedulerName"


def test_a_workload_without_namespace_is_in_default() -> None:
    props = deployment()
    del props["metadata"]["namespace"]
    wl = workload(res("Deployment", props))
    assert wl is not None
    assert wl.namespace == "default"


@pytest.mark.parametrize(
    ("resource_type", "props"),
    [
        ("kubernetes:core/v1:ConfigMap", {"metadata": {"name": "c"}, "data": {"x": "y"}}),
        (TYPES["Queue"], {"metadata": {"name": "q"}, "spec": {}}),
        (TYPES["Release"], {"chart": "x", "values": {"template": {"spec": {"containers": [container()]}}}}),
        ("kaistack:index:Platform", {"nodePools": []}),
    ],
)
def test_resources_without_pods_are_not_workloads(resource_type: str, props: dict) -> None:
    assert workload(Res(resource_type, "r", engine(props))) is None


@pytest.mark.parametrize(
    ("token", "api_version", "kind"),
    [
        ("kubernetes:core/v1:Pod", "v1", "Pod"),
        ("kubernetes:apps/v1:Deployment", "apps/v1", "Deployment"),
        ("kubernetes:kubeflow.org/v1:PyTorchJob", "kubeflow.org/v1", "PyTorchJob"),
        ("kubernetes:scheduling.run.ai/v2:Queue", "scheduling.run.ai/v2", "Queue"),
    ],
)
def test_type_tokens_and_manifest_api_versions_convert_both_ways(token: str, api_version: str, kind: str) -> None:
    assert split_type(token) == (api_version, kind)
    assert type_token(api_version, kind) == token


def test_unknown_fields_of_unfamiliar_kinds_do_not_hide_their_templates() -> None:
    """At preview a custom resource's computed fields are unknown; the template search skips them."""
    props = _template_owner("JobSet")
    props["status"] = UNKNOWN
    props["spec"]["suspend"] = UNKNOWN
    templates = list(pod_templates("JobSet", engine(props)))
    assert [t.path for t in templates] == ["spec.replicatedJobs[0].template.spec.template"]


def test_a_trainer_v2_runtimes_pod_template_eight_keys_down_is_found() -> None:
    """kubeflow/trainer@v2.1.0 manifests/base/runtimes/torch_distributed.yaml: a (Cluster)TrainingRuntime keeps its
    pod template at spec.template.spec.replicatedJobs[i].template.spec.template (a JobSet template in a template)."""
    job = {"template": {"spec": {"template": pod_template()}}}
    props = {"spec": {"mlPolicy": {"numNodes": 1}, "template": {"spec": {"replicatedJobs": [{"name": "node", **job}]}}}}
    templates = list(pod_templates("TrainingRuntime", engine(props)))
    assert [t.path for t in templates] == ["spec.template.spec.replicatedJobs[0].template.spec.template"]


def test_the_template_search_of_a_custom_kind_stops_at_its_depth_bound() -> None:
    """Hostile nesting is not walked without end: a template 9 keys down is found, one 10 keys down is not."""
    props: dict = {"template": pod_template()}
    for i in range(9):
        props = {f"k{i}": props}
    assert list(pod_templates("Custom", engine(props))) == []
    assert [t.path for t in pod_templates("Custom", engine(props["k8"]))] == ["k7.k6.k5.k4.k3.k2.k1.k0.template"]


@pytest.mark.parametrize(
    "metadata", [UNKNOWN, {"labels": UNKNOWN}, {"annotations": UNKNOWN}], ids=["all", "labels", "annotations"]
)
def test_a_patchs_template_metadata_unknown_at_preview_is_no_template(metadata: object) -> None:
    """Reading it would raise, and the engine would then skip every policy on the stack, the stack-wide ones too."""
    token = "kubernetes:apps/v1:DeploymentPatch"
    props = engine({"metadata": {"name": "serve"}, "spec": {"template": {"metadata": metadata}}})
    assert workload(Res(type=token, name="serve", props=props, urn=f"urn:pulumi:dev::p::{token}::serve")) is None
