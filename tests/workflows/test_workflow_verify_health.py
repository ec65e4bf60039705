"""`kaistack verify` beyond a pod's phase: crash loops, KAI's rollouts, node readiness, the tenants' vClusters.

Against the healthy dev cluster's recorded API responses (fixtures/kube-healthy.json) on loopback, each test
changing what one failure looks like from the API.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from workflow_testlib import check_detail, failed_checks, verify_json

ML_PODS = "/api/v1/namespaces/ml/pods"
TENANT_PODS = "/api/v1/namespaces/vcluster-team-a/pods"
ALL_PODS = "/api/v1/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/kai-scheduler/deployments"
ML_DEPLOYMENTS = "/apis/apps/v1/namespaces/ml/deployments"
TENANT = "team-a (vcluster-team-a)"


def _crash_loop(pod: dict[str, Any], restarts: int = 14) -> None:
    """What the kubelet reports for a restartPolicy Always container that keeps exiting: phase stays Running."""
    pod["status"]["containerStatuses"] = [
        {
            "name": "main",
            "ready": False,
            "started": False,
            "restartCount": restarts,
            "image": "busybox:1.37.0",
            "imageID": "",
            "state": {
                "waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting failed container"}
            },
            "lastState": {"terminated": {"exitCode": 127, "reason": "Error"}},
        }
    ]
    pod["status"]["conditions"] = [
        {"type": "Ready", "status": "False", "reason": "ContainersNotReady"},
        {"type": "PodScheduled", "status": "True"},
    ]


def _deployment(fake_kube, name: str) -> dict[str, Any]:
    return next(d for d in fake_kube.items(DEPLOYMENTS) if d["metadata"]["name"] == name)


@pytest.mark.parametrize(
    ("path", "pod", "subject", "namespace"),
    [
        (ML_PODS, "notebook", "notebook", "ml"),
        (TENANT_PODS, "train-master-0-x-default-x-team-a", "team-a/train", "vcluster-team-a"),
    ],
)
def test_crash_looping_pod_fails_its_workload_naming_reason_and_restarts(
    project, fake_kube, capsys, path, pod, subject, namespace
):
    """A CrashLoopBackOff pod stays phase Running; it does not count, and the line says why and where to look."""
    _crash_loop(fake_kube.pod(path, pod))
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-running", subject)])
    detail = check_detail(report, "workload-running", subject)
    assert detail.startswith(f"{'0/1' if subject == 'notebook' else '1/2'} pods Running and Ready or Succeeded; ")
    assert (
        f"{pod} Running but not Ready (container main CrashLoopBackOff, 14 restarts, last exit 127 (Error))" in detail
    )
    assert f"see `kubectl -n {namespace} logs {pod} -c main --previous`" in detail


def test_pod_without_ready_condition_needs_every_container_ready(project, fake_kube, capsys):
    """With no Ready condition in its status, a Running pod counts only when every container reports ready."""
    pod = fake_kube.pod(ML_PODS, "notebook")
    pod["status"]["conditions"] = [c for c in pod["status"]["conditions"] if c["type"] != "Ready"]
    pod["status"]["containerStatuses"][0]["ready"] = False
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-running", "notebook")])


def test_not_ready_surplus_replica_fails_even_with_enough_ready_ones(project, fake_kube, capsys):
    """A stalled rollout keeps the old replicas Ready while the new template's pod crash-loops: still a failure."""
    new = json.loads(json.dumps(fake_kube.pod(ML_PODS, "infer-7c9d8b6f4-x7k2p")))
    new["metadata"] |= {"name": "infer-5b8c7d9e1-n3w4p", "uid": "22222222-3333-4444-8555-666666666666"}
    new["metadata"]["labels"]["runai-gpu-group"] = "d4e5f6a7-1111-4c4c-9d9d-abcdefabcdef"
    _crash_loop(new, restarts=3)
    fake_kube.items(ML_PODS).append(new)
    fake_kube.items(ALL_PODS).append(new)
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-running", "infer")])
    assert check_detail(report, "workload-running", "infer").startswith(
        "2/2 pods Running and Ready; infer-5b8c7d9e1-n3w4p Running but not Ready (container main CrashLoopBackOff, "
        "3 restarts"
    )


