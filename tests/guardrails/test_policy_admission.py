"""Tenant admission: hostile pods are denied by the host's CEL, the policy pack and `kaistack lint` alike.

Each pod is what reaches the host API server for tenant team-a of the dev stack: synced by its vCluster
(labels and annotations as loft-sh/vcluster@v0.36.1 writes them: pkg/util/translate/labels.go
L49-65, translate.go L117-152) or written straight into the tenant's host namespace. The policy's CEL
strings are evaluated with cel-python (an error counts as a denial: failurePolicy Fail); the same pod
goes to the policy pack over the Analyzer gRPC protocol and to `kaistack lint` as a manifest file.
Rows that depend on the request (UPDATE, who sends it) exist only at admission, so only the CEL
sees them.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import celpy
import kubernetes_validate
import lark
import pulumi
import pytest
import yaml
from analyzer_pack import Pack, engine_config_env, recorded_pod
from pulumi.runtime.proto import analyzer_pb2

from components.admission import TenantAdmission, admission_manifests, tenant_binding, tenant_policy
from kaistack.declaration import training_operator
from kaistack.declaration.model import StackConfig
from kaistack.guardrails import admission
from kaistack.guardrails.admission import POD_GROUPER_USER, binder_user
from kaistack.guardrails.facts import facts_from_stack
from kaistack.guardrails.pack_config import pack_config
from kaistack.ops.lint import lint_paths
from kaistack.ops.mocks import MockSession
from kaistack.stack.load import load_stack
from policies.pack import POLICY_NAMES

ROOT = Path(__file__).resolve().parents[2]
HOST_NAMESPACE = "vcluster-team-a"
SYNCER = "system:serviceaccount:vcluster-team-a:vc-team-a"  # vCluster's syncer (chart: vc-<release>)
HOST_ADMIN = "kubernetes-admin"
STATEFULSET_CONTROLLER = "system:serviceaccount:kube-system:statefulset-controller"
QUEUE = "kai.scheduler/queue"


@pytest.fixture(scope="module")
def dev() -> StackConfig:
    return load_stack(ROOT, "dev").config


def synced_pod(
    *,
    scheduler: str | None = "kai-scheduler",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    virtual_namespace: str = "default",
    limits: dict[str, str] | None = None,
    init_limits: dict[str, str] | None = None,
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A tenant pod as the host sees it after vCluster's sync (renamed, syncer markers added)."""
    meta_labels = {"vcluster.loft.sh/managed-by": "team-a", "vcluster.loft.sh/namespace": virtual_namespace}
    meta_labels.update({QUEUE: "team-a"} if labels is None else labels)
    container: dict[str, Any] = {"name": "main", "image": "ubuntu", "resources": {"requests": {"cpu": "100m"}}}
    if limits:
        container["resources"]["limits"] = limits
    body: dict[str, Any] = {"containers": [container], **(spec or {})}
    if init_limits:
        body["initContainers"] = [{"name": "init", "image": "ubuntu", "resources": {"limits": init_limits}}]
    if scheduler is not None:
        body["schedulerName"] = scheduler
    name = f"p-x-{virtual_namespace}-x-team-a"
    marks = {"vcluster.loft.sh/object-name": "p", **(annotations or {})}
    if {"gpu-fraction", "gpu-memory"} & set(marks):
        # What KAI's mutating webhook adds to a pod with a share before the policy sees it (KAI@v0.17.0
        # pkg/binder/common/gpusharingconfigmap/config_map.go:113-147): `<pod name>-<7 random>-shared-gpu`.
        marks.setdefault("runai/shared-gpu-configmap", f"{name}-bx7q2zk-shared-gpu")
    meta: dict[str, Any] = {"name": name, "namespace": HOST_NAMESPACE, "labels": meta_labels, "annotations": marks}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}


def direct_pod(**kwargs: Any) -> dict[str, Any]:
    """A pod written straight into the tenant's host namespace: no syncer markers."""
    pod = synced_pod(**kwargs)
    for key in ("vcluster.loft.sh/managed-by", "vcluster.loft.sh/namespace"):
        pod["metadata"]["labels"].pop(key)
    pod["metadata"]["annotations"].pop("vcluster.loft.sh/object-name")
    pod["metadata"]["name"] = "direct"
    return pod


