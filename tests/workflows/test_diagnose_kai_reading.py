"""`kaistack diagnose` reads a pod and runs the cycle as KAI v0.17.0's scheduler does, where a review found it did not
(each case reproduced on a dump first): the scheduler's own flag defaults, the pod's priority in the scheduling
signature, the GPU groups a BindRequest selected, pods of a subgroup their PodGroup lacks, an empty GPU group label,
and a pod asking for whole GPUs or a fraction beside a MIG device."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dump_testlib import diagnose_pending as _diagnose
from dump_testlib import node as _node
from dump_testlib import pod as _pod
from dump_testlib import pod_group as _pod_group
from dump_testlib import priority_class as _class
from dump_testlib import queue as _queue

from kaistack.ops import diagnose as diagnose_module
from placement.model import Placement

# --- the scheduler's flags ---------------------------------------------------------------------------------------


def test_diagnose_runs_the_cycle_with_the_schedulers_flag_defaults(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--max-consolidation-preemptees 16 and --use-scheduling-signatures true are the scheduler's defaults
    (KAI@v0.17.0 cmd/scheduler/app/options/options.go:38, :118, :124); the simulator's own defaults are KAI's test
    harness's (-1, off: pkg/scheduler/test_utils/test_utils_builder.go:84)."""
    seen: list[Placement | None] = []
    real = diagnose_module.simulate

    def recording(*args: Any, placement: Placement | None = None, **kwargs: Any) -> Any:
        seen.append(placement)
        return real(*args, placement=placement, **kwargs)

    monkeypatch.setattr(diagnose_module, "simulate", recording)
    _diagnose([_node(), _queue(), _pod_group("a", 0), _pod("a", "a")], tmp_path, capsys)
    assert [(p.max_consolidation_preemptees, p.use_scheduling_signatures) for p in seen if p] == [(16, True)]


def _quota_race(pod_classes: tuple[str, str] | None = None, a_class: str = "train", **a_spec: Any) -> list[Any]:
    """Queue q has no GPU quota; v (class low) holds the one GPU; a then b, both pending, ask for it. A job that
    cannot go over quota fails; b is the same shape as a."""
    a_pod: dict[str, Any] = {}
    b_pod: dict[str, Any] = {}
    if pod_classes:
        a_pod = {"priorityClassName": pod_classes[0], "priority": 7}
        b_pod = {"priorityClassName": pod_classes[1], "priority": 9}
    return [
        _node(),
        _queue(gpu_quota=0),
        _class("low", 40),
        _class("train", 50),
        _class("build", 100),
        _pod_group("v", 0, "low"),
        _pod_group("a", 1, a_class, **a_spec),
        _pod_group("b", 2),
        _pod("v", "v", node="n1"),
        _pod("a", "a", **a_pod),
        _pod("b", "b", **b_pod),
    ]


