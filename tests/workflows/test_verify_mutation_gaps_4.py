"""What a fourth mutation run of `kaistack verify` (kaistack/ops/verify_common.py, verify.py) found unpinned: which
pods are a workload's, when a pod without a Ready condition is ready, what the line of a pod that does not count says
when no container is to blame or one has exited, a queue's parent, priority, displayName and min runtimes, the
kai-components rows, the JSON report's header and counts, and verify's progress lines.

Against the healthy dev cluster's recorded API responses (fixtures/kube-healthy.json) on loopback, as the neighbouring
verify tests."""

from __future__ import annotations

import copy
import re

from test_workflow_verify_health import ML_PODS, TENANT_PODS, _crash_loop, _deployment
from test_workflow_verify_workloads import BATCH, QUEUES, TRAIN_PODS, _cpu_pod, _declare
from workflow_testlib import check_detail, failed_checks, verify_json

from kaistack.cli import main

NOTEBOOK_MISSING = "0/1 pods Running and Ready or Succeeded; no pods found in namespace ml"


def _live_queue(fake_kube, name: str) -> dict:
    return next(q for q in fake_kube.items(QUEUES) if q["metadata"]["name"] == name)


def _declare_on_team_b(project, line: str) -> None:
    stack = project / "Pulumi.dev.yaml"
    stack.write_text(stack.read_text().replace("    - name: team-b\n", f"    - name: team-b\n      {line}\n"))


def _without_ready_condition(pod: dict) -> dict:
    pod["status"]["conditions"] = [c for c in pod["status"]["conditions"] if c["type"] != "Ready"]
    return pod


# --- finding a workload's pods (WorkloadPods.of) ----------------------------------------------------------------------


def test_a_pod_being_deleted_is_not_the_workloads_pod(project, fake_kube, capsys):
    """A terminating pod still reports Running and Ready until its containers stop: it is on its way out."""
    fake_kube.pod(ML_PODS, "notebook")["metadata"]["deletionTimestamp"] = "2026-11-21T15:10:00Z"
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-running", "notebook")])
    assert check_detail(report, "workload-running", "notebook") == NOTEBOOK_MISSING


def test_a_pod_without_the_workload_label_is_not_found_by_name_where_its_neighbours_carry_the_label(
    project, fake_kube, capsys
):
    """Pod names are the fallback only in a namespace whose pods lack the label: there, a pod named like the workload
    but without its label is someone else's."""
    del fake_kube.pod(ML_PODS, "notebook")["metadata"]["labels"]["app"]
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-running", "notebook")])
    assert check_detail(report, "workload-running", "notebook") == NOTEBOOK_MISSING


def test_a_jobs_unlabelled_pods_are_found_by_the_names_its_controller_gives_them(project, fake_kube, capsys):
    """`<job>-<5 characters>`, and `<job>-<index>-<5 characters>` for an Indexed Job's, in a namespace where no pod
    has the workload label."""
    _declare(project, BATCH)
    _cpu_pod(fake_kube, "batch-0-k3m9q", "batch", "ghcr.io/acme/batch:1", "Succeeded")
    _cpu_pod(fake_kube, "batch-x7k2p", "batch", "ghcr.io/acme/batch:1")
    for pod in fake_kube.items(ML_PODS):
        del pod["metadata"]["labels"]["app"]
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert check_detail(report, "workload-running", "batch") == "1/3 pods Succeeded, 1/1 Running and Ready"


def test_a_tenant_pod_of_the_same_name_in_another_virtual_namespace_is_not_the_workloads(project, fake_kube, capsys):
    """vCluster syncs every virtual namespace's pods to one host namespace; the object-namespace annotation says
    which each came from."""
    other = copy.deepcopy(fake_kube.pod(TENANT_PODS, TRAIN_PODS[1]))
    other["metadata"] |= {"name": "train-worker-0-x-research-x-team-a", "uid": "uid-research-train-worker-0"}
    other["metadata"]["labels"]["vcluster.loft.sh/namespace"] = "research"
    other["metadata"]["annotations"]["vcluster.loft.sh/object-namespace"] = "research"
    _crash_loop(other)
    fake_kube.items(TENANT_PODS).append(other)
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert check_detail(report, "workload-running", "team-a/train") == "2/2 pods Running and Ready or Succeeded"


