"""Which Available volume a waiting claim would bind on a node: Kubernetes' FindMatchingVolume, as kaistack reads it.

component-helpers@v0.35.4 storage/volume/pv_helpers.go:186-329 (vendored at openshift-kni/scheduler-plugins@e0b47cd,
vendor/k8s.io/component-helpers, the version KAI@v0.17.0's go.mod pins); the Filter that calls it per node is
k8s.io/kubernetes@v1.35.4 pkg/scheduler/framework/plugins/volumebinding/binder.go:883-902 (claims smallest first,
a volume chosen by one claim of the pod excluded for the next). The last test compares kaistack's indexed reading
with a line-by-line transcription of that loop on generated clusters.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import volume_testlib as k8s
from hypothesis import given, settings
from hypothesis import strategies as st

from kaistack.ops.diagnose import diagnose
from kaistack.ops.live_snapshot import build

NODES = ("n1", "n2", "n3")
LOCAL = k8s.storage_class("local", "WaitForFirstConsumer", provisioner="kubernetes.io/no-provisioner")
BASE = [*(k8s.node(n, "a") for n in NODES), k8s.queue(), LOCAL]


def _claim(name: str, size: str = "10Gi", **spec: Any) -> dict[str, Any]:
    claim = k8s.claim(name, klass="local")
    claim["spec"]["resources"]["requests"]["storage"] = size
    claim["spec"].update(spec)
    return claim


def _volume(name: str, node: str | None, size: str = "20Gi", **spec: Any) -> dict[str, Any]:
    volume = k8s.volume(name, "local", node, size=size)
    volume["spec"].update(spec)
    return volume


def _nodes(objects: list[dict[str, Any]]) -> frozenset[str] | None:
    """Where the volume binding lets the one pod go (None: every node)."""
    [job] = build(objects).snapshot.jobs
    return job.tasks[0].constraints.volume_nodes


def _reason(objects: list[dict[str, Any]]) -> str:
    [pending] = diagnose(objects).pending
    return pending.reason


def test_an_unset_and_an_empty_volume_attributes_class_are_the_same() -> None:
    """ptr.Deref(..., "") on both sides (pv_helpers.go:239-245): a claim naming "" binds a volume naming none."""
    objects = [*BASE, _volume("pv-1", "n2"), _claim("data", volumeAttributesClassName=""), k8s.pod("t", "data")]
    assert _nodes(objects) == {"n2"}


def test_a_volume_of_another_attributes_class_is_not_bound() -> None:
    volume = _volume("pv-1", "n2", volumeAttributesClassName="gold")
    assert _nodes([*BASE, volume, _claim("data"), k8s.pod("t", "data")]) == frozenset()


def test_an_empty_claim_ref_holds_the_volume() -> None:
    """`volume.Spec.ClaimRef != nil` (pv_helpers.go:226-228): `claimRef: {}` names no claim, and the volume is
    skipped as one held for another."""
    volume = _volume("pv-1", "n2", claimRef={})
    assert _nodes([*BASE, volume, _claim("data"), k8s.pod("t", "data")]) == frozenset()


def test_a_pre_bound_volume_is_bound_once_when_the_pod_names_its_claim_twice() -> None:
    """The excluded volumes are skipped before the pre-binding check (pv_helpers.go:222-225), and binder.go
    appends a claim once per pod volume: the second mount of the claim finds its volume already chosen."""
    ref = {"namespace": "ml", "name": "data", "uid": "uid-data"}
    objects = [*BASE, _volume("pv-1", "n1", claimRef=ref), _claim("data"), k8s.pod("t", "data", "data")]
    assert _nodes(objects) == frozenset()
    assert _nodes([*BASE, _volume("pv-1", "n1", claimRef=ref), _claim("data"), k8s.pod("t", "data")]) == {"n1"}


def test_claims_of_one_pod_take_the_smallest_volume_each_and_never_the_same_one() -> None:
    """Smallest first: the 15Gi claim takes n1's 20Gi volume, leaving its 30Gi one for the 25Gi claim; on n2 the
    15Gi claim takes the only volume, and the 25Gi claim finds none."""
    volumes = [_volume("pv-a", "n1", "30Gi"), _volume("pv-b", "n1", "20Gi"), _volume("pv-c", "n2", "30Gi")]
    claims = [_claim("big", "25Gi"), _claim("small", "15Gi")]
    assert _nodes([*BASE, *volumes, *claims, k8s.pod("t", "big", "small")]) == {"n1"}


def test_a_nodes_own_volume_and_one_usable_anywhere_compete_on_size() -> None:
    """The 5Gi claim takes n1's 5Gi volume, not the 20Gi one without node affinity, which the 15Gi claim needs."""
    volumes = [_volume("pv-anywhere", None, "20Gi"), _volume("pv-local", "n1", "5Gi")]
    claims = [_claim("small", "5Gi"), _claim("big", "15Gi")]
    assert _nodes([*BASE, *volumes, *claims, k8s.pod("t", "small", "big")]) == {"n1"}


