"""Which volume a waiting claim may bind (kaistack.ops.live_storage), pinned where no other test did (found by
mutation testing; the rest is in test_live_volume_matching.py and test_live_volumes.py).

FindMatchingVolume is component-helpers@v0.35.4 storage/volume/pv_helpers.go:186-329 (git -C
/work/.mirror/kubernetes+component-helpers/repo show v0.35.4:<path>, the version KAI@v0.17.0's go.mod pins): the
claim's request :203 (a missing one is Go's zero Quantity), its selector :206-212, IsVolumeBoundToClaim :159-170,
the size :231-233, the volume mode :234-237 (CheckVolumeModeMismatches :331-343), deletion :250-254, the node
affinity :256-266 (CheckNodeAffinity, storage/volume/helpers.go:68-80), a pre-bound volume :268-276, the smallest
:315-318, the access modes :306-313 (CheckAccessModes :346-359); the classes storage/volume/helpers.go:43-64 (the
beta annotation first). The selector's refusals are apimachinery@v0.35.4 pkg/apis/meta/v1/helpers.go:36-74 and
pkg/labels/selector.go:185-205 (git -C /work/.mirror/kubernetes+apimachinery/repo show v0.35.4:<path>).
"""

from __future__ import annotations

from typing import Any

import pytest
import volume_testlib as k8s

from kaistack.ops.diagnose import diagnose
from kaistack.ops.live_snapshot import build

NODES = ("n1", "n2", "n3")
LOCAL = k8s.storage_class("local", "WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner")
BASE = [*(k8s.node(n, "a") for n in NODES), k8s.queue(), LOCAL]
PRE_BOUND = {"namespace": "ml", "name": "data", "uid": "uid-data"}


def _claim(name: str = "data", size: str | None = "10Gi", **spec: Any) -> dict[str, Any]:
    """A claim of the local class (size None: no storage request)."""
    claim = k8s.claim(name, klass="local")
    if size is None:
        del claim["spec"]["resources"]
    else:
        claim["spec"]["resources"]["requests"]["storage"] = size
    claim["spec"].update(spec)
    return claim


def _volume(name: str, node: str | None, size: str | None = "20Gi", **spec: Any) -> dict[str, Any]:
    """An Available volume of the local class on `node` (None: no node affinity; size None: no capacity)."""
    volume = k8s.volume(name, "local", node, size=size or "")
    if size is None:
        del volume["spec"]["capacity"]
    volume["spec"].update(spec)
    return volume


def _nodes(objects: list[dict[str, Any]]) -> frozenset[str] | None:
    """Where the volume binding lets the one pod go (None: every node)."""
    [job] = build(objects).snapshot.jobs
    return job.tasks[0].constraints.volume_nodes


def _nodes_by_pod(objects: list[dict[str, Any]]) -> dict[str, frozenset[str] | None]:
    """Where the volume binding lets each pod go, by the pod's name (each pod is its own job)."""
    jobs = build(objects).snapshot.jobs
    return {job.name.rsplit("/", 1)[-1]: job.tasks[0].constraints.volume_nodes for job in jobs}


def _reason(objects: list[dict[str, Any]]) -> str:
    [pending] = diagnose(objects).pending
    return pending.reason


def _labelled(volume: dict[str, Any], **labels: str) -> dict[str, Any]:
    volume["metadata"]["labels"] = labels
    return volume


# --- what of the volume and the claim is compared --------------------------------------------------------------


def test_a_block_volume_is_bound_only_by_a_block_claim_and_an_unset_mode_is_a_filesystem() -> None:
    """CheckVolumeModeMismatches defaults an unset mode to Filesystem on both sides; the two claims, alike but for
    their mode, each find only the volume of theirs."""
    volumes = [_volume("pv-block", "n1", volumeMode="Block"), _volume("pv-fs", "n2")]
    claims = [_claim("raw", volumeMode="Block"), _claim("files")]
    pods = [k8s.pod("p-raw", "raw"), k8s.pod("p-files", "files")]
    assert _nodes_by_pod([*BASE, *volumes, *claims, *pods]) == {"p-raw": {"n1"}, "p-files": {"n2"}}


def test_a_volume_must_offer_every_access_mode_its_claim_asks_for() -> None:
    """CheckAccessModes: each of the claim's modes among the volume's. Two claims alike but for their modes."""
    volumes = [
        _volume("pv-rwo", "n1", accessModes=["ReadWriteOnce"]),
        _volume("pv-rwx", "n2", accessModes=["ReadWriteMany"]),
        _volume("pv-both", "n3", accessModes=["ReadWriteOnce", "ReadWriteMany"]),
    ]
    claims = [
        _claim("one", accessModes=["ReadWriteOnce"]),
        _claim("two", accessModes=["ReadWriteOnce", "ReadWriteMany"]),
    ]
    pods = [k8s.pod("p-one", "one"), k8s.pod("p-two", "two")]
    assert _nodes_by_pod([*BASE, *volumes, *claims, *pods]) == {"p-one": {"n1", "n3"}, "p-two": {"n3"}}


