"""More of what a mutation run of kaistack/ops/verify_gpu.py and kaistack/ops/verify_workloads.py found unpinned:
what a passing node row lists, which pods a node's groups are built from, the plan under spread, and the workload
rows' edges.

Against the healthy dev cluster's recorded API responses (fixtures/kube-healthy.json) on loopback, as the neighbouring
verify tests. KAI facts: kai-scheduler/KAI-Scheduler@v0.17.0."""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from test_workflow_verify_workloads import BATCH, _cpu_pod, _declare
from workflow_testlib import FakeKube, check_detail, failed_checks, verify_json

from kaistack.kube.client import KubeClient
from kaistack.ops.verify_common import WorkloadPods
from kaistack.ops.verify_gpu import check_gpu_groups
from kaistack.stack.load import load_stack

ML_PODS = "/api/v1/namespaces/ml/pods"
TENANT_PODS = "/api/v1/namespaces/vcluster-team-a/pods"
ALL_PODS = "/api/v1/pods"
GROUP = "runai-gpu-group"
INFER_PODS = ("infer-7c9d8b6f4-x7k2p", "infer-7c9d8b6f4-q9m4z")


def _edit_stack(project: Path, key: str, edit: Any) -> None:
    file = project / "Pulumi.dev.yaml"
    document = yaml.safe_load(file.read_text())
    document["config"][key] = edit(document["config"][key])
    file.write_text(yaml.safe_dump(document, sort_keys=False))


def _gpu_checks(report: dict[str, Any]) -> list[str]:
    return [c["subject"] for c in report["checks"] if c["check"] == "gpu-group"]


# --- a node's groups ------------------------------------------------------------------------------------------------


def test_a_passing_node_row_lists_each_group_with_its_load(project, fake_kube, capsys):
    """notebook's 0.25 moved beside infer's full GPU (3f0c1a52): the two cannot merge, and the row shows both."""
    fake_kube.pod(ML_PODS, "notebook")["spec"]["nodeName"] = "kaistack-dev-worker"
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "gpu-group", "node kaistack-dev-worker") == (
        "2 GPU groups (3f0c1a52: 1 GPU, 9b7e2c14: 0.25 GPU)"
    )


def test_two_groups_that_fit_one_gpu_fail_naming_both_and_why(project, fake_kube, capsys):
    """infer's second pod in a group of its own: 0.5 + 0.5 fits one GPU, and gpupack would have shared it."""
    fake_kube.pod(ML_PODS, INFER_PODS[1])["metadata"]["labels"][GROUP] = "c1d2e3f4-0000"
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "gpu-group", "node kaistack-dev-worker") == (
        f"pods {INFER_PODS[0]} (GPU group 3f0c1a52, 0.5 GPU) and {INFER_PODS[1]} (GPU group c1d2e3f4, 0.5 GPU) fit one "
        "GPU but are on two; binpack shares one GPU"
    )


def test_a_node_left_unchecked_says_which_label_could_not_be_read(project, fake_kube, capsys):
    """notebook asks gpu-memory; kaistack-dev-worker2 has no nvidia.com/gpu.memory label to convert it with."""
    annotations = fake_kube.pod(ML_PODS, "notebook")["metadata"]["annotations"]
    del annotations["gpu-fraction"]
    annotations["gpu-memory"] = "2850"
    del fake_kube.responses["/api/v1/nodes/kaistack-dev-worker2"]["metadata"]["labels"]["nvidia.com/gpu.memory"]
    _, report = verify_json(project, fake_kube, capsys)
    assert (
        "gpu-group: node kaistack-dev-worker2 not checked: the share of GPU group 9b7e2c14 is not known (its pods ask "
        "gpu-memory, and the node's nvidia.com/gpu.memory label could not be read: missing, not a number, or the node "
        "not readable with these credentials)"
    ) in report["notes"]


def test_an_empty_gpu_group_label_names_no_group(project, fake_kube, capsys):
    fake_kube.pod(ML_PODS, "notebook")["metadata"]["labels"][GROUP] = ""
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert check_detail(report, "gpu-group", "notebook") == f"no {GROUP} label on notebook"


