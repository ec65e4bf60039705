"""Everything the program declares is valid for what receives it.

Kubernetes objects: strict Kubernetes 1.33 and 1.35 OpenAPI (kubernetes-validate). Queues: KAI's Queue CRD
schema. PyTorchJobs: the shape the training operator needs, pod templates as v1 PodTemplates.
vCluster values: the chart's values.schema.json. Every other Helm release: only keys the pinned chart's
values.yaml has.
"""

from __future__ import annotations

import jsonschema
import kubernetes_validate
import pytest
from platform_testlib import (
    BUILTIN,
    PYTORCHJOB,
    QUEUE,
    RELEASE,
    base_raw,
    chart_values,
    dev_raw,
    inputs,
    kube_object,
    of_type,
    run_program,
    unknown_value_keys,
    validate_builtin,
    validate_pod_template,
    validate_queue,
    validate_vcluster_values,
)

from kaistack.declaration import versions


def _everything() -> dict:
    """A stack using every option that changes a manifest or a values file."""
    raw = base_raw()
    zone, rack = "topology.kubernetes.io/zone", "kaistack.io/rack"
    raw["cluster"]["nodePools"] = [
        {"name": "gpu", "count": 2, "gpus": 2, "taints": [{"key": "nvidia.com/gpu", "value": "present"}],
         "labels": {zone: "z1", rack: "r1"}},
        {"name": "infer", "count": 1, "gpus": 1, "taints": [{"key": "dedicated", "effect": "NoExecute"}],
         "labels": {zone: "z1", rack: "r2"}},
    ]  # fmt: skip
    raw["cluster"]["topology"] = {"name": "dc", "levels": [zone, rack, "kubernetes.io/hostname"]}
    raw["cluster"]["trainingOperator"] = True
    raw["gpu"] = {"mode": "device-plugin", "devicePlugin": {"timeSlicing": {"replicas": 4}}}
    raw["kai"] = {
        "sharing": "isolated",
        "runtimeClassName": "nvidia-cdi",
        "placementStrategy": "spread",
        # Manifest shapes are under test here, not whether this odd mix fits (kaistack.capacity.check).
        "capacityCheck": "off",
    }
    raw["queues"] = [
        {"name": "org", "displayName": "Org", "priority": 120},
        {"name": "team", "parent": "org", "resources": {"gpu": {"quota": 1.5, "limit": 3, "overQuotaWeight": 2}}},
    ]
    raw["tenants"] = [
        {"name": "t1", "queues": ["team"], "vcluster": {"syncNodes": True}},
        {"name": "t2", "queues": ["team"], "apiServerUrl": "https://t2.example.com"},
    ]
    common = {"queue": "team", "image": "busybox:1.37.0"}
    in_rack = {"topology": {"required": rack, "preferred": "kubernetes.io/hostname"}}
    segments = {"workers": 2, "segmentSize": 2, "segmentTopology": {"required": "kubernetes.io/hostname"}}
    raw["workloads"] = [
        {"name": "pod", "kind": "Pod", "gpu": 1, "priorityClass": "train", "preemptible": True, **in_rack, **common},
        {"name": "dep", "kind": "Deployment", "replicas": 2, "gpuFraction": 0.25, "ports": [80], **common,
         "env": {"A": "1"}, "secretEnv": {"HF_TOKEN": {"secret": "hf.token", "key": "token"}}},
        {"name": "job", "kind": "Job", "replicas": 2, "completions": 4, "gpuMemoryMiB": 2000, **in_rack, **common},
        {"name": "ddp", "kind": "PyTorchJob", "gpu": 1, "pytorch": segments, "env": {"A": "1"}, **in_rack, **common},
        {"name": "tpod", "kind": "Pod", "tenant": "t1", "namespace": "ml", "gpuFraction": 0.5, **in_rack, **common},
        {"name": "tjob", "kind": "Job", "tenant": "t2", "namespace": "ml", "cpuLimit": "1", **common},
        {"name": "tddp", "kind": "PyTorchJob", "tenant": "t1", "namespace": "ml", **in_rack, **common},
    ]  # fmt: skip
    return raw


