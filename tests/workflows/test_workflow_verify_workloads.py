"""`kaistack verify` on the declared workloads' pods: Jobs as their controller counts them, the declared image, a
tenant gang's PodGroup, and queue fields set by hand (each a false PASS a review found)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from workflow_testlib import FakeKube, check_detail, failed_checks, verify_json

ML_PODS = "/api/v1/namespaces/ml/pods"
ALL_PODS = "/api/v1/pods"
TENANT_PODS = "/api/v1/namespaces/vcluster-team-a/pods"
ML_JOBS = "/apis/batch/v1/namespaces/ml/jobs"
QUEUES = "/apis/scheduling.run.ai/v2/queues"
TRAIN_PODS = ("train-master-0-x-default-x-team-a", "train-worker-0-x-default-x-team-a")


def _declare(project: Path, workload: str) -> None:
    stack = project / "Pulumi.dev.yaml"
    stack.write_text(stack.read_text() + workload)


def _cpu_pod(fake_kube: FakeKube, name: str, app: str, image: str, phase: str = "Running") -> dict[str, Any]:
    """A CPU-only pod of `app` in namespace ml, made from the notebook's (Running and Ready unless told)."""
    pod = copy.deepcopy(fake_kube.pod(ML_PODS, "notebook"))
    pod["metadata"] |= {"name": name, "uid": f"uid-{name}"}
    pod["metadata"]["labels"] = {"app": app, "kai.scheduler/queue": "team-b"}
    pod["metadata"]["annotations"] = {"pod-group-name": f"pg-{app}-1"}
    pod["spec"]["containers"][0]["image"] = image
    if phase != "Running":
        pod["status"] = {"phase": phase}
    fake_kube.items(ML_PODS).append(pod)
    fake_kube.items(ALL_PODS).append(pod)
    return pod


# --- Jobs -----------------------------------------------------------------------------------------------------

BATCH = (
    "    - name: batch\n      kind: Job\n      namespace: ml\n      queue: team-b\n"
    "      image: ghcr.io/acme/batch:1\n      replicas: 1\n      completions: 3\n"
)


def _batch(project: Path, fake_kube: FakeKube, phases: list[str]) -> None:
    _declare(project, BATCH)
    for i, phase in enumerate(phases):
        _cpu_pod(fake_kube, f"batch-{i}", "batch", "ghcr.io/acme/batch:1", phase)


def test_a_job_whose_last_pods_failed_fails_though_some_succeeded(project, fake_kube, capsys):
    """Two of three completions Succeeded, the rest Failed: the Job is not done and nothing runs for it."""
    _batch(project, fake_kube, ["Succeeded", "Succeeded", *["Failed"] * 7])
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-running", "batch")])
    assert check_detail(report, "workload-running", "batch").startswith(
        "2/3 pods Succeeded, 0/1 Running and Ready; batch-2 Failed"
    )


def test_a_job_waiting_on_an_unscheduled_pod_fails(project, fake_kube, capsys):
    _batch(project, fake_kube, ["Succeeded", "Pending"])
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-running", "batch")])


def test_a_job_with_its_owed_pod_running_passes(project, fake_kube, capsys):
    """parallelism 1, one completion done: one pod is owed, and it runs."""
    _batch(project, fake_kube, ["Succeeded", "Running"])
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert check_detail(report, "workload-running", "batch") == "1/3 pods Succeeded, 1/1 Running and Ready"


def test_a_job_whose_completions_all_succeeded_passes_with_no_pod_running(project, fake_kube, capsys):
    _batch(project, fake_kube, ["Succeeded"] * 3)
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert check_detail(report, "workload-running", "batch") == "complete: 3/3 pods Succeeded"
    assert ("workload-image", "batch") not in [(c["check"], c["subject"]) for c in report["checks"]]


def test_a_host_job_failed_by_its_controller_fails_whatever_its_pods(project, fake_kube, capsys):
    """The Job's own Failed condition (backoff limit, deadline): its running pod is being stopped."""
    _batch(project, fake_kube, ["Running"])
    condition = {"type": "Failed", "status": "True", "reason": "DeadlineExceeded", "message": "past its deadline"}
    job = {"metadata": {"name": "batch", "namespace": "ml"}, "status": {"conditions": [condition]}}
    fake_kube.responses[ML_JOBS] = {"kind": "JobList", "apiVersion": "batch/v1", "metadata": {}, "items": [job]}
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-running", "batch")])
    assert check_detail(report, "workload-running", "batch") == "Job failed: DeadlineExceeded: past its deadline"