def test_a_pod_in_several_gpu_groups_is_in_no_node_row(project, fake_kube, capsys):
    """A pod sharing several GPUs (one `runai-gpu-group/<group>` label each, pkg/binder/binding/resourcereservation/
    resource_reservation.go:290-295) spreads its share over them: no one group's load is known."""
    labels = fake_kube.pod(ML_PODS, "notebook")["metadata"]["labels"]
    del labels[GROUP]
    labels |= {f"{GROUP}/aaaaaaaa-0001": "aaaaaaaa-0001", f"{GROUP}/bbbbbbbb-0002": "bbbbbbbb-0002"}
    _, report = verify_json(project, fake_kube, capsys)
    assert "node kaistack-dev-worker2" not in _gpu_checks(report)


def test_a_pod_asking_a_fraction_of_several_devices_is_in_no_node_row(project, fake_kube, capsys):
    fake_kube.pod(ML_PODS, "notebook")["metadata"]["annotations"]["gpu-fraction-num-devices"] = "2"
    _, report = verify_json(project, fake_kube, capsys)
    assert "node kaistack-dev-worker2" not in _gpu_checks(report)


def test_a_tenants_sharing_pod_without_a_gpu_group_fails_under_the_tenants_name(project, fake_kube, capsys):
    """team-a's Pod `lab` asks 0.25 GPU; its synced pod in vcluster-team-a carries no runai-gpu-group label."""
    stack = project / "Pulumi.dev.yaml"
    stack.write_text(
        stack.read_text()
        + "    - name: lab\n      kind: Pod\n      tenant: team-a\n      queue: team-a\n"
        + "      image: jupyter/base-notebook:2026-08-01\n      gpuFraction: 0.25\n"
    )
    pod = copy.deepcopy(fake_kube.pod(TENANT_PODS, "train-worker-0-x-default-x-team-a"))
    pod["metadata"] |= {"name": "lab-x-default-x-team-a", "uid": "uid-lab"}
    pod["metadata"]["labels"] = {
        "app": "lab",
        "kai.scheduler/queue": "team-a",
        "vcluster.loft.sh/managed-by": "team-a",
        "vcluster.loft.sh/namespace": "default",
    }
    pod["metadata"]["annotations"] |= {"vcluster.loft.sh/object-name": "lab", "gpu-fraction": "0.25"}
    fake_kube.items(TENANT_PODS).append(pod)
    fake_kube.items(ALL_PODS).append(pod)
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "gpu-group", "team-a/lab") == f"no {GROUP} label on lab-x-default-x-team-a"


def test_a_group_holding_no_share_is_a_known_zero_load(project, fake_kube, capsys):
    """Another namespace's pod annotated gpu-fraction 0 in a group of its own beside notebook's 0.25: 0 + 0.25 fits
    one GPU; a share of 0 is known, not unknown."""
    pod = copy.deepcopy(fake_kube.pod(ML_PODS, "notebook"))
    pod["metadata"] |= {"name": "idle", "namespace": "other", "uid": "uid-idle"}
    pod["metadata"]["labels"] = {GROUP: "0e0e0e0e-0000"}
    pod["metadata"]["annotations"] = {"gpu-fraction": "0"}
    fake_kube.items(ALL_PODS).append(pod)
    _, report = verify_json(project, fake_kube, capsys)
    assert failed_checks(report) == [("gpu-group", "node kaistack-dev-worker2")]
    assert check_detail(report, "gpu-group", "node kaistack-dev-worker2").startswith(
        "pods idle (GPU group 0e0e0e0e, 0 GPU) and notebook (GPU group 9b7e2c14, 0.25 GPU) fit one GPU"
    )


def test_the_shared_pods_are_listed_by_the_gpu_group_label(project, fake_kube, capsys):
    """Across all namespaces, only pods carrying runai-gpu-group are asked for (the label selector `runai-gpu-group`,
    an exists test)."""
    verify_json(project, fake_kube, capsys)
    assert [params.get("labelSelector") for path, params in fake_kube.requests if path == ALL_PODS] == [GROUP]


# --- the comparison with the checker's plan -------------------------------------------------------------------------


def test_under_spread_the_plan_puts_each_fraction_on_a_gpu_of_its_own(project, fake_kube, capsys):
    """kai.placementStrategy spread: the checker spreads fractions over GPUs too (gpu spread), so infer's pods in two
    groups are as planned."""
    _edit_stack(project, "kaistack:kai", lambda kai: kai | {"placementStrategy": "spread"})
    fake_kube.pod(ML_PODS, INFER_PODS[1])["metadata"]["labels"][GROUP] = "c1d2e3f4-0000"
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "gpu-group", "placement checker") == (
        "GPU groups as the checker planned: [infer], [infer], [notebook]"
    )