def _gpu_operator_existing() -> dict:
    raw = base_raw()
    raw["cluster"] = {"provider": "existing", "existing": {"context": "lab"}, "nodePools": [{"name": "g", "gpus": 8}]}
    raw["gpu"] = {"mode": "gpu-operator", "gpuOperator": {"timeSlicing": {"replicas": 2}}}
    raw["tenants"] = [{"name": "t1", "queues": ["team"], "isolation": {"resourceQuota": {"quota": {"count/pods": 50}}}}]
    raw["workloads"] = [{"name": "w", "kind": "Deployment", "tenant": "t1", "queue": "team", "image": "x", "gpu": 2}]
    return raw


def _fake_with_defaults() -> dict:
    raw = base_raw()
    raw["kai"] = {"sharing": "off", "runtimeClassName": None, "defaultQueues": {"create": False}}
    return raw


STACKS = {
    "dev": dev_raw,
    "everything": _everything,
    "gpu-operator-existing": _gpu_operator_existing,
    "fake-minimal": _fake_with_defaults,
}

# Free-form maps in the charts' values (keys are names we choose), and keys a template reads although
# values.yaml omits them (kai.md §1.1: binder.runtimeClassName, read by templates/_helpers.tpl).
CHART_RULES = {
    "kai-scheduler/kai-scheduler": (
        f"kai-scheduler-values-{versions.KAI_VERSION}.yaml",
        frozenset({"binder.plugins"}),
        frozenset({"binder.runtimeClassName"}),
    ),
    "fake-gpu-operator": (
        f"fake-gpu-operator-values-{versions.FAKE_GPU_OPERATOR_VERSION}.yaml",
        frozenset({"topology.nodePools"}),
        frozenset(),
    ),
    "nvidia-device-plugin": (
        f"nvidia-device-plugin-values-{versions.DEVICE_PLUGIN_VERSION}.yaml",
        frozenset({"config.map"}),
        frozenset(),
    ),
    "gpu-operator": (
        f"gpu-operator-values-{versions.GPU_OPERATOR_VERSION}.yaml",
        frozenset({"devicePlugin.config.data"}),
        frozenset(),
    ),
}


@pytest.fixture(params=sorted(STACKS))
def rendered(request, mocks):
    run_program(mocks, STACKS[request.param]())
    return mocks.resources


def test_every_kubernetes_object_is_valid_for_kubernetes_1_33_in_strict_mode(rendered):
    """Namespaces, Pods, Deployments and Jobs: no unknown field, every type right."""
    objects = [kube_object(r) for r in rendered if r.type in BUILTIN]
    assert objects
    for obj in objects:
        validate_builtin(obj)


def test_every_queue_is_valid_for_kais_queue_crd(rendered):
    """scheduling.run.ai/v2 Queue objects against the CRD's openAPIV3Schema."""
    queues = [kube_object(r) for r in of_type(rendered, QUEUE)]
    assert queues
    for queue in queues:
        validate_queue(queue)
        assert set(queue["spec"]["resources"]) == {"gpu", "cpu", "memory"}


@pytest.mark.parametrize(
    ("where", "field"), [("spec", "parentQueu"), ("spec", "priorty"), ("gpu", "overQuotaWieght")], ids=str
)
def test_a_misspelled_queue_field_fails_as_the_api_server_would_drop_it(rendered, where, field):
    """KAI@v0.17.0's Queue CRD (deployments/kai-scheduler/crds/scheduling.run.ai_queues.yaml) is structural, so the
    API server prunes a field it does not declare; validate_queue refuses it instead of letting it through."""
    queue = kube_object(next(iter(of_type(rendered, QUEUE))))
    target = queue["spec"] if where == "spec" else queue["spec"]["resources"]["gpu"]
    target[field] = 1
    with pytest.raises(jsonschema.ValidationError, match=f"'{field}' was unexpected"):
        validate_queue(queue)