def test_a_pod_in_the_tenants_host_namespace_that_vcluster_did_not_sync_is_not_the_tenants(project, fake_kube, capsys):
    """Only pods with vCluster's managed-by label came from the tenant; one made on the host beside them, labelled
    like the tenant's workload, is not."""
    host = copy.deepcopy(fake_kube.pod(TENANT_PODS, TRAIN_PODS[1]))
    host["metadata"] |= {"name": "train-debug", "uid": "uid-train-debug", "annotations": {}}
    host["metadata"]["labels"] = {"app": "train"}
    _crash_loop(host)
    fake_kube.items(TENANT_PODS).append(host)
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert check_detail(report, "workload-running", "team-a/train") == "2/2 pods Running and Ready or Succeeded"


# --- a pod without a Ready condition (pod_ready) ----------------------------------------------------------------------


def test_a_running_pod_without_a_ready_condition_counts_when_every_container_is_ready(project, fake_kube, capsys):
    _without_ready_condition(fake_kube.pod(ML_PODS, "notebook"))
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert check_detail(report, "workload-running", "notebook") == "1/1 pods Running and Ready or Succeeded"


def test_a_running_pod_without_a_ready_condition_does_not_count_while_one_of_two_containers_is_not_ready(
    project, fake_kube, capsys
):
    pod = _without_ready_condition(fake_kube.pod(ML_PODS, "notebook"))
    pod["spec"]["containers"].append({"name": "sidecar", "image": "busybox:1.37.0"})
    sidecar = {"name": "sidecar", "ready": False, "restartCount": 0, "image": "busybox:1.37.0", "imageID": ""}
    pod["status"]["containerStatuses"].append(sidecar | {"state": {"waiting": {"reason": "ContainerCreating"}}})
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-running", "notebook")])
    assert check_detail(report, "workload-running", "notebook") == (
        "0/1 pods Running and Ready or Succeeded; notebook Running but not Ready "
        "(container sidecar ContainerCreating); see `kubectl -n ml describe pod notebook`"
    )


def test_a_running_pod_with_neither_a_ready_condition_nor_container_statuses_does_not_count(project, fake_kube, capsys):
    """No container has reported ready: nothing says the pod works, and its line says what is missing."""
    del _without_ready_condition(fake_kube.pod(ML_PODS, "notebook"))["status"]["containerStatuses"]
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-running", "notebook")])
    assert check_detail(report, "workload-running", "notebook") == (
        "0/1 pods Running and Ready or Succeeded; notebook Running but not Ready (no Ready condition); "
        "see `kubectl -n ml describe pod notebook`"
    )


# --- the line of a pod that does not count (pod_state) ----------------------------------------------------------------


def test_a_running_container_failing_its_readiness_probe_is_named_not_ready(project, fake_kube, capsys):
    """Running, never restarted, its readiness probe failing: the kubelet reports it ready false with no waiting or
    terminated reason, and the pod's Ready condition ContainersNotReady (GenerateContainersReadyCondition in
    kubernetes/kubernetes@004b6af5:pkg/kubelet/status/generate.go)."""
    pod = fake_kube.pod(ML_PODS, "notebook")
    pod["status"]["containerStatuses"][0]["ready"] = False
    next(c for c in pod["status"]["conditions"] if c["type"] == "Ready").update(
        status="False", reason="ContainersNotReady", message="containers with unready status: [main]"
    )
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-running", "notebook")])
    assert check_detail(report, "workload-running", "notebook") == (
        "0/1 pods Running and Ready or Succeeded; notebook Running but not Ready (container main not ready); "
        "see `kubectl -n ml describe pod notebook`"
    )


