"""What a fifth mutation run of `kaistack verify` (kaistack/ops/verify.py) found unpinned: the table's header and
column widths, the words a queue's drift line uses for a side that is unset (parent, displayName, min runtimes) and
for a priority the cluster leaves to KAI's default, and which pod and owner the vcluster-owner-refs line names.

Against the healthy dev cluster's recorded API responses (fixtures/kube-healthy.json) on loopback, as the neighbouring
verify tests."""

from __future__ import annotations

from test_verify_mutation_gaps_4 import _declare_on_team_b, _live_queue
from test_workflow_verify_health import TENANT, TENANT_PODS
from test_workflow_verify_workloads import TRAIN_PODS
from workflow_testlib import check_detail, failed_checks, verify_json

from kaistack.cli import main

SERVICE_OWNER = {"apiVersion": "v1", "kind": "Service", "name": "team-a", "uid": "5e0c7d4e-96d9-4a43-a3b8-bd51e8b1e0f1"}


# --- the table --------------------------------------------------------------------------------------------------------


def test_the_table_has_a_header_row_and_columns_as_wide_as_their_widest_cell(project, fake_kube, capsys):
    """CHECK, SUBJECT and RESULT are padded to their widest cell (header included), two spaces apart, so every row's
    columns start where the header's do; guards against a column sized by the wrong cells or a renamed header."""
    _, report = verify_json(project, fake_kube, capsys)
    kubeconfig = fake_kube.kubeconfig(project.parent)
    code = main(["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig)])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    checks = report["checks"]
    check_width = max(len(c["check"]) for c in checks)
    subject_width = max(len(c["subject"]) for c in checks)
    assert check_width != subject_width  # else a column sized by the other's cells would go unseen
    assert lines[1] == f"{'CHECK':<{check_width}}  {'SUBJECT':<{subject_width}}  RESULT  DETAIL"
    assert lines[2 : 2 + len(checks)] == [
        f"{c['check']:<{check_width}}  {c['subject']:<{subject_width}}  pass    {c['detail']}" for c in checks
    ]


# --- queue: the words for an unset side and KAI's default priority ----------------------------------------------------


def test_a_parent_given_on_the_cluster_to_a_queue_declared_top_level_is_drift(project, fake_kube, capsys):
    """The live parent is named and the declared side says unset (not None, not the live value again)."""
    _live_queue(fake_kube, "org")["spec"]["parentQueue"] = "default-parent-queue"
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("queue", "org")])
    assert check_detail(report, "queue", "org") == "parentQueue is default-parent-queue (declared unset)"


def test_a_queue_without_priority_on_the_cluster_has_kais_default_100_where_another_is_declared(
    project, fake_kube, capsys
):
    """The CRD has no default for spec.priority; KAI reads an unset one as 100 (KAI-Scheduler
    deployments/kai-scheduler/crds/scheduling.run.ai_queues.yaml), and the line says so rather than None."""
    _declare_on_team_b(project, "priority: 50")
    del _live_queue(fake_kube, "team-b")["spec"]["priority"]
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("queue", "team-b")])
    assert check_detail(report, "queue", "team-b") == "priority is 100 (declared 50)"


def test_a_declared_display_name_missing_on_the_cluster_is_drift_named_unset(project, fake_kube, capsys):
    _declare_on_team_b(project, "displayName: Team B")
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("queue", "team-b")])
    assert check_detail(report, "queue", "team-b") == "displayName is unset (declared Team B)"


def test_a_declared_min_runtime_missing_on_the_cluster_is_drift_named_unset(project, fake_kube, capsys):
    """An unset live value reads `unset`, not None nor '' (which is the CRD's stored empty string)."""
    _declare_on_team_b(project, "preemptMinRuntime: 1h")
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("queue", "team-b")])
    assert check_detail(report, "queue", "team-b") == "preemptMinRuntime is unset (declared 1h)"


# --- vcluster-owner-refs ----------------------------------------------------------------------------------------------


def test_owner_refs_line_counts_every_owned_pod_and_names_the_first_listed_and_its_first_owner(
    project, fake_kube, capsys
):
    """The API lists a namespace's pods in name order, so naming the first owned pod and its first ownerReference
    gives the same line on every run; guards against naming another pod, that pod's other owner, or another pod's
    owner beside the first pod's name."""
    master, worker = (fake_kube.pod(TENANT_PODS, name) for name in TRAIN_PODS)
    extra_owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "train-config", "uid": "uid-train-config"}
    master["metadata"]["ownerReferences"] = [SERVICE_OWNER, extra_owner]
    worker["metadata"]["ownerReferences"] = [extra_owner]
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("vcluster-owner-refs", TENANT)])
    assert check_detail(report, "vcluster-owner-refs", TENANT) == (
        "2 of 3 synced pods have ownerReferences (e.g. train-master-0-x-default-x-team-a -> Service/team-a); "
        "set experimental.syncSettings.setOwner: false"
    )