def test_every_pytorchjob_has_the_training_operators_shape(rendered):
    """Replica types Master/Worker, replicas, restart policy, and valid pod templates."""
    for job in of_type(rendered, PYTORCHJOB):
        obj = kube_object(job)
        assert (obj["apiVersion"], obj["kind"]) == ("kubeflow.org/v1", "PyTorchJob")
        assert set(obj) == {"apiVersion", "kind", "metadata", "spec"}
        assert set(obj["spec"]) == {"runPolicy", "pytorchReplicaSpecs"}
        assert obj["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] >= 1
        assert set(obj["spec"]["pytorchReplicaSpecs"]) <= {"Master", "Worker"}
        for replica in obj["spec"]["pytorchReplicaSpecs"].values():
            assert isinstance(replica["replicas"], int)
            assert replica["restartPolicy"] in {"Always", "OnFailure", "Never", "ExitCode"}
            validate_pod_template(replica["template"])


def test_every_vcluster_release_validates_against_the_chart_schema(rendered):
    """values.schema.json of vCluster 0.36.1 (most objects reject unknown keys)."""
    releases = [inputs(r) for r in of_type(rendered, RELEASE) if inputs(r)["chart"] == "vcluster"]
    for release in releases:
        assert release["version"] == "0.36.1"
        validate_vcluster_values(release["values"])


def test_every_other_release_sets_only_keys_of_the_pinned_chart(rendered):
    """A recursive key check against each pinned chart's values.yaml."""
    checked = 0
    for release in (inputs(r) for r in of_type(rendered, RELEASE)):
        rule = next((v for k, v in CHART_RULES.items() if release["chart"].endswith(k)), None)
        if rule is None:
            assert release["chart"] in ("vcluster", versions.KAI_RESOURCE_ISOLATOR_CHART)
            continue
        filename, maps, extra = rule
        assert unknown_value_keys(release["values"], chart_values(filename), maps, extra) == []
        checked += 1
    assert checked >= 2  # the GPU stack and KAI


def test_the_key_check_catches_a_misspelt_key():
    """The checker itself: a typo and a scalar-vs-mapping clash are both reported."""
    defaults = chart_values(f"kai-scheduler-values-{versions.KAI_VERSION}.yaml")
    problems = unknown_value_keys(
        {"global": {"gpuSharinng": True}, "scheduler": {"placementStrategy": {"a": 1}}}, defaults
    )
    assert problems == ["global.gpuSharinng", "scheduler.placementStrategy (a mapping where the chart has 'binpack')"]


def test_strict_kubernetes_validation_rejects_an_unknown_field():
    """The validator bites: a made-up container field fails strict mode."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "x", "gpu": 1}]},
    }
    with pytest.raises(kubernetes_validate.ValidationError, match="'gpu' was unexpected"):
        validate_builtin(pod)


def test_vcluster_schema_rejects_the_removed_generic_sync():
    """experimental.genericSync was removed in vCluster 0.28 (vcluster-and-gpu.md §1)."""
    with pytest.raises(jsonschema.ValidationError, match="'genericSync' was unexpected"):
        validate_vcluster_values({"experimental": {"genericSync": {}}})


def test_every_helm_release_keeps_a_bounded_history(rendered):
    """pulumi/pulumi-kubernetes provider/pkg/provider/helm_release.go: an unset maxHistory is 0, every
    revision kept as a Secret in the release's namespace, where a tenant's quota counts them."""
    releases = [inputs(r) for r in of_type(rendered, RELEASE)]
    assert len(releases) >= 2  # the GPU stack and KAI at least
    assert {r["name"]: r.get("maxHistory") for r in releases} == {r["name"]: 10 for r in releases}
