"""A live cluster's PersistentVolumeClaims as Kubernetes' VolumeBinding plugin reads them, which KAI runs.

KAI@v0.17.0 creates the plugin on its live listers (k8s_internal/plugins/plugins.go:91-96); its PreFilter
failures are victim-invariant (plugins/predicates/predicates.go:53-57). The rules and messages are
k8s.io/kubernetes@v1.35.4 (KAI's go.mod) pkg/scheduler/framework/plugins/volumebinding/volume_binding.go:313-390
(PreFilter) and binder.go:285-389, 770-960 (bound, immediate and delayed claims; FindPodVolumes), and
component-helpers@v0.35.4 storage/volume/pv_helpers.go:186-329 (FindMatchingVolume).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import volume_testlib as k8s

from kaistack.cli import main
from kaistack.ops.diagnose import diagnose
from kaistack.ops.live_pods import constraints_of
from kaistack.ops.live_snapshot import build

BASE = [k8s.node("n1", "a"), k8s.node("n2", "b"), k8s.queue(), k8s.storage_class("standard", "Immediate")]


def _pending_reason(objects: list[dict[str, Any]]) -> str:
    [pending] = diagnose(objects).pending
    assert pending.would_place is False
    return pending.reason


def _placed_on(objects: list[dict[str, Any]]) -> str | None:
    from placement.simulation import simulate

    result = simulate(build(objects).snapshot, actions=["allocate"])
    [task] = result.tasks.values()
    return task.node


# --- PreFilter: the pod is refused everywhere ---------------------------------------------------------


def test_a_missing_claim_keeps_the_pod_pending_with_kubernetes_message() -> None:
    reason = _pending_reason([*BASE, k8s.claim("other"), k8s.pod("train", "data")])
    assert reason.startswith('its volumes keep it off every node: persistentvolumeclaim "data" not found')


def test_an_unbound_claim_of_an_immediate_class_keeps_the_pod_pending() -> None:
    reason = _pending_reason([*BASE, k8s.claim("data"), k8s.pod("train", "data")])
    assert "pod has unbound immediate PersistentVolumeClaims" in reason


def test_an_unbound_claim_without_a_class_counts_as_immediate() -> None:
    """IsDelayBindingMode is false for a claim with no class or a class that does not exist."""
    reason = _pending_reason([*BASE, k8s.claim("data", klass=""), k8s.pod("train", "data")])
    assert "pod has unbound immediate PersistentVolumeClaims" in reason


def test_a_claim_being_deleted_keeps_the_pod_pending() -> None:
    claim = k8s.claim("data", volume="pv-1", deletionTimestamp="2026-11-26T00:00:00Z")
    reason = _pending_reason([*BASE, k8s.volume("pv-1", "standard", None, "Bound"), claim, k8s.pod("train", "data")])
    assert 'persistentvolumeclaim "data" is being deleted' in reason


def test_an_ephemeral_volumes_claim_not_yet_created_is_waited_for() -> None:
    pod = k8s.pod("train")
    pod["spec"]["volumes"] = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]
    reason = _pending_reason([*BASE, k8s.claim("other"), pod])
    assert 'waiting for ephemeral volume controller to create the persistentvolumeclaim "train-scratch"' in reason


def test_an_ephemeral_claim_another_pod_owns_refuses_the_pod() -> None:
    pod = k8s.pod("train")
    pod["spec"]["volumes"] = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]
    owner = {"kind": "Pod", "name": "old", "uid": "uid-old", "controller": True}
    claim = k8s.claim("train-scratch", volume="pv-1", ownerReferences=[owner])
    objects = [*BASE, k8s.volume("pv-1", "standard", None, "Bound"), claim, pod]
    assert "PVC ml/train-scratch was not created for pod ml/train (pod is not owner)" in _pending_reason(objects)


# --- Filter: where the pod's volumes may be used ------------------------------------------------------


def test_a_bound_claims_volume_takes_the_pod_to_the_node_its_affinity_names() -> None:
    """Binpack alone would take n1 (it comes first); the volume is on n2."""
    objects = [
        *BASE,
        k8s.volume("pv-1", "standard", "n2", "Bound"),
        k8s.claim("data", volume="pv-1"),
        k8s.pod("train", "data"),
    ]
    assert _placed_on(objects) == "n2"


def test_a_pod_whose_volume_is_on_a_full_node_says_so() -> None:
    objects = [
        k8s.node("n1", "a"),
        k8s.node("n2", "b", gpus="0"),
        k8s.queue(),
        k8s.volume("pv-1", "standard", "n2", "Bound"),
        k8s.claim("data", volume="pv-1"),
        k8s.pod("train", "data"),
    ]
    reason = _pending_reason(objects)
    assert "its volumes cannot be used on node n1 (node(s) didn't match PersistentVolume's node affinity)" in reason


def test_a_claim_bound_to_a_volume_that_does_not_exist_fits_no_node() -> None:
    objects = [
        *BASE,
        k8s.volume("pv-other", "standard", None, "Bound"),
        k8s.claim("data", volume="pv-1"),
        k8s.pod("t", "data"),
    ]
    assert "bound to non-existent pv(s)" in _pending_reason(objects)


def test_a_waiting_claim_of_a_local_class_goes_where_an_available_volume_is() -> None:
    local = k8s.storage_class("local", "WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner")
    claim = k8s.claim("data", klass="local")
    objects = [
        *BASE,
        local,
        k8s.volume("pv-small", "local", "n1", size="1Gi"),
        k8s.volume("pv-2", "local", "n2"),
        claim,
    ]
    assert _placed_on([*objects, k8s.pod("train", "data")]) == "n2"


def test_a_waiting_claim_of_a_local_class_without_a_matching_volume_fits_no_node() -> None:
    local = k8s.storage_class("local", "WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner")
    taken = k8s.volume("pv-1", "local", "n2", phase="Bound")
    objects = [*BASE, local, taken, k8s.claim("data", klass="local"), k8s.pod("train", "data")]
    assert "node(s) didn't find available persistent volumes to bind" in _pending_reason(objects)


def test_a_waiting_claim_is_provisioned_only_where_the_class_allows() -> None:
    topology = [{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["b"]}]}]
    zonal = k8s.storage_class("zonal", "WaitForFirstConsumer", allowedTopologies=topology)
    other = k8s.volume("pv-other", "standard", None)  # volumes were read; none is of the class
    objects = [*BASE, zonal, other, k8s.claim("data", klass="zonal"), k8s.pod("train", "data")]
    assert _placed_on(objects) == "n2"


@pytest.mark.parametrize("bad", ["not a label value!", "x" * 64])
def test_an_allowed_topology_term_with_a_value_that_is_no_label_value_allows_no_node(bad: str) -> None:
    """The API server accepts it (ValidateTopologySelectorTerm checks keys), but the scheduler builds each term with
    labels.NewRequirement, which refuses the value, and skips the term (k8s.io/kubernetes v1.35.4
    pkg/apis/core/v1/helper/helpers.go, MatchTopologySelectorTerms; a mutation run's review found it)."""
    topology = [{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["b", bad]}]}]
    zonal = k8s.storage_class("zonal", "WaitForFirstConsumer", allowedTopologies=topology)
    other = k8s.volume("pv-other", "standard", None)
    objects = [*BASE, zonal, other, k8s.claim("data", klass="zonal"), k8s.pod("train", "data")]
    assert "node(s) didn't find available persistent volumes to bind" in _pending_reason(objects)


