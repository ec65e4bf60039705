"""What `kaistack diff` warns `pulumi up` would do (kaistack.ops.update_hazards): behaviour a mutation run of
update_hazards.py found that tests/workflows/test_update_hazards.py and test_diff_mutation_gaps.py left unpinned.

The topology's presence and name, a workload whose kind changes, a tenant's NodePort moved to a free port, why a
Job restarts (its parallelism or completions alone), a Job's scheduling metadata, and which default queues KAI's old
release kept when kai.namespace moves.
"""

from __future__ import annotations

from typing import Any

from workflow_testlib import TRAIN_JOB, two_tenant_kind_stack
from workflow_testlib import hazard_kinds as _kinds
from workflow_testlib import hazards_of_change as _update

# --- the Topology object (components.kai: replace_on_changes spec.levels, deleting first) ---

_LEVELS = ["topology.kubernetes.io/zone", "kaistack.io/rack"]


def _labelled(topology: dict[str, Any] | None = None) -> dict[str, Any]:
    """The kind stack with no workloads, its pool labelled for both levels, and the topology given (if any)."""
    raw = two_tenant_kind_stack()
    raw["cluster"]["nodePools"][0]["labels"] = {"topology.kubernetes.io/zone": "z1", "kaistack.io/rack": "r1"}
    if topology is not None:
        raw["cluster"]["topology"] = topology
    return raw


def test_topology_added_where_there_was_none_replaces_nothing() -> None:
    """A first Topology is only created: nothing is deleted, and the diff must not fail on the missing old one."""
    assert _update(_labelled(), lambda r: r["cluster"].update(topology={"name": "dc", "levels": _LEVELS})) == []


def test_topology_removed_replaces_nothing() -> None:
    """Dropping cluster.topology deletes the Topology, which no declared workload names any more: no replacement."""
    assert _update(_labelled({"name": "dc", "levels": _LEVELS}), lambda r: r["cluster"].pop("topology")) == []


def test_topology_renamed_with_other_levels_is_a_new_object_not_a_replacement() -> None:
    """The hazard is one Topology changing its levels; a renamed one is another object, whatever its levels."""
    base = _labelled({"name": "dc", "levels": _LEVELS})
    assert _update(base, lambda r: r["cluster"].update(topology={"name": "dc2", "levels": _LEVELS[:1]})) == []


def test_unchanged_topology_is_no_hazard() -> None:
    """A stack that declares a topology and keeps it as it is must not be told its Topology is deleted."""
    assert _update(_labelled({"name": "dc", "levels": _LEVELS}), lambda r: None) == []


# --- workloads ---


def test_workload_whose_kind_changes_to_a_job_is_restarted_once() -> None:
    """The kind change alone says what happens (the old resource is deleted); no second line about the Job's
    fields, which would claim a running Job is deleted where none ran."""
    base = two_tenant_kind_stack({**TRAIN_JOB, "kind": "Deployment"})
    hazards = _update(base, lambda r: r["workloads"][0].update(kind="Job"))
    assert _kinds(hazards) == [("workload-restarted", "train")]
    assert hazards[0].message == "its kind changes (Deployment -> Job): the running Deployment is deleted"


def test_job_moved_to_another_namespace_says_it_moves() -> None:
    """The message names the cause the user changed: a move, not an in-place field."""
    hazards = _update(two_tenant_kind_stack(TRAIN_JOB), lambda r: r["workloads"][0].update(namespace="batch"))
    (restarted,) = [h for h in hazards if h.kind == "workload-restarted"]
    assert restarted.message == (
        "it moves to another namespace or cluster: the running Job is deleted, then created again"
    )


def test_job_image_change_says_fields_it_cannot_change_in_place_change() -> None:
    """A Job that stays where it is restarts because pulumi-kubernetes cannot patch its template
    (provider/pkg/provider/diff.go); the message must not say it moves."""
    (hazard,) = _update(two_tenant_kind_stack(TRAIN_JOB), lambda r: r["workloads"][0].update(image="t:2"))
    assert hazard.message == "fields it cannot change in place change: the running Job is deleted, then created again"


def _job(replicas: int, completions: int) -> dict[str, Any]:
    return two_tenant_kind_stack({**TRAIN_JOB, "replicas": replicas, "completions": completions})


def test_job_parallelism_alone_changed_restarts_the_job() -> None:
    """pulumi-kubernetes replaces a Job whose .spec.parallelism changes (provider/pkg/provider/diff.go `job`), even
    with its completions and template as they were."""
    assert _kinds(_update(_job(2, 4), lambda r: r["workloads"][0].update(replicas=3))) == [
        ("workload-restarted", "train")
    ]


def test_job_completions_alone_changed_restarts_the_job() -> None:
    """pulumi-kubernetes replaces a Job whose .spec.completions changes (provider/pkg/provider/diff.go `job`), even
    with its parallelism and template as they were."""
    assert _kinds(_update(_job(2, 4), lambda r: r["workloads"][0].update(completions=6))) == [
        ("workload-restarted", "train")
    ]


def test_job_topology_placement_change_is_no_hazard() -> None:
    """A Job's topology annotations sit on the Job's own metadata, which pulumi-kubernetes patches in place; the
    'delete the Pod to apply it' warning is for a bare Pod, and a Job told so would be told to delete a Pod."""
    base = two_tenant_kind_stack({**TRAIN_JOB, "topology": {"required": "topology.kubernetes.io/zone"}})
    base["cluster"]["topology"] = {"name": "dc", "levels": _LEVELS}
    base["cluster"]["nodePools"][0]["labels"] = {"topology.kubernetes.io/zone": "z1", "kaistack.io/rack": "r1"}
    assert _update(base, lambda r: r["workloads"][0].update(topology={"required": "kaistack.io/rack"})) == []


# --- tenants' NodePorts on kind ---


def test_tenant_port_moved_onto_a_port_nobody_held_is_still_named() -> None:
    """No Service holds the new port, so `pulumi up` does not fail, but the tenant's API moves under its users: the
    diff names the move and the port to set to keep it."""
    (moved,) = _update(two_tenant_kind_stack(), lambda r: r["tenants"][1].update(nodePort=31005))
    assert (moved.kind, moved.subject) == ("tenant-port-moved", "beta")
    assert moved.message == "its API NodePort moves 31001 -> 31005; set tenants[].nodePort: 31001 to keep it"


# --- kai.namespace moved: what the old release kept (KAI-Scheduler@v0.17.0 templates/default-queue.yaml:4,10,32) ---


def test_kai_moved_after_a_release_without_default_queues_names_only_the_shard() -> None:
    """The old release never made the default Queues, so none was kept for the new install to fail on."""
    base = two_tenant_kind_stack()
    base["kai"] = {"defaultQueues": {"create": False}}
    (hazard,) = _update(base, lambda r: r.update(kai={"namespace": "kai-system"}))
    assert "(SchedulingShard default, owned by kai-scheduler)" in hazard.message


def test_kai_moved_with_default_queues_turned_off_names_only_the_shard() -> None:
    """The new release installs no default Queues, so Helm has no ownership to check on the ones the old one kept
    (helm/helm@v3.21.4 pkg/action/validate.go): only the shard blocks the install."""
    (hazard,) = _update(
        two_tenant_kind_stack(), lambda r: r.update(kai={"namespace": "kai-system", "defaultQueues": {"create": False}})
    )
    assert "(SchedulingShard default, owned by kai-scheduler)" in hazard.message