def test_claims_alike_but_for_their_volume_attributes_class_each_find_the_volumes_of_theirs() -> None:
    volumes = [_volume("pv-gold", "n1", volumeAttributesClassName="gold"), _volume("pv-plain", "n2")]
    claims = [_claim("gold", volumeAttributesClassName="gold"), _claim("plain")]
    pods = [k8s.pod("p-gold", "gold"), k8s.pod("p-plain", "plain")]
    assert _nodes_by_pod([*BASE, *volumes, *claims, *pods]) == {"p-gold": {"n1"}, "p-plain": {"n2"}}


def test_a_volume_being_deleted_is_not_bound() -> None:
    deleting = _volume("pv-deleting", "n1")
    deleting["metadata"]["deletionTimestamp"] = "2026-11-26T00:00:00Z"
    objects = [*BASE, deleting, _volume("pv-2", "n2"), _claim(), k8s.pod("t", "data")]
    assert _nodes(objects) == {"n2"}


def test_a_volume_and_a_claim_whose_class_is_only_the_beta_annotation_are_matched() -> None:
    """GetPersistentVolumeClass and GetPersistentVolumeClaimClass read the beta annotation first: volumes made
    before storageClassName existed carry only it."""
    annotations = {"volume.beta.kubernetes.io/storage-class": "local"}
    volume = _volume("pv-1", "n2")
    del volume["spec"]["storageClassName"]
    volume["metadata"]["annotations"] = annotations
    claim = _claim()
    del claim["spec"]["storageClassName"]
    claim["metadata"]["annotations"] = annotations
    assert _nodes([*BASE, volume, claim, k8s.pod("t", "data")]) == {"n2"}


# --- sizes -------------------------------------------------------------------------------------------------------


def test_a_missing_request_or_capacity_is_zero_as_go_reads_a_missing_quantity() -> None:
    """`Requests[storage]` and `Capacity[storage]` of a map without the key are the zero Quantity: a claim without
    a request binds a volume of capacity 0, and a claim of 0 a volume without a capacity."""
    no_request = [*BASE, _volume("pv-1", "n2", "0"), _claim(size=None), k8s.pod("t", "data")]
    assert _nodes(no_request) == {"n2"}
    no_capacity = [*BASE, _volume("pv-1", "n2", None), _claim(size="0"), k8s.pod("t", "data")]
    assert _nodes(no_capacity) == {"n2"}


def test_a_volume_whose_capacity_cannot_be_read_is_bound_by_no_claim_even_one_asking_for_nothing() -> None:
    objects = [*BASE, _volume("pv-1", "n2", size=""), _claim(size=None), k8s.pod("t", "data")]
    assert _nodes(objects) == frozenset()


def test_the_smaller_of_a_nodes_own_volume_and_one_usable_anywhere_is_taken_whichever_is_looked_at_first() -> None:
    """The 5Gi claim takes the 5Gi volume usable anywhere, not n1's own 20Gi one, which the 15Gi claim needs."""
    volumes = [_volume("pv-anywhere", None, "5Gi"), _volume("pv-local", "n1", "20Gi")]
    claims = [_claim("small", "5Gi"), _claim("big", "15Gi")]
    assert _nodes([*BASE, *volumes, *claims, k8s.pod("t", "small", "big")]) == {"n1"}


# --- node affinity -----------------------------------------------------------------------------------------------


def test_an_available_volume_on_a_node_that_was_not_read_is_bound_on_none() -> None:
    assert _nodes([*BASE, _volume("pv-gone", "n9"), _claim(), k8s.pod("t", "data")]) == frozenset()


def test_a_volume_pre_bound_to_the_claim_on_a_node_that_was_not_read_is_bound_on_none() -> None:
    volume = _volume("pv-gone", "n9", claimRef=PRE_BOUND)
    assert _nodes([*BASE, volume, _claim(), k8s.pod("t", "data")]) == frozenset()


def test_a_volume_whose_required_node_affinity_has_no_terms_is_bound_on_no_node() -> None:
    """MatchNodeSelectorTerms with no term matches no node (component-helpers@v0.35.4
    scheduling/corev1/nodeaffinity/nodeaffinity.go:54-103), so CheckNodeAffinity fails everywhere."""
    volume = _volume("pv-1", None, nodeAffinity={"required": {}})
    assert _nodes([*BASE, volume, _claim(), k8s.pod("t", "data")]) == frozenset()


# --- pre-bound volumes -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ref", [{"namespace": "other", "name": "data"}, {"namespace": "ml", "name": "other"}])
def test_a_volume_pre_bound_to_another_claim_is_not_the_claims(ref: dict[str, str]) -> None:
    """IsVolumeBoundToClaim compares the name and the namespace: pv-theirs, read first, is held for another
    claim (of the same name in another namespace, or another name in the claim's)."""
    theirs = _volume("pv-theirs", "n2", claimRef=ref)
    mine = _volume("pv-mine", "n1", claimRef=PRE_BOUND)
    assert _nodes([*BASE, theirs, mine, _claim(), k8s.pod("t", "data")]) == {"n1"}