def test_a_waiting_claim_with_a_selected_node_goes_only_there() -> None:
    dynamic = k8s.storage_class("dynamic", "WaitForFirstConsumer")
    claim = k8s.claim("data", klass="dynamic", annotations={"volume.kubernetes.io/selected-node": "n2"})
    assert _placed_on([*BASE, dynamic, claim, k8s.pod("train", "data")]) == "n2"


def test_a_waiting_claim_of_a_dynamic_class_fits_every_node() -> None:
    dynamic = k8s.storage_class("dynamic", "WaitForFirstConsumer")
    live = build([*BASE, dynamic, k8s.claim("data", klass="dynamic"), k8s.pod("train", "data")])
    assert live.snapshot.jobs[0].tasks[0].constraints.volume_nodes is None


# --- what is not read ---------------------------------------------------------------------------------


def test_without_claims_in_the_objects_volumes_are_not_checked_and_the_notes_say_so() -> None:
    live = build([k8s.node("n1", "a"), k8s.queue(), k8s.pod("train", "data")])
    assert live.snapshot.jobs[0].tasks[0].volume_error is None
    assert any("no PersistentVolumeClaims were read: the volumes of 1 pod(s) were not checked" in n for n in live.notes)


def test_without_volumes_in_the_objects_a_bound_claim_is_not_checked() -> None:
    objects = [*BASE, k8s.claim("data", volume="pv-1"), k8s.pod("train", "data")]
    assert build(objects).snapshot.jobs[0].tasks[0].constraints.volume_nodes is None


