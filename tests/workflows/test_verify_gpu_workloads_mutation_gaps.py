"""What a mutation run of kaistack/ops/verify_gpu.py and kaistack/ops/verify_workloads.py found unpinned: when the
live GPU groups are compared with the checker's plan, how a gpu-memory share is read off the node's label, which
groups a node row names, and what the workload checks say at their edges.

Against the healthy dev cluster's recorded API responses (fixtures/kube-healthy.json) on loopback, as the neighbouring
verify tests. KAI facts: kai-scheduler/KAI-Scheduler@v0.17.0."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from workflow_testlib import FakeKube, check_detail, failed_checks, verify_json

from kaistack.cli import main
from kaistack.kube.client import KubeClient
from kaistack.ops.verify_common import WorkloadPods
from kaistack.ops.verify_gpu import check_gpu_groups
from kaistack.stack.load import load_stack

ML_PODS = "/api/v1/namespaces/ml/pods"
ALL_PODS = "/api/v1/pods"
WORKER = "/api/v1/nodes/kaistack-dev-worker"
WORKER2 = "/api/v1/nodes/kaistack-dev-worker2"
GROUP = "runai-gpu-group"
INFER_PODS = ("infer-7c9d8b6f4-x7k2p", "infer-7c9d8b6f4-q9m4z")
PLAN = "[infer + infer], [notebook]"


def _edit_workloads(project: Path, edit: Any) -> None:
    file = project / "Pulumi.dev.yaml"
    document = yaml.safe_load(file.read_text())
    document["config"]["kaistack:workloads"] = edit(document["config"]["kaistack:workloads"])
    file.write_text(yaml.safe_dump(document, sort_keys=False))


def _gpu_checks(report: dict[str, Any]) -> list[str]:
    return [c["subject"] for c in report["checks"] if c["check"] == "gpu-group"]


def _gpu_notes(report: dict[str, Any]) -> list[str]:
    return [n for n in report["notes"] if n.startswith("gpu-group:")]


# --- the comparison with the checker's plan -------------------------------------------------------------------------


def test_groups_are_not_compared_with_the_plan_while_a_sharing_pod_is_unplaced(project, fake_kube, capsys):
    """One of infer's pods waits unbound: the live groups are a partial picture, neither a match nor a difference."""
    pod = fake_kube.pod(ML_PODS, INFER_PODS[1])
    pod["spec"].pop("nodeName")
    pod["metadata"]["labels"].pop(GROUP)
    pod["status"] = {"phase": "Pending"}
    _, report = verify_json(project, fake_kube, capsys)
    assert "placement checker" not in _gpu_checks(report)
    assert _gpu_notes(report) == []


def test_without_a_plan_the_library_check_makes_no_plan_row_or_note(project, fake_kube):
    """check_gpu_groups' `expected` defaults to None: no plan, nothing to compare with."""
    config = load_stack(project, "dev").config
    with KubeClient.from_kubeconfig(fake_kube.kubeconfig(project.parent).read_text()) as client:
        results, notes = check_gpu_groups(config, client, WorkloadPods(config, client))
    assert [r.subject for r in results] == ["node kaistack-dev-worker", "node kaistack-dev-worker2"]
    assert notes == []


def test_no_live_group_at_all_is_shown_as_none_against_the_plan(project, fake_kube, capsys):
    for name in (*INFER_PODS, "notebook"):
        del fake_kube.pod(ML_PODS, name)["metadata"]["labels"][GROUP]
    _, report = verify_json(project, fake_kube, capsys)
    assert len(_gpu_notes(report)) == 1
    assert _gpu_notes(report)[0].startswith(
        f"gpu-group: the cluster's GPU groups none differ from the placement checker's plan {PLAN};"
    )