def test_a_job_no_easier_than_one_of_its_queue_that_failed_is_not_tried(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With signatures on, preempt skips b after a, of the same signature, failed (KAI@v0.17.0 pkg/scheduler/actions/
    preempt/preempt.go:77-85, a non-preemptible job over quota recorded as failed at :106-108): b stays Pending.
    Without them b was reported as pipelined onto n1 (v preempted)."""
    pending = _diagnose(_quota_race(preemptibility="non-preemptible"), tmp_path, capsys)
    assert pending["ml/a"]["wouldPlace"] is False
    assert pending["ml/b"]["wouldPlace"] is False


def test_the_signature_hashes_the_pods_priority_not_the_podgroups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """a's PodGroup is build (100, non-preemptible), b's train, their pods alike (no class, priority 0): KAI's pod
    signature hashes spec.priorityClassName and spec.priority (KAI@v0.17.0 pkg/scheduler/api/pod_info/
    scheduling_constraints_signature.go:52-56), the job's hashes its pod sets' (podgroup_info/job_info.go:647-661),
    never the PodGroup's class, so b is a's equal and skipped."""
    pending = _diagnose(_quota_race(a_class="build"), tmp_path, capsys)
    assert pending["ml/a"]["wouldPlace"] is False
    assert pending["ml/b"]["wouldPlace"] is False


def test_jobs_whose_pods_carry_different_priority_classes_are_told_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same race, the pods' own classes differing (x/7, y/9): their signatures differ, so b is tried after a
    failed, and preempts v."""
    pending = _diagnose(_quota_race(("x", "y"), preemptibility="non-preemptible"), tmp_path, capsys)
    assert pending["ml/a"]["wouldPlace"] is False
    assert pending["ml/b"]["wouldPlace"] is True
    assert "n1" in pending["ml/b"]["reason"]


def test_an_over_quota_reason_names_the_preemptibility_that_made_the_job_non_preemptible(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """a is train (50) made non-preemptible by its PodGroup's spec.preemptibility, which wins over the priority
    (KAI@v0.17.0 pkg/common/podgroup/preemptible.go:14-26): its priority is not why."""
    reason = _diagnose(_quota_race(preemptibility="non-preemptible"), tmp_path, capsys)["ml/a"]["reason"]
    assert "spec.preemptibility non-preemptible never goes over quota" in reason
    assert ">= 100" not in reason


# --- GPU groups -------------------------------------------------------------------------------------------------

HALF = {"gpu-fraction": "0.5"}
SUBGROUP = "kai.scheduler/subgroup-name"
GROUP = "runai-gpu-group"
# Running pods of class build (100) are not preemptible, so consolidation does not move a share to make room.
_UNMOVABLE = (_class("build", 100), _class("train", 50))


def _bind_request(pod: str, *groups: str) -> dict[str, Any]:
    return {
        "kind": "BindRequest",
        "metadata": {"name": pod, "namespace": "ml"},
        "spec": {"podName": pod, "selectedNode": "n1", "selectedGPUGroups": list(groups)},
        "status": {"phase": "Succeeded"},
    }


def _two_gpus_half_taken(*extra: dict[str, Any], share: dict[str, Any]) -> list[dict[str, Any]]:
    """n1's two GPUs each hold half of `share` (a running pod) and a 0.5 pod (s1 on g1, s2 on g2); w, pending,
    asks for 0.5."""
    return [
        _node(gpus=2),
        _queue(),
        *(_pod_group(name, i) for i, name in enumerate(("multi", "s1", "s2", "w"))),
        share,
        _pod("s1", "s1", node="n1", requests={}, annotations=HALF, labels={"runai-gpu-group": "g1"}),
        _pod("s2", "s2", node="n1", requests={}, annotations=HALF, labels={"runai-gpu-group": "g2"}),
        _pod("w", "w", requests={}, annotations=HALF),
        *extra,
    ]


def test_a_running_multi_device_share_holds_the_gpus_its_bind_request_selected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The binder labels a multi-device share with `runai-gpu-group/<g>` only, never `runai-gpu-group`
    (KAI@v0.17.0 pkg/binder/binding/resourcereservation/resource_reservation.go:290-295), so GetGpuGroups finds
    none (pkg/common/resources/gpu_sharing.go:87-93) and KAI takes its groups from its Succeeded BindRequest, which
    stays for the pod's life and wins over the labels (pkg/scheduler/cache/cache.go:355-381, 446-476;
    pkg/scheduler/api/pod_info/pod_info.go:505-510): g1 and g2 are full. It was given two fresh GPUs, and w a
    place."""
    multi = _pod(
        "multi",
        "multi",
        node="n1",
        requests={},
        annotations={**HALF, "gpu-fraction-num-devices": "2"},
        labels={"runai-gpu-group/g1": "g1", "runai-gpu-group/g2": "g2"},
    )
    items = _two_gpus_half_taken(
        _bind_request("multi", "g1", "g2"), _bind_request("s1", "g1"), _bind_request("s2", "g2"), share=multi
    )
    pending = _diagnose(items, tmp_path, capsys)
    assert pending["ml/w"]["wouldPlace"] is False
    assert "fits no shared GPU" in pending["ml/w"]["reason"]


def test_a_bind_requests_gpu_group_wins_over_the_pods_label(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A running 0.5 share labelled g9 (edited by hand) whose BindRequest selected g1: KAI counts it on g1 with s1
    (pod_info.go:505-510), one GPU in all, and n1's other GPU is free for w's whole GPU; on g9 the two shares would
    hold both GPUs."""
    items = [
        _node(gpus=2),
        _queue(),
        *_UNMOVABLE,
        *(_pod_group(name, i, "build") for i, name in enumerate(("share", "s1"))),
        _pod_group("w", 2),
        _pod("share", "share", node="n1", requests={}, annotations=HALF, labels={"runai-gpu-group": "g9"}),
        _pod("s1", "s1", node="n1", requests={}, annotations=HALF, labels={"runai-gpu-group": "g1"}),
        _pod("w", "w"),
        _bind_request("share", "g1"),
    ]
    assert _diagnose(items, tmp_path, capsys)["ml/w"]["wouldPlace"] is True


def test_shares_with_an_empty_gpu_group_label_share_one_gpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """GetGpuGroups checks the label's key, not its value (gpu_sharing.go:87-93): two 0.5 shares labelled "" are
    one group "" on one GPU (pkg/scheduler/api/node_info/gpu_sharing_node_info.go:73-128), so the node's second
    GPU is free for a whole-GPU pod. The empty value was dropped and each share given a GPU of its own."""
    empty = {"runai-gpu-group": ""}
    items = [
        _node(gpus=2),
        _queue(),
        *_UNMOVABLE,
        *(_pod_group(name, i, "build") for i, name in enumerate(("s1", "s2"))),
        _pod_group("w", 2),
        _pod("s1", "s1", node="n1", requests={}, annotations=HALF, labels=empty),
        _pod("s2", "s2", node="n1", requests={}, annotations=HALF, labels=empty),
        _pod("w", "w"),
    ]
    assert _diagnose(items, tmp_path, capsys)["ml/w"]["wouldPlace"] is True


# --- subgroups --------------------------------------------------------------------------------------------------


def test_a_running_pod_of_a_subgroup_its_podgroup_lacks_is_not_charged_to_its_queue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """x runs with a GPU under PodGroup g (subGroups [a]) but names subgroup zzz: KAI keeps it out of every pod set
    and of its job's allocation (KAI@v0.17.0 pkg/scheduler/api/podgroup_info/job_info.go:313-323;
    pkg/scheduler/plugins/proportion/proportion.go:359-370), so queue q (GPU limit 1) has none allocated and w
    gets n1's second GPU. It was charged to q, and w reported over q's limit."""
    items = [
        _node(gpus=2),
        _queue(gpu_limit=1),
        _pod_group("g", 0, subGroups=[{"name": "a", "minMember": 1}]),
        _pod_group("w", 1),
        _pod("x", "g", node="n1", labels={SUBGROUP: "zzz"}),
        _pod("w", "w"),
    ]
    assert _diagnose(items, tmp_path, capsys)["ml/w"]["wouldPlace"] is True


def test_a_running_pod_of_a_subgroup_its_podgroup_lacks_still_holds_its_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every pod is on its node in KAI's cache (KAI@v0.17.0 pkg/scheduler/cache/cluster_info/cluster_info.go:
    530-551): on a one-GPU node x's GPU is not free for w."""
    items = [
        _node(gpus=1),
        _queue(),
        _pod_group("g", 0, subGroups=[{"name": "a", "minMember": 1}]),
        _pod_group("w", 1),
        _pod("x", "g", node="n1", labels={SUBGROUP: "zzz"}),
        _pod("w", "w"),
    ]
    pending = _diagnose(items, tmp_path, capsys)
    assert pending["ml/w"]["wouldPlace"] is False
    assert "0 free" in pending["ml/w"]["reason"]