def test_a_pod_whose_restarted_container_is_ready_again_points_at_its_events_not_that_containers_log(
    project, fake_kube, capsys
):
    """The previous log of a container that crashed once and runs now says nothing about the one not ready."""
    pod = fake_kube.pod(ML_PODS, "notebook")
    pod["status"]["containerStatuses"][0]["restartCount"] = 2
    pod["spec"]["containers"].append({"name": "sidecar", "image": "busybox:1.37.0"})
    sidecar = {"name": "sidecar", "ready": False, "restartCount": 0, "image": "busybox:1.37.0", "imageID": ""}
    pod["status"]["containerStatuses"].append(sidecar | {"state": {"waiting": {"reason": "ContainerCreating"}}})
    next(c for c in pod["status"]["conditions"] if c["type"] == "Ready").update(
        status="False", reason="ContainersNotReady", message="containers with unready status: [sidecar]"
    )
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-running", "notebook")])
    assert check_detail(report, "workload-running", "notebook") == (
        "0/1 pods Running and Ready or Succeeded; notebook Running but not Ready "
        "(container sidecar ContainerCreating); see `kubectl -n ml describe pod notebook`"
    )


def test_a_scheduling_gated_pods_line_names_the_gate_reason(project, fake_kube, capsys):
    """The API server gives a pod created with scheduling gates PodScheduled False, reason SchedulingGated, and this
    message (applySchedulingGatedCondition in kubernetes/kubernetes pkg/registry/core/pod/strategy.go)."""
    pod = fake_kube.pod(ML_PODS, "infer-7c9d8b6f4-q9m4z")
    pod["spec"].pop("nodeName")
    pod["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    pod["metadata"]["labels"].pop("runai-gpu-group")
    gated = {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
    pod["status"] = {
        "phase": "Pending",
        "conditions": [gated | {"message": "Scheduling is blocked due to non-empty scheduling gates"}],
    }
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-running", "infer")])
    assert check_detail(report, "workload-running", "infer") == (
        "1/2 pods Running and Ready; infer-7c9d8b6f4-q9m4z Pending "
        "(SchedulingGated: Scheduling is blocked due to non-empty scheduling gates)"
    )


def test_a_container_restarted_once_is_said_to_have_one_restart(project, fake_kube, capsys):
    _crash_loop(fake_kube.pod(ML_PODS, "notebook"), restarts=1)
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-running", "notebook")])
    assert check_detail(report, "workload-running", "notebook") == (
        "0/1 pods Running and Ready or Succeeded; notebook Running but not Ready (container main CrashLoopBackOff, "
        "1 restart, last exit 127 (Error)); see `kubectl -n ml logs notebook -c main --previous`"
    )


def test_a_pod_held_back_by_readiness_gates_names_its_ready_condition_cut_to_120_characters(project, fake_kube, capsys):
    """Every container ready and the readiness gates not: the kubelet sets Ready False with reason
    ReadinessGatesNotReady and one message per gate, joined by ", " (GeneratePodReadyCondition in
    kubernetes/kubernetes@004b6af5:pkg/kubelet/status/generate.go). No container to blame: see the pod's events."""
    pod = fake_kube.pod(ML_PODS, "notebook")
    pod["spec"]["readinessGates"] = [{"conditionType": "example.com/lb-ready"}, {"conditionType": "example.com/dns"}]
    pod["status"]["conditions"].append({"type": "example.com/lb-ready", "status": "False"})
    next(c for c in pod["status"]["conditions"] if c["type"] == "Ready").update(
        status="False",
        reason="ReadinessGatesNotReady",
        message='the status of pod readiness gate "example.com/lb-ready" is not "True", but False, '
        'corresponding condition of pod readiness gate "example.com/dns" does not exist.',
    )
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-running", "notebook")])
    assert check_detail(report, "workload-running", "notebook") == (
        "0/1 pods Running and Ready or Succeeded; notebook Running but not Ready (Ready False: ReadinessGatesNotReady, "
        'the status of pod readiness gate "example.com/lb-ready" is not "True", but False, corresponding condition '
        "of pod readine); see `kubectl -n ml describe pod notebook`"
    )


def test_a_pod_the_node_controller_marked_not_ready_says_its_ready_condition_has_no_reason(project, fake_kube, capsys):
    """The node controller sets only the Ready condition's status to False on a NotReady node's pods (MarkPodsNotReady
    in kubernetes/kubernetes@025f2834:pkg/controller/util/node/controller_utils.go): no reason, no message."""
    next(c for c in fake_kube.pod(ML_PODS, "notebook")["status"]["conditions"] if c["type"] == "Ready")["status"] = (
        "False"
    )
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-running", "notebook")])
    assert check_detail(report, "workload-running", "notebook") == (
        "0/1 pods Running and Ready or Succeeded; notebook Running but not Ready (Ready False: no reason); "
        "see `kubectl -n ml describe pod notebook`"
    )


def test_a_failed_job_pods_line_names_the_reason_its_container_terminated(project, fake_kube, capsys):
    """A container that has exited reports its reason under state.terminated, not state.waiting."""
    _declare(project, BATCH)
    pod = _cpu_pod(fake_kube, "batch-0", "batch", "ghcr.io/acme/batch:1", "Failed")
    pod["status"]["containerStatuses"] = [
        {
            "name": "main",
            "ready": False,
            "restartCount": 0,
            "image": "ghcr.io/acme/batch:1",
            "imageID": "",
            "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
        }
    ]
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-running", "batch")])
    assert check_detail(report, "workload-running", "batch") == (
        "0/3 pods Succeeded, 0/1 Running and Ready; batch-0 Failed (container main OOMKilled)"
    )


def test_an_unschedulable_pods_line_cuts_the_schedulers_message_to_120_characters(project, fake_kube, capsys):
    pod = fake_kube.pod(ML_PODS, "infer-7c9d8b6f4-q9m4z")
    pod["spec"].pop("nodeName")
    pod["metadata"]["labels"].pop("runai-gpu-group")
    message = (
        "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
        "2 node(s) didn't have enough GPU memory."
    )
    pod["status"] = {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}],
    }
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-running", "infer")])
    assert check_detail(report, "workload-running", "infer") == (
        "1/2 pods Running and Ready; infer-7c9d8b6f4-q9m4z Pending (Unschedulable: 0/3 nodes are available: "
        "1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 node(s) didn't hav)"
    )