def test_a_multi_device_pods_groups_are_the_ids_after_the_label_prefix(project, fake_kube, capsys):
    """A pod sharing several GPUs carries one `runai-gpu-group/<group>` label per group instead of the plain one
    (pkg/binder/binding/resourcereservation/resource_reservation.go:290-295, pkg/common/resources/gpu_sharing.go:
    102-104): it is in each of those groups."""
    labels = fake_kube.pod(ML_PODS, "notebook")["metadata"]["labels"]
    del labels[GROUP]
    labels |= {f"{GROUP}/aaaaaaaa-0001": "aaaaaaaa-0001", f"{GROUP}/bbbbbbbb-0002": "bbbbbbbb-0002"}
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert _gpu_notes(report)[0].startswith(
        "gpu-group: the cluster's GPU groups [infer + infer], [notebook], [notebook] differ from the placement "
        f"checker's plan {PLAN};"
    )


def test_a_sharing_workload_declared_with_no_replicas_is_not_checked(project, fake_kube, capsys):
    """infer scaled to 0 while its old pods still run: their node is not one of the declared workloads' nodes."""

    def scale_infer_to_zero(workloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
        next(w for w in workloads if w["name"] == "infer")["replicas"] = 0
        return workloads

    _edit_workloads(project, scale_infer_to_zero)
    _, report = verify_json(project, fake_kube, capsys)
    assert "node kaistack-dev-worker" not in _gpu_checks(report)
    assert check_detail(report, "gpu-group", "placement checker") == "GPU groups as the checker planned: [notebook]"


def test_declared_pods_listed_without_a_uid_are_found_on_their_node_by_name(project, fake_kube, capsys):
    for name in INFER_PODS:
        del fake_kube.pod(ML_PODS, name)["metadata"]["uid"]
    _, report = verify_json(project, fake_kube, capsys)
    assert "node kaistack-dev-worker" in _gpu_checks(report)


def test_a_stack_whose_workloads_share_no_gpu_has_no_gpu_group_check(project, fake_kube, capsys):
    def whole_gpus_only(workloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [w for w in workloads if "gpuFraction" not in w]

    _edit_workloads(project, whole_gpus_only)
    _, report = verify_json(project, fake_kube, capsys)
    assert _gpu_checks(report) == []
    assert _gpu_notes(report) == []


def test_the_missing_label_failure_names_at_most_three_pods(project, fake_kube, capsys):
    """infer at 4 replicas, none of its pods labelled with a GPU group."""

    def four_infer(workloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
        next(w for w in workloads if w["name"] == "infer")["replicas"] = 4
        return workloads

    _edit_workloads(project, four_infer)
    for i in range(2):
        pod = copy.deepcopy(fake_kube.pod(ML_PODS, INFER_PODS[0]))
        pod["metadata"] |= {"name": f"infer-7c9d8b6f4-extra{i}", "uid": f"uid-extra{i}"}
        fake_kube.items(ML_PODS).append(pod)
        fake_kube.items(ALL_PODS).append(pod)
    for pod in fake_kube.items(ML_PODS):
        if pod["metadata"]["name"].startswith("infer-"):
            del pod["metadata"]["labels"][GROUP]
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "gpu-group", "infer") == (
        f"no {GROUP} label on infer-7c9d8b6f4-x7k2p, infer-7c9d8b6f4-q9m4z, infer-7c9d8b6f4-extra0"
    )


# --- a node's groups ------------------------------------------------------------------------------------------------


def _small_group(fake_kube: FakeKube, name: str, group: str) -> None:
    """Another namespace's 0.25 pod on kaistack-dev-worker2 in a GPU group of its own."""
    pod = copy.deepcopy(fake_kube.pod(ML_PODS, "notebook"))
    pod["metadata"] |= {"name": name, "namespace": "other", "uid": f"uid-{name}"}
    pod["metadata"]["labels"] = {GROUP: group}
    pod["metadata"]["annotations"] = {"gpu-fraction": "0.25"}
    fake_kube.items(ALL_PODS).append(pod)


def test_of_several_groups_that_fit_one_gpu_the_first_two_in_group_order_are_named(project, fake_kube, capsys):
    """notebook's 9b7e2c14 beside 0a0a0a0a and 1b1b1b1b, each 0.25: any two fit one GPU; the row names the pair
    that sorts first."""
    _small_group(fake_kube, "late", "1b1b1b1b-0000")
    _small_group(fake_kube, "early", "0a0a0a0a-0000")
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "gpu-group", "node kaistack-dev-worker2").startswith(
        "pods early (GPU group 0a0a0a0a, 0.25 GPU) and late (GPU group 1b1b1b1b, 0.25 GPU) fit one GPU"
    )


def test_under_spread_a_nodes_groups_pass_whatever_they_would_fit(project, fake_kube, capsys):
    """kai.placementStrategy spread: gpupack is not in play, so two 0.5 groups on one node are no failure."""
    file = project / "Pulumi.dev.yaml"
    document = yaml.safe_load(file.read_text())
    document["config"]["kaistack:kai"]["placementStrategy"] = "spread"
    file.write_text(yaml.safe_dump(document, sort_keys=False))
    fake_kube.pod(ML_PODS, INFER_PODS[1])["metadata"]["labels"][GROUP] = "c1d2e3f4-0000"
    _, report = verify_json(project, fake_kube, capsys)
    assert ("gpu-group", "node kaistack-dev-worker") not in failed_checks(report)
    assert check_detail(report, "gpu-group", "node kaistack-dev-worker") == (
        "2 GPU groups (spread: no packing expected)"
    )


def test_a_bound_pending_pod_holds_its_share_of_its_gpu_group(project, fake_kube, capsys):
    """Bound (nodeName set) but not yet Running: its 0.5 in a group of its own beside notebook's 0.25 would have fit
    notebook's GPU."""
    _small_group(fake_kube, "starting", "5e5e5e5e-0000")
    pod = fake_kube.pod(ALL_PODS, "starting")
    pod["metadata"]["annotations"]["gpu-fraction"] = "0.5"
    pod["status"] = {"phase": "Pending"}
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert failed_checks(report) == [("gpu-group", "node kaistack-dev-worker2")]


def test_a_group_with_one_share_unknown_has_an_unknown_load(project, fake_kube, capsys):
    """notebook's 0.25 and another pod asking gpu-memory in one group, the node's GPU memory not labelled: the group's
    load is not 0.25."""
    _small_group(fake_kube, "by-memory", "9b7e2c14-0c55-4c8f-8f3a-6e2d1f0a9b22")
    annotations = fake_kube.pod(ALL_PODS, "by-memory")["metadata"]["annotations"]
    annotations.clear()
    annotations["gpu-memory"] = "2850"
    del fake_kube.responses[WORKER2]["metadata"]["labels"]["nvidia.com/gpu.memory"]
    _, report = verify_json(project, fake_kube, capsys)
    assert "node kaistack-dev-worker2" not in _gpu_checks(report)
    assert any(n.startswith("gpu-group: node kaistack-dev-worker2 not checked") for n in report["notes"])


def _notebook_asks_gpu_memory(fake_kube: FakeKube, mib: int, node_label: str) -> None:
    annotations = fake_kube.pod(ML_PODS, "notebook")["metadata"]["annotations"]
    del annotations["gpu-fraction"]
    annotations["gpu-memory"] = str(mib)
    fake_kube.responses[WORKER2]["metadata"]["labels"]["nvidia.com/gpu.memory"] = node_label


@pytest.mark.parametrize(
    ("node_label", "mib", "share"),
    [
        ("11441", 2850, "0.25"),  # the label floored to 11400 MiB (node_info.go:665): exactly a quarter
        ("11441", 2851, "0.26"),  # ceil to 1/100 (gpu_sharing_node_info.go:344-346)
        (str(11400 * 1024 * 1024), 5700, "0.5"),  # bytes (node_info.go:661-673): 11400 MiB
        (str(11399 * 1024 * 1024), 5700, "0.51"),  # 11399 MiB, floored to 11300
        ("1048575", 524250, "0.5"),  # below 1 TiB in MiB: MiB (node_info.go:668-670), floored to 1048500
    ],
)
def test_a_gpu_memory_share_is_the_asked_memory_over_the_nodes_gpu_memory_as_kai_reads_it(
    project, fake_kube, capsys, node_label, mib, share
):
    _notebook_asks_gpu_memory(fake_kube, mib, node_label)
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "gpu-group", "node kaistack-dev-worker2") == f"1 GPU groups (9b7e2c14: {share} GPU)"