def control_plane_pod(owner: str = "team-a", kind: str = "StatefulSet") -> dict[str, Any]:
    """The vCluster's own pod as the StatefulSet controller creates it: the chart names the set after the release
    (loft-sh/vcluster@v0.36.1 chart/templates/statefulset.yaml L4-6), kaistack the release after the tenant, and the
    controller gives the pod a controller reference to its set (kubernetes pkg/controller/statefulset/
    stateful_set_utils.go newStatefulSetPod, NewControllerRef)."""
    pod = direct_pod(scheduler="default-scheduler", labels={"app": "vcluster", "release": owner})
    pod["metadata"]["name"] = f"{owner}-0"
    pod["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": kind,
            "name": owner,
            "uid": "u1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return pod


def coredns(**kwargs: Any) -> dict[str, Any]:
    """vCluster's CoreDNS as synced: virtual kube-system, default scheduler, no queue."""
    return synced_pod(
        scheduler="default-scheduler",
        labels={"k8s-app": "vcluster-kube-dns"},
        virtual_namespace="kube-system",
        **kwargs,
    )


# kubeflow/training-operator@v1.8.1:manifests/base/deployment.yaml (commit 0f8735fa), which the standalone
# overlay puts in namespace kubeflow; `cluster.trainingOperator` installs it in a tenant running a PyTorchJob.
OPERATOR = yaml.safe_load((ROOT / "tests/data/manifests/training-operator-v1.8.1-deployment.yaml").read_text())


def training_operator_pod(*, as_kaistack_installs_it: bool) -> dict[str, Any]:
    """The operator's pod as the host sees it, synced from the tenant's `kubeflow` namespace."""
    deployment = copy.deepcopy(OPERATOR)
    deployment["metadata"]["namespace"] = training_operator.NAMESPACE
    if as_kaistack_installs_it:
        deployment = training_operator.schedule_with_kai(deployment, QUEUE, "team-a")
    template = deployment["spec"]["template"]
    spec = {k: v for k, v in template["spec"].items() if k != "schedulerName"}
    # The API server fills in the default scheduler before admission runs.
    scheduler = template["spec"].get("schedulerName", "default-scheduler")
    return synced_pod(
        scheduler=scheduler, labels=template["metadata"]["labels"], virtual_namespace="kubeflow", spec=spec
    )


@dataclass(frozen=True)
class Case:
    pod: dict[str, Any]
    allowed: bool
    operation: str = "CREATE"
    user: str = SYNCER
    old: dict[str, Any] | None = None
    # False for rows the pack and lint cannot see: what depends on the request, and vCluster's own pods.
    offline: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


def _bound(pod: dict[str, Any]) -> dict[str, Any]:
    bound = copy.deepcopy(pod)
    bound["spec"]["nodeName"] = "kind-worker"
    return bound


def _relabelled(pod: dict[str, Any], **labels: str) -> dict[str, Any]:
    out = copy.deepcopy(pod)
    out["metadata"]["labels"].update(labels)
    return out


def _annotated(pod: dict[str, Any], **annotations: str) -> dict[str, Any]:
    out = copy.deepcopy(pod)
    out["metadata"]["annotations"].update(annotations)
    return out


def _debugged(pod: dict[str, Any], **env: str) -> dict[str, Any]:
    """The pod with an ephemeral container, as `kubectl debug --image cuda [--env K=V]` adds it."""
    out = copy.deepcopy(pod)
    container: dict[str, Any] = {"name": "debugger", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"}
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    out["spec"]["ephemeralContainers"] = [container]
    return out


def _debugged_again(pod: dict[str, Any]) -> dict[str, Any]:
    """A second ephemeral container, without the void, beside the pod's first."""
    out = copy.deepcopy(pod)
    out["spec"]["ephemeralContainers"].append({"name": "again", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"})
    return out


def _privileged(
    pod: dict[str, Any], *, init: bool = False, ephemeral: bool = False, value: bool = True
) -> dict[str, Any]:
    out = copy.deepcopy(pod)
    field = "ephemeralContainers" if ephemeral else "initContainers" if init else "containers"
    out["spec"][field][-1]["securityContext"] = {"privileged": value}
    return out


def _owned(pod: dict[str, Any], kind: str) -> dict[str, Any]:
    out = copy.deepcopy(pod)
    owner = {"apiVersion": "apps/v1", "kind": kind, "name": "w-5d8f", "uid": "0d1c", "controller": True}
    out["metadata"]["ownerReferences"] = [owner]
    return out


PLAIN = synced_pod()
SHARED = _bound(synced_pod(annotations={"gpu-fraction": "0.9"}))
CUDA_ALL = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
# What vCluster writes into synced containers for a Service `nvidia-triton` (pods/translate/envvars.go).
SERVICE_LINKS = [
    {"name": "NVIDIA_TRITON_SERVICE_HOST", "value": "10.96.0.12"},
    {"name": "NVIDIA_TRITON_SERVICE_PORT_HTTP", "value": "8000"},
    {"name": "NVIDIA_TRITON_PORT_8000_TCP_ADDR", "value": "10.96.0.12"},
]


def _with_env(pod: dict[str, Any], env: list[dict[str, str]], ephemeral: bool = False) -> dict[str, Any]:
    out = copy.deepcopy(pod)
    containers = out["spec"]["ephemeralContainers" if ephemeral else "containers"]
    containers[0]["env"] = [*containers[0].get("env", []), *env]
    return out


def _second(pod: dict[str, Any], field: str, item: dict[str, Any]) -> dict[str, Any]:
    """`item` appended to the pod's `field` list (containers, initContainers, tolerations): the rules must look at
    every element, not just the first."""
    out = copy.deepcopy(pod)
    out["spec"].setdefault(field, [{"name": "first", "image": "ubuntu"}]).append(item)
    return out


def _with_env_from(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod's ephemeral container also reads a ConfigMap, which may set NVIDIA_VISIBLE_DEVICES=all."""
    out = copy.deepcopy(pod)
    out["spec"]["ephemeralContainers"][0]["envFrom"] = [{"configMapRef": {"name": "cuda-env"}}]
    return out


GPU_CONTAINER = {"name": "second", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
# What a mesh injects (kaistack.guardrails.fraction_container cites where each puts it).
LINKERD_PROXY = {"name": "linkerd-proxy", "image": "cr.l5d.io/linkerd/proxy:edge-25.8.1"}
ISTIO_PROXY = {"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.29.6"}


def _proxy_first(pod: dict[str, Any], proxy: dict[str, Any], field: str = "containers") -> dict[str, Any]:
    """The pod as the API server holds it after a mesh put its proxy first in `field`."""
    out = copy.deepcopy(pod)
    out["spec"].setdefault(field, []).insert(0, copy.deepcopy(proxy))
    return out


PODS: dict[str, Case] = {
    # --- normal tenant and host system pods: admitted -------------------------------------------
    "kai pod on the tenant's queue": Case(PLAIN, True),
    "whole-GPU pod": Case(synced_pod(limits={"nvidia.com/gpu": "1"}), True),
    "fractional pod": Case(synced_pod(annotations={"gpu-fraction": "0.5"}), True),
    "fraction written 5e-1 (KAI accepts it)": Case(synced_pod(annotations={"gpu-fraction": "5e-1"}), True),
    "gpu-memory pod": Case(synced_pod(annotations={"gpu-memory": "2000"}), True),
    "fraction on two devices": Case(
        synced_pod(annotations={"gpu-fraction": "0.5", "gpu-fraction-num-devices": "2"}), True
    ),
    "fraction for a named init container": Case(
        synced_pod(
            annotations={"gpu-fraction": "0.5", "gpu-fraction-container-name": "init"}, init_limits={"cpu": "1"}
        ),
        True,
    ),
    "MPS with a fraction": Case(synced_pod(annotations={"gpu-fraction": "0.5", "mps": "true"}), True),
    "train in the priorityClassName label": Case(
        synced_pod(labels={QUEUE: "team-a", "priorityClassName": "train"}), True
    ),
    "vCluster's CoreDNS": Case(coredns(), True, offline=False),
    "the training operator as kaistack installs it in a tenant": Case(
        training_operator_pod(as_kaistack_installs_it=True), True
    ),
    "vCluster's control plane (StatefulSet pod)": Case(
        control_plane_pod(), True, user=STATEFULSET_CONTROLLER, offline=False
    ),
    "vCluster's control plane as the controller manager (no --use-service-account-credentials)": Case(
        control_plane_pod(), True, user="system:kube-controller-manager", offline=False
    ),
    "another StatefulSet's pod in the host namespace": Case(
        control_plane_pod(owner="db"), False, user=STATEFULSET_CONTROLLER, offline=False
    ),
    "a ReplicaSet's pod made by the controller manager": Case(
        control_plane_pod(owner="team-a", kind="ReplicaSet"),
        False,
        user="system:kube-controller-manager",
        offline=False,
    ),
    "an owner reference to the vCluster's StatefulSet, written by someone else": Case(
        control_plane_pod(), False, user="system:serviceaccount:vcluster-team-a:deployer", offline=False
    ),
    "syncer updates a bound pod (nodeName set by KAI's binder)": Case(
        _bound(PLAIN), True, operation="UPDATE", old=_bound(PLAIN), offline=False
    ),
    "syncer updates a pod whose queue was taken from the tenant later": Case(
        _relabelled(PLAIN, **{QUEUE: "test"}),
        True,
        operation="UPDATE",
        old=_relabelled(PLAIN, **{QUEUE: "test"}),
        offline=False,
    ),
    "an owned pod from before the policy, updated unchanged": Case(
        _owned(PLAIN, "ReplicaSet"), True, operation="UPDATE", old=_owned(PLAIN, "ReplicaSet"), offline=False
    ),
    "syncer updates a bound fractional pod, its share unchanged": Case(
        SHARED, True, operation="UPDATE", old=SHARED, offline=False
    ),
    # The BindRequest fixes the portion the binder hands out before nodeName is set (KAI@v0.17.0
    # pkg/binder/plugins/gpusharing/gpu_sharing.go:79), while the scheduler re-reads the annotation
    # (pod_info.go:521-572).
    "a pending pod's share changed before it is bound": Case(
        synced_pod(annotations={"gpu-fraction": "0.2"}),
        False,
        operation="UPDATE",
        old=synced_pod(annotations={"gpu-fraction": "0.9"}),
        offline=False,
    ),
    # A privileged container gets every device node of its node (the GPUs too); vCluster checks nothing of it
    # where the tenant's podSecurityStandard is privileged or unset (pods/syncer.go:196,340).
    "a privileged container": Case(_privileged(PLAIN), False),
    "a privileged init container": Case(_privileged(synced_pod(init_limits={"cpu": "1"}), init=True), False),
    "securityContext.privileged: false": Case(_privileged(PLAIN, value=False), True),
    "kubectl debug --profile sysadmin (a privileged ephemeral container)": Case(
        _privileged(_debugged(_bound(PLAIN), NVIDIA_VISIBLE_DEVICES="void"), ephemeral=True),
        False,
        operation="UPDATE",
        old=_bound(PLAIN),
        offline=False,
    ),
    "an update of a pod with a privileged debug container from before the policy": Case(
        _relabelled(_privileged(_debugged(_bound(PLAIN), NVIDIA_VOID="x"), ephemeral=True), extra="label"),
        True,
        operation="UPDATE",
        old=_privileged(_debugged(_bound(PLAIN), NVIDIA_VOID="x"), ephemeral=True),
        offline=False,
    ),
    "an update of a pod made privileged before the policy": Case(
        _privileged(_bound(PLAIN)), True, operation="UPDATE", old=_privileged(_bound(PLAIN)), offline=False
    ),
    "kubectl debug with NVIDIA_VISIBLE_DEVICES=void": Case(
        _debugged(_bound(PLAIN), NVIDIA_VISIBLE_DEVICES="void"),
        True,
        operation="UPDATE",
        old=_bound(PLAIN),
        offline=False,
    ),
    "kubectl debug beside a Service named nvidia-triton": Case(
        _with_env(_debugged(_bound(PLAIN), NVIDIA_VISIBLE_DEVICES="void"), SERVICE_LINKS, ephemeral=True),
        True,
        operation="UPDATE",
        old=_bound(PLAIN),
        offline=False,
    ),
    "CoreDNS beside a Service named nvidia-triton": Case(_with_env(coredns(), SERVICE_LINKS), True, offline=False),
    "CoreDNS beside a Service named nvidia": Case(
        _with_env(
            coredns(),
            [
                {"name": "NVIDIA_SERVICE_HOST", "value": "10.96.0.13"},
                {"name": "NVIDIA_PORT", "value": "tcp://10.96.0.13:80"},
                {"name": "NVIDIA_PORT_80_TCP_ADDR", "value": "10.96.0.13"},
            ],
        ),
        True,
        offline=False,
    ),
    "syncer updates a pod with a debug container from before the policy": Case(
        _debugged(_bound(PLAIN)), True, operation="UPDATE", old=_debugged(_bound(PLAIN)), offline=False
    ),
    "KAI's pod-grouper adds pod-group-name": Case(
        _annotated(PLAIN, **{"pod-group-name": "pg-p-1234"}),
        True,
        operation="UPDATE",
        user=POD_GROUPER_USER,
        old=PLAIN,
        offline=False,
    ),
    "syncer copies the pod-grouper's annotation back unchanged": Case(
        _annotated(PLAIN, **{"pod-group-name": "pg-p-1234"}),
        True,
        operation="UPDATE",
        old=_annotated(PLAIN, **{"pod-group-name": "pg-p-1234"}),
        offline=False,
    ),
    "KAI's binder labels a shared pod with its GPU group": Case(
        _relabelled(SHARED, **{"runai-gpu-group": "g1"}),
        True,
        operation="UPDATE",
        user=binder_user(),
        old=SHARED,
        offline=False,
    ),
    "KAI's binder removes the GPU group on a rollback": Case(
        SHARED,
        True,
        operation="UPDATE",
        user=binder_user(),
        old=_relabelled(SHARED, **{"runai-gpu-group": "g1"}),
        offline=False,
    ),
    "syncer copies the binder's GPU group back unchanged": Case(
        _relabelled(SHARED, **{"runai-gpu-group": "g1", "app": "x"}),
        True,
        operation="UPDATE",
        old=_relabelled(SHARED, **{"runai-gpu-group": "g1"}),
        offline=False,
    ),
    "a Spark executor, grouped by its application id": Case(
        _relabelled(PLAIN, **{"spark-app-name": "etl", "spark-app-selector": "spark-3f9c2a1b8e4d4a3f9b0e6a2c7d4e5f91"}),
        True,
        offline=False,
    ),
    "syncer updates a pod whose KAI start time was there before the policy": Case(
        _annotated(_bound(PLAIN), **{"kai.scheduler/last-start-timestamp": "2026-11-26T12:00:00Z", "x": "y"}),
        True,
        operation="UPDATE",
        old=_annotated(_bound(PLAIN), **{"kai.scheduler/last-start-timestamp": "2026-11-26T12:00:00Z"}),
        offline=False,
    ),
    "vCluster's CoreDNS with huge pages": Case(
        coredns(limits={"memory": "64Mi", "hugepages-2Mi": "2Mi"}), True, offline=False
    ),
    "a share for the pod's second container": Case(
        _second(
            synced_pod(annotations={"gpu-fraction": "0.5", "gpu-fraction-container-name": "second"}),
            "containers",
            {"name": "second", "image": "cuda"},
        ),
        True,
    ),
    # --- every element of a list is looked at, not only the first (mutation tests found these unasserted) -------
    "a share with a whole GPU on the second container": Case(
        _second(synced_pod(annotations={"gpu-fraction": "0.5"}), "containers", GPU_CONTAINER), False
    ),
    "a share with a whole GPU on the second init container": Case(
        _second(synced_pod(annotations={"gpu-fraction": "0.5"}), "initContainers", GPU_CONTAINER), False
    ),
    "CoreDNS copy in kube-system with CPU and an AMD GPU": Case(
        coredns(limits={"cpu": "1", "amd.com/gpu": "1"}), False
    ),
    "KAI pod asking for CPU and a renamed time slice": Case(
        synced_pod(limits={"cpu": "1", "nvidia.com/gpu.shared": "1"}), False
    ),
    "CoreDNS copy in kube-system tolerating every taint after CriticalAddonsOnly": Case(
        _second(
            coredns(spec={"tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}]}),
            "tolerations",
            {"operator": "Exists"},
        ),
        False,
    ),
    "CoreDNS copy in kube-system tolerating an empty key": Case(
        coredns(spec={"tolerations": [{"key": "", "operator": "Exists"}]}), False
    ),
    "CoreDNS copy in kube-system with NVIDIA_VISIBLE_DEVICES=all as its second variable": Case(
        coredns(
            spec={"containers": [{"name": "main", "image": "cuda", "env": [{"name": "LOG", "value": "1"}, *CUDA_ALL]}]}
        ),
        False,
    ),
    "a share naming a missing container in a pod with init containers": Case(
        synced_pod(
            annotations={"gpu-fraction": "0.5", "gpu-fraction-container-name": "ghost"}, init_limits={"cpu": "1"}
        ),
        False,
    ),
    "kubectl debug with NVIDIA_VISIBLE_DEVICES=void and an envFrom ConfigMap": Case(
        _with_env_from(_debugged(_bound(PLAIN), NVIDIA_VISIBLE_DEVICES="void")),
        False,
        operation="UPDATE",
        old=_bound(PLAIN),
        offline=False,
    ),
    # --- hostile, through the syncer: denied ---------------------------------------------------------
    # KAI@v0.17.0 pod_controller.go:105,233-236: a bare pod without pod-group-name is grouped again, from its
    # labels (priority, preemptibility) and annotations (a start time): reclaim and preempt then never take it.
    "syncer removes pod-group-name from a running pod": Case(
        _relabelled(_bound(PLAIN), **{"kai.scheduler/preemptibility": "non-preemptible"}),
        False,
        operation="UPDATE",
        old=_annotated(_bound(PLAIN), **{"pod-group-name": "pg-p-1234"}),
        offline=False,
    ),
    "syncer changes pod-group-name of a running pod to the tenant's own gang": Case(
        _annotated(_bound(PLAIN), **{"pod-group-name": "kaistack-team-a-default-ddp-smoke"}),
        False,
        operation="UPDATE",
        old=_annotated(_bound(PLAIN), **{"pod-group-name": "pg-p-1234"}),
        offline=False,
    ),
    "a pod with a KAI start time in 2099 (safe from reclaim for ever)": Case(
        _annotated(PLAIN, **{"kai.scheduler/last-start-timestamp": "2099-01-01T00:00:00Z"}), False, offline=False
    ),
    # KAI@v0.17.0 plugins/spark/spark.go:29-44: the PodGroup is named after spark-app-selector, word for word.
    "spark labels naming another tenant's gang": Case(
        _relabelled(PLAIN, **{"spark-app-name": "x", "spark-app-selector": "kaistack-team-b-default-train"}),
        False,
        offline=False,
    ),
    "GPU group label removed through the syncer (the GPU's reservation goes, the pod keeps the GPU)": Case(
        SHARED, False, operation="UPDATE", old=_relabelled(SHARED, **{"runai-gpu-group": "g1"}), offline=False
    ),
    "GPU group label changed through the syncer": Case(
        _relabelled(SHARED, **{"runai-gpu-group": "g2"}),
        False,
        operation="UPDATE",
        old=_relabelled(SHARED, **{"runai-gpu-group": "g1"}),
        offline=False,
    ),
    "multi-fraction GPU group label removed through the syncer": Case(
        SHARED, False, operation="UPDATE", old=_relabelled(SHARED, **{"runai-gpu-group/g1": "g1"}), offline=False
    ),
    "pod created with another pod's GPU group label (keeps its reservation alive)": Case(
        _relabelled(synced_pod(), **{"runai-gpu-group": "g1"}), False, offline=False
    ),
    "default scheduler": Case(synced_pod(scheduler="default-scheduler"), False),
    "the training operator as upstream ships it": Case(training_operator_pod(as_kaistack_installs_it=False), False),
    "default scheduler with a GPU": Case(
        synced_pod(scheduler="default-scheduler", limits={"nvidia.com/gpu": "1"}), False
    ),
    "CoreDNS look-alike outside kube-system": Case(
        synced_pod(scheduler="default-scheduler", labels={"k8s-app": "vcluster-kube-dns"}), False
    ),
    "CoreDNS look-alike with the old kube-dns label": Case(
        synced_pod(scheduler="default-scheduler", labels={"k8s-app": "kube-dns"}), False
    ),
    # Any MIG device makes the pod a MIG request, charged as its MIG devices alone once placed (KAI@v0.17.0
    # pod_info.go:550-553, node_info.go:724-752), while the kubelet hands over the whole GPUs too (a review).
    # KAI charges a pod labelled as its resource-reservation pod no GPUs on its node (KAI@v0.17.0
    # node_info.go:470-473, utility_pods.go; values: conf/global_config.go:25-26), so its GPUs look free (a review).
    "a GPU pod labelled as KAI's resource-reservation pod": Case(
        synced_pod(labels={QUEUE: "team-a", "app": "kai-resource-reservation"}, limits={"nvidia.com/gpu": "4"}), False
    ),
    "a running GPU pod relabelled as KAI's scaling pod": Case(
        _relabelled(_bound(synced_pod(limits={"nvidia.com/gpu": "4"})), app="scaling-pod"),
        False,
        operation="UPDATE",
        old=_bound(synced_pod(limits={"nvidia.com/gpu": "4"})),
        offline=False,
    ),
    "whole GPUs beside a MIG device": Case(
        synced_pod(limits={"nvidia.com/gpu": "7", "nvidia.com/mig-1g.10gb": "1"}), False
    ),
    "whole GPUs beside a MIG device in an init container": Case(
        synced_pod(limits={"nvidia.com/gpu": "7"}, init_limits={"nvidia.com/mig-1g.10gb": "1"}), False
    ),
    "whole GPUs beside a legacy MIG annotation": Case(
        synced_pod(limits={"nvidia.com/gpu": "2"}, annotations={"nvidia.com/mig-1g.10gb": "1"}), False
    ),
    "a MIG device beside nvidia.com/gpu: 0, as charts render it": Case(
        synced_pod(limits={"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "1"}), True
    ),
    "CoreDNS copy in kube-system with a GPU": Case(coredns(limits={"nvidia.com/gpu": "1"}), False),
    "CoreDNS copy in kube-system with a MIG slice": Case(coredns(limits={"nvidia.com/mig-1g.10gb": "1"}), False),
    "CoreDNS copy in kube-system with a GPU share": Case(coredns(annotations={"gpu-fraction": "0.5"}), False),
    "CoreDNS copy in kube-system with an AMD GPU": Case(coredns(limits={"amd.com/gpu": "1"}), False),
    "CoreDNS copy in kube-system with a renamed time slice": Case(
        coredns(limits={"nvidia.com/gpu.shared": "1"}), False
    ),
    "CoreDNS copy in kube-system with the nvidia runtime class": Case(
        coredns(spec={"runtimeClassName": "nvidia"}), False
    ),
    "CoreDNS copy in kube-system with NVIDIA_VISIBLE_DEVICES=all": Case(
        coredns(spec={"containers": [{"name": "main", "image": "cuda", "env": CUDA_ALL}]}), False
    ),
    "CoreDNS copy in kube-system with envFrom": Case(
        coredns(spec={"containers": [{"name": "main", "image": "cuda", "envFrom": [{"configMapRef": {"name": "e"}}]}]}),
        False,
    ),
    "CoreDNS copy in kube-system tolerating the GPU taint": Case(
        coredns(spec={"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}), False
    ),
    "CoreDNS copy in kube-system tolerating every taint": Case(
        coredns(spec={"tolerations": [{"operator": "Exists"}]}), False
    ),
    "KAI pod asking for a renamed time slice": Case(synced_pod(limits={"nvidia.com/gpu.shared": "1"}), False),
    "a bound pod's fraction shrunk": Case(
        _annotated(SHARED, **{"gpu-fraction": "0.01"}), False, operation="UPDATE", old=SHARED, offline=False
    ),
    "a bound pod's fraction removed": Case(_bound(PLAIN), False, operation="UPDATE", old=SHARED, offline=False),
    "a legacy MIG annotation added to a bound pod": Case(
        _annotated(SHARED, **{"nvidia.com/mig-1g.5gb": "1"}), False, operation="UPDATE", old=SHARED, offline=False
    ),
    "kubectl debug with a CUDA image": Case(
        _debugged(_bound(PLAIN)), False, operation="UPDATE", old=_bound(PLAIN), offline=False
    ),
    "a second debug container without the void, beside one from before": Case(
        _debugged_again(_debugged(_bound(PLAIN))),
        False,
        operation="UPDATE",
        old=_debugged(_bound(PLAIN)),
        offline=False,
    ),
    "kubectl debug with NVIDIA_VISIBLE_DEVICES=all": Case(
        _debugged(_bound(PLAIN), NVIDIA_VISIBLE_DEVICES="all"),
        False,
        operation="UPDATE",
        old=_bound(PLAIN),
        offline=False,
    ),
    "CoreDNS copy in kube-system with a host queue": Case(
        _relabelled(coredns(), **{QUEUE: "test"}), False, offline=False
    ),
    "CoreDNS copy in kube-system on a preset node": Case(coredns(spec={"nodeName": "gpu-node"}), False),
    "CoreDNS copy in kube-system with a DRA claim": Case(
        coredns(spec={"resourceClaims": [{"name": "gpu", "resourceClaimName": "all-gpus"}]}), False, offline=False
    ),
    "no queue label": Case(synced_pod(labels={}), False),
    "legacy runai/queue label": Case(synced_pod(labels={"runai/queue": "team-a"}), False),
    "a queue that is not the tenant's": Case(synced_pod(labels={QUEUE: "test"}), False),
    "an undeclared queue": Case(synced_pod(labels={QUEUE: "nope"}), False),
    "queue as an annotation": Case(synced_pod(labels={}, annotations={QUEUE: "team-a"}), False),
    "relabelled to a foreign queue while running": Case(
        _relabelled(PLAIN, **{QUEUE: "test"}), False, operation="UPDATE", old=PLAIN, offline=False
    ),
    "preset spec.nodeName": Case(synced_pod(spec={"nodeName": "gpu-node"}), False),
    "preset spec.nodeName with a GPU": Case(
        synced_pod(spec={"nodeName": "gpu-node"}, limits={"nvidia.com/gpu": "8"}), False
    ),
    "pod-group-name naming another PodGroup": Case(synced_pod(annotations={"pod-group-name": "pg-prod-train"}), False),
    "pod-group-name with skip-podgrouper": Case(
        synced_pod(annotations={"pod-group-name": "pg-prod-train", "kai.scheduler/skip-podgrouper": "true"}), False
    ),
    "pod-group-name changed by the syncer": Case(
        _annotated(PLAIN, **{"pod-group-name": "pg-prod-train"}),
        False,
        operation="UPDATE",
        old=_annotated(PLAIN, **{"pod-group-name": "pg-p-1234"}),
        offline=False,
    ),
    "system-node-critical priority class": Case(synced_pod(spec={"priorityClassName": "system-node-critical"}), False),
    # KAI@v0.17.0 pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go:322-331
    # (calcPodGroupPriorityClass: owner label, then the pod's priorityClassName label, then the spec).
    "system-node-critical in the priorityClassName label": Case(
        synced_pod(labels={QUEUE: "team-a", "priorityClassName": "system-node-critical"}), False
    ),
    "priorityClassName label changed to a system class while running": Case(
        _relabelled(PLAIN, priorityClassName="system-cluster-critical"),
        False,
        operation="UPDATE",
        old=PLAIN,
        offline=False,
    ),
    "fraction with a trailing newline": Case(synced_pod(annotations={"gpu-fraction": "0.5\n"}), False),
    "memory with a trailing newline": Case(synced_pod(annotations={"gpu-memory": "2000\n"}), False),
    "fraction of one": Case(synced_pod(annotations={"gpu-fraction": "1"}), False),
    "fraction as milli-quantity 500m": Case(synced_pod(annotations={"gpu-fraction": "500m"}), False),
    "fraction NaN": Case(synced_pod(annotations={"gpu-fraction": "NaN"}), False),
    # kaistack's rule beyond KAI's: KAI would count it as 0 GPUs of the queue's quota.
    "fraction under 0.005 (4e-3)": Case(synced_pod(annotations={"gpu-fraction": "4e-3"}), False),
    "fraction of exactly 0.005": Case(synced_pod(annotations={"gpu-fraction": "0.005"}), True),
    "fraction in hex 0x1p-1": Case(synced_pod(annotations={"gpu-fraction": "0x1p-1"}), False),
    "fraction with a leading space": Case(synced_pod(annotations={"gpu-fraction": " 0.5"}), False),
    "fraction overflowing 1e400": Case(synced_pod(annotations={"gpu-fraction": "1e400"}), False),
    "fraction and memory": Case(synced_pod(annotations={"gpu-fraction": "0.2", "gpu-memory": "2000"}), False),
    "fraction and a GPU limit": Case(
        synced_pod(annotations={"gpu-fraction": "0.5"}, limits={"nvidia.com/gpu": "1"}), False
    ),
    "fraction and a GPU limit of 0": Case(
        synced_pod(annotations={"gpu-fraction": "0.5"}, limits={"nvidia.com/gpu": "0"}), False
    ),
    "fraction and an init container's GPU limit": Case(
        synced_pod(annotations={"gpu-fraction": "0.5"}, init_limits={"nvidia.com/gpu": "1"}), False
    ),
    "memory with a unit": Case(synced_pod(annotations={"gpu-memory": "2Gi"}), False),
    "memory above 2^64-1": Case(synced_pod(annotations={"gpu-memory": "18446744073709551616"}), False),
    "devices without a share": Case(synced_pod(annotations={"gpu-fraction-num-devices": "2"}), False),
    "zero devices": Case(synced_pod(annotations={"gpu-fraction": "0.5", "gpu-fraction-num-devices": "0"}), False),
    "MPS without a share": Case(synced_pod(annotations={"mps": "true"}, limits={"nvidia.com/gpu": "1"}), False),
    "share for a container that does not exist": Case(
        synced_pod(annotations={"gpu-fraction": "0.5", "gpu-fraction-container-name": "nope"}), False
    ),
    # --- a GPU share that a mesh's proxy would take (kaistack.guardrails.fraction_container) ------------------
    "a share whose first container is Linkerd's proxy": Case(
        _proxy_first(synced_pod(annotations={"gpu-fraction": "0.5"}), LINKERD_PROXY), False
    ),
    "a gpu-memory share whose first container is Istio's proxy": Case(
        _proxy_first(synced_pod(annotations={"gpu-memory": "2000"}), ISTIO_PROXY), False
    ),
    "a share naming Istio's proxy as its container": Case(
        _proxy_first(
            synced_pod(annotations={"gpu-fraction": "0.5", "gpu-fraction-container-name": "istio-proxy"}), ISTIO_PROXY
        ),
        False,
    ),
    "a share naming Istio's proxy, injected last": Case(
        _second(
            synced_pod(annotations={"gpu-fraction": "0.5", "gpu-fraction-container-name": "istio-proxy"}),
            "containers",
            ISTIO_PROXY,
        ),
        False,
    ),
    "a share naming Linkerd's proxy, a native sidecar": Case(
        _proxy_first(
            synced_pod(annotations={"gpu-fraction": "0.5", "gpu-fraction-container-name": "linkerd-proxy"}),
            LINKERD_PROXY,
            "initContainers",
        ),
        False,
    ),
    "a share naming the application behind Linkerd's proxy": Case(
        _proxy_first(
            synced_pod(annotations={"gpu-fraction": "0.5", "gpu-fraction-container-name": "main"}), LINKERD_PROXY
        ),
        True,
    ),
    "a share with Linkerd's proxy as a native sidecar (an init container)": Case(
        _proxy_first(synced_pod(annotations={"gpu-fraction": "0.5"}), LINKERD_PROXY, "initContainers"), True
    ),
    "Linkerd's proxy first in a pod without a share": Case(_proxy_first(synced_pod(), LINKERD_PROXY), True),
    "syncer updates a proxy-first fractional pod from before the policy": Case(
        _proxy_first(SHARED, LINKERD_PROXY),
        True,
        operation="UPDATE",
        old=_proxy_first(SHARED, LINKERD_PROXY),
        offline=False,
    ),
    # --- hostile, written straight into the host namespace -------------------------------------------
    "direct pod on a foreign queue": Case(direct_pod(labels={QUEUE: "test"}), False, user=HOST_ADMIN),
    "direct pod with the default scheduler": Case(
        direct_pod(scheduler="default-scheduler", limits={"nvidia.com/gpu": "1"}), False, user=HOST_ADMIN
    ),
    "direct pod from a host ReplicaSet on a preset node": Case(
        direct_pod(spec={"nodeName": "gpu-node"}),
        False,
        user="system:serviceaccount:kube-system:replicaset-controller",
    ),
    # The pod-grouper reads the top owner's queue label first (KAI@v0.17.0 default_grouper.go:134-147): the
    # ReplicaSet's Deployment could name any queue, which the pod's CREATE does not show.
    "direct pod owned by a host ReplicaSet": Case(
        _owned(direct_pod(), "ReplicaSet"),
        False,
        user="system:serviceaccount:kube-system:replicaset-controller",
    ),
    "owner reference added while running": Case(
        _owned(PLAIN, "Job"), False, operation="UPDATE", old=PLAIN, offline=False
    ),
    "direct pod forging the syncer's managed-by label": Case(
        _relabelled(direct_pod(labels={QUEUE: "test"}), **{"vcluster.loft.sh/managed-by": "team-a"}),
        False,
        user=HOST_ADMIN,
    ),
}


# --- the three evaluators -----------------------------------------------------------------------


def cel_allows(policy: dict[str, Any], case: Case) -> bool:
    return not cel_denials(policy, case)


def cel_denials(policy: dict[str, Any], case: Case) -> list[str]:
    """matchConditions then validations, as the API server evaluates them; an error denies (Fail)."""
    env = celpy.Environment()
    activation = {
        "object": celpy.json_to_cel(case.pod),
        "oldObject": celpy.json_to_cel(case.old),
        "request": celpy.json_to_cel({"operation": case.operation, "userInfo": {"username": case.user}}),
    }
    for condition in policy["spec"]["matchConditions"]:
        applies = _evaluate(env, condition["expression"], activation)
        if applies is None:
            return [f"matchCondition {condition['name']} failed to evaluate"]  # failurePolicy Fail rejects
        if not applies:
            return []  # the policy does not apply
    return [v["message"] for v in policy["spec"]["validations"] if not _evaluate(env, v["expression"], activation)]


def _evaluate(env: celpy.Environment, expression: str, activation: dict[str, Any]) -> bool | None:
    """The expression's truth, or None when it errors or is not a boolean."""
    try:
        result = env.program(env.compile(expression)).evaluate(activation)
    except celpy.CELEvalError:
        return None
    return bool(result) if isinstance(result, celpy.celtypes.BoolType) else None


TENANT_RULES = {"requireInTenantNamespaces": True, "tenantNamespaces": [HOST_NAMESPACE]}


@pytest.fixture(scope="module")
def pack() -> Iterator[Pack]:
    running = Pack({**os.environ, **engine_config_env("dev")})
    try:
        config = {name: analyzer_pb2.PolicyConfig(enforcementLevel=analyzer_pb2.MANDATORY) for name in POLICY_NAMES}
        properties = analyzer_pb2.PolicyConfig(enforcementLevel=analyzer_pb2.MANDATORY)
        properties.properties.update(TENANT_RULES)
        config["kai-scheduler-name"] = properties
        running.stub.Configure(analyzer_pb2.ConfigureAnalyzerRequest(policyConfig=config), timeout=30)
        yield running
    finally:
        running.close()


def pack_allows(pack: Pack, pod: dict[str, Any]) -> bool:
    found = [d for d in pack.analyze_all([recorded_pod(pod)]) if d[0] != "kai-capacity"]
    return not found


def lint_allows(dev: StackConfig, pod: dict[str, Any], tmp_path: Path) -> bool:
    path = tmp_path / "pod.yaml"
    # JSON, which kubectl reads as written: PyYAML would write "5e-1" plain, a number to kubectl's go-yaml.
    path.write_text(json.dumps(pod))
    # The pack's config as `pulumi up --policy-pack-config` and `kaistack lint --policy-config` take it.
    result = lint_paths(
        [str(path)], facts_from_stack(dev), config=pack_config({"kai-scheduler-name": TENANT_RULES}, "t")
    )
    assert not result.errors
    return not [v for v in result.violations if v.policy != "kai-capacity"]


# --- one test per row and evaluator ----------------------------------------------------------------

OFFLINE = [name for name, case in PODS.items() if case.offline]


@pytest.mark.parametrize("name", list(PODS))
def test_host_admission_cel(dev: StackConfig, name: str) -> None:
    case = PODS[name]
    denials = cel_denials(tenant_policy(dev, dev.tenant("team-a")), case)
    assert (not denials) is case.allowed, denials


@pytest.mark.parametrize("name", OFFLINE)
def test_policy_pack_agrees(pack: Pack, name: str) -> None:
    case = PODS[name]
    assert pack_allows(pack, case.pod) is case.allowed


@pytest.mark.parametrize("name", OFFLINE)
def test_kaistack_lint_agrees(dev: StackConfig, name: str, tmp_path: Path) -> None:
    case = PODS[name]
    assert lint_allows(dev, case.pod, tmp_path) is case.allowed


def _conjuncts(node: Any) -> list[Any]:
    """The operands of an `a && b && ...` (celpy nests it to the left), each followed down its one-child chain."""
    while isinstance(node, lark.Tree) and len(node.children) == 1 and node.data != "conditionaland":
        node = node.children[0]
    if isinstance(node, lark.Tree) and node.data == "conditionaland":
        return [c for child in node.children for c in _conjuncts(child)]
    return [node]


def _update_guard(node: Any) -> bool:
    """`request.operation == 'UPDATE'` is itself one of the conjuncts of `node` (not inside a negation)."""
    # celpy's tree: relation(relation_eq(<left>), <right>)
    return any(
        isinstance(c, lark.Tree)
        and c.data == "relation"
        and any(isinstance(x, lark.Tree) and x.data == "relation_eq" for x in c.children)
        and [str(v) for v in c.scan_values(lambda v: isinstance(v, lark.Token))] == ["request", "operation", "'UPDATE'"]
        for c in _conjuncts(node)
    )


def _not_update(node: Any) -> bool:
    """`node` is `!(... request.operation == 'UPDATE' && ...)`: true on a CREATE."""
    unary = node
    while isinstance(unary, lark.Tree) and unary.data != "unary" and len(unary.children) == 1:
        unary = unary.children[0]  # the whole side, not a part of it, is the negation
    return (
        isinstance(unary, lark.Tree)
        and unary.data == "unary"
        and len(unary.children) == 2
        and getattr(unary.children[0], "data", None) == "unary_not"
        and _update_guard(unary.children[1])
    )


def _unguarded_old_object_reads(expression: str) -> list[str]:
    """Each `oldObject` that is neither the right side of an `&&` whose left side tests for an UPDATE nor of an
    `||` whose left side is true unless it is one (CEL's && and || absorb an error the other side decides)."""
    tree = celpy.Environment().compile(expression)
    found = []

    def walk(node: Any, guarded: bool) -> None:
        if isinstance(node, lark.Token):
            if str(node) == "oldObject" and not guarded:
                found.append(expression)
            return
        for i, child in enumerate(node.children):
            right_of_guard = i == 1 and (
                (node.data == "conditionaland" and _update_guard(node.children[0]))
                or (node.data == "conditionalor" and _not_update(node.children[0]))
            )
            walk(child, guarded or right_of_guard)

    walk(tree, False)
    return found


def test_every_old_object_read_is_behind_an_update_guard(dev: StackConfig) -> None:
    """On a CREATE the API server's oldObject is null, and cel-go errors on `has(oldObject.metadata...)` where
    cel-python (whose has() never errors) answers false: under failurePolicy Fail an unguarded read would deny
    every new pod on a real cluster while the evaluated tables pass. So the guard is checked on the parse tree."""
    policy = tenant_policy(dev, dev.tenant("team-a"))
    expressions = [v["expression"] for v in [*policy["spec"]["validations"], *policy["spec"]["matchConditions"]]]
    assert sum("oldObject" in e for e in expressions) >= 5
    assert [e for e in expressions for _ in _unguarded_old_object_reads(e)] == []


def test_the_guard_check_finds_an_unguarded_read() -> None:
    assert _unguarded_old_object_reads("has(oldObject.metadata.labels) || true")
    assert _unguarded_old_object_reads("request.operation == 'CREATE' && has(oldObject.metadata)")
    assert not _unguarded_old_object_reads("!(request.operation == 'UPDATE' && has(oldObject.metadata))")
    assert not _unguarded_old_object_reads("!(request.operation == 'UPDATE' && a) || oldObject.x == 1")
    assert _unguarded_old_object_reads("(request.operation == 'UPDATE' && a) || oldObject.x == 1")
    assert _unguarded_old_object_reads("(!(request.operation == 'UPDATE' && a) && b) || oldObject.x == 1")
    assert _unguarded_old_object_reads("!(request.operation == 'UPDATE') && has(oldObject.metadata)")


def test_an_expression_that_cannot_be_evaluated_denies_the_pod(dev: StackConfig) -> None:
    """failurePolicy Fail: a pod that makes an expression error or run past its cost budget is refused, not let
    through unchecked (kubernetes/apiserver@v0.35.0 pkg/admission/plugin/policy/validating/dispatcher.go)."""
    assert tenant_policy(dev, dev.tenant("team-a"))["spec"]["failurePolicy"] == "Fail"


def test_every_hostile_kind_is_in_the_table() -> None:
    """Guards the table itself: it holds admitted and denied rows, offline and admission-only ones."""
    kinds = {(case.allowed, case.offline, case.operation) for case in PODS.values()}
    assert {(True, True, "CREATE"), (False, True, "CREATE"), (True, False, "UPDATE"), (False, False, "UPDATE")} <= kinds


# --- KAI's own verdicts (its validator run on 80 inputs) --------------------------------------------


def test_the_readme_counts_this_table_as_it_is() -> None:
    """The README's account of this table ("a table of N pods", "The M that do not depend on the admission
    request") is the table's: the figures went stale once, 102 and 63 against 122 and 80."""
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"has a table of {len(PODS)} pods, hostile and normal" in readme
    assert f"The {len(OFFLINE)} that do not depend on the admission request" in readme


KAI_TABLE = json.loads((Path(__file__).parent / "data" / "kai-admission-v0.17.0.json").read_text())
# The table runs KAI's validating webhook only; KAI's mutating webhook also refuses a container name that
# matches nothing (KAI@v0.17.0 pkg/binder/common/gpu_access.go:182-219, "container with name %s not found").
MUTATING_WEBHOOK_REFUSES = {"fraction + container-name of missing container"}
# kaistack refuses more than KAI: a fraction KAI admits but counts as 0 GPUs of quota (quota_unit_problems).
KAISTACK_REFUSES = {"fraction='0.0001'", "fraction='1e-9'"}


def kai_pod(row: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "ubuntu", "resources": {}}
    if "gpuLimit" in row:
        container["resources"]["limits"] = {"nvidia.com/gpu": row["gpuLimit"]}
    if "gpuRequestOnly" in row:
        container["resources"]["requests"] = {"nvidia.com/gpu": row["gpuRequestOnly"]}
    pod = synced_pod(annotations=row["annotations"])
    pod["spec"]["containers"] = [container]
    if "initGpuLimit" in row:
        pod["spec"]["initContainers"] = [
            {"name": "init", "image": "ubuntu", "resources": {"limits": {"nvidia.com/gpu": row["initGpuLimit"]}}}
        ]
    return pod


def kai_verdict(row: dict[str, Any]) -> bool:
    return bool(row["accepted"]) and row["name"] not in MUTATING_WEBHOOK_REFUSES


@pytest.mark.parametrize("row", KAI_TABLE, ids=[r["name"] for r in KAI_TABLE])
def test_cel_gives_kais_verdict(dev: StackConfig, row: dict[str, Any]) -> None:
    policy = admission.tenant_policy("team-a", ["team-a"], QUEUE, sharing_enabled=row["gpuSharing"])
    verdict = kai_verdict(row) and row["name"] not in KAISTACK_REFUSES
    assert cel_allows(policy, Case(kai_pod(row), verdict)) is verdict


def test_what_kaistack_refuses_beyond_kai_names_rows_kai_admits() -> None:
    rows = {r["name"]: r for r in KAI_TABLE}
    assert all(kai_verdict(rows[name]) for name in KAISTACK_REFUSES)


# --- kaistack's rule beyond KAI's: a share KAI counts as 0 GPUs ----------------------------------------------
# KAI@v0.17.0 pkg/scheduler/api/resource_info/gpu_resource_requirment.go:266-269 (getExtendedResourceGpus):
# math.Round(portion * 100) / 100 GPUs, half away from zero, is what a pod holds of its queue's quota.


@pytest.mark.parametrize(
    ("fraction", "refused"),
    [("0.004", True), ("4.99e-3", True), ("0.0049999", True), ("0.005", False), ("5e-3", False), ("0.01", False)],
)
def test_a_fraction_kai_would_count_as_no_gpu_is_refused_by_cel_pack_and_lint_alike(
    fraction: str, refused: bool
) -> None:
    from kaistack.guardrails.gpu_requests import quota_unit_problems

    pod = synced_pod(annotations={"gpu-fraction": fraction})
    policy = admission.tenant_policy("team-a", ["team-a"], QUEUE)
    denials = cel_denials(policy, Case(pod, not refused))
    assert bool(denials) is refused
    problems = quota_unit_problems(pod["metadata"]["annotations"])
    assert bool(problems) is refused
    if refused:
        assert "0 GPUs" in denials[0]
        assert fraction in problems[0]
        assert "'0.01'" in problems[0]


def test_a_running_pod_s_unchanged_tiny_fraction_does_not_block_the_syncer_s_updates() -> None:
    pod = synced_pod(annotations={"gpu-fraction": "0.004"})
    policy = admission.tenant_policy("team-a", ["team-a"], QUEUE)
    assert cel_allows(policy, Case(pod, True, operation="UPDATE", old=copy.deepcopy(pod)))


@pytest.mark.parametrize("row", KAI_TABLE, ids=[r["name"] for r in KAI_TABLE])
def test_python_rules_give_kais_verdict(row: dict[str, Any]) -> None:
    from kaistack.guardrails.gpu_requests import gpu_request_problems

    pod = kai_pod(row)
    problems = gpu_request_problems(
        pod["metadata"]["annotations"],
        pod["spec"]["containers"],
        pod["spec"].get("initContainers", ()),
        sharing_enabled=row["gpuSharing"],
    )
    assert (problems == []) is kai_verdict(row), problems


def test_the_mutating_webhook_exception_names_a_real_row() -> None:
    assert {r["name"] for r in KAI_TABLE} >= MUTATING_WEBHOOK_REFUSES


# --- the manifests ---------------------------------------------------------------------------------------


def test_binding_selects_every_pod_of_the_tenant_namespace(dev: StackConfig) -> None:
    spec = tenant_binding(dev, dev.tenant("team-a"))["spec"]
    assert spec["validationActions"] == ["Deny"]
    assert spec["policyName"] == "kaistack-tenant-team-a"
    assert spec["matchResources"] == {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": HOST_NAMESPACE}},
    }


def test_policy_matches_pod_creates_and_updates_ephemeral_containers_status_and_resize(dev: StackConfig) -> None:
    """ "pods" does not match a subresource (k8s.io/api admissionregistration/v1 Rule.Resources): vCluster adds
    ephemeral containers through theirs (loft-sh/vcluster@v0.36.1 pods/ephemeral_containers.go:54-67), a status
    update can change labels and annotations (pkg/registry/core/pod/strategy.go, podStatusStrategy), and from 1.35
    vCluster resizes host pods in place (pods/syncer.go:413-430)."""
    rules = tenant_policy(dev, dev.tenant("team-a"))["spec"]["matchConstraints"]["resourceRules"]
    assert rules == [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["pods", "pods/ephemeralcontainers", "pods/status", "pods/resize"],
        }
    ]


def test_no_condition_keys_on_a_label_or_annotation(dev: StackConfig) -> None:
    """What a tenant picks (labels, annotations) never decides whether the policy applies; the one object field
    read, an owner reference, only narrows what the StatefulSet controller's own requests skip."""
    [condition] = tenant_policy(dev, dev.tenant("team-a"))["spec"]["matchConditions"]
    assert "labels" not in condition["expression"]
    assert "annotations" not in condition["expression"]
    assert condition["expression"].startswith("!(request.userInfo.username in [")


def test_a_tenant_must_declare_its_queues() -> None:
    from kaistack.declaration.model import Tenant

    with pytest.raises(ValueError, match="queues"):
        Tenant.model_validate({"name": "t"})
    with pytest.raises(ValueError, match="queues"):
        Tenant.model_validate({"name": "t", "queues": []})


@pytest.mark.parametrize("index", [0, 1])
def test_manifests_validate_against_kubernetes_1_33_strictly(dev: StackConfig, index: int) -> None:
    manifest = admission_manifests(dev)[index]
    assert kubernetes_validate.validate(copy.deepcopy(manifest), "1.33", strict=True) == "1.33"


def test_a_misspelt_field_fails_the_strict_schema(dev: StackConfig) -> None:
    """Guards the test above: strict mode really rejects unknown keys."""
    manifest = copy.deepcopy(admission_manifests(dev)[1])
    manifest["spec"]["validationAction"] = ["Deny"]
    with pytest.raises(kubernetes_validate.ValidationError, match="validationAction"):
        kubernetes_validate.validate(manifest, "1.33", strict=True)


# --- the component under Pulumi mocks ------------------------------------------------------------


@pulumi.runtime.test
def test_component_registers_the_pod_and_object_policies_and_bindings_per_tenant(
    mocks: MockSession, dev: StackConfig
) -> Any:
    admission = TenantAdmission("kaistack-admission", dev)

    def check(_: Any) -> None:
        assert [r.custom for r in mocks.monitor.records if r.type == "kaistack:index:TenantAdmission"] == [False]
        registered = [
            {"kind": r.type.rpartition(":")[2], "metadata": r.inputs["metadata"], "spec": r.inputs["spec"]}
            for r in mocks.monitor.records
            if r.type.startswith("kubernetes:admissionregistration.k8s.io/v1:")
        ]
        expected = [{k: m[k] for k in ("kind", "metadata", "spec")} for m in admission_manifests(dev)]
        assert sorted(registered, key=json.dumps) == sorted(expected, key=json.dumps)
        assert {m["metadata"]["name"] for m in expected} == {
            "kaistack-tenant-team-a",
            "kaistack-tenant-team-a-objects",
        }

    return pulumi.Output.all(*(b.urn for b in admission.bindings.values())).apply(check)


def test_the_pod_grouper_exception_follows_kais_namespace(dev: StackConfig) -> None:
    """KAI installed elsewhere: its pod-grouper's service account is there, and only there, let through."""
    moved = dev.replace(kai=dev.kai.replace(namespace="kai"))
    policy = tenant_policy(moved, moved.tenant("team-a"))
    grouped = _annotated(PLAIN, **{"pod-group-name": "pg-p-1234"})
    as_user = {
        user: Case(grouped, True, operation="UPDATE", user=user, old=PLAIN)
        for user in ("system:serviceaccount:kai:pod-grouper", POD_GROUPER_USER)
    }
    assert cel_allows(policy, as_user["system:serviceaccount:kai:pod-grouper"])
    assert not cel_allows(policy, as_user[POD_GROUPER_USER])