def test_claims_that_differ_only_in_size_each_get_the_volumes_big_enough() -> None:
    volumes = [_volume("pv-a", "n1", "10Gi"), _volume("pv-b", "n2", "20Gi"), _volume("pv-c", "n3", "30Gi")]
    objects = [*BASE, *volumes, _claim("a", "5Gi"), _claim("b", "20Gi"), _claim("c", "21Gi")]
    live = build([*objects, k8s.pod("pa", "a"), k8s.pod("pb", "b"), k8s.pod("pc", "c")])
    nodes = {job.name: job.tasks[0].constraints.volume_nodes for job in live.snapshot.jobs}
    assert sorted(nodes.values(), key=lambda n: len(n or NODES)) == [{"n3"}, {"n2", "n3"}, None]


def test_an_allowed_topology_term_without_expressions_selects_no_node() -> None:
    """MatchTopologySelectorTerms: "nil or empty term selects no objects" (core/v1/helper/helpers.go:247-251)."""
    zonal = k8s.storage_class("zonal", "WaitForFirstConsumer", allowedTopologies=[{}])
    objects = [*BASE, zonal, _volume("pv-1", None), k8s.claim("data", klass="zonal"), k8s.pod("t", "data")]
    assert "node(s) didn't find available persistent volumes to bind" in _reason(objects)


def test_a_volume_affinity_term_kubernetes_cannot_parse_is_left_out_and_the_others_still_match() -> None:
    """LazyErrorNodeSelector skips a term with a parse error (component-helpers scheduling/corev1/nodeaffinity/
    nodeaffinity.go:84-103), so the volume is still usable where its good term matches."""
    bad = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "Near", "values": ["n1"]}]}
    good = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n2"]}]}
    volume = _volume("pv-1", None, nodeAffinity={"required": {"nodeSelectorTerms": [bad, good]}})
    assert _nodes([*BASE, volume, _claim("data"), k8s.pod("t", "data")]) == {"n2"}


def test_a_selector_operator_kubernetes_does_not_know_refuses_the_node_with_its_words() -> None:
    """LabelSelectorAsSelector (apimachinery meta/v1 helpers.go:36-74)."""
    selector = {"matchExpressions": [{"key": "disk", "operator": "Gt", "values": ["1"]}]}
    objects = [*BASE, _volume("pv-1", "n2"), _claim("data", selector=selector), k8s.pod("t", "data")]
    assert 'error creating internal label selector for claim: ml/data: "Gt" is not a valid label selector operator' in (
        _reason(objects)
    )


def test_a_selector_requirement_kubernetes_cannot_build_refuses_the_node() -> None:
    """labels.NewRequirement refuses In without values and Exists with values; the node is refused with the
    error (not passed over to provisioning)."""
    for expression, words in (
        ({"key": "disk", "operator": "In", "values": []}, "for 'in', 'notin' operators, values set can't be empty"),
        ({"key": "disk", "operator": "Exists", "values": ["x"]}, "values set must be empty for exists"),
    ):
        claim = _claim("data", selector={"matchExpressions": [expression]})
        assert words in _reason([*BASE, _volume("pv-1", "n2"), claim, k8s.pod("t", "data")])


def test_two_pods_of_one_cycle_may_both_be_given_the_one_available_volume() -> None:
    """KAI@v0.17.0's scheduler runs the plugin's PreFilter and Filter only (k8s_internal/predicates/predicates.go:
    121-131, volume_binding.go:18-28) and never assumes a volume taken within its session: both pods see pv-1
    Available, and KAI's binder, whose Reserve takes it for the first, leaves the second to fail there."""
    from placement.simulation import simulate

    objects = [*BASE, _volume("pv-1", "n2"), _claim("a"), _claim("b"), k8s.pod("pa", "a"), k8s.pod("pb", "b")]
    result = simulate(build(objects).snapshot, actions=["allocate"])
    assert sorted(task.node or "" for task in result.tasks.values()) == ["n2", "n2"]