def test_a_node_gpu_memory_label_of_1_tib_is_bytes_so_the_share_is_unknown(project, fake_kube, capsys):
    """1048576 is read as bytes (node_info.go:668-673): 1 MiB, floored to 0."""
    _notebook_asks_gpu_memory(fake_kube, 2850, "1048576")
    _, report = verify_json(project, fake_kube, capsys)
    assert "node kaistack-dev-worker2" not in _gpu_checks(report)
    assert any(n.startswith("gpu-group: node kaistack-dev-worker2 not checked") for n in report["notes"])


def test_a_node_read_without_labels_leaves_a_gpu_memory_share_unknown(project, fake_kube, capsys):
    _notebook_asks_gpu_memory(fake_kube, 2850, "11441")
    del fake_kube.responses[WORKER2]["metadata"]["labels"]
    _, report = verify_json(project, fake_kube, capsys)
    assert any(n.startswith("gpu-group: node kaistack-dev-worker2 not checked") for n in report["notes"])


def test_an_unknown_share_sorted_before_a_known_one_leaves_the_node_unchecked(project, fake_kube, capsys):
    """infer-q9m4z asks gpu-memory in group 00000000 on a node whose GPU memory is not labelled, beside infer-x7k2p's
    known 0.5: the pair could fit one GPU or not, whichever group sorts first."""
    pod = fake_kube.pod(ML_PODS, INFER_PODS[1])
    pod["metadata"]["labels"][GROUP] = "00000000-0000"
    del pod["metadata"]["annotations"]["gpu-fraction"]
    pod["metadata"]["annotations"]["gpu-memory"] = "5700"
    del fake_kube.responses[WORKER]["metadata"]["labels"]["nvidia.com/gpu.memory"]
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 0
    assert "node kaistack-dev-worker" not in _gpu_checks(report)
    assert any(n.startswith("gpu-group: node kaistack-dev-worker not checked: the share of GPU group 00000000 is")
               for n in report["notes"])  # fmt: skip


