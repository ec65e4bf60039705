"""`kaistack verify` against recorded API responses served on loopback (see conftest.FakeKube)."""

from __future__ import annotations

import json

import pytest
from workflow_testlib import ROOT, check_detail, failed_checks, verify_json

from kaistack.cli import main
from kaistack.declaration.marks import WORKLOAD_LABEL
from kaistack.kube.client import KubeClient
from kaistack.ops.verify import verify_stack
from kaistack.stack.load import load_stack

ML_PODS = "/api/v1/namespaces/ml/pods"
TENANT_PODS = "/api/v1/namespaces/vcluster-team-a/pods"
QUEUES = "/apis/scheduling.run.ai/v2/queues"
DEPLOYMENTS = "/apis/apps/v1/namespaces/kai-scheduler/deployments"


def test_healthy_platform_passes_every_check(project, fake_kube, capsys):
    """A cluster matching the dev declaration: exit 0 and no failed check."""
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    checks = {c["check"] for c in report["checks"]}
    assert checks == {
        "kai-components",
        "kai-admission",
        "queue",
        "scheduler",
        "workload-running",
        "workload-scheduler",
        "workload-pod-group",
        "workload-image",
        "workload-rollout",
        "gpu-group",
        "vcluster-control-plane",
        "vcluster-owner-refs",
        "node-ready",
    }


def test_table_output_lists_each_check_and_the_verdict(project, fake_kube, capsys):
    """Without --json a table with one line per check and a final verdict goes to stdout."""
    kubeconfig = fake_kube.kubeconfig(project.parent)
    code = main(["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig)])
    out = capsys.readouterr().out
    assert code == 0
    assert any(line.split()[:3] == ["queue", "team-a", "pass"] for line in out.splitlines())
    assert out.rstrip().endswith("all checks passed")


def test_pending_pod_fails_the_workload(project, fake_kube, capsys):
    """A Pending replica (KAI could not place it) fails workload-running with the scheduler's reason."""
    pod = fake_kube.pod(ML_PODS, "infer-7c9d8b6f4-q9m4z")
    pod["spec"].pop("nodeName")
    pod["metadata"]["labels"].pop("runai-gpu-group")
    pod["status"] = {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/3 nodes are available: 3 node(s) didn't have enough GPU memory",
            }
        ],
    }
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert failed_checks(report) == [("workload-running", "infer")]
    assert "1/2 pods Running" in check_detail(report, "workload-running", "infer")
    assert "Unschedulable: 0/3 nodes are available" in check_detail(report, "workload-running", "infer")


def test_pod_scheduled_by_another_scheduler_fails(project, fake_kube, capsys):
    """A pod not scheduled by kai-scheduler bypasses queues and GPU sharing: workload-scheduler fails."""
    fake_kube.pod(ML_PODS, "notebook")["spec"]["schedulerName"] = "default-scheduler"
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert failed_checks(report) == [("workload-scheduler", "notebook")]
    assert check_detail(report, "workload-scheduler", "notebook") == "notebook uses default-scheduler"


def test_pod_without_pod_group_annotation_fails(project, fake_kube, capsys):
    """Every KAI-scheduled pod belongs to a PodGroup through the pod-group-name annotation."""
    del fake_kube.pod(ML_PODS, "notebook")["metadata"]["annotations"]["pod-group-name"]
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert failed_checks(report) == [("workload-pod-group", "notebook")]


def test_synced_pod_with_owner_references_fails(project, fake_kube, capsys):
    """vCluster's default setOwner: true points host pods at its Service, which KAI's pod-grouper cannot follow."""
    pod = fake_kube.pod(TENANT_PODS, "train-master-0-x-default-x-team-a")
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Service", "name": "team-a", "uid": "5e0c7d4e-96d9-4a43-a3b8-bd51e8b1e0f1"}
    ]
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert failed_checks(report) == [("vcluster-owner-refs", "team-a (vcluster-team-a)")]
    assert "-> Service/team-a" in check_detail(report, "vcluster-owner-refs", "team-a (vcluster-team-a)")


