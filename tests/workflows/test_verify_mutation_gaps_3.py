"""What a third mutation run of `kaistack verify` (kaistack/ops/verify_workloads.py, verify_health.py) found
unpinned: only a Running pod runs, which scheduler a pod wrongly uses, how many PodGroups and pods a failure names,
what keeps a Deployment from being rolled out, which nodes are checked and how a node row lists its pods, and when a
tenant's vCluster pod is down.

Against the healthy dev cluster's recorded API responses (fixtures/kube-healthy.json) on loopback, as the neighbouring
verify tests."""

from __future__ import annotations

import copy

from test_verify_gpu_workloads_mutation_gaps_2 import _four_batch_pods
from test_workflow_verify_health import DEPLOYMENTS, TENANT, TENANT_PODS, _deployment, _infer, _tenant_deployment
from test_workflow_verify_workloads import BATCH, ML_PODS, _cpu_pod, _declare
from workflow_testlib import check_detail, failed_checks, verify_json

INFER_PODS = ("infer-7c9d8b6f4-x7k2p", "infer-7c9d8b6f4-q9m4z")

# --- workload-running: only a Running pod runs -----------------------------------------------------------------------


def test_a_failed_deployment_pod_still_reporting_ready_does_not_count(project, fake_kube, capsys):
    """An evicted pod is Failed; a Ready condition left over from before does not make it run."""
    fake_kube.pod(ML_PODS, INFER_PODS[1])["status"]["phase"] = "Failed"
    _, report = verify_json(project, fake_kube, capsys)
    assert ("workload-running", "infer") in failed_checks(report)
    assert check_detail(report, "workload-running", "infer").startswith(
        f"1/2 pods Running and Ready; {INFER_PODS[1]} Failed"
    )


def test_a_failed_job_pod_still_reporting_ready_is_not_the_running_pod_the_job_owes(project, fake_kube, capsys):
    _declare(project, BATCH)
    _cpu_pod(fake_kube, "batch-0", "batch", "ghcr.io/acme/batch:1")["status"]["phase"] = "Failed"
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-running", "batch")])
    assert check_detail(report, "workload-running", "batch") == (
        "0/3 pods Succeeded, 0/1 Running and Ready; batch-0 Failed"
    )


# --- workload-scheduler ---------------------------------------------------------------------------------------------


def test_a_pod_scheduled_by_another_named_scheduler_is_said_to_use_that_one(project, fake_kube, capsys):
    fake_kube.pod(ML_PODS, "notebook")["spec"]["schedulerName"] = "volcano"
    _, report = verify_json(project, fake_kube, capsys)
    assert ("workload-scheduler", "notebook") in failed_checks(report)
    assert check_detail(report, "workload-scheduler", "notebook") == "notebook uses volcano"


# --- workload-pod-group ----------------------------------------------------------------------------------------------


def test_a_host_pytorchjob_split_over_podgroups_names_the_first_three_in_name_order(project, fake_kube, capsys):
    _declare(
        project,
        "    - name: ddp\n      kind: PyTorchJob\n      namespace: ml\n      queue: team-b\n      image: d:1\n"
        "      pytorch: {master: 1, workers: 3}\n",
    )
    roles = ("master-0", "worker-0", "worker-1", "worker-2")
    for group, role in zip(("pg-d", "pg-b", "pg-c", "pg-a"), roles, strict=True):
        _cpu_pod(fake_kube, f"ddp-{role}", "ddp", "d:1")["metadata"]["annotations"]["pod-group-name"] = group
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "workload-pod-group", "ddp") == (
        "4 PodGroups for one PyTorchJob (pg-a, pg-b, pg-c): its pods are not one gang"
    )


def test_the_missing_pod_group_failure_names_at_most_three_pods(project, fake_kube, capsys):
    for pod in _four_batch_pods(project, fake_kube):
        del pod["metadata"]["annotations"]["pod-group-name"]
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "workload-pod-group", "batch") == (
        "no pod-group-name annotation on batch-0, batch-1, batch-2"
    )


# --- a Deployment's rollout (kai-components, workload-rollout) ------------------------------------------------------


def test_a_kai_component_below_its_replicas_fails_though_its_available_condition_holds(project, fake_kube, capsys):
    """4 replicas with maxUnavailable 25%: 3 available keeps Available True, and kubectl rollout status still waits."""
    binder = _deployment(fake_kube, "binder")
    binder["spec"]["replicas"] = 4
    binder["status"] |= {"replicas": 4, "updatedReplicas": 4, "readyReplicas": 3, "availableReplicas": 3}
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("kai-components", "kai-scheduler/binder")])
    assert check_detail(report, "kai-components", "kai-scheduler/binder").startswith(
        "3/4 available (Deployment has minimum availability.); see `kubectl"
    )


