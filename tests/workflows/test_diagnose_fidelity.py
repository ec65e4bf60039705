"""`kaistack diagnose` reads a cluster's objects as KAI v0.17.0 reads them, and survives what a namespace user may
create (each case from a review, reproduced first: crashes, forged lines, and readings KAI does not make)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kaistack.cli import main

DUMPS = Path(__file__).resolve().parents[1] / "data" / "dumps"
WOULD_PLACE = "KAI would place it in its next cycle"


def _healthy() -> list[dict[str, Any]]:
    return yaml.safe_load((DUMPS / "healthy.yaml").read_text())["items"]


def _run(items: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> Any:
    """(exit code, output) of `diagnose --from-dump` on these objects: the --json report unless `--text`."""
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    text = "--text" in extra
    args = [a for a in extra if a != "--text"]
    code = main(
        ["diagnose", "--from-dump", str(dump), "--at", "2026-11-25T12:00:00Z", *args, *([] if text else ["--json"])]
    )
    out = capsys.readouterr().out
    return code, out if text else json.loads(out)


def _pod(name: str, *, group: str | None = None, annotations: dict[str, str] | None = None, **spec: Any) -> dict:
    """A Pending pod in namespace ai asking for `spec` extras, in PodGroup `group` (pg-<name> by default)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ai",
            "labels": {"kai.scheduler/queue": "test"},
            "annotations": {"pod-group-name": group or f"pg-{name}", **(annotations or {})},
        },
        "spec": {
            "schedulerName": "kai-scheduler",
            "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}],
            **spec,
        },
        "status": {"phase": "Pending"},
    }


def _pod_group(name: str, queue: str = "test", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ai"},
        "spec": {"queue": queue, "minMember": 1, **spec},
    }


def _reason(report: dict[str, Any], pod: str) -> str:
    return next(p["reason"] for p in report["pending"] if p["pod"] == f"ai/{pod}")


# --- trees deeper than the simulator walks ---------------------------------------------------------------------


def test_a_podgroup_with_a_thousand_levels_of_subgroups_is_simulated_as_one_gang(tmp_path, capsys):
    """KAI's webhook checks subgroup names, parents and cycles only (KAI-Scheduler@v0.17.0
    pkg/apis/scheduling/v2alpha2/podgroup_webhook.go:135-175): a chain this deep is valid, and stopped diagnose
    with a RecursionError (exit 70)."""
    chain = [{"name": "s0", "minSubGroup": 1}]
    chain += [{"name": f"s{i}", "parent": f"s{i - 1}", "minSubGroup": 1} for i in range(1, 999)]
    chain += [{"name": "s999", "parent": "s998", "minMember": 1}]
    deep = _pod("deep")
    deep["metadata"]["labels"]["kai.scheduler/subgroup-name"] = "s999"  # the leaf: KAI's one pod set
    items = [*_healthy(), _pod_group("pg-deep", subGroups=chain), deep]
    code, report = _run(items, tmp_path, capsys)
    assert code == 1
    assert _reason(report, "deep").startswith(WOULD_PLACE)
    assert "PodGroup pg-deep: its subGroups nest 1000 levels deep, more than the 64 kaistack simulates" in " ".join(
        report["notes"]
    )