def test_jobs_the_credentials_may_not_list_are_judged_by_their_pods_with_a_note(project, fake_kube, capsys):
    _batch(project, fake_kube, ["Succeeded", "Running"])
    fake_kube.forbidden.add(ML_JOBS)
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert any("Jobs in namespace ml could not be read with these credentials (403)" in n for n in report["notes"])


# --- images ---------------------------------------------------------------------------------------------------


def test_pytorchjob_pods_left_on_the_old_image_fail_naming_the_operator(project, fake_kube, capsys):
    """kubeflow/training-operator@v1.8.1 pkg/controller.v1/common/pod.go:312-375 never recreates a running
    replica's pod for a new template."""
    for name in TRAIN_PODS:
        fake_kube.pod(TENANT_PODS, name)["spec"]["containers"][0]["image"] = "ghcr.io/acme/train:0.8.0"
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-image", "team-a/train")])
    detail = check_detail(report, "workload-image", "team-a/train")
    assert detail.startswith(f"{TRAIN_PODS[0]} runs ghcr.io/acme/train:0.8.0; ")
    assert "(declared ghcr.io/acme/train:0.9.0): the training operator keeps a running pod's template" in detail


def test_an_image_pinned_to_a_digest_by_admission_is_the_declared_one(project, fake_kube, capsys):
    pod = fake_kube.pod(ML_PODS, "notebook")
    pod["spec"]["containers"][0]["image"] = "jupyter/base-notebook:2026-08-01@sha256:" + "a" * 64
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert check_detail(report, "workload-image", "notebook") == "1 pod run jupyter/base-notebook:2026-08-01"


# --- PodGroups ------------------------------------------------------------------------------------------------


def test_a_tenant_pytorchjob_whose_pods_are_not_in_its_gang_fails(project, fake_kube, capsys):
    """Without kaistack's pod-group-name the pod-grouper gives each synced pod its own PodGroup
    (kaistack.declaration.tenant_gangs), so one worker can start holding a GPU while the others wait."""
    for name in TRAIN_PODS:
        fake_kube.pod(TENANT_PODS, name)["metadata"]["annotations"]["pod-group-name"] = f"pg-{name}-1"
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-pod-group", "team-a/train")])
    assert check_detail(report, "workload-pod-group", "team-a/train").startswith(
        f"not in the gang's PodGroup kaistack-team-a-default-train: {TRAIN_PODS[0]} in pg-{TRAIN_PODS[0]}-1, "
    )


def test_a_host_pytorchjob_split_over_two_podgroups_fails(project, fake_kube, capsys):
    """KAI's pod-grouper names one PodGroup after the PyTorchJob (KAI-Scheduler@v0.17.0
    pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go:94-95)."""
    _declare(
        project,
        "    - name: ddp\n      kind: PyTorchJob\n      namespace: ml\n      queue: team-b\n      image: d:1\n"
        "      pytorch: {master: 1, workers: 1}\n",
    )
    for i, role in enumerate(("master", "worker")):
        _cpu_pod(fake_kube, f"ddp-{role}-0", "ddp", "d:1")["metadata"]["annotations"]["pod-group-name"] = f"pg-{i}"
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-pod-group", "ddp")])
    assert check_detail(report, "workload-pod-group", "ddp") == (
        "2 PodGroups for one PyTorchJob (pg-0, pg-1): its pods are not one gang"
    )


# --- queues ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["preemptMinRuntime", "reclaimMinRuntime"])
def test_a_min_runtime_set_by_hand_on_an_undeclared_queue_field_is_drift(project, fake_kube, capsys, key):
    """KAI reads both (KAI-Scheduler@v0.17.0 pkg/scheduler/api/queue_info/queue_info.go:66-67), and `pulumi up`
    leaves an undeclared one out of the Queue it writes."""
    team_a = next(q for q in fake_kube.items(QUEUES) if q["metadata"]["name"] == "team-a")
    team_a["spec"][key] = "720h"
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("queue", "team-a")])
    assert check_detail(report, "queue", "team-a") == f"{key} is 720h (declared unset)"


def test_a_min_runtime_written_another_way_is_the_same_duration(project, fake_kube, capsys):
    stack = project / "Pulumi.dev.yaml"
    stack.write_text(
        stack.read_text().replace("    - name: team-b\n", "    - name: team-b\n      preemptMinRuntime: 1h\n")
    )
    team_b = next(q for q in fake_kube.items(QUEUES) if q["metadata"]["name"] == "team-b")
    team_b["spec"]["preemptMinRuntime"] = "60m"
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