def test_a_kai_component_whose_available_condition_is_false_fails_though_its_replicas_are_counted(
    project, fake_kube, capsys
):
    binder = _deployment(fake_kube, "binder")
    binder["status"]["conditions"][0] |= {
        "status": "False",
        "message": "Deployment does not have minimum availability.",
    }
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("kai-components", "kai-scheduler/binder")])
    assert check_detail(report, "kai-components", "kai-scheduler/binder").startswith(
        "1/1 available (Deployment does not have minimum availability.); see `kubectl"
    )


def test_a_declared_deployment_with_old_replicas_still_running_fails(project, fake_kube, capsys):
    """Every wanted replica runs the new template, and one of the old ReplicaSet's has not been stopped yet."""
    _infer(fake_kube)["status"]["replicas"] = 3
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-rollout", "infer")])
    assert check_detail(report, "workload-rollout", "infer") == (
        "1 old replica still running; see `kubectl -n ml rollout status deployment/infer` and its new pods' logs"
    )


def test_a_declared_deployment_scaled_to_zero_fails_while_an_updated_replica_is_unavailable(project, fake_kube, capsys):
    """kubectl rollout status waits until available reaches updated, whatever the spec asks for
    (kubernetes/kubectl pkg/polymorphichelpers/rollout_status.go): 0 wanted is not done while one counts."""
    infer = _infer(fake_kube)
    infer["spec"]["replicas"] = 0
    infer["status"] |= {"replicas": 1, "updatedReplicas": 1, "readyReplicas": 0, "availableReplicas": 0}
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-rollout", "infer")])
    assert check_detail(report, "workload-rollout", "infer").startswith("0 of 1 updated replicas available (0 wanted);")


def test_a_declared_deployment_scaled_to_zero_passes_once_its_replicas_are_gone(project, fake_kube, capsys):
    infer = _infer(fake_kube)
    infer["spec"]["replicas"] = 0
    infer["status"] |= {"replicas": 0, "updatedReplicas": 0, "readyReplicas": 0, "availableReplicas": 0}
    _, report = verify_json(project, fake_kube, capsys)
    assert ("workload-rollout", "infer") not in failed_checks(report)


def test_a_kai_component_the_controller_has_not_processed_yet_fails_with_no_conditions(project, fake_kube, capsys):
    """A Deployment just created: the API server has set its generation, the controller has written no status."""
    _deployment(fake_kube, "binder")["status"] = {}
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("kai-components", "kai-scheduler/binder")])
    assert check_detail(report, "kai-components", "kai-scheduler/binder").startswith(
        "status is for generation none of 1 (the Deployment controller has not processed the latest spec); "
        "0/1 available; 0/1 replicas updated"
    )


def test_a_kai_component_whose_replica_set_cannot_be_created_fails_on_its_progressing_condition(
    project, fake_kube, capsys
):
    """The Deployment controller sets Progressing False with FailedRSCreate when it cannot create the new ReplicaSet
    (kubernetes/kubernetes pkg/controller/deployment/sync.go): not only a progress deadline stops a rollout."""
    _deployment(fake_kube, "binder")["status"]["conditions"][1] |= {
        "status": "False",
        "reason": "FailedRSCreate",
        "message": 'Failed to create new replica set "binder-5f6a7b8c9": exceeded quota',
    }
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("kai-components", "kai-scheduler/binder")])
    assert check_detail(report, "kai-components", "kai-scheduler/binder") == (
        'Progressing False: FailedRSCreate (Failed to create new replica set "binder-5f6a7b8c9": exceeded quota); '
        "see `kubectl -n kai-scheduler rollout status deployment/binder` and its new pods' logs"
    )


def test_a_deployment_of_its_own_in_kais_namespace_scaled_to_zero_passes(project, fake_kube, capsys):
    """Only KAI's own components must run; another Deployment there is judged by its rollout, and none of 0 is done.
    The controller omits a zero availableReplicas from the status."""
    extra = copy.deepcopy(_deployment(fake_kube, "binder"))
    extra["metadata"] |= {"name": "metrics-relay", "uid": "uid-metrics-relay"}
    extra["spec"]["replicas"] = 0
    extra["status"] = {"observedGeneration": 1, "conditions": extra["status"]["conditions"]}
    fake_kube.items(DEPLOYMENTS).append(extra)
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert check_detail(report, "kai-components", "kai-scheduler/metrics-relay") == "0/0 available, rollout complete"