def test_queues_deeper_than_the_simulator_walks_are_left_out_with_a_note(tmp_path, capsys):
    """No Queue webhook bounds the depth in KAI v0.17.0; a chain of a thousand stopped diagnose (exit 70)."""
    queues = [
        {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": f"chain-{i}"}, "spec": spec}
        for i, spec in enumerate([{}] + [{"parentQueue": f"chain-{i}"} for i in range(999)])
    ]
    items = [*_healthy(), *queues, _pod_group("pg-leaf", queue="chain-999"), _pod("leaf")]
    code, report = _run(items, tmp_path, capsys)
    assert code == 1
    assert any("queue(s) sit more than 256 levels deep" in n for n in report["notes"])
    assert _reason(report, "leaf")


# --- what is printed -------------------------------------------------------------------------------------------


def test_a_line_break_in_a_pods_podgroup_name_cannot_forge_lines_of_the_text_report(tmp_path, capsys):
    forged = "x\n  ai/real-job-0 (queue test): KAI would place it in its next cycle\nmistakes:\n  [none] all clear"
    items = [*_healthy(), _pod("evil", group=forged)]
    code, out = _run(items, tmp_path, capsys, "--text")
    lines = out.splitlines()
    assert code == 1
    assert [line for line in lines if line.startswith("  ai/")] == [next(x for x in lines if "ai/evil" in x)]
    assert "mistakes:" not in lines


# --- reading objects as KAI reads them -------------------------------------------------------------------------


def test_a_stale_queue_label_beside_a_podgroup_is_no_mistake(tmp_path, capsys):
    """KAI schedules by the PodGroup's spec.queue alone (KAI-Scheduler@v0.17.0
    pkg/scheduler/cache/cluster_info/cluster_info.go:447-451)."""
    items = _healthy()
    train = next(i for i in items if i["kind"] == "Pod" and i["metadata"]["name"] == "train-0")
    train["metadata"]["labels"]["kai.scheduler/queue"] = "ghost"
    _, report = _run(items, tmp_path, capsys)
    assert [m["code"] for m in report["mistakes"] if m["code"] == "unknown-queue"] == []


def test_a_pending_pod_being_deleted_in_an_unknown_queue_is_no_mistake(tmp_path, capsys):
    """KAI reads a Pending pod with a deletionTimestamp as Releasing, not Pending (KAI-Scheduler@v0.17.0
    pkg/scheduler/api/pod_info/pod_info.go:476-479): "KAI leaves the pod Pending" would be wrong, and it is going."""
    going = _pod("going", group="none-such")
    going["metadata"]["labels"]["kai.scheduler/queue"] = "ghost"
    staying = _pod("staying", group="none-such-either")
    staying["metadata"]["labels"]["kai.scheduler/queue"] = "ghost"
    going["metadata"]["deletionTimestamp"] = "2026-11-25T11:59:30Z"
    _, report = _run([*_healthy(), going, staying], tmp_path, capsys)
    assert [m["object"] for m in report["mistakes"] if m["code"] == "unknown-queue"] == ["Pod ai/staying"]


def test_a_preemptible_podgroup_of_a_deployment_in_a_queue_without_quota_is_no_mistake(tmp_path, capsys):
    """spec.preemptibility wins over the class (KAI-Scheduler@v0.17.0 pkg/common/podgroup/preemptible.go:14-26)."""
    pod = _pod("chat", resources=None)
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    pod["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "chat-7d9f", "apiVersion": "apps/v1"}]
    items = _healthy()
    test_queue = next(i for i in items if i["kind"] == "Queue" and i["metadata"]["name"] == "test")
    test_queue["spec"]["resources"]["gpu"]["quota"] = 0
    for preemptibility, flagged in (("preemptible", False), ("non-preemptible", True)):
        group = _pod_group("pg-chat", preemptibility=preemptibility)
        _, report = _run([*items, group, pod], tmp_path, capsys)
        assert ("deployment-without-quota" in [m["code"] for m in report["mistakes"]]) is flagged, preemptibility


@pytest.mark.parametrize("label", ["80Gi", "11441.9", "1e4", "N-A"])
def test_a_gpu_memory_label_go_cannot_parse_leaves_the_nodes_gpu_memory_unknown(label, tmp_path, capsys):
    """KAI reads the label with strconv.ParseInt and, failing, marks the node's GPU memory not synced, which
    refuses every gpu-memory pod there (KAI-Scheduler@v0.17.0 pkg/scheduler/api/node_info/node_info.go:652-657,
    plugins/predicates/predicates.go:333-336): as if the label were missing."""
    items = _healthy()
    for node in (i for i in items if i["kind"] == "Node" and "nvidia.com/gpu.memory" in i["metadata"]["labels"]):
        node["metadata"]["labels"]["nvidia.com/gpu.memory"] = label
    unlabelled = [dict(i, metadata={**i["metadata"], "labels": {}}) if i["kind"] == "Node" else i for i in items]
    pod = _pod("mem", annotations={"gpu-memory": "2000"})
    _, report = _run([*items, _pod_group("pg-mem"), pod], tmp_path, capsys)
    _, missing = _run([*unlabelled, _pod_group("pg-mem"), pod], tmp_path, capsys)
    assert not _reason(report, "mem").startswith(WOULD_PLACE)
    assert _reason(report, "mem") == _reason(missing, "mem")


def test_a_node_that_allows_no_pods_takes_none(tmp_path, capsys):
    """KAI adds pods=1 to every task and compares it with the node's allocatable pods (KAI-Scheduler@v0.17.0
    pkg/scheduler/api/node_info/node_info.go:131-132, 371-385); 0 was read as the kubelet's default 110."""
    items = _healthy()
    cpu = next(i for i in items if i["kind"] == "Node" and i["metadata"]["name"] == "cpu-0")
    cpu["status"]["allocatable"] = {**cpu["status"]["allocatable"], "pods": "0"}
    pod = _pod("pinned", nodeSelector={"kubernetes.io/hostname": "cpu-0"})
    _, report = _run([*items, _pod_group("pg-pinned"), pod], tmp_path, capsys)
    assert not _reason(report, "pinned").startswith(WOULD_PLACE)


def test_a_gpu_memory_annotation_above_int64_is_no_gpu_request_to_the_scheduler(tmp_path, capsys):
    """Admission takes it (ParseUint), the scheduler's pod reader does not (ParseInt, KAI-Scheduler@v0.17.0
    pkg/scheduler/api/pod_info/pod_info.go:521-525): the pod is scheduled as a CPU pod."""
    pod = _pod("huge", annotations={"gpu-memory": str(2**63)})
    _, report = _run([*_healthy(), _pod_group("pg-huge"), pod], tmp_path, capsys)
    assert _reason(report, "huge").startswith(WOULD_PLACE)


# --- what a dump leaves out ------------------------------------------------------------------------------------


def test_a_dump_of_nodes_alone_is_refused_as_nothing_to_diagnose(tmp_path, capsys):
    """It exited 0 ("nothing pending, no mistakes") with a note; live, a cluster whose Pods cannot be read is exit 3.
    Every cluster runs pods in kube-system, so a dump without any is an incomplete dump (exit 2)."""
    nodes = [i for i in _healthy() if i["kind"] == "Node"]
    code, report = _run(nodes, tmp_path, capsys)
    assert code == 2
    assert (
        "dump.json: no Pods in the dump, so there is nothing to diagnose (dump them with -A: `kubectl get"
        in (report["error"])
    )
    assert "configmaps" not in report["error"]  # their data: the names-only form is the README's


def test_a_dump_of_pods_alone_is_refused_too(tmp_path, capsys):
    pods = [i for i in _healthy() if i["kind"] != "Node"]
    code, report = _run(pods, tmp_path, capsys)
    assert code == 2
    assert "no Nodes in the dump, so there is nothing to diagnose" in report["error"]


def test_a_dump_without_queues_is_diagnosed_and_says_so(tmp_path, capsys):
    """A cluster may have no Queue yet: not refused (here every pod runs already, so nothing is pending)."""
    items = [i for i in _healthy() if i["kind"] != "Queue"]
    code, report = _run(items, tmp_path, capsys)
    assert code == 0
    assert any(n.startswith("no Queues were read") for n in report["notes"])


# --- a pod naming a subgroup its PodGroup lacks ----------------------------------------------------------------
# KAI-Scheduler@v0.17.0 pkg/scheduler/api/podgroup_info/job_info.go: the pod sets are the leaf subgroups, else the
# one "default" set (:104, :274-291); SetPodGroup runs before the pods are added (cache/cluster_info/
# cluster_info.go:455-467), and a pod whose subgroup label (none: "default") names no pod set is an invalid task
# with a fit error (:313-322, :664-673), never scheduled.


def _labelled(name: str, sub_group: str | None) -> dict[str, Any]:
    pod = _pod(name, group="pg")
    if sub_group is not None:
        pod["metadata"]["labels"]["kai.scheduler/subgroup-name"] = sub_group
    return pod


@pytest.mark.parametrize(
    ("sub_groups", "label", "named"),
    [
        ([{"name": "a", "minMember": 1}], "zzz", "zzz"),
        ([], "zzz", "zzz"),
        ([{"name": "a", "minMember": 1}], None, "default"),
    ],
    ids=["unknown-subgroup", "subgroup-without-subgroups", "no-label-with-subgroups"],
)
def test_a_pod_naming_a_subgroup_its_podgroup_lacks_is_never_scheduled(tmp_path, capsys, sub_groups, label, named):
    items = [*_healthy(), _pod_group("pg", subGroups=sub_groups), _labelled("p", label)]
    _, report = _run(items, tmp_path, capsys)
    assert _reason(report, "p") == (
        f'Pod references subgroup "{named}", which does not exist in PodGroup ai/pg: KAI never schedules it (the '
        'pod\'s kai.scheduler/subgroup-name label, or none for "default")'
    )


@pytest.mark.parametrize(("sub_groups", "label"), [([{"name": "a", "minMember": 1}], "a"), ([], "default"), ([], None)])
def test_a_pod_in_one_of_its_podgroups_pod_sets_is_scheduled(tmp_path, capsys, sub_groups, label):
    items = [*_healthy(), _pod_group("pg", subGroups=sub_groups), _labelled("p", label)]
    _, report = _run(items, tmp_path, capsys)
    assert _reason(report, "p").startswith(WOULD_PLACE)