# --- the indexed reading against FindMatchingVolume's loop ------------------------------------------------------


def _size(text: str) -> Fraction:
    return Fraction(int(text.removesuffix("Gi")) * 2**30)


def _find_matching_volume(
    claim: dict[str, Any], volumes: list[dict[str, Any]], node: str, excluded: set[str]
) -> dict[str, Any] | None:
    """pv_helpers.go:186-329, scheduler path, line by line (the volumes are the claim's class's, in order)."""
    smallest = None
    for volume in volumes:
        spec = volume["spec"]
        if volume["metadata"]["name"] in excluded:
            continue
        ref = spec.get("claimRef")
        bound = ref is not None and ref.get("name") == claim["metadata"]["name"] and ref.get("namespace") == "ml"
        if ref is not None and not bound:
            continue
        if _size(spec["capacity"]["storage"]) < _size(claim["spec"]["resources"]["requests"]["storage"]):
            continue
        if (claim["spec"].get("volumeAttributesClassName") or "") != (spec.get("volumeAttributesClassName") or ""):
            continue
        affinity = spec.get("nodeAffinity")
        valid = affinity is None or affinity["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == [
            node
        ]
        if bound:
            return volume if valid else None
        if volume["status"]["phase"] != "Available":
            continue
        selector = claim["spec"].get("selector")
        if selector is not None and any(
            volume["metadata"].get("labels", {}).get(k) != v for k, v in selector["matchLabels"].items()
        ):
            continue
        if not valid:
            continue
        if smallest is None or _size(smallest["spec"]["capacity"]["storage"]) > _size(spec["capacity"]["storage"]):
            smallest = volume
    return smallest


def _allowed(pod_claims: list[dict[str, Any]], volumes: list[dict[str, Any]]) -> frozenset[str] | None:
    """findMatchingVolumes per node: claims smallest first (a stable sort for so few), each excluding what the
    ones before chose; a claim without a volume is provisioned, which the no-provisioner class refuses."""
    order = sorted(pod_claims, key=lambda c: _size(c["spec"]["resources"]["requests"]["storage"]))
    allowed = set()
    for node in NODES:
        chosen: set[str] = set()
        for claim in order:
            found = _find_matching_volume(claim, volumes, node, chosen)
            if found is None:
                break
            chosen.add(found["metadata"]["name"])
        else:
            allowed.add(node)
    return None if len(allowed) == len(NODES) else frozenset(allowed)


_SIZES = st.sampled_from(["5Gi", "10Gi", "20Gi"])
_CLASSES = st.sampled_from([None, "", "gold"])
_CLAIMS = ("c0", "c1", "c2")


@st.composite
def _cluster(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    volumes = []
    for i in range(draw(st.integers(0, 7))):
        extra: dict[str, Any] = {}
        if (attributes := draw(_CLASSES)) is not None:
            extra["volumeAttributesClassName"] = attributes
        ref = draw(st.sampled_from([None, "none", *_CLAIMS]))
        if ref is not None:
            extra["claimRef"] = {} if ref == "none" else {"namespace": "ml", "name": ref}
        volume = _volume(f"pv-{i}", draw(st.sampled_from([None, *NODES])), draw(_SIZES), **extra)
        volume["status"]["phase"] = draw(st.sampled_from(["Available", "Available", "Bound", "Released"]))
        if draw(st.booleans()):
            volume["metadata"]["labels"] = {"disk": "nvme"}
        volumes.append(volume)
    claims = []
    for name in _CLAIMS:
        extra = {}
        if (attributes := draw(_CLASSES)) is not None:
            extra["volumeAttributesClassName"] = attributes
        if draw(st.booleans()):
            extra["selector"] = {"matchLabels": {"disk": "nvme"}}
        claims.append(_claim(name, draw(st.sampled_from(["5Gi", "10Gi", "15Gi"])), **extra))
    uses = draw(st.lists(st.sampled_from(_CLAIMS), min_size=1, max_size=3))
    return volumes, claims, uses


@settings(max_examples=300, deadline=None)
@given(_cluster())
def test_the_indexed_reading_agrees_with_find_matching_volume(
    cluster: tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]],
) -> None:
    volumes, claims, uses = cluster
    by_name = {c["metadata"]["name"]: c for c in claims}
    expected = _allowed([by_name[n] for n in uses], volumes)
    read = {"kind": "PersistentVolumeList", "items": volumes}  # none at all is still a read
    assert _nodes([*BASE, read, *claims, k8s.pod("t", *uses)]) == expected