def test_a_succeeded_pod_of_an_older_template_does_not_fail_the_tenant_rollout(project, fake_kube, capsys):
    _tenant_deployment(project, fake_kube, ["6f7d8c9b5", "7a8b9c0d1"])
    fake_kube.pod(TENANT_PODS, "serve-6f7d8c9b5-abcd0-x-default-x-team-a")["status"] = {"phase": "Succeeded"}
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "workload-rollout", "team-a/serve") == "1 synced pods of one template"


def test_a_tenant_rollouts_templates_are_named_in_hash_order(project, fake_kube, capsys):
    _tenant_deployment(project, fake_kube, ["7a8b9c0d1", "6f7d8c9b5"])
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "workload-rollout", "team-a/serve").startswith(
        "pods of 2 templates (6f7d8c9b5: serve-6f7d8c9b5-abcd1-x-default-x-team-a; "
        "7a8b9c0d1: serve-7a8b9c0d1-abcd0-x-default-x-team-a): "
    )


# --- node-ready ------------------------------------------------------------------------------------------------------


def test_the_node_of_a_finished_pod_is_not_checked(project, fake_kube, capsys):
    """An evicted pod stays listed, bound to a node that may be gone: it runs nothing there."""
    evicted = _cpu_pod(fake_kube, "notebook-evicted", "notebook", "jupyter/base-notebook:2026-08-01", "Failed")
    evicted["spec"]["nodeName"] = "kaistack-dev-gone"
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert "node kaistack-dev-gone" not in [c["subject"] for c in report["checks"] if c["check"] == "node-ready"]


def test_the_node_a_pending_pod_is_bound_to_is_checked(project, fake_kube, capsys):
    """Bound and still starting (pulling its image): the pod waits on that node."""
    starting = _cpu_pod(fake_kube, "notebook-next", "notebook", "jupyter/base-notebook:2026-08-01", "Pending")
    starting["spec"]["nodeName"] = "kaistack-dev-gone"
    _, report = verify_json(project, fake_kube, capsys)
    assert ("node-ready", "node kaistack-dev-gone") in failed_checks(report)
    assert check_detail(report, "node-ready", "node kaistack-dev-gone").startswith(
        "Node not found: its pods notebook-next are orphaned"
    )


def test_a_deleted_node_has_one_failing_row(project, fake_kube, capsys):
    del fake_kube.responses["/api/v1/nodes/kaistack-dev-worker2"]
    _, report = verify_json(project, fake_kube, capsys)
    rows = [c for c in report["checks"] if c["check"] == "node-ready" and c["subject"] == "node kaistack-dev-worker2"]
    assert [(row["ok"], row["detail"].split(":")[0]) for row in rows] == [(False, "Node not found")]


def test_a_node_running_exactly_three_checked_pods_lists_them_all(project, fake_kube, capsys):
    _declare(project, BATCH)
    _cpu_pod(fake_kube, "batch-0", "batch", "ghcr.io/acme/batch:1")  # beside notebook and train's worker
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "node-ready", "node kaistack-dev-worker2") == (
        "Ready; runs batch-0, notebook, train-worker-0-x-default-x-team-a"
    )


def test_a_node_running_four_checked_pods_names_three_and_counts_the_rest(project, fake_kube, capsys):
    _declare(project, BATCH)
    for i in range(2):
        _cpu_pod(fake_kube, f"batch-{i}", "batch", "ghcr.io/acme/batch:1")
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "node-ready", "node kaistack-dev-worker2") == (
        "Ready; runs batch-0, batch-1, notebook and 1 more"
    )


def test_a_node_read_failing_other_than_forbidden_or_not_found_is_an_error(project, fake_kube, capsys):
    """A 500 says nothing about the node: not 'Node not found', not a note, but verify's error exit."""
    fake_kube.bare["/api/v1/nodes/kaistack-dev-worker2"] = 500
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 3
    assert "checks" not in report


# --- vcluster-control-plane ------------------------------------------------------------------------------------------


def test_a_vcluster_pod_being_deleted_is_no_control_plane(project, fake_kube, capsys):
    fake_kube.pod(TENANT_PODS, "team-a-0")["metadata"]["deletionTimestamp"] = "2026-11-21T15:10:00Z"
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("vcluster-control-plane", TENANT)])
    assert check_detail(report, "vcluster-control-plane", TENANT).startswith(
        "pod team-a-0 not found (or being deleted) in vcluster-team-a: "
    )


def test_a_failed_vcluster_pod_still_reporting_ready_is_down(project, fake_kube, capsys):
    fake_kube.pod(TENANT_PODS, "team-a-0")["status"]["phase"] = "Failed"
    _, report = verify_json(project, fake_kube, capsys)
    assert ("vcluster-control-plane", TENANT) in failed_checks(report)
    assert check_detail(report, "vcluster-control-plane", TENANT).startswith("team-a-0 Failed")