def test_vcluster_control_plane_pod_owner_is_ignored(project, fake_kube, capsys):
    """The vCluster's own StatefulSet pod is not synced from the tenant, so its ownerReferences are fine."""
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 0
    assert check_detail(report, "vcluster-owner-refs", "team-a (vcluster-team-a)") == (
        "3 synced pods, none with ownerReferences"
    )


def test_missing_queue_fails(project, fake_kube, capsys):
    """A declared queue absent from the cluster fails the queue check."""
    fake_kube.responses[QUEUES]["items"] = [q for q in fake_kube.items(QUEUES) if q["metadata"]["name"] != "team-b"]
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert failed_checks(report) == [("queue", "team-b")]
    assert check_detail(report, "queue", "team-b") == "Queue not found"


def test_queue_spec_drift_names_field_live_and_declared_values(project, fake_kube, capsys):
    """A live quota that differs from the declaration is reported as 'field is X (declared Y)'."""
    team_a = next(q for q in fake_kube.items(QUEUES) if q["metadata"]["name"] == "team-a")
    team_a["spec"]["resources"]["gpu"]["quota"] = 1
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert failed_checks(report) == [("queue", "team-a")]
    assert check_detail(report, "queue", "team-a") == "resources.gpu.quota is 1 (declared 2)"


def test_omitted_queue_limit_counts_as_zero(project, fake_kube, capsys):
    """KAI reads an omitted limit as 0 (no resources allowed), not unlimited: that is drift from -1."""
    team_b = next(q for q in fake_kube.items(QUEUES) if q["metadata"]["name"] == "team-b")
    del team_b["spec"]["resources"]["cpu"]["limit"]
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert check_detail(report, "queue", "team-b") == "resources.cpu.limit is 0 (declared -1)"


def test_fractional_pods_on_different_gpu_groups_fail(project, fake_kube, capsys):
    """Two 0.5 shares on one node in two GPU groups: binpack (and the checker) put them on one GPU."""
    pod = fake_kube.pod(ML_PODS, "infer-7c9d8b6f4-q9m4z")
    pod["metadata"]["labels"]["runai-gpu-group"] = "c1d2e3f4-0000-4b4b-8c8c-123456789abc"
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert failed_checks(report) == [("gpu-group", "node kaistack-dev-worker")]
    assert "fit one GPU but are on two" in check_detail(report, "gpu-group", "node kaistack-dev-worker")


def test_gpu_groups_match_the_placement_checker(project, fake_kube, capsys):
    """Healthy: the live GPU groups are the checker's, as multisets of workload names."""
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 0
    assert check_detail(report, "gpu-group", "placement checker") == (
        "GPU groups as the checker planned: [infer + infer], [notebook]"
    )


def _regroup_as_after_a_rollout(fake_kube):
    """notebook joined infer-x7k2p's GPU on kaistack-dev-worker, infer-q9m4z has a GPU of its own there:
    [infer + notebook] (0.75) and [infer] (0.5) cannot share one GPU, a valid binpack state."""
    notebook = fake_kube.pod(ML_PODS, "notebook")
    notebook["spec"]["nodeName"] = "kaistack-dev-worker"
    notebook["metadata"]["labels"]["runai-gpu-group"] = "3f0c1a52-7d0e-4a61-9a8e-2b9f4e1c6d01"
    fake_kube.pod(ML_PODS, "infer-7c9d8b6f4-q9m4z")["metadata"]["labels"]["runai-gpu-group"] = "c1d2e3f4-0000"


def test_gpu_groups_that_differ_from_the_plan_are_a_note_not_a_failure(project, fake_kube, capsys):
    """A pod joins a group by arrival order: only groups that could merge fail; a plan difference is a note."""
    _regroup_as_after_a_rollout(fake_kube)
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert report["notes"] == [
        "gpu-group: the cluster's GPU groups [infer], [infer + notebook] differ from the placement checker's plan "
        "[infer + infer], [notebook]; not a failure: the group a pod joins depends on the order pods arrived "
        "(a replacement joins whichever group has room), and the node rows check that no two groups on a node "
        "could share one GPU"
    ]


