"""`kaistack diagnose` on pods KAI made or already placed: its utility pods, finished pods, pods its kubelet has
not started, and PodGroups that share a name.

Each case is tests/data/dumps/healthy.yaml (every pod runs, nothing wrong) with one change, as a reviewer's
dump showed it. A utility pod, for one, is what KAI v0.17.0 creates (cited where built below).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kaistack.cli import main

DUMPS = Path(__file__).resolve().parents[1] / "data" / "dumps"


def _healthy() -> list[dict[str, Any]]:
    return yaml.safe_load((DUMPS / "healthy.yaml").read_text())["items"]


def _run(items: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> Any:
    """(exit code, the --json report) of `diagnose --from-dump` on these objects."""
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    code = main(["diagnose", "--from-dump", str(dump), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def _pod(items: list[dict[str, Any]], namespace: str, name: str) -> dict[str, Any]:
    return next(
        i
        for i in items
        if i["kind"] == "Pod" and (i["metadata"].get("namespace"), i["metadata"]["name"]) == (namespace, name)
    )


def _reservation_pod(namespace: str = "kai-resource-reservation") -> dict[str, Any]:
    """What KAI's binder creates to hold a shared GPU (kai-scheduler/KAI-Scheduler@v0.17.0:
    pkg/binder/binding/resourcereservation/resource_reservation.go:533-601): no schedulerName, so the API server's
    default-scheduler; a whole nvidia.com/gpu; the app label KAI knows it by."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "gpu-reservation-3f2a9c1b7d4e5f60",
            "namespace": namespace,
            "labels": {"app": "kai-resource-reservation", "runai-gpu-group": "g-1"},
            "annotations": {"karpenter.sh/do-not-disrupt": "true"},
        },
        "spec": {
            "nodeName": "gpu-1",
            "runtimeClassName": "nvidia",
            "schedulerName": "default-scheduler",
            "serviceAccountName": "kai-resource-reservation",
            "containers": [
                {
                    "name": "resource-reservation",
                    "image": "ghcr.io/nvidia/kai-scheduler/resource-reservation:v0.17.0",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}},
                }
            ],
        },
        "status": {"phase": "Running"},
    }


def _scaling_pod(namespace: str = "kai-scale-adjust") -> dict[str, Any]:
    """What KAI's node-scale-adjuster creates for an unschedulable shared-GPU pod (kai-scheduler/KAI-Scheduler@
    v0.17.0:pkg/nodescaleadjuster/scaler/scaling_pod.go:21-64): no schedulerName, so the cluster autoscaler sees
    it; whole GPUs; namespace nodescaleadjuster.scalingPodNamespace (deployments/kai-scheduler/values.yaml:247)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "ai-share-c",
            "namespace": namespace,
            "labels": {"app": "scaling-pod", "shared-gpu-pod-name": "share-c", "shared-gpu-pod-namespace": "ai"},
        },
        "spec": {
            "schedulerName": "default-scheduler",
            "restartPolicy": "OnFailure",
            "containers": [
                {"name": "scaling-pod", "image": "scaling-pod", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
            ],
        },
        "status": {"phase": "Pending"},
    }


def _validator_pod(phase: str) -> dict[str, Any]:
    """The GPU Operator's device-plugin validator: its init container asks for a GPU, then the pod Succeeds."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nvidia-device-plugin-validator-x7k2p", "namespace": "gpu-operator"},
        "spec": {
            "nodeName": "gpu-0",
            "restartPolicy": "OnFailure",
            "schedulerName": "default-scheduler",
            "initContainers": [
                {"name": "plugin-validation", "image": "v", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
            ],
            "containers": [{"name": "nvidia-device-plugin-validator", "image": "v"}],
        },
        "status": {"phase": phase},
    }


# --- KAI's utility pods and finished pods ---------------------------------------------------------------