def test_stalled_kai_rollout_fails_naming_updated_replicas_and_progress_deadline(project, fake_kube, capsys):
    """Old replicas keep a Deployment available while its new ones crash-loop: not updated, not progressing."""
    binder = _deployment(fake_kube, "binder")
    binder["metadata"]["generation"] = 2
    binder["spec"]["replicas"] = 2
    binder["status"] |= {
        "observedGeneration": 2,
        "replicas": 3,
        "updatedReplicas": 1,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "unavailableReplicas": 1,
    }
    binder["status"]["conditions"][1] |= {
        "status": "False",
        "reason": "ProgressDeadlineExceeded",
        "message": 'ReplicaSet "binder-7d9f8c6b4" has timed out progressing.',
    }
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("kai-components", "kai-scheduler/binder")])
    assert check_detail(report, "kai-components", "kai-scheduler/binder") == (
        "1/2 replicas updated to the current template; Progressing False: ProgressDeadlineExceeded "
        '(ReplicaSet "binder-7d9f8c6b4" has timed out progressing.); '
        "see `kubectl -n kai-scheduler rollout status deployment/binder` and its new pods' logs"
    )


def test_kai_deployment_whose_latest_generation_is_unobserved_fails(project, fake_kube, capsys):
    """Status written for an older spec says nothing about the current one (observedGeneration < generation)."""
    _deployment(fake_kube, "pod-grouper")["metadata"]["generation"] = 3
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("kai-components", "kai-scheduler/pod-grouper")])
    assert check_detail(report, "kai-components", "kai-scheduler/pod-grouper").startswith(
        "status is for generation 1 of 3 (the Deployment controller has not processed the latest spec)"
    )


def test_healthy_nodes_pass_naming_the_checked_pods_they_run(project, fake_kube, capsys):
    """node-ready covers each node under a checked pod: the workloads' and the vCluster control plane's."""
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 0
    assert [c["subject"] for c in report["checks"] if c["check"] == "node-ready"] == [
        "node kaistack-dev-control-plane",
        "node kaistack-dev-worker",
        "node kaistack-dev-worker2",
    ]
    assert check_detail(report, "node-ready", "node kaistack-dev-worker2") == (
        "Ready; runs notebook, train-worker-0-x-default-x-team-a"
    )


def test_pod_on_a_not_ready_node_fails_node_ready(project, fake_kube, capsys):
    """A node that stopped reporting keeps its pods Running (and Ready, until the node controller marks them)."""
    node = fake_kube.responses["/api/v1/nodes/kaistack-dev-worker2"]
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    ready |= {
        "status": "Unknown",
        "reason": "NodeStatusUnknown",
        "message": "Kubelet stopped posting node status.",
        "lastTransitionTime": "2026-11-21T15:10:00Z",
    }
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("node-ready", "node kaistack-dev-worker2")])
    assert check_detail(report, "node-ready", "node kaistack-dev-worker2") == (
        "NotReady (Ready Unknown: NodeStatusUnknown, Kubelet stopped posting node status.) since "
        "2026-11-21T15:10:00Z; its pods notebook, train-worker-0-x-default-x-team-a stay Running until their "
        "not-ready toleration runs out (300 s by default), then are evicted: restore the kubelet "
        "(`kubectl describe node kaistack-dev-worker2`) or drain it"
    )


def test_pod_on_a_deleted_node_fails_node_ready(project, fake_kube, capsys):
    """A pod bound to a node that no longer exists is orphaned: node-ready fails with 'Node not found'."""
    del fake_kube.responses["/api/v1/nodes/kaistack-dev-worker2"]
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("node-ready", "node kaistack-dev-worker2")])
    assert check_detail(report, "node-ready", "node kaistack-dev-worker2").startswith("Node not found: its pods")


