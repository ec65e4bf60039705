"""`kaistack verify`'s `memory-isolation` check (`kai.sharing: isolated`): every GPU-sharing pod is held to its GPU
memory, which takes three pieces that each fail open on a cluster.

- KAI@v0.17.0 pkg/admission/webhook/v1alpha2/hamicore/hamicore.go:34-66: admission puts CUDA_DEVICE_MEMORY_LIMIT into
  the fraction container, `valueFrom.configMapKeyRef` (key CUDA_DEVICE_MEMORY_LIMIT, `optional: true`) of the pod's
  GPU-sharing ConfigMap; AddEnvVarToContainer (pkg/binder/common/env_vars.go:28-37) drops any same-named entry first.
- KAI@v0.17.0 pkg/binder/plugins/hamicore/hami_core.go:33-77: the binder writes the key ("<MiB>m") at PreBind, and
  returns nil, writing nothing, when the node's nvidia.com/gpu.memory label is missing or not an integer.
- Project-HAMi/KAI-resource-isolator cmd/webhook/main.go (buildJSONPatch, fractionContainer): the isolator mounts
  /etc/ld.so.preload (subPath ld.so.preload) into the fraction container, and skips pods annotated
  `kai-resource-isolator.io/inject: "false"` (strings.EqualFold); chart/kai-resource-isolator/values.yaml:
  `webhook.failurePolicy: Ignore`.
"""

from __future__ import annotations

from typing import Any

import pytest
from workflow_testlib import check_detail, failed_checks, verify_json

ML_PODS = "/api/v1/namespaces/ml/pods"
CONFIG_MAPS = "/api/v1/namespaces/ml/configmaps"
INFER = ("infer-7c9d8b6f4-x7k2p", "infer-7c9d8b6f4-q9m4z")
NOTEBOOK = "notebook"
UNCAPPED = ": the pod runs without its GPU memory cap"


def _isolated(project: Any) -> None:
    """The dev stack on real GPUs with HAMi's memory isolation (`kai.sharing: isolated` needs them)."""
    stack = project / "Pulumi.dev.yaml"
    text = stack.read_text().replace("mode: fake", "mode: device-plugin", 1)
    stack.write_text(text.replace("kaistack:kai:", "kaistack:kai:\n    sharing: isolated", 1))


def _cap(fake_kube: Any, name: str, *, limit: str | None = "5720m") -> dict[str, Any]:
    """What KAI's admission, the isolator and KAI's binder give a GPU-sharing pod, and its ConfigMap."""
    pod = fake_kube.pod(ML_PODS, name)
    config_map = f"{name}-abc1234-shared-gpu-0"
    container = pod["spec"]["containers"][0]
    container["env"] = [
        {
            "name": "CUDA_DEVICE_MEMORY_LIMIT",
            "valueFrom": {"configMapKeyRef": {"name": config_map, "key": "CUDA_DEVICE_MEMORY_LIMIT", "optional": True}},
        }
    ]
    container["volumeMounts"] = [
        {"name": "kai-resource-isolator-vgpu", "mountPath": "/usr/local/vgpu"},
        {"name": "kai-resource-isolator-vgpu", "mountPath": "/etc/ld.so.preload", "subPath": "ld.so.preload"},
    ]
    data = {"GPU_PORTION": "0.5"} | ({"CUDA_DEVICE_MEMORY_LIMIT": limit} if limit is not None else {})
    fake_kube.responses[f"{CONFIG_MAPS}/{config_map}"] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": config_map, "namespace": "ml"},
        "data": data,
    }
    return pod