def test_a_claim_ref_without_a_uid_names_the_claim_by_namespace_and_name() -> None:
    volume = _volume("pv-1", "n1", claimRef={"namespace": "ml", "name": "data"})
    assert _nodes([*BASE, volume, _claim(), k8s.pod("t", "data")]) == {"n1"}


def test_a_volume_pre_bound_to_an_earlier_claim_of_the_same_name_is_not_bound() -> None:
    """A claimRef with a UID names that claim only: the claim recreated under the same name has another UID."""
    volume = _volume("pv-1", "n1", claimRef={**PRE_BOUND, "uid": "uid-of-the-deleted-claim"})
    assert _nodes([*BASE, volume, _claim(), k8s.pod("t", "data")]) == frozenset()


def test_a_volume_pre_bound_to_the_claim_must_hold_its_request() -> None:
    """The size is checked before the pre-binding: exactly the request is enough, less is not."""
    for size, nodes in (("10Gi", {"n1"}), ("5Gi", frozenset())):
        volume = _volume("pv-1", "n1", size, claimRef=PRE_BOUND)
        assert _nodes([*BASE, volume, _claim(size="10Gi"), k8s.pod("t", "data")]) == nodes


def test_a_volume_pre_bound_to_the_claim_being_deleted_is_not_bound() -> None:
    """Deletion is checked before the pre-binding (as are the volume mode and the attributes class)."""
    volume = _volume("pv-1", "n1", claimRef=PRE_BOUND)
    volume["metadata"]["deletionTimestamp"] = "2026-11-26T00:00:00Z"
    assert _nodes([*BASE, volume, _claim(), k8s.pod("t", "data")]) == frozenset()


def test_a_volume_pre_bound_to_the_claim_without_node_affinity_lets_the_pod_go_anywhere() -> None:
    volume = _volume("pv-1", None, claimRef=PRE_BOUND)
    assert _nodes([*BASE, volume, _claim(), k8s.pod("t", "data")]) is None


def test_a_volume_pre_bound_to_the_claim_decides_alone_though_a_smaller_one_is_available() -> None:
    """FindMatchingVolume returns the pre-bound volume as soon as it meets it, whatever it found before; on n2,
    where the pre-bound one cannot be used, the claim finds nothing."""
    available = _volume("pv-free", "n2", "10Gi")
    mine = _volume("pv-mine", "n1", "50Gi", claimRef=PRE_BOUND)
    assert _nodes([*BASE, available, mine, _claim(), k8s.pod("t", "data")]) == {"n1"}


# --- the claim's selector ----------------------------------------------------------------------------------------


def test_a_claim_selector_takes_each_of_the_four_expression_operators() -> None:
    """In and NotIn with values, Exists and DoesNotExist without (an empty list is none: NewRequirement counts
    them): only pv-match meets all four."""
    expressions = [
        {"key": "disk", "operator": "In", "values": ["nvme"]},
        {"key": "tier", "operator": "NotIn", "values": ["cold"]},
        {"key": "fast", "operator": "Exists", "values": []},
        {"key": "slow", "operator": "DoesNotExist"},
    ]
    volumes = [
        _labelled(_volume("pv-cold", "n1"), disk="nvme", tier="cold", fast="yes"),
        _labelled(_volume("pv-match", "n2"), disk="nvme", tier="hot", fast="yes"),
        _labelled(_volume("pv-slow", "n3"), disk="nvme", fast="yes", slow="yes"),
    ]
    claim = _claim(selector={"matchExpressions": expressions})
    assert _nodes([*BASE, *volumes, claim, k8s.pod("t", "data")]) == {"n2"}


_REFUSED = [
    ({"key": "disk", "operator": "NotIn", "values": []}, "for 'in', 'notin' operators, values set can't be empty"),
    (
        {"key": "disk", "operator": "DoesNotExist", "values": ["x"]},
        "values set must be empty for exists and does not exist",
    ),
    ({"key": "disk", "operator": "Gt", "values": ["1"]}, '"Gt" is not a valid label selector operator'),
]


@pytest.mark.parametrize(("expression", "words"), _REFUSED)
def test_a_selector_kubernetes_cannot_build_refuses_each_node_with_its_words_whole(
    expression: dict[str, Any], words: str
) -> None:
    claim = _claim(selector={"matchExpressions": [expression]})
    reason = _reason([*BASE, _volume("pv-1", "n2"), claim, k8s.pod("t", "data")])
    for node in NODES:
        assert f"on node {node} (error creating internal label selector for claim: ml/data: {words})" in reason


def test_a_selector_that_is_not_a_mapping_refuses_each_node_naming_the_field() -> None:
    """A hand-written dump: the claim's selector is a list. It is not read as no selector (which matches every
    volume)."""
    reason = _reason([*BASE, _volume("pv-1", "n2"), _claim(selector=[]), k8s.pod("t", "data")])
    assert "error creating internal label selector for claim: ml/data: selector: must be a mapping" in reason