def test_a_plan_with_no_shared_gpu_differs_from_live_groups(project, fake_kube):
    """An empty plan (the checker shares no GPU) is still a plan: the live groups are compared with it."""
    config = load_stack(project, "dev").config
    with KubeClient.from_kubeconfig(fake_kube.kubeconfig(project.parent).read_text()) as client:
        _, notes = check_gpu_groups(config, client, WorkloadPods(config, client), Counter())
    assert len(notes) == 1
    assert notes[0].startswith(
        "gpu-group: the cluster's GPU groups [infer + infer], [notebook] differ from the placement checker's plan none;"
    )


# --- workload-running -----------------------------------------------------------------------------------------------


def _not_ready(pod: dict[str, Any]) -> None:
    pod["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "ContainersNotReady"}]


def test_a_job_declared_without_completions_is_done_after_one_success_per_replica(project, fake_kube, capsys):
    """No `completions`: components/podspec.py writes replicas as both parallelism and completions."""
    _declare(
        project,
        "    - name: batch\n      kind: Job\n      namespace: ml\n      queue: team-b\n"
        "      image: ghcr.io/acme/batch:1\n      replicas: 2\n",
    )
    for i in range(2):
        _cpu_pod(fake_kube, f"batch-{i}", "batch", "ghcr.io/acme/batch:1", "Succeeded")
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert check_detail(report, "workload-running", "batch") == "complete: 2/2 pods Succeeded"


def test_a_job_with_its_owed_pod_running_fails_while_another_pod_crash_loops(project, fake_kube, capsys):
    _declare(project, BATCH)
    _cpu_pod(fake_kube, "batch-0", "batch", "ghcr.io/acme/batch:1")
    _not_ready(_cpu_pod(fake_kube, "batch-1", "batch", "ghcr.io/acme/batch:1"))
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-running", "batch")])
    assert check_detail(report, "workload-running", "batch").startswith(
        "0/3 pods Succeeded, 1/1 Running and Ready; batch-1 Running but not Ready"
    )


def test_a_job_owes_no_more_running_pods_than_completions_are_left(project, fake_kube, capsys):
    """parallelism 2, completions 3, two Succeeded: one completion is left, so one Running pod is all it owes
    (batch/v1 JobSpec.parallelism: fewer pods run when completions - succeeded < parallelism)."""
    _declare(project, BATCH.replace("replicas: 1", "replicas: 2"))
    for i, phase in enumerate(("Succeeded", "Succeeded", "Running")):
        _cpu_pod(fake_kube, f"batch-{i}", "batch", "ghcr.io/acme/batch:1", phase)
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert check_detail(report, "workload-running", "batch") == "2/3 pods Succeeded, 1/1 Running and Ready"


# --- workload-image, -pod-group -------------------------------------------------------------------------------------


def test_a_pending_pod_on_another_image_fails_the_image_check(project, fake_kube, capsys):
    """Bound or waiting, a Pending pod holds its place: it will run the image it has."""
    pod = fake_kube.pod(ML_PODS, "notebook")
    pod["status"] = {"phase": "Pending"}
    pod["spec"]["containers"][0]["image"] = "jupyter/base-notebook:old"
    _, report = verify_json(project, fake_kube, capsys)
    assert ("workload-image", "notebook") in failed_checks(report)


def test_a_host_pytorchjob_in_one_podgroup_passes(project, fake_kube, capsys):
    """KAI's pod-grouper names one PodGroup after the PyTorchJob (KAI-Scheduler@v0.17.0
    pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go:94-95): all its pods in it is a gang."""
    _declare(
        project,
        "    - name: ddp\n      kind: PyTorchJob\n      namespace: ml\n      queue: team-b\n      image: d:1\n"
        "      pytorch: {master: 1, workers: 1}\n",
    )
    for role in ("master", "worker"):
        _cpu_pod(fake_kube, f"ddp-{role}-0", "ddp", "d:1")
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert check_detail(report, "workload-pod-group", "ddp") == "pod-group-name on 2 pods (1 PodGroup)"


def test_a_crash_looping_pod_is_named_once_among_the_waiting(project, fake_kube, capsys):
    _not_ready(fake_kube.pod(ML_PODS, INFER_PODS[1]))
    _, report = verify_json(project, fake_kube, capsys)
    detail = check_detail(report, "workload-running", "infer")
    assert detail.startswith(f"1/2 pods Running and Ready; {INFER_PODS[1]} Running but not Ready")
    assert detail.count(f"{INFER_PODS[1]} Running but not Ready") == 1


def test_a_pod_listed_without_a_status_does_not_count(project, fake_kube, capsys):
    del fake_kube.pod(ML_PODS, "notebook")["status"]
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert check_detail(report, "workload-running", "notebook").startswith("0/1 pods Running and Ready or Succeeded; ")


# --- at most three pods named ---------------------------------------------------------------------------------------

FOUR_BATCH = (
    "    - name: batch\n      kind: Job\n      namespace: ml\n      queue: team-b\n"
    "      image: ghcr.io/acme/batch:1\n      replicas: 4\n"
)


def _four_batch_pods(project: Path, fake_kube: FakeKube, phase: str = "Running") -> list[dict[str, Any]]:
    _declare(project, FOUR_BATCH)
    return [_cpu_pod(fake_kube, f"batch-{i}", "batch", "ghcr.io/acme/batch:1", phase) for i in range(4)]


def test_a_job_names_at_most_three_waiting_pods(project, fake_kube, capsys):
    _four_batch_pods(project, fake_kube, "Pending")
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "workload-running", "batch") == (
        "0/4 pods Succeeded, 0/4 Running and Ready; batch-0 Pending; batch-1 Pending; batch-2 Pending"
    )


