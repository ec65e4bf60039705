"""A cluster's taints, node labels and pods' node constraints as KAI's predicates read them.

KAI@v0.17.0 filters nodes with Kubernetes' NodeAffinity (nodeSelector, required node affinity) and TaintToleration
plugins (pkg/scheduler/k8s_internal/predicates/predicates.go:67-150), reading the pod spec and the Node object as
they are (pkg/scheduler/cache/cluster_info/cluster_info.go:284, 530-551).
"""

from __future__ import annotations

from typing import Any

from kaistack.ops.diagnose import diagnose
from kaistack.ops.live_snapshot import build
from placement import simulate

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
TOLERATE_GPU = {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}


def _node(
    name: str, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    allocatable = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "8"}
    metadata = {"name": name, "labels": labels or {}}
    return {
        "kind": "Node",
        "metadata": metadata,
        "spec": {"taints": taints or []},
        "status": {"allocatable": allocatable},
    }


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    metadata = {"name": name, "namespace": "ml", "labels": {"kai.scheduler/queue": "q"}}
    body = {"schedulerName": "kai-scheduler", "containers": [container], **spec}
    return {"kind": "Pod", "metadata": metadata, "spec": body, "status": {"phase": "Pending"}}


def _queue() -> dict[str, Any]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    resources = {"gpu": unlimited, "cpu": unlimited, "memory": unlimited}
    return {"kind": "Queue", "metadata": {"name": "q"}, "spec": {"resources": resources}}


def test_a_node_s_taints_and_a_pod_s_tolerations_are_read() -> None:
    snap = build([_node("n1", taints=[GPU_TAINT]), _pod("p", **TOLERATE_GPU)]).snapshot
    [taint] = snap.nodes[0].taints
    [toleration] = snap.jobs[0].tasks[0].constraints.tolerations
    assert (taint.key, taint.effect, toleration.operator) == ("nvidia.com/gpu", "NoSchedule", "Exists")


def test_a_node_keeps_only_the_labels_a_pod_s_constraints_read() -> None:
    node = _node("n1", labels={"gpu": "h100", "kubernetes.io/hostname": "n1", "zone": "a"})
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
            }
        }
    }
    snap = build([node, _pod("p", nodeSelector={"gpu": "h100"}, affinity=affinity)]).snapshot
    assert dict(snap.nodes[0].labels) == {"gpu": "h100", "zone": "a"}


def test_diagnose_says_which_taint_keeps_a_pod_off_every_node() -> None:
    objects = [_node("n1", taints=[GPU_TAINT]), _queue(), _pod("want")]
    [pending] = diagnose(objects).pending
    assert pending.reason == (
        "no node passes the pod's node constraints: node n1 has the taint nvidia.com/gpu=true:NoSchedule, "
        "which it does not tolerate"
    )


def test_a_tolerating_pod_is_placed_on_the_tainted_node() -> None:
    objects = [_node("n1", taints=[GPU_TAINT]), _queue(), _pod("want", **TOLERATE_GPU)]
    [pending] = diagnose(objects).pending
    assert pending.would_place is True


def test_a_node_selector_no_node_matches_is_named() -> None:
    objects = [_node("n1", labels={"gpu": "a100"}), _queue(), _pod("want", nodeSelector={"gpu": "h100"})]
    [pending] = diagnose(objects).pending
    assert (
        pending.reason == "no node passes the pod's node constraints: its nodeSelector gpu=h100 does not match node n1"
    )


def test_a_malformed_taint_in_a_dump_is_skipped() -> None:
    snap = build([_node("n1", taints=[{"key": "k", "effect": "Sometimes"}, GPU_TAINT])]).snapshot
    assert [t.key for t in snap.nodes[0].taints] == ["nvidia.com/gpu"]


def test_pods_that_differ_only_in_preferred_affinity_are_not_alike_to_kai() -> None:
    # schedulingConstraintsSignature hashes the whole affinity (scheduling_constraints_signature.go:32-35), so
    # the scheduling signature tells these jobs apart, though no predicate reads a preference.
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    preferring = _pod(
        "b",
        affinity={
            "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": term}]}
        },
    )
    snap = build([_node("n1"), _pod("a"), preferring]).snapshot
    plain, preferred = (job.tasks[0].constraints for job in snap.jobs)
    assert (plain.other, preferred.other != "") == ("", True)
    assert (plain.node_selector, plain.required_terms) == (preferred.node_selector, preferred.required_terms)


