"""`kaistack diagnose`'s `vcluster-owner-reference`, as a pair: found on the pod a vCluster with `setOwner: true`
syncs (owned by the vCluster's Service), not on the same pod synced with `setOwner: false` (no owner) nor on a
pod a host controller owns.

vCluster sets an owner on what it syncs only with `experimental.syncSettings.setOwner` (loft-sh/vcluster@v0.36.1
pkg/setup/config/config.go:200-202 leaves translate.Owner unset when false; pkg/util/translate/translate.go
GetOwnerReference returns none without it), and that owner is the vCluster's Service, the message's claim. The
healthy dump has no synced pod, so its silence proved nothing (an audit of issue 16's "not found on a dump without
them").
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from dump_testlib import healthy_dump_mistakes

SYNCED: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "synced-x-default-x-team-b",
        "namespace": "vcluster-team-b",
        "labels": {"kai.scheduler/queue": "test"},
    },
    "spec": {
        "schedulerName": "kai-scheduler",
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
            }
        ],
    },
    "status": {"phase": "Pending"},
}


def _owned_by(kind: str | None) -> dict[str, Any]:
    pod = copy.deepcopy(SYNCED)
    if kind is not None:
        pod["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": kind, "name": "team-b", "uid": "u2"}]
    return pod


def test_a_pod_synced_with_set_owner_true_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    found = healthy_dump_mistakes("vcluster-owner-reference", tmp_path, capsys, _owned_by("Service"))
    assert [m["object"] for m in found] == ["Pod vcluster-team-b/synced-x-default-x-team-b"]
    assert "setOwner: false" in found[0]["fix"]


@pytest.mark.parametrize("kind", [None, "ReplicaSet"], ids=["setOwner-false", "host-controller"])
def test_a_pod_not_owned_by_a_service_is_not_named(
    kind: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert healthy_dump_mistakes("vcluster-owner-reference", tmp_path, capsys, _owned_by(kind)) == []