# --- queue --------------------------------------------------------------------------------------------------------


def test_a_queue_whose_parent_was_removed_on_the_cluster_is_drift(project, fake_kube, capsys):
    del _live_queue(fake_kube, "team-a")["spec"]["parentQueue"]
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("queue", "team-a")])
    assert check_detail(report, "queue", "team-a") == "parentQueue is unset (declared org)"


def test_a_queue_priority_changed_on_the_cluster_is_drift(project, fake_kube, capsys):
    _live_queue(fake_kube, "team-a")["spec"]["priority"] = 50
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("queue", "team-a")])
    assert check_detail(report, "queue", "team-a") == "priority is 50 (declared 100)"


def test_a_declared_display_name_changed_on_the_cluster_is_drift(project, fake_kube, capsys):
    _declare_on_team_b(project, "displayName: Team B")
    _live_queue(fake_kube, "team-b")["spec"]["displayName"] = "Team B (old)"
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("queue", "team-b")])
    assert check_detail(report, "queue", "team-b") == "displayName is Team B (old) (declared Team B)"


def test_a_declared_display_name_the_cluster_holds_passes(project, fake_kube, capsys):
    _declare_on_team_b(project, "displayName: Team B")
    _live_queue(fake_kube, "team-b")["spec"]["displayName"] = "Team B"
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert check_detail(report, "queue", "team-b") == "spec matches"


def test_a_display_name_set_on_the_cluster_where_none_is_declared_is_not_drift(project, fake_kube, capsys):
    """Only a declared displayName is compared: it is a label for people, not a scheduling setting."""
    _live_queue(fake_kube, "team-b")["spec"]["displayName"] = "Team B"
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert check_detail(report, "queue", "team-b") == "spec matches"


def test_a_declared_min_runtime_set_to_another_duration_on_the_cluster_is_drift(project, fake_kube, capsys):
    _declare_on_team_b(project, "preemptMinRuntime: 1h")
    _live_queue(fake_kube, "team-b")["spec"]["preemptMinRuntime"] = "30m"
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("queue", "team-b")])
    assert check_detail(report, "queue", "team-b") == "preemptMinRuntime is 30m (declared 1h)"


