"""KAI's kinds are read from KAI's API groups only: a dump of a cluster that also runs Volcano (a Queue and a
PodGroup in scheduling.volcano.sh) or Kueue (a Topology in kueue.x-k8s.io) holds objects of the same kind names,
and the first one read of a name stood in for KAI's (found by a review)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kaistack.cli import main
from kaistack.cli.diagnose import DUMP_KINDS
from kaistack.declaration import kai_api
from kaistack.ops.live_kinds import by_kind, foreign_group

UNLIMITED = {k: {"quota": -1, "limit": -1, "overQuotaWeight": 1} for k in ("gpu", "cpu", "memory")}
NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1"},
    "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "1"}},
}
VOLCANO_QUEUE = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "Queue",
    "metadata": {"name": "default"},
    "spec": {"reclaimable": True, "weight": 1},
}
KAI_QUEUE = {
    "apiVersion": "scheduling.run.ai/v2",
    "kind": "Queue",
    "metadata": {"name": "default"},
    "spec": {"resources": UNLIMITED},
}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "ml", "labels": {"kai.scheduler/queue": "default"}},
    "spec": {
        "schedulerName": "kai-scheduler",
        "containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
    },
    "status": {"phase": "Pending"},
}


def _diagnose(tmp_path: Path, capsys: pytest.CaptureFixture[str], items: list[dict[str, Any]]) -> dict[str, Any]:
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    main(["diagnose", "--from-dump", str(dump), "--at", "2026-11-25T12:00:00Z", "--json"])
    return json.loads(capsys.readouterr().out)


def test_volcanos_queue_of_the_same_name_does_not_hide_kais(tmp_path, capsys) -> None:
    """Volcano's Queue has no spec.resources: read as KAI's, its limits were 0 and the pod over them."""
    report = _diagnose(tmp_path, capsys, [NODE, VOLCANO_QUEUE, KAI_QUEUE, POD])
    [pending] = report["pending"]
    assert pending["wouldPlace"] is True
    assert report["mistakes"] == []
    assert report["objects"]["Queue"] == 1


def test_an_object_left_out_for_its_group_is_said(tmp_path, capsys) -> None:
    report = _diagnose(tmp_path, capsys, [NODE, VOLCANO_QUEUE, KAI_QUEUE, POD])
    assert (
        "left out 1 Queue (scheduling.volcano.sh) object: the kind is KAI's, the API group another's (another "
        "scheduler's, read by nothing of KAI's)"
    ) in report["notes"]


def test_a_typed_list_of_another_groups_kind_gives_its_items_that_group() -> None:
    """The API server sends a list's items without kind or apiVersion; they take both from the list, and a
    QueueList of Volcano's says nothing of KAI's Queues."""
    volcano_list = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "QueueList",
        "items": [{"metadata": {"name": "q"}}],
    }
    kai_list = {"apiVersion": "scheduling.run.ai/v2", "kind": "QueueList", "items": [{"metadata": {"name": "k"}}]}
    assert "Queue" not in by_kind([volcano_list])
    assert [q["metadata"]["name"] for q in by_kind([volcano_list, kai_list])["Queue"]] == ["k"]


@pytest.mark.parametrize(
    ("obj", "group"),
    [
        ({"kind": "PodGroup", "apiVersion": "scheduling.volcano.sh/v1beta1"}, "scheduling.volcano.sh"),
        ({"kind": "Topology", "apiVersion": "kueue.x-k8s.io/v1alpha1"}, "kueue.x-k8s.io"),
        ({"kind": "Config", "apiVersion": "v1"}, ""),
        ({"kind": "PodGroup", "apiVersion": "scheduling.run.ai/v2alpha2"}, None),
        ({"kind": "Queue", "apiVersion": "scheduling.run.ai/v2alpha2"}, None),  # another version of KAI's group
        ({"kind": "Topology", "apiVersion": "kai.scheduler/v1alpha1"}, None),
        ({"kind": "Queue"}, None),  # a hand-made dump without apiVersion
        ({"kind": "Pod", "apiVersion": "v1"}, None),
    ],
)
def test_which_objects_of_kais_kinds_are_anothers(obj: dict[str, Any], group: str | None) -> None:
    assert foreign_group(obj) == group


def test_the_dump_command_names_kais_kinds_by_their_group() -> None:
    """Beside Volcano or Kueue, kubectl resolves a bare `queues` to whichever group its discovery ranks first."""
    kinds = DUMP_KINDS.split(",")
    for crd in (kai_api.QUEUE, kai_api.POD_GROUP, kai_api.BIND_REQUEST, kai_api.TOPOLOGY_CRD, kai_api.SCHEDULING_SHARD):
        assert f"{crd.plural}.{crd.group}" in kinds
        assert crd.plural not in kinds
