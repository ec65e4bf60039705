"""The host's admission policy for one tenant's pods: a ValidatingAdmissionPolicy in plain CEL.

Pure: builds the manifests (dicts) that components/admission.py registers, so tests evaluate the very
same CEL strings with cel-python, beside the Python rules the policy pack and `kaistack lint` run.

Who is checked. Every pod CREATE/UPDATE in the tenant's host namespace, whoever sends it: vCluster's
syncer (the tenant's pods) or anyone writing straight into that namespace. Only requests from the
host's StatefulSet controller are let through (the vCluster control plane is a StatefulSet there);
a request's user is set by the API server, so no tenant can claim it.

Nothing keys on a label, name or namespace the tenant picks (loft-sh/vcluster@v0.36.1: all labels but
`vcluster.loft.sh/managed-by` and the value of `vcluster.loft.sh/namespace` are copied from the tenant;
see tests/guardrails/test_admission_table.py). The vCluster's CoreDNS cannot be told apart from a copy
a tenant makes in its own kube-system, so there is no CoreDNS exemption: a pod in virtual kube-system
may use the default scheduler only if it has nothing KAI guards and no way to a GPU (only cpu, memory,
ephemeral-storage and hugepages resources; no resource claim, KAI annotation, queue label or preset
node; no runtime class, no NVIDIA_* variable or envFrom, no toleration of the GPU taint), as CoreDNS
has none (loft-sh/vcluster@v0.36.1 pkg/coredns/template.go). A tenant gains nothing by imitating it.

What is refused (messages name the field and what is allowed):
- a scheduler other than kai-scheduler (except the kube-system case above);
- no queue label, or a queue that is not the tenant's (on UPDATE only when the label changes, so a
  policy change never blocks the syncer's updates of running pods);
- an owner reference (a host ReplicaSet's or Job's pod): KAI's pod-grouper reads the queue and priority
  labels of the top owner first (KAI@v0.17.0 default_grouper.go:134-147, 322-331), which the policy
  cannot see; vCluster's synced pods have none (setOwner: false; loft-sh/vcluster@v0.36.1
  pkg/util/translate/translate.go:39-56 and ResetObjectMetadata, L243-255);
- `spec.nodeName` set on CREATE (vCluster copies it: the kubelet would run the pod without KAI);
- `pod-group-name` set by anyone but KAI's pod-grouper, unless it names one of the tenant's own
  PodGroups (KAI's scheduler finds a pod's PodGroup by that name alone, cluster-wide);
- a `system-*` priority class, in spec.priorityClassName or in the `priorityClassName` label KAI's
  pod-grouper reads first (vCluster always lets those through; KAI would treat the pod as the most
  important in the cluster);
- GPU requests KAI's own webhooks refuse (kaistack.guardrails.gpu_requests, same table);
- a `gpu-fraction` under 0.005, which KAI admits but counts as 0 GPUs of the queue's quota and limit;
- a GPU share (fraction, memory, device count, a legacy MIG annotation) changed once the pod is bound:
  KAI re-reads the annotations every cycle (KAI@v0.17.0 pod_info.go:521-572) and would count the share the
  pod still holds as smaller (vCluster copies annotation edits to the host: pods/translate/diff.go);
- renamed time-sliced GPUs (`nvidia.com/gpu.shared`), which KAI does not count against any queue;
- an ephemeral container (vCluster syncs them through `pods/ephemeralcontainers`, which KAI's webhooks do
  not see) that does not set NVIDIA_VISIBLE_DEVICES to void or none itself: the image's own ENV would
  hand it the pod's node's GPUs. `kubectl debug --env NVIDIA_VISIBLE_DEVICES=void` passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kaistack.declaration import kai_api
from kaistack.declaration.marks import TENANT_LABEL
from kaistack.declaration.vcluster_api import VIRTUAL_NAMESPACE_LABEL
from kaistack.guardrails import gpu_requests as kai

# The user the kube-controller-manager's StatefulSet controller acts as: its own service account with
# --use-service-account-credentials (kubeadm, kind and EKS set it), the manager's identity without.
HOST_CONTROLLERS = (
    "system:serviceaccount:kube-system:statefulset-controller",
    "system:kube-controller-manager",
)
# KAI@v0.17.0 pkg/operator/operands/pod_grouper/resources.go:20 (defaultResourceName "pod-grouper",
# also the ServiceAccount name) in the KAI namespace; it patches pod-group-name onto pods
# (pkg/podgrouper/pod_controller.go:180-212).
POD_GROUPER_SERVICE_ACCOUNT = "pod-grouper"


def pod_grouper_user(kai_namespace: str = kai_api.DEFAULT_NAMESPACE) -> str:
    return f"system:serviceaccount:{kai_namespace}:{POD_GROUPER_SERVICE_ACCOUNT}"


POD_GROUPER_USER = pod_grouper_user()

OBJ = "object"
OLD = "oldObject"
ANN = "object.metadata.annotations"
LABELS = "object.metadata.labels"
IS_CREATE = "request.operation == 'CREATE'"
IS_UPDATE = "request.operation == 'UPDATE'"


def _q(text: str) -> str:
    """A CEL string literal (single-quoted; the names used here never contain quotes or backslashes)."""
    if "'" in text or "\\" in text:
        raise ValueError(f"cannot quote {text!r} for CEL")
    return f"'{text}'"


def _list(items: Sequence[str]) -> str:
    return "[" + ", ".join(_q(i) for i in items) + "]"


def has_key(map_path: str, key: str) -> str:
    """`key` is in the optional map at `map_path` (parenthesised: CEL's `!` binds tighter than `in`)."""
    return f"(has({map_path}) && {_q(key)} in {map_path})"


def value(map_path: str, key: str) -> str:
    return f"{map_path}[{_q(key)}]"


def unchanged(map_path: str, key: str) -> str:
    """On UPDATE, the key has the same value in oldObject as in object."""
    old = map_path.replace(OBJ, OLD, 1)
    return (
        f"({IS_UPDATE} && {has_key(old, key)} && {has_key(map_path, key)} && "
        f"{value(old, key)} == {value(map_path, key)})"
    )


def _each_container(predicate: str) -> str:
    """`predicate` (on `c`) holds for every container and init container."""
    return (
        f"object.spec.containers.all(c, {predicate}) && "
        f"(!has(object.spec.initContainers) || object.spec.initContainers.all(c, {predicate}))"
    )


# What a default-scheduled pod may ask for: what every node has. A GPU under any other name (amd.com/gpu,
# nvidia.com/gpu.shared, a MIG slice) is a device KAI guards or cannot see.
PLAIN_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def _plain_resources(block: str) -> str:
    return (
        f"(!has(c.resources.{block}) || c.resources.{block}.all(k, k in {_list(PLAIN_RESOURCES)} || "
        "k.startsWith('hugepages-')))"
    )


NO_GPU_RESOURCES = _each_container(
    f"!has(c.resources) || ({_plain_resources('limits')} && {_plain_resources('requests')})"
)
# A process reaches a node's GPUs without asking for one through the NVIDIA runtime: a runtime class, the
# variables it reads (from env or an envFrom source the policy cannot see), or a toleration that lets the
# pod onto tainted GPU nodes where nvidia is the default runtime (EKS's NVIDIA AMI).
NO_GPU_PATH = (
    "(!has(object.spec.runtimeClassName) || object.spec.runtimeClassName == '') && "
    "(!has(object.spec.tolerations) || object.spec.tolerations.all(t, has(t.key) && t.key != '' && "
    f"t.key != {_q(kai_api.GPU_RESOURCE)})) && "
    + _each_container(
        "(!has(c.env) || c.env.all(e, !e.name.startsWith('NVIDIA_'))) && (!has(c.envFrom) || size(c.envFrom) == 0)"
    )
)
RENAMED_GPU = kai_api.GPU_RESOURCE + "."  # the device plugin's renamed time slices: nvidia.com/gpu.shared
NO_RENAMED_GPU = _each_container(
    "!has(c.resources) || ("
    f"(!has(c.resources.limits) || c.resources.limits.all(k, !k.startsWith({_q(RENAMED_GPU)}))) && "
    f"(!has(c.resources.requests) || c.resources.requests.all(k, !k.startsWith({_q(RENAMED_GPU)}))))"
)
NO_GPU_LIMIT = _each_container(
    f"!has(c.resources) || !has(c.resources.limits) || !({_q(kai.GPU_RESOURCE)} in c.resources.limits)"
)
FRACTIONAL = f"({has_key(ANN, kai.FRACTION)} || {has_key(ANN, kai.MEMORY)})"
KAI_ANNOTATIONS = (kai.FRACTION, kai.MEMORY, kai.NUM_DEVICES, kai.MPS, kai_api.POD_GROUP_NAME)


def system_pod(queue_label_key: str) -> str:
    """A CPU-only pod in the tenant's virtual kube-system (its CoreDNS, or anything just as harmless)."""
    marks = " || ".join([*(has_key(ANN, k) for k in KAI_ANNOTATIONS), has_key(LABELS, queue_label_key)])
    return (
        f"({has_key(LABELS, VIRTUAL_NAMESPACE_LABEL)} && {value(LABELS, VIRTUAL_NAMESPACE_LABEL)} == 'kube-system' "
        f"&& (!has(object.spec.schedulerName) || object.spec.schedulerName == 'default-scheduler') "
        f"&& !({marks}) && !has(object.spec.resourceClaims) && {NO_GPU_RESOURCES} && {NO_GPU_PATH})"
    )


def _uint_ok(key: str) -> str:
    # uint() is strconv.ParseUint(v, 10, 64) in cel-go, as in KAI; an overflow is an error, and an error denies.
    return f"({value(ANN, key)}.matches({_q(kai.UINT_SYNTAX)}) && uint({value(ANN, key)}) > 0u)"


def gpu_request_validations(sharing_enabled: bool) -> list[tuple[str, str]]:
    """KAI's ValidateGpuRequests (+ the gates around it) as (expression, message) pairs."""
    fraction = value(ANN, kai.FRACTION)
    rules = [
        (
            f"!{has_key(ANN, kai.FRACTION)} || ({fraction}.matches({_q(kai.FRACTION_SYNTAX)}) && "
            f"double({fraction}) > 0.0 && double({fraction}) < 1.0)",
            f"{kai.FRACTION} must be a decimal strictly between 0 and 1, like '0.5' (no unit, no spaces); "
            "use an nvidia.com/gpu limit for whole GPUs",
        ),
        (f"!{has_key(ANN, kai.MEMORY)} || {_uint_ok(kai.MEMORY)}", f"{kai.MEMORY} must be a whole number of MiB >= 1"),
        (
            f"!({has_key(ANN, kai.FRACTION)} && {has_key(ANN, kai.MEMORY)})",
            f"use {kai.FRACTION} or {kai.MEMORY}, not both",
        ),
        (
            f"!{FRACTIONAL} || ({NO_GPU_LIMIT})",
            f"a pod with {kai.FRACTION} or {kai.MEMORY} must not have an nvidia.com/gpu limit on any container "
            "or init container",
        ),
        (
            f"!{has_key(ANN, kai.NUM_DEVICES)} || ({FRACTIONAL} && {_uint_ok(kai.NUM_DEVICES)})",
            f"{kai.NUM_DEVICES} must be a whole number >= 1 and comes with {kai.FRACTION} or {kai.MEMORY}",
        ),
        (
            f"!({has_key(ANN, kai.MPS)} && {value(ANN, kai.MPS)} == 'true') || {FRACTIONAL}",
            f"{kai.MPS}: 'true' needs {kai.FRACTION} or {kai.MEMORY} (KAI runs MPS only on shared GPUs)",
        ),
        (
            f"!{FRACTIONAL} || !{has_key(ANN, kai.CONTAINER_NAME)} || "
            f"object.spec.containers.exists(c, c.name == {value(ANN, kai.CONTAINER_NAME)}) || "
            f"(has(object.spec.initContainers) && "
            f"object.spec.initContainers.exists(c, c.name == {value(ANN, kai.CONTAINER_NAME)}))",
            f"{kai.CONTAINER_NAME} must name one of the pod's containers or init containers",
        ),
    ]
    if not sharing_enabled:
        rules.insert(
            0,
            (f"!{FRACTIONAL}", f"GPU sharing is off on this cluster: no {kai.FRACTION} or {kai.MEMORY} annotations"),
        )
    return rules


def pod_validations(
    tenant: str,
    queues: Sequence[str],
    queue_label_key: str,
    *,
    pod_groups: Sequence[str] = (),
    sharing_enabled: bool = True,
    kai_namespace: str = kai_api.DEFAULT_NAMESPACE,
) -> list[dict[str, str]]:
    """Every validation of one tenant's policy, in the order the API server reports them."""
    if not queues:
        raise ValueError(f"tenant {tenant} has no queues; a tenant must declare the queues its pods may use")
    system = system_pod(queue_label_key)
    group = value(ANN, kai_api.POD_GROUP_NAME)
    priority = kai_api.PRIORITY_CLASS_LABEL
    rules = [
        (
            f"(has(object.spec.schedulerName) && object.spec.schedulerName == {_q(kai_api.SCHEDULER_NAME)}) "
            f"|| {system}",
            f"tenant {tenant}: pods must set spec.schedulerName: {kai_api.SCHEDULER_NAME} (KAI schedules tenant "
            "pods on the host)",
        ),
        (
            f"{system} || ({has_key(LABELS, queue_label_key)} && {value(LABELS, queue_label_key)} in {_list(queues)}) "
            f"|| {unchanged(LABELS, queue_label_key)}",
            f"tenant {tenant}: pods must carry the label {queue_label_key} naming one of the tenant's queues: "
            f"{', '.join(queues)}",
        ),
        (
            "!has(object.metadata.ownerReferences) || size(object.metadata.ownerReferences) == 0 || "
            f"({IS_UPDATE} && has(oldObject.metadata.ownerReferences) && "
            "oldObject.metadata.ownerReferences == object.metadata.ownerReferences)",
            f"tenant {tenant}: pods here must not have owners; KAI takes a pod's queue and priority from its top "
            "owner first, which this policy cannot see (the vCluster's synced pods have none)",
        ),
        (
            f"!({IS_CREATE}) || !has(object.spec.nodeName) || object.spec.nodeName == ''",
            f"tenant {tenant}: spec.nodeName must not be set; KAI chooses the node (a preset node skips the "
            "scheduler, its queue and its GPU accounting)",
        ),
        (
            f"!{has_key(ANN, kai_api.POD_GROUP_NAME)} || {group} in {_list(pod_groups)} || "
            f"{unchanged(ANN, kai_api.POD_GROUP_NAME)} || "
            f"request.userInfo.username == {_q(pod_grouper_user(kai_namespace))}",
            f"tenant {tenant}: the {kai_api.POD_GROUP_NAME} annotation is set by KAI's pod-grouper"
            + (f" (or names one of the tenant's gangs: {', '.join(pod_groups)})" if pod_groups else "")
            + "; a pod that names another PodGroup joins it and its queue",
        ),
        (
            "!has(object.spec.priorityClassName) || !object.spec.priorityClassName.startsWith('system-')",
            f"tenant {tenant}: system-* priority classes are for the host's own pods",
        ),
        (
            f"!{has_key(LABELS, priority)} || !{value(LABELS, priority)}.startsWith('system-') || "
            f"{unchanged(LABELS, priority)}",
            f"tenant {tenant}: the {priority} label names the pod's priority class for KAI (before "
            "spec.priorityClassName); system-* classes are for the host's own pods",
        ),
        *gpu_request_validations(sharing_enabled),
        quota_unit_validation(),
        (
            NO_RENAMED_GPU,
            f"tenant {tenant}: {RENAMED_GPU}shared (renamed time slices) is not counted by KAI against any queue; "
            f"ask for {kai_api.GPU_RESOURCE} or a gpu-fraction",
        ),
        (
            f"!({IS_UPDATE} && has(oldObject.spec.nodeName) && oldObject.spec.nodeName != '') || "
            f"({_shares_kept(ANN, OLD_ANN)} && {_shares_kept(OLD_ANN, ANN)})",
            f"tenant {tenant}: {kai.FRACTION}, {kai.MEMORY}, {kai.NUM_DEVICES} and MIG annotations cannot change "
            "once the pod is bound: KAI would count the GPU share it still holds as changed (recreate the pod)",
        ),
        (
            EPHEMERAL_VOID,
            f"tenant {tenant}: an ephemeral container must set {kai_api.NVIDIA_VISIBLE_DEVICES} to 'void' (or "
            "'none') itself and have no other NVIDIA_* variable or envFrom, or its image's own ENV reaches the "
            f"node's GPUs (kubectl debug --env {kai_api.NVIDIA_VISIBLE_DEVICES}=void)",
        ),
    ]
    return [{"expression": e, "message": m, "reason": "Forbidden"} for e, m in rules]


OLD_ANN = "oldObject.metadata.annotations"
SHARE_KEYS = (kai.FRACTION, kai.MEMORY, kai.NUM_DEVICES)


def _shares_kept(new: str, old: str) -> str:
    """Every share annotation of `new` (KAI reads legacy MIG requests from annotations named like the
    resource, pod_info.go:557-572) is in `old` with the same value."""
    share = f"(k in {_list(SHARE_KEYS)} || k.startsWith({_q(kai_api.MIG_RESOURCE_PREFIX)}))"
    return f"(!has({new}) || {new}.all(k, !{share} || (has({old}) && k in {old} && {old}[k] == {new}[k])))"


_VOID = f"(e.name == {_q(kai_api.NVIDIA_VISIBLE_DEVICES)} && has(e.value) && e.value in ['void', 'none'])"
EPHEMERAL_VOID = (
    "!has(object.spec.ephemeralContainers) || object.spec.ephemeralContainers.all(c, has(c.env) && "
    f"c.env.exists(e, {_VOID}) && c.env.all(e, !e.name.startsWith('NVIDIA_') || {_VOID}) && "
    "(!has(c.envFrom) || size(c.envFrom) == 0))"
)


def quota_unit_validation() -> tuple[str, str]:
    """kaistack's rule beyond KAI's (kaistack.guardrails.gpu_requests.quota_unit_problems): a valid fraction
    KAI would count as 0 GPUs. An unchanged annotation passes, so the syncer's updates of a running pod do."""
    fraction = value(ANN, kai.FRACTION)
    return (
        f"!{has_key(ANN, kai.FRACTION)} || !({fraction}.matches({_q(kai.FRACTION_SYNTAX)})) || "
        f"!(double({fraction}) > 0.0 && double({fraction}) < 1.0) || double({fraction}) * 100.0 >= 0.5 || "
        f"{unchanged(ANN, kai.FRACTION)}",
        f"{kai.FRACTION} under {kai.SMALLEST_FRACTION} counts as 0 GPUs of the queue's quota and limit (KAI keeps "
        "shares in hundredths of a GPU); ask for at least '0.01'",
    )


def match_conditions() -> list[dict[str, str]]:
    """Requests the policy skips: only the host's StatefulSet controller (the vCluster control plane)."""
    return [
        {
            "name": "not-the-host-statefulset-controller",
            "expression": f"!(request.userInfo.username in {_list(HOST_CONTROLLERS)})",
        }
    ]


def policy_name(tenant: str) -> str:
    return f"kaistack-tenant-{tenant}"


def tenant_policy(
    tenant: str,
    queues: Sequence[str],
    queue_label_key: str,
    *,
    pod_groups: Sequence[str] = (),
    sharing_enabled: bool = True,
    kai_namespace: str = kai_api.DEFAULT_NAMESPACE,
) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": policy_name(tenant), "labels": {TENANT_LABEL: tenant}},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        # vCluster adds ephemeral containers through their subresource (loft-sh/vcluster@v0.36.1
                        # pkg/controllers/resources/pods/ephemeral_containers.go), which "pods" does not match.
                        "resources": ["pods", "pods/ephemeralcontainers"],
                    }
                ]
            },
            "matchConditions": match_conditions(),
            "validations": pod_validations(
                tenant,
                queues,
                queue_label_key,
                pod_groups=pod_groups,
                sharing_enabled=sharing_enabled,
                kai_namespace=kai_namespace,
            ),
        },
    }


def tenant_binding(tenant: str, host_namespace: str) -> dict[str, Any]:
    """Every pod in the tenant's host namespace: synced by its vCluster or written there directly."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": policy_name(tenant), "labels": {TENANT_LABEL: tenant}},
        "spec": {
            "policyName": policy_name(tenant),
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": host_namespace}},
            },
        },
    }