def test_pods_with_different_claims_are_not_alike_to_kai() -> None:
    """Without --schedule-csi-storage KAI has no claims in its snapshot, so getPVC fails and the PVC volume is
    hashed whole, its claim name included (KAI@v0.17.0 pod_info/pod_storage_requirements.go:26-35, 55-58)."""
    assert constraints_of(k8s.pod("a", "data-0")).other != constraints_of(k8s.pod("b", "data-1")).other
    assert constraints_of(k8s.pod("a", "data-0")).other == constraints_of(k8s.pod("b", "data-0")).other


def test_hostile_volume_fields_are_read_as_nothing_instead_of_failing() -> None:
    """A hand-written dump: an unhashable pod uid with an ephemeral volume, garbage affinity, sizes and selectors."""
    pod = k8s.pod("train", "data")
    pod["metadata"]["uid"] = {"not": "a uid"}
    pod["spec"]["volumes"].append({"name": ["x"], "ephemeral": {}})
    volume = k8s.volume("pv-1", "local", "n2")
    volume["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": "n2"}}
    volume["spec"]["capacity"] = {"storage": "lots"}
    claim = k8s.claim("data", klass="local")
    claim["spec"]["selector"] = {"matchExpressions": [None, {"key": ["k"], "operator": 5}]}
    local = k8s.storage_class("local", "WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner")
    objects = [*BASE, local, volume, claim, k8s.claim("train-['x']"), pod]
    [pending] = diagnose(objects).pending
    assert "its volumes keep it off every node" in pending.reason


def test_a_waiting_claim_with_a_selector_kubernetes_cannot_build_refuses_every_node() -> None:
    """FindMatchingVolume fails on a selector LabelSelectorAsSelector refuses (pv_helpers.go:206-212), and the
    Filter rejects the node with that error instead of trying provisioning."""
    local = k8s.storage_class("local", "WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner")
    claim = k8s.claim("data", klass="local")
    claim["spec"]["selector"] = {"matchExpressions": [{"key": "disk", "operator": "Gt", "values": ["1"]}]}
    reason = _pending_reason([*BASE, local, k8s.volume("pv-1", "local", "n2"), claim, k8s.pod("train", "data")])
    assert "error creating internal label selector for claim: ml/data: " in reason


def test_a_waiting_claims_selector_picks_the_volume_it_names() -> None:
    local = k8s.storage_class("local", "WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner")
    fast = k8s.volume("pv-fast", "local", "n2")
    fast["metadata"]["labels"] = {"disk": "nvme"}
    claim = k8s.claim("data", klass="local")
    claim["spec"]["selector"] = {"matchLabels": {"disk": "nvme"}}
    objects = [*BASE, local, k8s.volume("pv-slow", "local", "n1"), fast, claim, k8s.pod("train", "data")]
    assert _placed_on(objects) == "n2"