def test_table_prints_notes_before_the_verdict(project, fake_kube, capsys):
    """Without --json the notes follow the check lines as 'note: ...', and the verdict stays last."""
    _regroup_as_after_a_rollout(fake_kube)
    kubeconfig = fake_kube.kubeconfig(project.parent)
    code = main(["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig)])
    lines = capsys.readouterr().out.rstrip().splitlines()
    assert code == 0
    assert lines[-2].startswith("note: gpu-group: the cluster's GPU groups [infer], [infer + notebook] differ")
    assert lines[-1] == "all checks passed"


@pytest.mark.parametrize(("phase", "reason"), [("Failed", "Evicted"), ("Succeeded", "Completed")])
def test_finished_pod_holds_no_share_of_its_gpu_group(project, fake_kube, capsys, phase, reason):
    """An evicted or finished pod keeps its runai-gpu-group label, not its share: its replacement's group passes."""
    old = fake_kube.pod(ML_PODS, "infer-7c9d8b6f4-x7k2p")
    replacement = json.loads(json.dumps(old))
    replacement["metadata"] |= {"name": "infer-7c9d8b6f4-zz9zz", "uid": "11111111-2222-4333-8444-555555555555"}
    old["status"] = {"phase": phase, "reason": reason, "message": "The node was low on resource: memory."}
    fake_kube.items(ML_PODS).append(replacement)
    fake_kube.items("/api/v1/pods").append(replacement)
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert check_detail(report, "gpu-group", "placement checker") == (
        "GPU groups as the checker planned: [infer + infer], [notebook]"
    )


@pytest.mark.parametrize(
    ("phase", "deleting"),
    [("Failed", False), ("Succeeded", False), ("Running", True)],
    ids=["evicted", "done", "deleting"],
)
def test_pod_that_gave_its_share_back_opens_no_gpu_group_on_its_node(project, fake_kube, capsys, phase, deleting):
    """Another namespace's 0.5 pod, evicted, finished or being deleted, in its own group beside notebook's 0.25:
    counted, the two groups would fit one GPU and fail binpack; it holds nothing, so the node passes."""
    notebook = fake_kube.pod(ML_PODS, "notebook")
    gone = json.loads(json.dumps(notebook))
    gone["metadata"] |= {"name": "batch-7f8e9", "namespace": "other", "uid": "0d6c0c1e-aaaa-4bbb-8ccc-000000000002"}
    gone["metadata"]["labels"] = {"runai-gpu-group": "5e5e5e5e-2222-4d4d-8e8e-0123456789ab"}
    gone["metadata"]["annotations"] = {"gpu-fraction": "0.5"}
    gone["status"]["phase"] = phase
    if deleting:
        gone["metadata"]["deletionTimestamp"] = "2026-11-21T15:00:00Z"
    fake_kube.items("/api/v1/pods").append(gone)
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert check_detail(report, "gpu-group", "node kaistack-dev-worker2").startswith("1 GPU groups")


def test_groups_on_one_node_that_cannot_merge_pass(project, fake_kube, capsys):
    """notebook's group next to infer's full GPU on one node: together above one GPU, as binpack leaves them."""
    pod = fake_kube.pod(ML_PODS, "notebook")
    pod["spec"]["nodeName"] = "kaistack-dev-worker"
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert check_detail(report, "gpu-group", "node kaistack-dev-worker").startswith("2 GPU groups")


def test_unrelated_pod_in_a_group_counts_toward_its_load(project, fake_kube, capsys):
    """Another team's 0.6 share in notebook's group makes it too full to merge with a 0.5 group."""
    notebook = fake_kube.pod(ML_PODS, "notebook")
    other = json.loads(json.dumps(notebook))
    other["metadata"] |= {"name": "other-team-pod", "namespace": "other", "uid": "0d6c0c1e-aaaa-4bbb-8ccc-000000000001"}
    other["metadata"]["labels"] = {"runai-gpu-group": notebook["metadata"]["labels"]["runai-gpu-group"]}
    other["metadata"]["annotations"] = {"gpu-fraction": "0.6"}
    fake_kube.items("/api/v1/pods").append(other)
    fake_kube.pod(ML_PODS, "infer-7c9d8b6f4-q9m4z")["spec"]["nodeName"] = "kaistack-dev-worker2"
    fake_kube.pod(ML_PODS, "infer-7c9d8b6f4-q9m4z")["metadata"]["labels"]["runai-gpu-group"] = "c1d2e3f4-0000"
    _, report = verify_json(project, fake_kube, capsys)
    assert ("gpu-group", "node kaistack-dev-worker2") not in failed_checks(report)
    assert check_detail(report, "gpu-group", "node kaistack-dev-worker2").startswith("2 GPU groups")


def test_fractional_pod_without_gpu_group_label_fails(project, fake_kube, capsys):
    """A running fractional pod always carries runai-gpu-group; its absence means KAI did not bind the share."""
    del fake_kube.pod(ML_PODS, "notebook")["metadata"]["labels"]["runai-gpu-group"]
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert ("gpu-group", "notebook") in failed_checks(report)


def test_unavailable_kai_component_fails(project, fake_kube, capsys):
    """A KAI Deployment below its desired replicas fails kai-components."""
    binder = next(d for d in fake_kube.items(DEPLOYMENTS) if d["metadata"]["name"] == "binder")
    binder["status"]["availableReplicas"] = 0
    binder["status"]["conditions"][0] |= {
        "status": "False",
        "message": "Deployment does not have minimum availability.",
    }
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert failed_checks(report) == [("kai-components", "kai-scheduler/binder")]


def test_missing_kai_component_fails(project, fake_kube, capsys):
    """Each of KAI v0.17's seven Deployments must exist."""
    fake_kube.responses[DEPLOYMENTS]["items"] = [
        d for d in fake_kube.items(DEPLOYMENTS) if d["metadata"]["name"] != "pod-grouper"
    ]
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert check_detail(report, "kai-components", "kai-scheduler/pod-grouper") == "Deployment not found"


def test_tenant_workload_pods_are_found_in_the_host_namespace(project, fake_kube, capsys):
    """Tenant pods are matched by vCluster's object-namespace annotation and the workload label."""
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 0
    assert check_detail(report, "workload-running", "team-a/train") == "2/2 pods Running and Ready or Succeeded"


def test_pods_are_matched_by_name_when_unlabelled(project, fake_kube, capsys):
    """Without the workload label on any pod, controller-style pod names identify the workload's pods."""
    for path in (ML_PODS, TENANT_PODS):
        for pod in fake_kube.items(path):
            pod["metadata"]["labels"].pop(WORKLOAD_LABEL, None)
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])


