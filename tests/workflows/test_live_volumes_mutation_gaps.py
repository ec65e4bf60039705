"""A pod's PersistentVolumeClaims as Kubernetes' VolumeBinding plugin reads them (kaistack.ops.live_volumes), where a
mutation run of live_volumes.py found behaviour no other test pinned: which reason a node gets when two bound claims
fail it, the verdict of a pod without claims, the verdicts pods share (and cannot change), pods whose ephemeral claims
have one name, and the order the reasons are listed in.

The run (260 mutants against test_live_volumes.py, test_live_volume_matching.py, test_live_storage_mutation_gaps.py,
test_live_snapshot.py, test_live_snapshot_mutation_gaps.py and test_diagnose.py): 227 killed, 33 survived, no
timeouts. 7 of the survivors are killed here; the other 26 are equivalent (a False returned as None, `__all__`, a
guard whose outcome another check already decides) or on paths no read reaches (a waiting claim's class was found by
its name, so "no class for claim" and "failed to find storage class" cannot follow).

The rules are k8s.io/kubernetes v1.35.4 (KAI@v0.17.0's go.mod) pkg/scheduler/framework/plugins/volumebinding:
volume_binding.go PreFilter (:313-390), whose Skip is a pod without claims; binder.go FindPodVolumes (:285-389),
whose checkBoundClaims returns at the first bound claim whose volume is missing (ErrReasonPVNotExist) or whose node
affinity refuses the node (ErrReasonNodeConflict); and ephemeral.VolumeClaimName (component-helpers
storage/ephemeral), `<pod>-<volume>`, a claim the pod must own (ephemeral.VolumeIsForPod). The reasons of all nodes
are kaistack's report: each once, sorted.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import volume_testlib as k8s

from kaistack.ops.live_snapshot import build
from kaistack.ops.live_storage import Storage
from kaistack.ops.live_volumes import (
    BIND_CONFLICT,
    NO_VOLUMES,
    NODE_CONFLICT,
    PV_NOT_EXIST,
    VolumeCache,
    pod_volumes,
)
from placement.model import NodeConstraints, Task

ROOT = Path(__file__).resolve().parents[2]
STANDARD = k8s.storage_class("standard", "Immediate")
DYNAMIC = k8s.storage_class("dynamic", "WaitForFirstConsumer")


def _tasks(objects: list[dict[str, Any]]) -> dict[str, Task]:
    """The pods of the read by job (`pod/<namespace>/<name>` for a pod of its own)."""
    return {job.name: task for job in build(objects).snapshot.jobs for task in job.tasks}


def _constraints(objects: list[dict[str, Any]]) -> NodeConstraints:
    [task] = _tasks(objects).values()
    return task.constraints


def _ephemeral(pod: dict[str, Any], volume: str) -> dict[str, Any]:
    pod["spec"]["volumes"].append({"name": volume, "ephemeral": {"volumeClaimTemplate": {"spec": {}}}})
    return pod


# --- checkBoundClaims: the first bound claim that fails decides ---------------------------------------------------


def test_a_bound_claim_whose_volume_is_missing_hides_the_affinity_of_the_claims_after_it() -> None:
    """The claim bound to a volume that does not exist comes first: every node is refused for that alone, though the
    next claim's volume is on n2 only."""
    objects = [
        k8s.node("n1", "a"),
        k8s.node("n2", "b"),
        k8s.queue(),
        STANDARD,
        k8s.volume("pv-1", "standard", "n2", "Bound"),
        k8s.claim("gone", volume="pv-gone"),
        k8s.claim("data", volume="pv-1"),
        k8s.pod("train", "gone", "data"),
    ]
    constraints = _constraints(objects)
    assert (constraints.volume_nodes, constraints.volume_reason) == (frozenset(), PV_NOT_EXIST)


def test_a_bound_claim_whose_volume_is_elsewhere_hides_the_missing_volume_of_the_claims_after_it() -> None:
    """The claim whose volume is on n2 comes first: n1 is refused for its node affinity alone, though the next claim's
    volume does not exist."""
    objects = [
        k8s.node("n1", "a"),
        k8s.queue(),
        STANDARD,
        k8s.volume("pv-1", "standard", "n2", "Bound"),
        k8s.claim("data", volume="pv-1"),
        k8s.claim("gone", volume="pv-gone"),
        k8s.pod("train", "data", "gone"),
    ]
    constraints = _constraints(objects)
    assert (constraints.volume_nodes, constraints.volume_reason) == (frozenset(), NODE_CONFLICT)


