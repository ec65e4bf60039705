"""`kaistack diagnose` on content a tenant or a broken dump can shape: bounded work, one line per pod, no crash.

A tenant's pod reaches the host through vCluster; the host's admission policy refuses most of what follows for
tenants, but diagnose also reads clusters without it and hand-made dumps.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kaistack.cli import main

QUEUE = {
    "kind": "Queue",
    "metadata": {"name": "q"},
    "spec": {"resources": {k: {"quota": -1, "limit": -1, "overQuotaWeight": 1} for k in ("gpu", "cpu", "memory")}},
}


def _node(name: str = "gpu-1", **metadata: Any) -> dict[str, Any]:
    allocatable = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}
    return {"kind": "Node", "metadata": {"name": name, **metadata}, "status": {"allocatable": allocatable}}


def _pod(name: str, namespace: str, gpus: str, **spec: Any) -> list[dict[str, Any]]:
    group = {"kind": "PodGroup", "metadata": {"name": name, "namespace": namespace}, "spec": {"queue": "q"}}
    limits = {"nvidia.com/gpu": gpus}
    pod = {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "annotations": {"pod-group-name": name}},
        "spec": {
            "schedulerName": "kai-scheduler",
            "containers": [{"name": "c", "image": "x", "resources": {"limits": limits}}],
            **spec,
        },
        "status": {"phase": "Pending"},
    }
    return [group, pod]


def _diagnose(tmp_path: Path, items: list[dict[str, Any]], *extra: str) -> int:
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"kind": "List", "items": items}))
    return main(["diagnose", "--from-dump", str(dump), "--at", "2026-11-25T12:00:00Z", *extra])


def test_a_bound_pod_asking_for_more_gpus_than_int64_holds_does_not_hang_the_report(tmp_path, capsys):
    """Its node's GPUs were listed one entry per GPU it asked for: 2**63-1 entries, after the --max-seconds bound."""
    items = [_node(), QUEUE, *_pod("evil", "vc", "9223372036854775807", nodeName="gpu-1"), *_pod("victim", "ml", "1")]
    assert _diagnose(tmp_path, items, "--json", "--max-seconds", "5") == 1
    pending = {p["pod"]: p["reason"] for p in json.loads(capsys.readouterr().out)["pending"]}
    assert pending["vc/evil"].startswith("bound to gpu-1; Pending in the kubelet")
    assert pending["ml/victim"] == "no node fits 1 GPU: closest miss gpu-1 (needs 1 GPU, 0 free)"


def test_a_kubelet_message_quoting_a_line_break_and_an_escape_stays_on_its_pods_line(tmp_path, capsys):
    items = [_node(), QUEUE, *_pod("t", "vc", "1", nodeName="gpu-1")]
    message = 'Failed to apply default image tag "x\n  ml/train-0 (queue q): queue q does not exist\x1b[8m"'
    waiting = {"reason": "InvalidImageName", "message": message}
    items[-1]["status"]["containerStatuses"] = [{"name": "c", "state": {"waiting": waiting}}]
    _diagnose(tmp_path, items)
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert not any(line.lstrip().startswith("ml/train-0") for line in out.splitlines())


def test_a_node_a_dump_gives_a_namespace_twice_is_one_node(tmp_path, capsys):
    """Cluster-scoped objects have no namespace; a stray one in a hand-made dump made two nodes of one (exit 70)."""
    items = [_node(), _node(namespace="stray"), QUEUE, *_pod("p", "ml", "1")]
    assert _diagnose(tmp_path, items) == 1  # the pod is pending (KAI would place it): a finding, not a crash (70)
    assert capsys.readouterr().out.startswith("read 1 nodes, 1 pods")


@pytest.mark.parametrize("gpus", ["1", "8"])
def test_free_gpus_are_never_negative_in_a_reason(tmp_path, capsys, gpus):
    items = [_node(), QUEUE, *_pod("evil", "vc", "100", nodeName="gpu-1"), *_pod("victim", "ml", gpus)]
    _diagnose(tmp_path, items, "--json")
    reasons = " ".join(p["reason"] for p in json.loads(capsys.readouterr().out)["pending"])
    assert ", -" not in reasons
    assert "(-" not in reasons


def test_a_yaml_dump_with_a_number_beside_the_names_of_a_volume_is_diagnosed(tmp_path, capsys):
    """A hand-written YAML dump may key a mapping with `1:` beside `name:` (kubectl itself never writes one): the
    pod's scheduling signature sorted keys of two types and diagnose stopped with an internal error (exit 70)."""
    items = [_node(), QUEUE, *_pod("odd", "ml", "1")]
    items[-1]["spec"]["volumes"] = [{"name": "v", 1: "x", "emptyDir": {}}]
    dump = tmp_path / "dump.yaml"
    dump.write_text(yaml.safe_dump({"kind": "List", "items": items}))
    assert main(["diagnose", "--from-dump", str(dump), "--at", "2026-11-25T12:00:00Z", "--json"]) == 1
    pending = {p["pod"]: p["reason"] for p in json.loads(capsys.readouterr().out)["pending"]}
    assert pending["ml/odd"].startswith("KAI would place it in its next cycle")


@pytest.mark.parametrize("field", ["minMember", "minSubGroup"])
def test_a_podgroup_count_beyond_a_doubles_range_is_read_as_unset_not_a_crash(tmp_path, capsys, field):
    """A dump's integers are unbounded (YAML's 1 followed by 400 zeros, or JSON's): a count no int32 holds is no
    count KAI's API would have stored, so it is read as absent (diagnose crashed with OverflowError; fuzz seed
    20261130, diagnose case 719)."""
    group, pod = _pod("big", "ml", "1")
    group["spec"][field] = 10**400
    assert _diagnose(tmp_path, [QUEUE, _node(), group, pod], "--json") == 1  # a pod is Pending: explained
    pending = {p["pod"]: p for p in json.loads(capsys.readouterr().out)["pending"]}
    assert pending["ml/big"]["wouldPlace"] is True  # a gang of one, as with the count unset


def test_a_queue_quota_beyond_a_doubles_range_is_read_as_the_snapshot_reads_it(tmp_path, capsys):
    """The deployment-without-quota check read the GPU quota with float(), which a 10**400 in a hand-made dump made
    an internal error; it now reads it as the simulation does (a number no float holds is no quota)."""
    queue = {
        "kind": "Queue",
        "metadata": {"name": "q"},
        "spec": {"resources": {k: {"quota": 10**400 if k == "gpu" else -1, "limit": -1} for k in ("gpu", "cpu")}},
    }
    group, pod = _pod("chat", "ml", "1")
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "chat", "uid": "u"}]
    assert _diagnose(tmp_path, [queue, _node(), group, pod], "--json") == 1
    report = json.loads(capsys.readouterr().out)
    assert "deployment-without-quota" in [m["code"] for m in report["mistakes"]]