def test_pods_with_the_library_and_a_written_limit_pass(project, isolated, capsys):
    code, report = verify_json(project, isolated, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert check_detail(report, "memory-isolation", "infer") == (
        "2 pods held to their GPU memory (CUDA_DEVICE_MEMORY_LIMIT and HAMi's /etc/ld.so.preload)"
    )
    assert check_detail(report, "memory-isolation", "notebook").startswith("1 pod held")


def test_a_stack_without_isolation_has_no_memory_isolation_check(project, fake_kube, capsys):
    _, report = verify_json(project, fake_kube, capsys)
    assert [c for c in report["checks"] if c["check"] == "memory-isolation"] == []


def test_a_pod_the_isolator_skipped_fails(project, isolated, capsys):
    """The webhook fails open: a pod created while it was down has no preload and no cap."""
    pod = isolated.pod(ML_PODS, NOTEBOOK)
    pod["spec"]["containers"][0]["volumeMounts"] = []
    code, report = verify_json(project, isolated, capsys)
    assert (code, failed_checks(report)) == (1, [("memory-isolation", "notebook")])
    assert check_detail(report, "memory-isolation", "notebook") == (
        "notebook: container main has no /etc/ld.so.preload mount: HAMi's isolator did not inject its library (its "
        "webhook fails open; re-create the pod once kai-resource-isolator's webhook runs)" + UNCAPPED
    )


@pytest.mark.parametrize("value", ["false", "False", "FALSE"])
def test_a_pod_that_opts_out_of_the_isolator_fails(project, isolated, capsys, value):
    isolated.pod(ML_PODS, NOTEBOOK)["metadata"]["annotations"]["kai-resource-isolator.io/inject"] = value
    _, report = verify_json(project, isolated, capsys)
    assert check_detail(report, "memory-isolation", "notebook") == (
        'notebook: annotated kai-resource-isolator.io/inject: "false", which HAMi\'s isolator skips' + UNCAPPED
    )


def test_a_pod_admitted_without_kais_hamicore_plugin_fails(project, isolated, capsys):
    isolated.pod(ML_PODS, NOTEBOOK)["spec"]["containers"][0]["env"] = []
    _, report = verify_json(project, isolated, capsys)
    assert check_detail(report, "memory-isolation", "notebook") == (
        "notebook: container main has no CUDA_DEVICE_MEMORY_LIMIT from KAI's GPU-sharing ConfigMap: the pod was "
        "admitted without KAI's hamicore plugin (re-create it)" + UNCAPPED
    )


def test_a_limit_the_pod_sets_itself_is_not_kais(project, isolated, capsys):
    """A literal value is not KAI's injection (KAI replaces same-named entries, so the pod skipped its admission)."""
    env = isolated.pod(ML_PODS, NOTEBOOK)["spec"]["containers"][0]["env"]
    env.append({"name": "CUDA_DEVICE_MEMORY_LIMIT", "value": "80g"})
    _, report = verify_json(project, isolated, capsys)
    assert check_detail(report, "memory-isolation", "notebook").startswith(
        "notebook: container main has no CUDA_DEVICE_MEMORY_LIMIT from KAI's GPU-sharing ConfigMap"
    )


def test_a_bound_pod_whose_configmap_holds_no_limit_fails_naming_the_node_label(project, isolated, capsys):
    _cap(isolated, NOTEBOOK, limit=None)
    _, report = verify_json(project, isolated, capsys)
    assert check_detail(report, "memory-isolation", "notebook") == (
        "notebook: ConfigMap notebook-abc1234-shared-gpu-0 holds no CUDA_DEVICE_MEMORY_LIMIT: KAI's binder writes "
        "none when the node's nvidia.com/gpu.memory label is missing or not a whole number of MiB" + UNCAPPED
    )


def test_a_bound_pod_whose_configmap_is_gone_fails(project, isolated, capsys):
    del isolated.responses[f"{CONFIG_MAPS}/notebook-abc1234-shared-gpu-0"]
    _, report = verify_json(project, isolated, capsys)
    assert check_detail(report, "memory-isolation", "notebook") == (
        "notebook: its GPU-sharing ConfigMap notebook-abc1234-shared-gpu-0 is missing, so CUDA_DEVICE_MEMORY_LIMIT "
        "is unset" + UNCAPPED
    )


def test_a_pod_not_bound_yet_is_checked_for_what_admission_gave_it(project, isolated, capsys):
    """The binder writes the limit when it binds the pod: before that, an empty ConfigMap is not a failure."""
    pod = _cap(isolated, NOTEBOOK, limit=None)
    pod["spec"].pop("nodeName")
    pod["status"]["phase"] = "Pending"
    _, report = verify_json(project, isolated, capsys)
    assert check_detail(report, "memory-isolation", "notebook").startswith("1 pod held")


def test_the_fraction_container_is_the_one_the_annotation_names(project, isolated, capsys):
    """GetFractionContainerRef (KAI@v0.17.0 pkg/binder/common/gpu_access.go:182-215): init containers first."""
    pod = isolated.pod(ML_PODS, NOTEBOOK)
    capped = pod["spec"]["containers"][0]
    pod["spec"]["initContainers"] = [{"name": "main", "image": "busybox"}]
    pod["metadata"]["annotations"]["gpu-fraction-container-name"] = "main"
    assert capped["name"] == "main"
    _, report = verify_json(project, isolated, capsys)
    assert check_detail(report, "memory-isolation", "notebook").startswith(
        "notebook: container main has no /etc/ld.so.preload mount"
    )


def test_a_fraction_container_the_pod_lacks_fails(project, isolated, capsys):
    isolated.pod(ML_PODS, NOTEBOOK)["metadata"]["annotations"]["gpu-fraction-container-name"] = "sidecar"
    _, report = verify_json(project, isolated, capsys)
    assert check_detail(report, "memory-isolation", "notebook") == (
        "notebook: no container 'sidecar' for its GPU share" + UNCAPPED
    )


def test_each_uncapped_pod_of_a_workload_is_named(project, isolated, capsys):
    for name in INFER:
        isolated.pod(ML_PODS, name)["spec"]["containers"][0]["env"] = []
    _, report = verify_json(project, isolated, capsys)
    detail = check_detail(report, "memory-isolation", "infer")
    assert [part.split(":", 1)[0] for part in detail.split("; ")] == list(INFER)


def test_configmaps_the_credentials_may_not_read_are_a_note(project, isolated, capsys):
    path = f"{CONFIG_MAPS}/notebook-abc1234-shared-gpu-0"
    isolated.forbidden.add(path)
    code, report = verify_json(project, isolated, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert (
        f"memory-isolation: ConfigMap ml/notebook-abc1234-shared-gpu-0 not read: GET {path}: HTTP 403: forbidden: "
        f'User "viewer" cannot get path "{path}"; grant `get` on configmaps to check that KAI\'s binder wrote the '
        "pod's memory limit"
    ) in report["notes"]