def test_every_group_whose_share_is_unknown_is_named(project, fake_kube, capsys):
    """infer's two pods in two groups on one node, both asking gpu-memory, the node's GPU memory not labelled."""
    for name, group in zip(INFER_PODS, ("00000000-0000", "11111111-0000"), strict=True):
        pod = fake_kube.pod(ML_PODS, name)
        pod["metadata"]["labels"][GROUP] = group
        del pod["metadata"]["annotations"]["gpu-fraction"]
        pod["metadata"]["annotations"]["gpu-memory"] = "5700"
    del fake_kube.responses[WORKER]["metadata"]["labels"]["nvidia.com/gpu.memory"]
    _, report = verify_json(project, fake_kube, capsys)
    note = "gpu-group: node kaistack-dev-worker not checked: the share of GPU group 00000000, 11111111 is not known"
    assert any(n.startswith(note) for n in report["notes"])


# --- workload-running -----------------------------------------------------------------------------------------------


def test_a_workload_declared_with_no_replicas_passes_without_pods(project, fake_kube, capsys):
    def scale_infer_to_zero(workloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
        next(w for w in workloads if w["name"] == "infer")["replicas"] = 0
        return workloads

    _edit_workloads(project, scale_infer_to_zero)
    fake_kube.responses[ML_PODS]["items"] = [p for p in fake_kube.items(ML_PODS) if p["metadata"]["name"] == "notebook"]
    _, report = verify_json(project, fake_kube, capsys)
    infer = [(c["check"], c["ok"], c["detail"]) for c in report["checks"] if c["subject"] == "infer"]
    assert infer == [("workload-running", True, "0 replicas declared")]


def test_a_workload_without_pods_fails_naming_the_namespace_searched(project, fake_kube, capsys):
    fake_kube.responses[ML_PODS]["items"] = [p for p in fake_kube.items(ML_PODS) if p["metadata"]["name"] != "notebook"]
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    notebook = [(c["check"], c["ok"], c["detail"]) for c in report["checks"] if c["subject"] == "notebook"]
    assert notebook == [
        ("workload-running", False, "0/1 pods Running and Ready or Succeeded; no pods found in namespace ml")
    ]


def test_a_succeeded_deployment_pod_does_not_count(project, fake_kube, capsys):
    """A Deployment's pods never finish: a Succeeded one is a replica that stopped."""
    fake_kube.pod(ML_PODS, INFER_PODS[1])["status"] = {"phase": "Succeeded"}
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert check_detail(report, "workload-running", "infer") == (
        f"1/2 pods Running and Ready; {INFER_PODS[1]} Succeeded"
    )


def test_a_succeeded_pod_workload_passes_with_no_image_check(project, fake_kube, capsys):
    """A finished pod ran whatever it ran: workload-image judges only pods that hold their place."""
    pod = fake_kube.pod(ML_PODS, "notebook")
    pod["status"] = {"phase": "Succeeded"}
    pod["spec"]["containers"][0]["image"] = "jupyter/base-notebook:old"
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "workload-running", "notebook") == "1/1 pods Running and Ready or Succeeded"
    assert ("workload-image", "notebook") not in [(c["check"], c["subject"]) for c in report["checks"]]