# --- PreFilter's Skip, and the verdicts pods share ----------------------------------------------------------------


def test_a_pod_without_claims_is_skipped_with_no_volume_verdict() -> None:
    storage = Storage(claims={}, volumes={}, classes={})
    assert pod_volumes(k8s.pod("train"), storage) is NO_VOLUMES


def test_pods_using_the_same_claims_share_one_verdict_that_none_of_them_can_change() -> None:
    storage = Storage(claims={}, volumes={}, classes={})
    cache = VolumeCache(storage)
    first, second = cache.of(k8s.pod("a", "data")), cache.of(k8s.pod("b", "data"))
    assert first is second
    assert first.error == 'persistentvolumeclaim "data" not found'
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.error = None  # type: ignore[misc]


@pytest.mark.parametrize("with_a_shared_claim", [False, True], ids=["ephemeral-only", "with-a-shared-claim"])
def test_pods_whose_ephemeral_claims_have_one_name_each_get_their_own_verdict(with_a_shared_claim: bool) -> None:
    """`<pod>-<volume>`: pod a's ephemeral volume x-scratch and pod a-x's scratch both name the claim a-x-scratch,
    which pod a-x owns. Pod a is refused (the claim is not its own) and pod a-x is not, whichever is read first, and
    when both also mount one other claim."""
    owner = {"kind": "Pod", "name": "a-x", "uid": "uid-a-x", "controller": True}
    shared = ("data",) if with_a_shared_claim else ()
    objects = [
        k8s.node("n1", "a"),
        k8s.queue(),
        STANDARD,
        k8s.volume("pv-1", "standard", None, "Bound"),
        k8s.volume("pv-2", "standard", None, "Bound"),
        k8s.claim("data", volume="pv-2"),
        k8s.claim("a-x-scratch", volume="pv-1", ownerReferences=[owner]),
    ]
    pods = [_ephemeral(k8s.pod("a", *shared), "x-scratch"), _ephemeral(k8s.pod("a-x", *shared), "scratch")]
    for order in (pods, pods[::-1]):
        errors = {name: task.volume_error for name, task in _tasks([*objects, *order]).items()}
        assert errors == {
            "pod/ml/a": "PVC ml/a-x-scratch was not created for pod ml/a (pod is not owner)",
            "pod/ml/a-x": None,
        }


# --- the report -----------------------------------------------------------------------------------------------------


def test_the_reasons_a_pods_volumes_give_are_listed_in_one_order_whatever_pythons_hash_seed(tmp_path: Path) -> None:
    """n1 is refused for the affinity of pv-1 (on n2) and the selected node of the waiting claim (n3), n2 for the
    missing volume and the selected node, n3 for the affinity: the three reasons are listed sorted, not in the
    order a set of them happens to iterate in, so two runs of `kaistack diagnose` on one dump print the same."""
    objects = [
        k8s.node("n1", "a"),
        k8s.node("n2", "b"),
        k8s.node("n3", "c"),
        k8s.queue(),
        STANDARD,
        DYNAMIC,
        k8s.volume("pv-1", "standard", "n2", "Bound"),
        k8s.claim("data", volume="pv-1"),
        k8s.claim("gone", volume="pv-gone"),
        k8s.claim("scratch", klass="dynamic", annotations={"volume.kubernetes.io/selected-node": "n3"}),
        k8s.pod("train", "data", "gone", "scratch"),
    ]
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"kind": "List", "apiVersion": "v1", "items": objects}))
    reasons = set()
    for seed in ("0", "1", "2", "3"):
        done = subprocess.run(
            [sys.executable, "-m", "kaistack", "diagnose", "--from-dump", str(dump), "--json"],
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.stdout, done.stderr
        [pending] = json.loads(done.stdout)["pending"]
        reasons.add(pending["reason"])
    [reason] = reasons
    assert f"({', '.join(sorted([BIND_CONFLICT, NODE_CONFLICT, PV_NOT_EXIST]))})" in reason