@pytest.mark.parametrize("utility_pod", [_reservation_pod, _scaling_pod], ids=["reservation", "scaling"])
def test_kais_own_utility_pods_are_not_told_to_use_kai_scheduler(
    utility_pod: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """KAI creates them with default-scheduler on purpose; the dump was reported with [no-kai-scheduler], exit 1."""
    code, report = _run([*_healthy(), utility_pod()], tmp_path, capsys)
    assert report["mistakes"] == []
    assert code == 0


@pytest.mark.parametrize("utility_pod", [_reservation_pod, _scaling_pod], ids=["reservation", "scaling"])
def test_a_utility_label_outside_kais_namespace_does_not_excuse_a_gpu_pod(
    utility_pod: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tenant's pod cannot leave the check by carrying KAI's app label."""
    code, report = _run([*_healthy(), utility_pod(namespace="ml")], tmp_path, capsys)
    assert [m["code"] for m in report["mistakes"]] == ["no-kai-scheduler"]
    assert code == 1


@pytest.mark.parametrize("phase", ["Succeeded", "Failed", "Unknown"])
def test_finished_pods_are_not_judged(phase: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A finished pod holds nothing and will not run again (live_snapshot.FINISHED): the GPU Operator's validator
    that Succeeded was reported with [no-kai-scheduler], exit 1."""
    code, report = _run([*_healthy(), _validator_pod(phase)], tmp_path, capsys)
    assert report["mistakes"] == []
    assert code == 0


def test_a_running_gpu_pod_of_another_scheduler_is_still_a_mistake(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, report = _run([*_healthy(), _validator_pod("Running")], tmp_path, capsys)
    assert [(m["code"], m["object"]) for m in report["mistakes"]] == [
        ("no-kai-scheduler", "Pod gpu-operator/nvidia-device-plugin-validator-x7k2p")
    ]


# --- pods bound to a node that their kubelet has not started ---------------------------------------------


def _image_pull_back_off() -> list[dict[str, Any]]:
    """ml/train-0 bound to gpu-0 and Pending there: its image cannot be pulled."""
    items = copy.deepcopy(_healthy())
    pod = _pod(items, "ml", "train-0")
    pod["status"] = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "True"}],
        "containerStatuses": [
            {
                "name": "main",
                "ready": False,
                "state": {"waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "busybox"'}},
            }
        ],
    }
    return items


def test_a_bound_pod_pending_in_the_kubelet_is_pending_with_its_waiting_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was counted as running: "0 pending pods", exit 0."""
    code, report = _run(_image_pull_back_off(), tmp_path, capsys)
    assert report["pending"] == [
        {
            "pod": "ml/train-0",
            "podGroup": "pg-train",
            "queue": "team-a",
            "reason": "bound to gpu-0; Pending in the kubelet: ImagePullBackOff (container main: Back-off pulling "
            'image "busybox"); kubectl describe pod: its events',
            "wouldPlace": False,
            "boundTo": "gpu-0",
        }
    ]
    assert code == 1


@pytest.mark.parametrize("form", [[], ["--markdown"]], ids=["text", "markdown"])
def test_text_and_markdown_show_a_bound_pod_pending_in_the_kubelet(
    form: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"kind": "List", "items": _image_pull_back_off()}))
    main(["diagnose", "--from-dump", str(dump), *form])
    assert "bound to gpu-0; Pending in the kubelet: ImagePullBackOff" in capsys.readouterr().out


def test_an_init_containers_wait_comes_before_the_containers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Init containers run first: the others only wait for them (PodInitializing)."""
    items = _image_pull_back_off()
    status = _pod(items, "ml", "train-0")["status"]
    status["containerStatuses"][0]["state"] = {"waiting": {"reason": "PodInitializing"}}
    status["initContainerStatuses"] = [
        {"name": "fetch", "state": {"waiting": {"reason": "CreateContainerConfigError"}}}
    ]
    _, report = _run(items, tmp_path, capsys)
    assert "Pending in the kubelet: CreateContainerConfigError (container fetch)" in report["pending"][0]["reason"]


def test_a_running_init_container_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A PyTorchJob worker's init-pytorch runs until the master's name resolves
    (kubeflow/training-operator@v1.8.1 pkg/controller.v1/pytorch/initcontainer.go)."""
    items = _image_pull_back_off()
    status = _pod(items, "ml", "train-0")["status"]
    status["containerStatuses"][0]["state"] = {"waiting": {"reason": "PodInitializing"}}
    status["initContainerStatuses"] = [
        {"name": "init-pytorch", "ready": False, "state": {"running": {"startedAt": "2026-11-26T10:00:00Z"}}}
    ]
    _, report = _run(items, tmp_path, capsys)
    assert "Pending in the kubelet: init container init-pytorch is still running" in report["pending"][0]["reason"]


def test_a_bound_pod_no_container_reports_on_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    items = _image_pull_back_off()
    _pod(items, "ml", "train-0")["status"] = {"phase": "Pending"}
    _, report = _run(items, tmp_path, capsys)
    assert report["pending"][0]["reason"] == (
        "bound to gpu-0; Pending in the kubelet: no container reports why yet; kubectl describe pod: its events"
    )


def test_a_pod_bound_to_a_node_not_read_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    items = _image_pull_back_off()
    _pod(items, "ml", "train-0")["spec"]["nodeName"] = "gpu-9"
    _, report = _run(items, tmp_path, capsys)
    assert report["pending"][0]["reason"].startswith(
        "bound to gpu-9 (not among the nodes read); Pending in the kubelet"
    )


def test_another_schedulers_bound_pod_is_not_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Like another scheduler's unplaced pods: diagnose explains KAI's pods."""
    items = _image_pull_back_off()
    pod = _pod(items, "ml", "train-0")
    pod["spec"]["schedulerName"] = "default-scheduler"
    del pod["metadata"]["annotations"]["pod-group-name"]
    _, report = _run(items, tmp_path, capsys)
    assert report["pending"] == []


def test_a_pending_pod_being_deleted_is_not_waiting_to_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """KAI counts it Releasing (pod_info.go getTaskStatus): it is going away."""
    items = _image_pull_back_off()
    _pod(items, "ml", "train-0")["metadata"]["deletionTimestamp"] = "2026-11-25T11:59:00Z"
    _, report = _run(items, tmp_path, capsys, "--at", "2026-11-25T12:00:00Z")
    assert report["pending"] == []


# --- PodGroups of one name in two namespaces -------------------------------------------------------------


def _same_name() -> list[dict[str, Any]]:
    """healthy.yaml's pg-train copied into namespace team-y, with a pod of its own."""
    items = copy.deepcopy(_healthy())
    group = next(i for i in items if i["kind"] == "PodGroup" and i["metadata"]["name"] == "pg-train")
    other = copy.deepcopy(group)
    other["metadata"]["namespace"] = "team-y"
    other["spec"]["queue"] = "test"
    pod = copy.deepcopy(_pod(items, "ml", "train-0"))
    pod["metadata"]["namespace"] = "team-y"
    pod["spec"].pop("nodeName", None)
    pod["status"] = {"phase": "Pending"}
    return [*items, other, pod]


def test_podgroups_of_one_name_in_two_namespaces_are_a_mistake_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """KAI keys PodGroups by name alone, so the outcome depends on which it lists last (samename2.yaml)."""
    code, report = _run(_same_name(), tmp_path, capsys)
    [mistake] = [m for m in report["mistakes"] if m["code"] == "duplicate-podgroup-name"]
    assert mistake["object"] == "PodGroup ml/pg-train, team-y/pg-train"
    assert "PodGroups named pg-train in namespaces ml and team-y" in mistake["problem"]
    assert code == 1


@pytest.mark.parametrize(("namespace", "kept"), [("ml", True), ("team-y", True), ("ai", False)])
def test_a_namespace_diagnosis_keeps_the_duplicate_name_for_each_namespace_it_names(
    namespace: str, kept: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, report = _run(_same_name(), tmp_path, capsys, "--namespace", namespace)
    assert any(m["code"] == "duplicate-podgroup-name" for m in report["mistakes"]) is kept


def test_podgroups_of_different_names_are_no_mistake(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    items = _same_name()
    items[-2]["metadata"]["name"] = "pg-train-y"
    items[-1]["metadata"]["annotations"]["pod-group-name"] = "pg-train-y"
    _, report = _run(items, tmp_path, capsys)
    assert report["mistakes"] == []