# --- host Jobs ------------------------------------------------------------------------------------------------------

ML_JOBS = "/apis/batch/v1/namespaces/ml/jobs"
BATCH = (
    "    - name: batch\n      kind: Job\n      namespace: ml\n      queue: team-b\n"
    "      image: ghcr.io/acme/batch:1\n      replicas: 1\n      completions: 3\n"
)


def _batch(project: Path, fake_kube: FakeKube, phases: list[str], *conditions: dict[str, Any]) -> None:
    """Job `batch` (parallelism 1, completions 3) with CPU pods in these phases and its Job object's conditions."""
    stack = project / "Pulumi.dev.yaml"
    stack.write_text(stack.read_text() + BATCH)
    for i, phase in enumerate(phases):
        pod = copy.deepcopy(fake_kube.pod(ML_PODS, "notebook"))
        pod["metadata"] |= {"name": f"batch-{i}", "uid": f"uid-batch-{i}"}
        pod["metadata"]["labels"] = {"app": "batch", "kai.scheduler/queue": "team-b"}
        pod["metadata"]["annotations"] = {"pod-group-name": "pg-batch-1"}
        pod["spec"]["containers"][0]["image"] = "ghcr.io/acme/batch:1"
        if phase != "Running":
            pod["status"] = {"phase": phase}
        fake_kube.items(ML_PODS).append(pod)
        fake_kube.items(ALL_PODS).append(pod)
    job = {"metadata": {"name": "batch", "namespace": "ml"}, "status": {"conditions": list(conditions)}}
    fake_kube.responses[ML_JOBS] = {"kind": "JobList", "apiVersion": "batch/v1", "metadata": {}, "items": [job]}


def test_a_job_its_controller_marked_complete_passes_though_its_pods_are_gone(project, fake_kube, capsys):
    _batch(project, fake_kube, ["Succeeded"], {"type": "Complete", "status": "True"})
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert check_detail(report, "workload-running", "batch") == "complete: 3/3 pods Succeeded"


def test_a_job_condition_that_is_not_true_is_ignored(project, fake_kube, capsys):
    _batch(project, fake_kube, ["Succeeded", "Running"], {"type": "Failed", "status": "False", "reason": "X"})
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert check_detail(report, "workload-running", "batch") == "1/3 pods Succeeded, 1/1 Running and Ready"