def test_nodes_the_credentials_may_not_read_are_a_note(project, fake_kube, capsys):
    """A role without `get` on nodes (403) verifies the rest; node readiness is a 'not checked' note, not exit 3."""
    fake_kube.forbidden.add("/api/v1/nodes/kaistack-dev-control-plane")
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (0, [])
    assert "node kaistack-dev-control-plane" not in [c["subject"] for c in report["checks"]]
    assert report["notes"] == [
        "node-ready: not checked for kaistack-dev-control-plane: GET /api/v1/nodes/kaistack-dev-control-plane: HTTP "
        '403: forbidden: User "viewer" cannot get path "/api/v1/nodes/kaistack-dev-control-plane"; grant `get` on '
        "nodes to check the nodes' readiness"
    ]


def test_a_node_the_credentials_may_not_read_keeps_what_the_others_showed(project, fake_kube, capsys):
    """RBAC that names nodes one by one (resourceNames): one 403 discarded a NotReady node already found."""
    fake_kube.forbidden.add("/api/v1/nodes/kaistack-dev-control-plane")
    worker = fake_kube.responses["/api/v1/nodes/kaistack-dev-worker2"]
    worker["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("node-ready", "node kaistack-dev-worker2")])
    assert report["notes"][0].startswith("node-ready: not checked for kaistack-dev-control-plane:")


def test_crash_looping_vcluster_control_plane_fails(project, fake_kube, capsys):
    """The tenant's synced pods outlive its vCluster pod, so they pass while the tenant's API server is down."""
    _crash_loop(fake_kube.pod(TENANT_PODS, "team-a-0"), restarts=9)
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("vcluster-control-plane", TENANT)])
    assert check_detail(report, "vcluster-control-plane", TENANT).startswith(
        "team-a-0 Running but not Ready (container main CrashLoopBackOff, 9 restarts, last exit 127 (Error)); "
        "see `kubectl -n vcluster-team-a logs team-a-0 -c main --previous`; the tenant's API server is down"
    )


def test_missing_vcluster_control_plane_pod_fails(project, fake_kube, capsys):
    """No `<tenant>-0` pod in the host namespace: the vCluster is not running, whatever its synced pods say."""
    fake_kube.responses[TENANT_PODS]["items"] = [
        p for p in fake_kube.items(TENANT_PODS) if p["metadata"]["name"] != "team-a-0"
    ]
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("vcluster-control-plane", TENANT)])
    assert check_detail(report, "vcluster-control-plane", TENANT).startswith(
        "pod team-a-0 not found (or being deleted) in vcluster-team-a: the tenant's API server is down"
    )


def test_healthy_vcluster_control_plane_passes(project, fake_kube, capsys):
    """The vCluster pod Running and Ready: vcluster-control-plane passes and says where it runs."""
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 0
    assert check_detail(report, "vcluster-control-plane", TENANT) == (
        "team-a-0 Running and Ready on kaistack-dev-control-plane"
    )


def _infer(fake_kube) -> dict[str, Any]:
    return next(d for d in fake_kube.items(ML_DEPLOYMENTS) if d["metadata"]["name"] == "infer")


def test_declared_deployment_rolled_out_passes(project, fake_kube, capsys):
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 0
    assert check_detail(report, "workload-rollout", "infer") == "2/2 available, rollout complete"


def test_declared_deployment_whose_new_pods_are_refused_fails_while_its_old_pods_pass(project, fake_kube, capsys):
    """Quota or admission refusing the new template's pods leaves no pod to fail: only the Deployment tells."""
    infer = _infer(fake_kube)
    infer["metadata"]["generation"] = 2
    infer["status"] |= {"observedGeneration": 2, "updatedReplicas": 0}
    infer["status"]["conditions"].append(
        {
            "type": "ReplicaFailure",
            "status": "True",
            "reason": "FailedCreate",
            "message": 'pods "infer-5f6a7b8c9-" is forbidden: exceeded quota: ml',
        }
    )
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-rollout", "infer")])
    assert check_detail(report, "workload-rollout", "infer") == (
        "0/2 replicas updated to the current template; "
        "see `kubectl -n ml rollout status deployment/infer` and its new pods' logs"
    )