def test_an_empty_min_runtime_on_the_cluster_is_drift_not_unset(project, fake_kube, capsys):
    """The CRD stores "", but KAI reads a *metav1.Duration, whose UnmarshalJSON calls time.ParseDuration(""), which
    fails (kubernetes apimachinery pkg/apis/meta/v1/duration.go): KAI cannot decode the Queue, so it is no match for
    a queue declared without one (found by the mutation run: "" had been read as unset)."""
    _live_queue(fake_kube, "team-b")["spec"]["reclaimMinRuntime"] = ""
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("queue", "team-b")])
    assert check_detail(report, "queue", "team-b") == "reclaimMinRuntime is '' (declared unset)"


def test_a_queue_list_failing_other_than_not_found_is_an_error_not_a_missing_api(project, fake_kube, capsys):
    """Only a 404 says the Queue CRD is not installed; a 500 says nothing about the queues: verify's error exit."""
    fake_kube.bare[QUEUES] = 500
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 3
    assert "checks" not in report


# --- kai-components --------------------------------------------------------------------------------------------------


def test_a_kai_component_scaled_to_zero_has_one_row_and_no_passing_rollout_row(project, fake_kube, capsys):
    binder = _deployment(fake_kube, "binder")
    binder["spec"]["replicas"] = 0
    binder["status"] = {"observedGeneration": 1, "conditions": binder["status"]["conditions"]}
    _, report = verify_json(project, fake_kube, capsys)
    rows = [c for c in report["checks"] if c["subject"] == "kai-scheduler/binder"]
    assert [(row["ok"], row["detail"]) for row in rows] == [
        (False, "scaled to 0 replicas: the component is not running (kubectl scale it back up)")
    ]


def test_kai_components_are_listed_in_name_order(project, fake_kube, capsys):
    _, report = verify_json(project, fake_kube, capsys)
    assert [c["subject"] for c in report["checks"] if c["check"] == "kai-components"] == [
        "kai-scheduler/admission",
        "kai-scheduler/binder",
        "kai-scheduler/kai-operator",
        "kai-scheduler/kai-scheduler-default",
        "kai-scheduler/pod-grouper",
        "kai-scheduler/podgroup-controller",
        "kai-scheduler/queue-controller",
    ]


# --- the JSON report -------------------------------------------------------------------------------------------------


def test_the_json_report_names_the_stack_server_and_kubeconfig_and_counts_passes_and_failures(
    project, fake_kube, capsys
):
    _live_queue(fake_kube, "team-a")["spec"]["priority"] = 50
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert {key: report[key] for key in ("stack", "server", "kubeconfig", "ok", "passed", "failed")} == {
        "stack": "dev",
        "server": fake_kube.url,
        "kubeconfig": f"--kubeconfig {project.parent / 'kubeconfig'}",
        "ok": False,
        "passed": len(report["checks"]) - 1,
        "failed": 1,
    }


# --- progress ---------------------------------------------------------------------------------------------------------


def test_verify_shows_each_step_on_stderr_when_progress_is_on(project, fake_kube, capsys, monkeypatch):
    """KAISTACK_PROGRESS=1 (or a TTY), as for validate; stdout keeps only the report."""
    monkeypatch.setenv("KAISTACK_PROGRESS", "1")
    kubeconfig = fake_kube.kubeconfig(project.parent)
    code = main(["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig), "--json"])
    captured = capsys.readouterr()
    assert code == 0
    assert re.fullmatch(
        r"checking KAI components in kai-scheduler… done \(\d+\.\d s\)\n"
        r"checking KAI's admission webhooks… done \(\d+\.\d s\)\n"
        r"checking 5 queues… done \(\d+\.\d s\)\n"
        r"checking KAI's scheduler settings… done \(\d+\.\d s\)\n"
        r"checking 3 workloads… done \(\d+\.\d s\)\n"
        r"checking 1 vClusters… done \(\d+\.\d s\)\n"
        r"checking the nodes that run them… done \(\d+\.\d s\)\n",
        captured.err,
    )