def test_a_failed_job_without_reason_or_message_says_so(project, fake_kube, capsys):
    _batch(project, fake_kube, ["Running"], {"type": "Failed", "status": "True"})
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert check_detail(report, "workload-running", "batch") == "Job failed: no reason"


def test_a_failed_jobs_message_is_cut_to_200_characters(project, fake_kube, capsys):
    message = "m" * 300
    _batch(project, fake_kube, ["Running"], {"type": "Failed", "status": "True", "reason": "R", "message": message})
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "workload-running", "batch") == f"Job failed: R: {message[:200]}"


def test_a_job_list_error_other_than_forbidden_is_an_error_not_a_note(project, fake_kube, capsys):
    _batch(project, fake_kube, ["Running"])
    fake_kube.bare[ML_JOBS] = 500
    kubeconfig = fake_kube.kubeconfig(project.parent)
    code = main(["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig), "--json"])
    assert code == 3


def test_a_namespaces_jobs_are_listed_once_for_all_its_jobs(project, fake_kube, capsys):
    _batch(project, fake_kube, ["Succeeded", "Running"])
    stack = project / "Pulumi.dev.yaml"
    stack.write_text(stack.read_text() + BATCH.replace("name: batch", "name: batch2"))
    verify_json(project, fake_kube, capsys)
    assert [path for path, _ in fake_kube.requests].count(ML_JOBS) == 1


# --- workload-image, -scheduler, -pod-group -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("workload", "pod", "why"),
    [
        ("infer", INFER_PODS[0], "a rollout in progress or stuck (see workload-rollout)"),
        ("notebook", "notebook", "run `pulumi up`"),
    ],
)
def test_a_pod_on_another_image_fails_saying_what_replaces_it(project, fake_kube, capsys, workload, pod, why):
    fake_kube.pod(ML_PODS, pod)["spec"]["containers"][0]["image"] = "old:1"
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "workload-image", workload).startswith(f"{pod} runs old:1 (declared ")
    assert check_detail(report, "workload-image", workload).endswith(f"): {why}")


def test_a_pod_with_no_container_image_is_said_to_run_no_image(project, fake_kube, capsys):
    del fake_kube.pod(ML_PODS, "notebook")["spec"]["containers"][0]["image"]
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "workload-image", "notebook").startswith("notebook runs no image (declared ")


def test_an_image_that_only_begins_with_the_declared_one_is_another_image(project, fake_kube, capsys):
    fake_kube.pod(ML_PODS, "notebook")["spec"]["containers"][0]["image"] = "jupyter/base-notebook:2026-08-01-rc1"
    _, report = verify_json(project, fake_kube, capsys)
    assert ("workload-image", "notebook") in failed_checks(report)


def test_passing_image_scheduler_and_pod_group_rows_count_the_pods(project, fake_kube, capsys):
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "workload-image", "infer") == "2 pods run ghcr.io/acme/infer:1.4.2"
    assert check_detail(report, "workload-scheduler", "infer") == "2 pods scheduled by kai-scheduler"
    assert check_detail(report, "workload-pod-group", "infer") == "pod-group-name on 2 pods (2 PodGroups)"
    assert check_detail(report, "workload-pod-group", "notebook") == "pod-group-name on 1 pod (1 PodGroup)"


def test_a_pod_without_a_scheduler_name_is_said_to_use_the_default_scheduler(project, fake_kube, capsys):
    del fake_kube.pod(ML_PODS, "notebook")["spec"]["schedulerName"]
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "workload-scheduler", "notebook") == "notebook uses default-scheduler"


def test_a_pod_without_a_pod_group_is_named(project, fake_kube, capsys):
    del fake_kube.pod(ML_PODS, INFER_PODS[1])["metadata"]["annotations"]["pod-group-name"]
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "workload-pod-group", "infer") == f"no pod-group-name annotation on {INFER_PODS[1]}"