# --- whole GPUs beside MIG devices ------------------------------------------------------------------------------


def _whole_and_mig_on_a_mixed_node(whole_gpus: int) -> list[dict[str, Any]]:
    """A mixed-strategy MIG node of 7 mig-1g.5gb devices and `whole_gpus` GPUs not in MIG mode; a pending pod asking
    one whole GPU and one device."""
    node = _node(gpus=whole_gpus, **{"nvidia.com/mig-1g.5gb": "7"})
    node["metadata"]["labels"]["nvidia.com/mig.strategy"] = "mixed"
    both = _pod("both", "g", requests={"nvidia.com/gpu": "1", "nvidia.com/mig-1g.5gb": "1"})
    return [node, _queue(), _pod_group("g", 0), both]


def test_a_pod_asking_a_whole_gpu_beside_a_mig_device_does_not_fit_a_node_of_mig_devices_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Admission allows it (KAI@v0.17.0 pkg/binder/plugins/gpusharing/gpu-request/gpu_request_validator.go:16-62);
    KAI keeps the GPU count beside the MIG map (pkg/scheduler/api/resource_info/resource_requirment.go:53-63) and
    fits the whole vector (pkg/scheduler/api/node_info/node_info.go:351-352, 755-761): a node of MIG devices and
    no whole GPU does not take it. It was read as a MIG request alone and placed there."""
    pending = _diagnose(_whole_and_mig_on_a_mixed_node(whole_gpus=0), tmp_path, capsys)
    assert pending["ml/both"]["wouldPlace"] is False
    assert "1 GPU" in pending["ml/both"]["reason"]


# --- GPU shares outside every job -------------------------------------------------------------------------------


def _share_outside(pod_group: dict[str, Any] | None, **labels: str) -> list[dict[str, Any]]:
    """n1 has one GPU; x, a running 0.5 share on group g1 with `labels`, is no job's task (its PodGroup `pod_group`
    lacks its subgroup, or is gone); w, pending, asks for the whole GPU."""
    x = _pod("x", "g", node="n1", requests={}, annotations=HALF, labels={"runai-gpu-group": "g1", **labels})
    return [_node(gpus=1), _queue(), *([pod_group] if pod_group else []), _pod_group("w", 1), x, _pod("w", "w")]


@pytest.mark.parametrize(
    "items",
    [
        _share_outside(_pod_group("g", 0, subGroups=[{"name": "a", "minMember": 1}]), **{SUBGROUP: "zzz"}),
        _share_outside(None),
    ],
    ids=["subgroup-its-podgroup-lacks", "podgroup-gone"],
)
def test_a_running_gpu_share_outside_every_job_still_holds_its_gpu(
    items: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every pod is on its node (KAI@v0.17.0 pkg/scheduler/cache/cluster_info/cluster_info.go:530-551), and adding
    one charges a share's GPU groups (pkg/scheduler/api/node_info/node_info.go:495, gpu_sharing_node_info.go:73-128),
    whatever job it is in: g1 takes n1's GPU. Its fraction was not counted, and w was said to fit."""
    pending = _diagnose(items, tmp_path, capsys)
    assert pending["ml/w"]["wouldPlace"] is False
    assert "0 free" in pending["ml/w"]["reason"]