def test_a_workload_names_at_most_three_waiting_pods(project, fake_kube, capsys):
    _declare(
        project,
        "    - name: web\n      kind: Deployment\n      namespace: ml\n      queue: team-b\n"
        "      image: ghcr.io/acme/web:1\n      replicas: 4\n",
    )
    for i in range(4):
        _cpu_pod(fake_kube, f"web-{i}", "web", "ghcr.io/acme/web:1", "Pending")
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "workload-running", "web") == (
        "0/4 pods Running and Ready; web-0 Pending; web-1 Pending; web-2 Pending"
    )


def test_the_image_check_names_at_most_three_stale_pods(project, fake_kube, capsys):
    for pod in _four_batch_pods(project, fake_kube):
        pod["spec"]["containers"][0]["image"] = "old:1"
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "workload-image", "batch").startswith(
        "batch-0 runs old:1; batch-1 runs old:1; batch-2 runs old:1 (declared "
    )


def test_the_scheduler_check_names_at_most_three_pods(project, fake_kube, capsys):
    for pod in _four_batch_pods(project, fake_kube):
        pod["spec"]["schedulerName"] = "default-scheduler"
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "workload-scheduler", "batch") == (
        "batch-0 uses default-scheduler; batch-1 uses default-scheduler; batch-2 uses default-scheduler"
    )


def test_the_gang_check_names_at_most_three_pods_outside_the_gang(project, fake_kube, capsys):
    """team-a's train with three workers, none of its four synced pods in the gang's PodGroup."""
    stack = project / "Pulumi.dev.yaml"
    stack.write_text(stack.read_text().replace("pytorch: {master: 1, workers: 1}", "pytorch: {master: 1, workers: 3}"))
    template = fake_kube.pod(TENANT_PODS, "train-worker-0-x-default-x-team-a")
    for i in (1, 2):
        pod = copy.deepcopy(template)
        pod["metadata"] |= {"name": f"train-worker-{i}-x-default-x-team-a", "uid": f"uid-train-worker-{i}"}
        pod["metadata"]["labels"]["training.kubeflow.org/replica-index"] = str(i)
        pod["metadata"]["annotations"]["vcluster.loft.sh/object-name"] = f"train-worker-{i}"
        fake_kube.items(TENANT_PODS).append(pod)
        fake_kube.items(ALL_PODS).append(pod)
    for pod in fake_kube.items(TENANT_PODS):
        if pod["metadata"]["name"].startswith("train-"):
            pod["metadata"]["annotations"]["pod-group-name"] = "pg-alone"
    _, report = verify_json(project, fake_kube, capsys)
    detail = check_detail(report, "workload-pod-group", "team-a/train")
    assert detail.startswith("not in the gang's PodGroup kaistack-team-a-default-train: ")
    assert detail.count(" in pg-alone") == 3


def test_a_pod_listed_without_a_spec_runs_no_image_and_no_kai_scheduler(project, fake_kube, capsys):
    del fake_kube.pod(ML_PODS, "notebook")["spec"]
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert check_detail(report, "workload-image", "notebook").startswith("notebook runs no image (declared ")
    assert check_detail(report, "workload-scheduler", "notebook") == "notebook uses default-scheduler"