def test_the_live_read_takes_claims_volumes_and_classes_through_the_kubernetes_client(
    fake_kube: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real client on loopback: lightkube's typed models go back to the API's field names (nodeAffinity,
    volumeBindingMode, allowedTopologies), which the volume reader reads."""

    def serve(path: str, kind: str, objects: list[dict[str, Any]]) -> None:
        items = [{k: v for k, v in o.items() if k != "kind"} for o in objects]
        fake_kube.responses[path] = {"kind": f"{kind}List", "apiVersion": "v1", "metadata": {}, "items": items}

    topology = [{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["b"]}]}]
    serve("/api/v1/nodes", "Node", [k8s.node("n1", "a")])
    serve("/apis/scheduling.run.ai/v2/queues", "Queue", [k8s.queue()])
    serve("/api/v1/pods", "Pod", [k8s.pod("bound", "data"), k8s.pod("zonal", "scratch")])
    serve("/api/v1/persistentvolumeclaims", "PersistentVolumeClaim", [
        k8s.claim("data", volume="pv-1"), k8s.claim("scratch", klass="zonal"),
    ])  # fmt: skip
    serve("/api/v1/persistentvolumes", "PersistentVolume", [k8s.volume("pv-1", "standard", "n2", "Bound")])
    serve("/apis/storage.k8s.io/v1/storageclasses", "StorageClass", [
        k8s.storage_class("zonal", "WaitForFirstConsumer", allowedTopologies=topology),
    ])  # fmt: skip
    main(["diagnose", "--kubeconfig", str(fake_kube.kubeconfig(tmp_path)), "--json"])
    reasons = {p["pod"]: p["reason"] for p in json.loads(capsys.readouterr().out)["pending"]}
    assert "node(s) didn't match PersistentVolume's node affinity" in reasons["ml/bound"]
    assert "node(s) didn't find available persistent volumes to bind" in reasons["ml/zonal"]


def test_a_live_read_that_finds_no_claims_says_the_pods_claim_is_missing(
    fake_kube: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cluster with no PersistentVolumeClaims at all (common for GPU clusters) answers an empty list: the claims
    were read, so a pod naming one is refused as Kubernetes refuses it, not passed as 'not checked'."""
    fake_kube.responses["/api/v1/nodes"] = {"kind": "NodeList", "items": [k8s.node("n1", "a")]}
    fake_kube.responses["/apis/scheduling.run.ai/v2/queues"] = {"kind": "QueueList", "items": [k8s.queue()]}
    fake_kube.responses["/api/v1/pods"] = {"kind": "PodList", "items": [k8s.pod("train", "data")]}
    fake_kube.responses["/api/v1/persistentvolumeclaims"] = {"kind": "PersistentVolumeClaimList", "items": []}
    main(["diagnose", "--kubeconfig", str(fake_kube.kubeconfig(tmp_path)), "--json"])
    report = json.loads(capsys.readouterr().out)
    [pending] = report["pending"]
    assert 'its volumes keep it off every node: persistentvolumeclaim "data" not found' in pending["reason"]
    assert not any("no PersistentVolumeClaims were read" in n for n in report["notes"])


def test_a_dumps_generic_list_without_claims_still_reads_as_claims_not_read() -> None:
    """`kubectl get ...,pvc -o yaml` prints one `List`: a kind with no objects in it cannot be told from one left
    out of the command, so the pod's volumes are not checked and the notes say so."""
    live = build([{"kind": "List", "items": [k8s.node("n1", "a"), k8s.queue(), k8s.pod("train", "data")]}])
    assert live.snapshot.jobs[0].tasks[0].volume_error is None
    assert any("no PersistentVolumeClaims were read" in n for n in live.notes)