def test_gpu_shares_outside_every_job_on_one_group_share_its_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two 0.5 shares on g1 hold one GPU between them, so n1's second GPU is w's."""
    node = _node(gpus=2)
    halves = [
        _pod(name, "gone", node="n1", requests={}, annotations=HALF, labels={"runai-gpu-group": "g1"})
        for name in ("x", "y")
    ]
    items = [node, _queue(), _pod_group("w", 1), *halves, _pod("w", "w")]
    assert _diagnose(items, tmp_path, capsys)["ml/w"]["wouldPlace"] is True


def test_a_gpu_share_asking_a_mig_device_too_needs_the_device_on_its_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Admission allows a fraction beside a MIG device (gpu_request_validator.go:32-38). The fraction replaces the
    pod's GPU requirement (KAI@v0.17.0 pkg/scheduler/api/pod_info/pod_info.go:527-531) but its vector keeps the MIG
    device (:215, 576-583), which the fraction's fit compares with every dimension but GPUs
    (pkg/scheduler/api/node_info/node_info.go:355, 371-388): a node without that device does not take it. The MIG
    request was dropped and the pod placed."""
    items = [
        _node(gpus=1),
        _queue(),
        _pod_group("g", 0),
        _pod("fm", "g", requests={"nvidia.com/mig-1g.5gb": "1"}, annotations=HALF),
    ]
    pending = _diagnose(items, tmp_path, capsys)
    assert pending["ml/fm"]["wouldPlace"] is False
    assert (
        "no node fits 0.5 GPU, 1 x nvidia.com/mig-1g.5gb: closest miss n1 (0 nvidia.com/mig-1g.5gb free)"
        in (pending["ml/fm"]["reason"])
    )


