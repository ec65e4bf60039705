"""The ConfigMaps a live cluster has and its pods need, as KAI's ConfigMap predicate reads them.

KAI@v0.17.0 lists every ConfigMap each session (cache/cluster_info/cluster_info.go:556-570) and refuses a pod
that needs one its namespace lacks before looking at any node (k8s_internal/predicates/config_maps.go). A
shared-GPU pod references the ConfigMaps the binder creates after scheduling; the `runai/shared-gpu-configmap`
annotation names their prefix and they do not count.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kaistack.cli import main
from kaistack.ops.diagnose import diagnose
from kaistack.ops.live_snapshot import build


def _node() -> dict[str, Any]:
    allocatable = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "8"}
    metadata = {"name": "n1", "labels": {}}
    return {"kind": "Node", "metadata": metadata, "spec": {}, "status": {"allocatable": allocatable}}


def _queue() -> dict[str, Any]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    resources = {"gpu": unlimited, "cpu": unlimited, "memory": unlimited}
    return {"kind": "Queue", "metadata": {"name": "q"}, "spec": {"resources": resources}}


def _pod(name: str, config_map: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    container = {
        "name": "c",
        "envFrom": [{"configMapRef": {"name": config_map}}],
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
    }
    metadata = {"name": name, "namespace": "ml", "labels": {"kai.scheduler/queue": "q"}}
    if annotations:
        metadata["annotations"] = annotations
    spec = {"schedulerName": "kai-scheduler", "containers": [container]}
    return {"kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": "Pending"}}


def _config_map(namespace: str, name: str) -> dict[str, Any]:
    return {"kind": "ConfigMap", "metadata": {"namespace": namespace, "name": name}, "data": {"k": "v"}}


def test_a_pod_whose_configmap_is_missing_in_its_namespace_is_pending_for_it() -> None:
    objects = [_node(), _queue(), _config_map("ml", "kube-root-ca.crt"), _config_map("other", "settings")]
    [pending] = diagnose([*objects, _pod("train", "settings")]).pending
    assert pending.would_place is False
    assert pending.reason.startswith("a pod needs ConfigMap settings, which does not exist in namespace ml")


def test_a_pod_whose_configmap_exists_is_placed() -> None:
    objects = [_node(), _queue(), _config_map("ml", "settings"), _pod("train", "settings")]
    [pending] = diagnose(objects).pending
    assert pending.would_place is True


def test_the_binders_shared_gpu_configmaps_do_not_count() -> None:
    pod = _pod("share", "train-abc-shared-gpu-0", {"runai/shared-gpu-configmap": "train-abc-shared-gpu"})
    objects = [_node(), _queue(), _config_map("ml", "kube-root-ca.crt"), pod]
    assert build(objects).snapshot.jobs[0].tasks[0].config_maps == ()
    [pending] = diagnose(objects).pending
    assert pending.would_place is True


def test_without_configmaps_in_the_objects_nothing_is_checked_and_the_notes_say_so() -> None:
    live = build([_node(), _queue(), _pod("train", "settings")])
    assert live.snapshot.config_maps is None
    assert any("ConfigMaps were not read: whether the ConfigMaps 1 pod(s) need exist" in n for n in live.notes)
    [pending] = diagnose([_node(), _queue(), _pod("train", "settings")]).pending
    assert pending.would_place is True


def _serve(fake_kube: Any, path: str, kind: str, objects: list[dict[str, Any]]) -> None:
    items = [{k: v for k, v in o.items() if k != "kind"} for o in objects]
    fake_kube.responses[path] = {"kind": f"{kind}List", "apiVersion": "v1", "metadata": {}, "items": items}


def test_the_live_read_lists_configmap_names_across_namespaces(
    fake_kube: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real client on loopback: /api/v1/configmaps is read, and only names are kept. (A 403 there is skipped
    and said: test_diagnose.py.)"""
    _serve(fake_kube, "/api/v1/pods", "Pod", [_pod("train", "settings")])
    _serve(fake_kube, "/api/v1/nodes", "Node", [_node()])
    _serve(fake_kube, "/apis/scheduling.run.ai/v2/queues", "Queue", [_queue()])
    _serve(
        fake_kube,
        "/api/v1/configmaps",
        "ConfigMap",
        [_config_map("ml", "kube-root-ca.crt"), _config_map("other", "settings")],
    )
    main(["diagnose", "--kubeconfig", str(fake_kube.kubeconfig(tmp_path)), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["objects"]["ConfigMap"] == 2
    [pending] = report["pending"]
    assert "ConfigMap settings, which does not exist in namespace ml" in pending["reason"]