# Inter-pod affinity (placement.pod_affinity) reads every pod on a node, other schedulers' included
# (cluster_info.go:530-551; predicates.go:106-117).
ANTI_DB = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "db"}}}
        ]
    }
}


def _host(name: str) -> dict[str, Any]:
    return _node(name, labels={"kubernetes.io/hostname": name})


def _running(name: str, node: str, scheduler: str = "default-scheduler", **spec: Any) -> dict[str, Any]:
    pod = _pod(name, **spec)
    pod["spec"].update(schedulerName=scheduler, nodeName=node)
    pod["metadata"]["labels"] = {"app": "db"}
    pod["status"]["phase"] = "Running"
    return pod


def test_a_pod_s_namespace_and_labels_are_read_for_affinity_terms() -> None:
    [job] = build([_host("n1"), _pod("p")]).snapshot.jobs
    assert (job.tasks[0].namespace, dict(job.tasks[0].pod_labels)) == ("ml", {"kai.scheduler/queue": "q"})


def test_a_kai_pod_keeps_off_the_node_of_another_scheduler_s_pod_its_anti_affinity_selects() -> None:
    objects = [_host("n1"), _host("n2"), _queue(), _running("db", "n1"), _pod("want", affinity=ANTI_DB)]
    # Binpack prefers n1, which the db pod leaves with fewer free GPUs.
    snap = build(objects).snapshot
    result = simulate(snap, actions=["allocate"])
    assert [t.node for t in result.tasks.values()] == ["n2"]


def test_another_scheduler_s_pods_are_dropped_when_no_pod_has_an_affinity_term() -> None:
    snap = build([_host("n1"), _running("db", "n1"), _pod("want")]).snapshot
    assert snap.nodes[0].outside_pods == ()


def test_pods_with_different_scratch_volumes_are_not_alike_but_config_maps_do_not_count() -> None:
    # getStorageRequirements (pod_storage_requirements.go:26-52): volumes without their names, ConfigMaps and
    # Secrets left out.
    def with_volumes(name: str, *volumes: dict[str, Any]) -> dict[str, Any]:
        return _pod(name, volumes=list(volumes))

    shm = {"name": "shm", "emptyDir": {"medium": "Memory"}}
    config = {"name": "cfg", "configMap": {"name": "settings"}}
    snap = build([_node("n1"), with_volumes("a"), with_volumes("b", config), with_volumes("c", shm)]).snapshot
    plain, configured, scratch = (job.tasks[0].constraints.other for job in snap.jobs)
    assert (plain, configured, scratch != "") == ("", "", True)


# Preferred inter-pod terms order nodes (KAI's podaffinity plugin, placement.pod_affinity.affinity_scores); an
# existing pod's preferred terms count for a pod without terms of its own.
SPREAD_DB = {
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 100,
                "podAffinityTerm": {
                    "topologyKey": "kubernetes.io/hostname",
                    "labelSelector": {"matchLabels": {"app": "db"}},
                },
            }
        ]
    }
}


def test_another_scheduler_s_preferred_anti_affinity_sends_a_matching_kai_pod_elsewhere() -> None:
    want = _pod("want")
    want["metadata"]["labels"]["app"] = "db"
    objects = [_host("n1"), _host("n2"), _queue(), _running("db", "n1", affinity=SPREAD_DB), want]
    snap = build(objects).snapshot
    assert snap.nodes[0].outside_pods[0].preferred_anti_affinity[0].weight == 100
    # Binpack alone prefers n1, which the db pod leaves with fewer free GPUs.
    result = simulate(snap, actions=["allocate"])
    assert [t.node for t in result.tasks.values()] == ["n2"]


def test_a_kai_pod_s_preferred_terms_and_their_topology_keys_are_read() -> None:
    snap = build(
        [_node("n1", labels={"kubernetes.io/hostname": "n1", "zone": "a"}), _pod("p", affinity=SPREAD_DB)]
    ).snapshot
    [term] = snap.jobs[0].tasks[0].constraints.preferred_anti_affinity
    assert (term.weight, term.topology_key, dict(snap.nodes[0].labels)) == (
        100,
        "kubernetes.io/hostname",
        {"kubernetes.io/hostname": "n1"},
    )