def test_a_mixed_mig_nodes_whole_gpus_take_a_pod_asking_a_mig_device_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """KAI's node offers its allocatable nvidia.com/gpu (KAI@v0.17.0 pkg/scheduler/api/node_info/node_info.go:105),
    GPUs not in MIG mode, which on a mixed node only a MIG candidate may use (:340-343); a pod asking both is one
    (pod_info.go:550-553) and fits."""
    pending = _diagnose(_whole_and_mig_on_a_mixed_node(whole_gpus=1), tmp_path, capsys)
    assert pending["ml/both"]["wouldPlace"] is True


def test_a_running_share_beside_a_mig_device_is_charged_the_device_in_its_queue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its AcceptedResourceVector is its vector with the GPU set to the share (KAI@v0.17.0
    pkg/scheduler/api/node_info/node_info.go:747-753): the MIG device stays, and the queue's allocation counts it in
    TotalGPUs (pkg/scheduler/plugins/proportion/proportion.go:367; resource_vector.go:274-288): 0.5 + 1 against q's
    limit of 1 leaves no room for w's 0.5 (capacity_policy/max_allowed_check.go:61). It was charged 0.5."""
    node = _node(gpus=2, **{"nvidia.com/mig-1g.10gb": "1"})
    items = [
        node,
        _queue(gpu_limit=1),
        _pod_group("fm", 0),
        _pod_group("w", 1),
        _pod("fm", "fm", node="n1", requests={"nvidia.com/mig-1g.10gb": "1"}, annotations=HALF, labels={GROUP: "g1"}),
        _pod("w", "w", requests={}, annotations=HALF),
    ]
    pending = _diagnose(items, tmp_path, capsys)
    assert pending["ml/w"]["wouldPlace"] is False
    assert "over its gpu limit" in pending["ml/w"]["reason"]


def test_a_share_of_another_scheduler_asking_a_whole_gpu_too_holds_only_its_group(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A shared allocation's accepted vector has no whole GPU (pkg/scheduler/api/node_info/gpu_sharing_node_info.go:
    57-63): on a 2-GPU node the share's group takes one GPU and w gets the other. It was charged a whole GPU too.
    (KAI's admission refuses the combination for its own pods, gpu_request_validator.go:32-34.)"""
    other = _pod("other", "none", node="n1", requests={"nvidia.com/gpu": "1"}, annotations=HALF, labels={GROUP: "g1"})
    other["spec"]["schedulerName"] = "default-scheduler"
    items = [_node(gpus=2), _queue(), _pod_group("w", 1), other, _pod("w", "w")]
    assert _diagnose(items, tmp_path, capsys)["ml/w"]["wouldPlace"] is True


def test_a_share_over_its_gpus_memory_reads_as_no_room_not_negative_room(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 40000 MiB share on a node without the nvidia.com/gpu.memory label (KAI assumes 100 MiB) over-commits its
    group; the fragmentation figure said -399.00 free."""
    share = _pod("big", "gone", node="n1", requests={}, annotations={"gpu-memory": "40000"}, labels={GROUP: "g1"})
    items = [_node(gpus=1), _queue(), _pod_group("w", 1), share, _pod("w", "w", requests={}, annotations=HALF)]
    reason = _diagnose(items, tmp_path, capsys)["ml/w"]["reason"]
    assert "0.00 free on n1/g1" in reason
    assert "-" not in reason.split("fragmentation")[-1]