def test_list_pages_are_followed(project, fake_kube, capsys):
    """A server that answers one item per page: every list is read through metadata.continue, same result."""
    fake_kube.page_size = 1
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    continued = [path for path, params in fake_kube.requests if params.get("continue")]
    assert ML_PODS in continued
    assert QUEUES in continued


def test_queue_api_not_installed_fails_the_queue_check(project, fake_kube, capsys):
    """No Queue CRD (404 on its list): one queue failure saying so, not an error."""
    del fake_kube.responses[QUEUES]
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert failed_checks(report) == [("queue", "*")]
    assert check_detail(report, "queue", "*") == "the Queue API (scheduling.run.ai/v2) is not installed"


def test_verify_stack_is_usable_as_a_library(project, fake_kube):
    """verify_stack(config, client) returns a report; the CLI is a thin layer on it."""
    with KubeClient.from_kubeconfig(fake_kube.kubeconfig(project.parent).read_text()) as client:
        report = verify_stack(load_stack(project, "dev").config, client, stack="dev")
    assert report.ok
    assert report.as_dict()["failed"] == 0


def test_wait_rechecks_until_pods_are_running(project, fake_kube, capsys, monkeypatch):
    """--wait re-runs the checks after a pause; a pod that starts meanwhile turns the result green."""
    from kaistack.cli import verify as verify_command

    pod = fake_kube.pod(ML_PODS, "notebook")
    running = pod["status"]
    pod["status"] = {"phase": "Pending"}
    monkeypatch.setattr(verify_command, "_sleep", lambda _: pod.update(status=running))
    kubeconfig = fake_kube.kubeconfig(project.parent)
    code = main(
        ["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig), "--wait", "60"]
    )
    captured = capsys.readouterr()
    assert code == 0
    assert "1 checks failing (workload-running notebook); checking again in 15 s" in captured.err
    assert captured.out.rstrip().endswith("all checks passed")


def test_wait_retries_an_api_error_until_a_check_round_completes(project, fake_kube, capsys, monkeypatch):
    """Right after `pulumi up` an API server may time out or answer 5xx a while: under --wait that is retried, not
    exit 3 with most of the wait left."""
    from kaistack.cli import verify as verify_command
    from kaistack.kube.client import KubeError
    from kaistack.ops import verify as verify_module

    calls = []
    real = verify_module.verify_stack

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise KubeError("the API server at https://x did not answer within 10 s (--timeout)")
        return real(*args, **kwargs)

    monkeypatch.setattr(verify_module, "verify_stack", flaky)
    monkeypatch.setattr(verify_command, "_sleep", lambda _: None)
    kubeconfig = fake_kube.kubeconfig(project.parent)
    code = main(
        ["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig), "--wait", "60"]
    )
    captured = capsys.readouterr()
    assert (code, len(calls)) == (0, 2)
    assert "did not answer within 10 s (--timeout); checking again in 15 s" in captured.err


def test_rejected_credentials_end_a_wait_at_once(project, fake_kube, capsys, monkeypatch):
    from kaistack.cli import verify as verify_command

    monkeypatch.setattr(verify_command, "_sleep", lambda _: pytest.fail("waited on rejected credentials"))
    kubeconfig = fake_kube.kubeconfig(project.parent, token="wrong")
    code = main(
        ["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig), "--wait", "60"]
    )
    assert code == 3
    assert "rejected the credentials (401)" in capsys.readouterr().err


def test_a_line_break_in_a_tenants_pod_message_cannot_forge_a_table_row(project, fake_kube, capsys):
    """vCluster copies a virtual pod's status conditions to the host pod (loft-sh/vcluster@v0.36.1
    pkg/controllers/resources/pods/translate/diff.go), so the tenant writes the Ready message the table shows."""
    pod = fake_kube.pod(TENANT_PODS, "train-worker-0-x-default-x-team-a")
    ready = next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")
    ready |= {"status": "False", "reason": "x", "message": "x\nworkload-running  team-a/train  pass  fine\r\n"}
    kubeconfig = fake_kube.kubeconfig(project.parent)
    code = main(["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig)])
    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    running = [line.split()[:3] for line in lines if line.startswith("workload-running")]
    assert running == [
        ["workload-running", "infer", "pass"],
        ["workload-running", "notebook", "pass"],
        ["workload-running", "team-a/train", "FAIL"],
    ]


def test_verify_finds_pods_by_the_labels_the_components_write():
    """A pod carrying exactly the metadata components/podspec.py writes is the workload's pod for verify."""
    from components import podspec
    from kaistack.ops.verify_common import WorkloadPods

    config = load_stack(ROOT, "dev").config
    work = next(w for w in config.workloads if w.kind == "Deployment" and w.tenant is None)
    template = podspec.manifest(config, work)["spec"]["template"]
    # A name the Deployment's pod-name pattern would not match: only the label can find it.
    pod = {"metadata": {**template["metadata"], "name": "renamed"}, "spec": template["spec"]}

    class OnePod:
        def list(self, kind, namespace=None):  # the adapter's signature
            return [pod] if namespace == work.namespace else []

    assert WorkloadPods(config, OnePod()).of(work) == [pod]


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--wait", "nan"), ("--wait", "-1"), ("--wait", "inf"), ("--timeout", "nan"), ("--timeout", "0"),
     ("--timeout", "-1"), ("--timeout", "inf"), ("--timeout", "1e300"), ("--wait", "soon")],
)  # fmt: skip
def test_seconds_that_are_not_finite_and_in_range_are_a_usage_error(flag, value, capsys):
    """--wait nan looped for ever; --timeout nan, -1 or inf was an internal error."""
    with pytest.raises(SystemExit) as caught:
        main(["verify", "--stack", "dev", flag, value])
    assert caught.value.code == 2
    assert f"argument {flag}:" in capsys.readouterr().err


def test_a_wait_shorter_than_the_interval_checks_again_at_its_end(project, fake_kube, capsys, monkeypatch):
    """--wait 14 checked once and gave up (the loop wanted a whole 15 s interval left)."""
    from kaistack.cli import verify as verify_command

    pod = fake_kube.pod(ML_PODS, "notebook")
    running = pod["status"]
    pod["status"] = {"phase": "Pending"}
    pauses: list[float] = []
    monkeypatch.setattr(verify_command, "_sleep", lambda s: pauses.append(s) or pod.update(status=running))
    kubeconfig = fake_kube.kubeconfig(project.parent)
    code = main(
        ["verify", "--stack", "dev", "--project", str(project), "--kubeconfig", str(kubeconfig), "--wait", "14"]
    )
    assert code == 0
    assert len(pauses) == 1
    assert 13 < pauses[0] <= 14


def _infer_on_its_own_gpu_asking_gpu_memory(fake_kube):
    """infer's two 0.5 shares on one node in two GPU groups, the second asking 5700 MiB of an 11400 MiB GPU."""
    pod = fake_kube.pod(ML_PODS, "infer-7c9d8b6f4-q9m4z")
    pod["metadata"]["labels"]["runai-gpu-group"] = "aaaaaaaa-0000-0000-0000-000000000000"
    del pod["metadata"]["annotations"]["gpu-fraction"]
    pod["metadata"]["annotations"]["gpu-memory"] = "5700"


def test_gpu_memory_shares_are_compared_with_the_nodes_gpu_memory(project, fake_kube, capsys):
    _infer_on_its_own_gpu_asking_gpu_memory(fake_kube)
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    assert "fit one GPU but are on two" in check_detail(report, "gpu-group", "node kaistack-dev-worker")


@pytest.mark.parametrize("unreadable", ["forbidden", "no-label"])
def test_a_gpu_group_whose_share_is_unknown_is_not_checked_not_passed(project, fake_kube, capsys, unreadable):
    """The node's GPU memory could not be read (403, or no nvidia.com/gpu.memory label): it passed with '?'."""
    _infer_on_its_own_gpu_asking_gpu_memory(fake_kube)
    node = "/api/v1/nodes/kaistack-dev-worker"
    if unreadable == "forbidden":
        fake_kube.forbidden.add(node)
    else:
        del fake_kube.responses[node]["metadata"]["labels"]["nvidia.com/gpu.memory"]
    _, report = verify_json(project, fake_kube, capsys)
    assert not any(c["check"] == "gpu-group" and c["subject"] == "node kaistack-dev-worker" for c in report["checks"])
    assert any(n.startswith("gpu-group: node kaistack-dev-worker not checked: the share of GPU group aaaaaaaa")
               for n in report["notes"])  # fmt: skip


def test_a_kai_component_scaled_to_zero_fails(project, fake_kube, capsys):
    """Its rollout of nothing is complete (0/0 available): it passed while KAI's scheduler did not run."""
    deployment = next(d for d in fake_kube.items(DEPLOYMENTS) if d["metadata"]["name"] == "kai-scheduler-default")
    deployment["spec"]["replicas"] = 0
    deployment["status"] = {
        "observedGeneration": deployment["metadata"].get("generation", 1),
        "replicas": 0,
        "conditions": [{"type": "Available", "status": "True"}, {"type": "Progressing", "status": "True"}],
    }
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 1
    subject = "kai-scheduler/kai-scheduler-default"
    assert failed_checks(report) == [("kai-components", subject)]
    assert check_detail(report, "kai-components", subject).startswith("scaled to 0 replicas")


def test_a_queue_listed_without_metadata_is_skipped_not_an_internal_error(project, fake_kube, capsys):
    """It was exit 70 (KeyError: 'metadata'); a Queue is read as the API sends it, no model in between."""
    fake_kube.items(QUEUES).append({"spec": {}})
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