def test_declared_deployment_missing_from_the_cluster_fails(project, fake_kube, capsys):
    fake_kube.items(ML_DEPLOYMENTS).clear()
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-rollout", "infer")])
    assert check_detail(report, "workload-rollout", "infer").startswith("Deployment ml/infer not found")


def _tenant_deployment(project, fake_kube, hashes: list[str]) -> None:
    """A one-replica tenant Deployment `serve`, and a Ready synced pod for each template hash given."""
    stack = project / "Pulumi.dev.yaml"
    stack.write_text(
        stack.read_text()
        + "    - name: serve\n      kind: Deployment\n      tenant: team-a\n      queue: team-a\n"
        + "      image: ghcr.io/acme/serve:1.0.0\n"
    )
    template = fake_kube.pod(TENANT_PODS, "train-worker-0-x-default-x-team-a")
    for i, hash_ in enumerate(hashes):
        pod = copy.deepcopy(template)
        virtual = f"serve-{hash_}-abcd{i}"
        pod["metadata"] |= {"name": f"{virtual}-x-default-x-team-a", "uid": f"serve-{i}"}
        pod["metadata"]["labels"] = {
            "app": "serve",
            "pod-template-hash": hash_,
            "kai.scheduler/queue": "team-a",
            "vcluster.loft.sh/managed-by": "team-a",
            "vcluster.loft.sh/namespace": "default",
        }
        pod["metadata"]["annotations"]["vcluster.loft.sh/object-name"] = virtual
        pod["metadata"]["annotations"]["pod-group-name"] = f"pg-{virtual}"
        for container in pod["spec"]["containers"]:
            container |= {"name": "main", "image": "ghcr.io/acme/serve:1.0.0"}
            container["resources"] = {"requests": {"cpu": "100m", "memory": "128Mi"}}
        fake_kube.items(TENANT_PODS).append(pod)
        fake_kube.items(ALL_PODS).append(pod)


def test_tenant_deployment_with_pods_of_two_templates_fails_naming_them(project, fake_kube, capsys):
    """The Deployment is inside the vCluster; from the host, two pod-template-hash values mean an unfinished rollout."""
    _tenant_deployment(project, fake_kube, ["6f7d8c9b5", "7a8b9c0d1"])
    code, report = verify_json(project, fake_kube, capsys)
    assert (code, failed_checks(report)) == (1, [("workload-rollout", "team-a/serve")])
    assert check_detail(report, "workload-rollout", "team-a/serve") == (
        "pods of 2 templates (6f7d8c9b5: serve-6f7d8c9b5-abcd0-x-default-x-team-a; "
        "7a8b9c0d1: serve-7a8b9c0d1-abcd1-x-default-x-team-a): a rollout has not finished; inside the vCluster "
        "`kubectl -n default rollout status deployment/serve`"
    )


def test_tenant_deployment_with_pods_of_one_template_passes(project, fake_kube, capsys):
    _tenant_deployment(project, fake_kube, ["6f7d8c9b5"])
    code, report = verify_json(project, fake_kube, capsys)
    assert code == 0
    assert check_detail(report, "workload-rollout", "team-a/serve") == "1 synced pods of one template"


def test_a_finished_pod_of_an_older_template_does_not_fail_the_tenant_rollout(project, fake_kube, capsys):
    """An evicted pod is Failed and stays until garbage-collected; it holds no template's place."""
    _tenant_deployment(project, fake_kube, ["6f7d8c9b5", "7a8b9c0d1"])
    old = fake_kube.pod(TENANT_PODS, "serve-6f7d8c9b5-abcd0-x-default-x-team-a")
    old["status"] = {"phase": "Failed", "reason": "Evicted"}
    _, report = verify_json(project, fake_kube, capsys)
    assert check_detail(report, "workload-rollout", "team-a/serve") == "1 synced pods of one template"
