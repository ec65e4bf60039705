# Long module: one tenant's admission policy, each validation beside the KAI and vCluster facts it rests on, and the
# docstring that lists them for the README; split, the list and the rules would drift apart.
"""The host's admission policy for one tenant's pods: a ValidatingAdmissionPolicy in plain CEL.

Pure: builds the manifests (dicts) that components/admission.py registers, so tests evaluate the very
same CEL strings with cel-python, beside the Python rules the policy pack and `kaistack lint` run.

Who is checked. Every pod CREATE/UPDATE in the tenant's host namespace, whoever sends it: vCluster's
syncer (the tenant's pods) or anyone writing straight into that namespace. Only the host's StatefulSet
controller's requests for the pods of the vCluster's own StatefulSet are let through (the control plane: the
chart names it after the release, which kaistack names after the tenant); a request's user is set by the API
server, so no tenant can claim it, and another StatefulSet's pods in that namespace are checked like any.

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
- `pod-group-name` changed or removed once set, but by the pod-grouper (without it the pod-grouper builds the
  PodGroup again from the pod's labels and annotations: KAI@v0.17.0 pod_controller.go:105,233-236); KAI's
  PodGroup state annotations on a pod; a `spark-app-selector` (with `spark-app-name`) that is not a Spark
  application id, since the pod-grouper names the PodGroup after it;
- an `app` label KAI keeps for its utility pods (kai-resource-reservation, scaling-pod): their GPUs look free to KAI;
- a `system-*` priority class, in spec.priorityClassName or in the `priorityClassName` label KAI's
  pod-grouper reads first (vCluster always lets those through; KAI would treat the pod as the most
  important in the cluster);
- GPU requests KAI's own webhooks refuse (kaistack.guardrails.gpu_requests, same table);
- a `gpu-fraction` under 0.005, which KAI admits but counts as 0 GPUs of the queue's quota and limit;
- whole GPUs beside MIG devices, which KAI admits but charges as the MIG devices alone (gpu_requests.MIXED_MIG);
- a GPU share (fraction, memory, device count, a legacy MIG annotation) changed once the pod exists: KAI
  re-reads the annotations every cycle (KAI@v0.17.0 pod_info.go:521-572) and would count the share the pod
  holds as smaller (vCluster copies annotation edits to the host: pods/translate/diff.go); before nodeName is set
  too, as the BindRequest already fixes the portion the binder hands out (binder/plugins/gpusharing/gpu_sharing.go:79);
- renamed time-sliced GPUs (`nvidia.com/gpu.shared`), which KAI does not count against any queue;
- a privileged container (created so, or added as an ephemeral one): it reaches every device of its node, the GPUs
  included, and vCluster checks nothing of it where the tenant's podSecurityStandard is privileged or unset;
- a `runai-gpu-group` label (or `runai-gpu-group/*`) added, changed or removed by anyone but KAI's binder:
  vCluster copies label edits both ways (pods/translate/diff.go), and the binder keeps a shared GPU's
  reservation pod only while a pod carries its group label;
- a `runai/shared-gpu-configmap` annotation not in KAI's shape when a pod with a share is created, or changed
  later: KAI names a share's ConfigMaps after it, and a tenant's own synced ConfigMap could stand in;
- a `pods/status` update that changes labels or annotations (the status strategy keeps them; nothing of the
  kubelet's, KAI's or vCluster's status updates does), where every other rule is skipped;
- a `pods/resize` that grows a container's cpu or memory request (resize_validation);
- an ephemeral container (vCluster syncs them through `pods/ephemeralcontainers`, which KAI's webhooks do
  not see) that does not set NVIDIA_VISIBLE_DEVICES to void or none itself: the image's own ENV would
  hand it the pod's node's GPUs. `kubectl debug --env NVIDIA_VISIBLE_DEVICES=void` passes;
- a pod created with a GPU share whose share goes to a service mesh's proxy (kaistack.guardrails.fraction_container);
- with `kai.sharing: isolated`, HAMi's opt-outs of GPU memory isolation: the pod annotation
  `kai-resource-isolator.io/inject` and the label `kai-resource-isolator.io/webhook` (vCluster copies both from
  the tenant), added or changed; and, on a pod with a GPU share, the variables that lift HAMi-core's cap
  (CUDA_DEVICE_MEMORY_LIMIT_<n>, CUDA_REDIRECT, a CUDA_DEVICE_MEMORY_LIMIT that is not KAI's) or an envFrom
  but KAI's own `-evar` ConfigMap, which could set them unseen.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kaistack.declaration import kai_api
from kaistack.declaration.marks import TENANT_LABEL
from kaistack.declaration.vcluster_api import VIRTUAL_NAMESPACE_LABEL
from kaistack.guardrails import gpu_requests as kai
from kaistack.guardrails.admission_cel import (
    ANN,
    EPHEMERAL_VOID,
    FRACTION_CONTAINER_NOT_PROXY,
    IS_CREATE,
    IS_UPDATE,
    KAI_ANNOTATIONS,
    LABELS,
    MEMORY_LIMIT_VAR,
    NO_GPU_PATH,
    NO_GPU_RESOURCES,
    NO_RENAMED_GPU,
    NOT_PRIVILEGED,
    OLD_ANN,
    RENAMED_GPU,
    SHARED_GPU_CONFIGMAP,
    cel_list,
    gpu_request_validations,
    has_key,
    isolation_env_kept,
    mixed_mig_validation,
    quota_unit_validation,
    quote,
    shared_gpu_configmap_kais,
    shares_kept,
    unchanged,
    value,
)
from kaistack.guardrails.fraction_container import MESH_PROXIES

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
# KAI@v0.17.0 pkg/operator/operands/binder/resources.go:33,72 (defaultResourceName "binder", also its
# ServiceAccount) and operands/common/common.go:166 (the Deployment runs as it). Only the binder labels a pod
# with its shared GPU's group (pkg/binder/binding/resourcereservation/resource_reservation.go:274-300) and
# removes it on rollback (:305-320).
BINDER_SERVICE_ACCOUNT = "binder"
# KAI@v0.17.0 pkg/common/constants/constants.go:75-76.
GPU_GROUP_LABEL = "runai-gpu-group"
MULTI_GPU_GROUP_LABEL_PREFIX = GPU_GROUP_LABEL + "/"


# Annotations KAI's scheduler keeps on PodGroups (KAI@v0.17.0 pkg/common/constants/constants.go:62-64); the
# pod-grouper copies a bare pod's annotations onto the PodGroup it builds (default_grouper.go:64-65).
KAI_PODGROUP_STATE = (
    "kai.scheduler/last-start-timestamp",
    "kai.scheduler/last-eviction-timestamp",
    "kai.scheduler/stale-podgroup-timestamp",
)
# KAI@v0.17.0 pkg/podgrouper/podgrouper/plugins/spark/spark.go:15-16,29-44: a pod with both labels is grouped into a
# PodGroup named after the selector, word for word. Spark on Kubernetes sets it to its application id,
# `spark-` and a random UUID's 32 hex digits (apache/spark KubernetesConf.getKubernetesAppId).
SPARK_APP = "spark-app-name"
# HAMi's isolator skips a pod annotated inject: "false" (any case; Project-HAMi/KAI-resource-isolator
# cmd/webhook/main.go, handleMutate) and what carries the webhook label `ignore` (KAI-Scheduler@98fd1f72
# docs/gpu-sharing/hami/README.md, "Opt-out"; the chart puts it on its own webhook's pods,
# chart/kai-resource-isolator/templates/webhook-deployment.yaml). Its webhook fails open either way.
ISOLATOR_OPT_OUT_ANNOTATION = "kai-resource-isolator.io/inject"
ISOLATOR_OPT_OUT_LABEL = "kai-resource-isolator.io/webhook"
SPARK_APP_SELECTOR = "spark-app-selector"
SPARK_APP_ID = "^spark-[0-9a-f]{32}$"


def binder_user(kai_namespace: str = kai_api.DEFAULT_NAMESPACE) -> str:
    return f"system:serviceaccount:{kai_namespace}:{BINDER_SERVICE_ACCOUNT}"


def gpu_groups_kept(kai_namespace: str) -> str:
    """No GPU-group label is added, changed or removed but by KAI's binder. The binder keeps a shared GPU's
    reservation pod while a Running or Pending pod carries its group label (resource_reservation.go:176-221), and
    the scheduler reads the group from the pod's BindRequest instead (pod_info.go:505-510): a pod whose label was
    removed keeps its GPU while the device plugin hands it out again, and a pod given another's label keeps that
    GPU reserved while KAI sees it idle."""
    group = f"(k == {quote(GPU_GROUP_LABEL)} || k.startsWith({quote(MULTI_GPU_GROUP_LABEL_PREFIX)}))"
    old = LABELS.replace("object", "oldObject", 1)
    same = f"(has({old}) && k in {old} && {old}[k] == {LABELS}[k])"
    kept = f"(has({LABELS}) && k in {LABELS})"
    return (
        f"request.userInfo.username == {quote(binder_user(kai_namespace))} || "
        f"({IS_CREATE} && (!has({LABELS}) || !{LABELS}.exists(k, {group}))) || "
        f"({IS_UPDATE} && (!has({LABELS}) || {LABELS}.all(k, !{group} || {same})) && "
        f"(!has({old}) || {old}.all(k, !{group} || {kept})))"
    )


def system_pod(queue_label_key: str) -> str:
    """A CPU-only pod in the tenant's virtual kube-system (its CoreDNS, or anything just as harmless)."""
    marks = " || ".join([*(has_key(ANN, k) for k in KAI_ANNOTATIONS), has_key(LABELS, queue_label_key)])
    return (
        f"({has_key(LABELS, VIRTUAL_NAMESPACE_LABEL)} && {value(LABELS, VIRTUAL_NAMESPACE_LABEL)} == 'kube-system' "
        f"&& (!has(object.spec.schedulerName) || object.spec.schedulerName == 'default-scheduler') "
        f"&& !({marks}) && !has(object.spec.resourceClaims) && {NO_GPU_RESOURCES} && {NO_GPU_PATH})"
    )


def pod_validations(
    tenant: str,
    queues: Sequence[str],
    queue_label_key: str,
    *,
    pod_groups: Sequence[str] = (),
    sharing_enabled: bool = True,
    memory_isolation: bool = False,
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
            f"(has(object.spec.schedulerName) && object.spec.schedulerName == {quote(kai_api.SCHEDULER_NAME)}) "
            f"|| {system}",
            f"tenant {tenant}: pods must set spec.schedulerName: {kai_api.SCHEDULER_NAME} (KAI schedules tenant "
            "pods on the host)",
        ),
        (
            f"{system} || ({has_key(LABELS, queue_label_key)} && "
            f"{value(LABELS, queue_label_key)} in {cel_list(queues)}) || {unchanged(LABELS, queue_label_key)}",
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
            f"!{has_key(ANN, kai_api.POD_GROUP_NAME)} || {group} in {cel_list(pod_groups)} || "
            f"{unchanged(ANN, kai_api.POD_GROUP_NAME)} || "
            f"request.userInfo.username == {quote(pod_grouper_user(kai_namespace))}",
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
        (
            f"!({IS_UPDATE} && {has_key(OLD_ANN, kai_api.POD_GROUP_NAME)}) || "
            f"({has_key(ANN, kai_api.POD_GROUP_NAME)} && {group} == {value(OLD_ANN, kai_api.POD_GROUP_NAME)}) || "
            f"request.userInfo.username == {quote(pod_grouper_user(kai_namespace))}",
            f"tenant {tenant}: the {kai_api.POD_GROUP_NAME} annotation, once set, is changed or removed only by KAI's "
            "pod-grouper: without it the pod-grouper builds the pod's PodGroup again from its labels and annotations "
            "(its priority, preemptibility and start time included)",
        ),
        (
            " && ".join(f"(!{has_key(ANN, k)} || {unchanged(ANN, k)})" for k in KAI_PODGROUP_STATE),
            f"tenant {tenant}: {', '.join(KAI_PODGROUP_STATE)} are KAI's own PodGroup state; on a pod the pod-grouper "
            "would copy them onto its PodGroup (a start time in the future makes it safe from reclaim and preempt)",
        ),
        (
            f"!({has_key(LABELS, SPARK_APP)} && {has_key(LABELS, SPARK_APP_SELECTOR)}) || "
            f"{value(LABELS, SPARK_APP_SELECTOR)}.matches({quote(SPARK_APP_ID)}) || "
            f"{unchanged(LABELS, SPARK_APP_SELECTOR)}",
            f"tenant {tenant}: with {SPARK_APP}, KAI's pod-grouper names the pod's PodGroup after "
            f"{SPARK_APP_SELECTOR}, which must then be a Spark application id (spark-<32 hex digits>), not another "
            "PodGroup's name",
        ),
        (
            f"!{has_key(LABELS, kai_api.APP_LABEL)} || !({value(LABELS, kai_api.APP_LABEL)} in "
            f"{cel_list(kai_api.UTILITY_POD_APPS)}) || {unchanged(LABELS, kai_api.APP_LABEL)}",
            f"tenant {tenant}: the {kai_api.APP_LABEL} label values {', '.join(kai_api.UTILITY_POD_APPS)} mark KAI's "
            "own utility pods: KAI charges a reservation pod's node no GPUs, so this pod's would look free",
        ),
        (
            gpu_groups_kept(kai_namespace),
            f"tenant {tenant}: the {GPU_GROUP_LABEL} labels are KAI's binder's: they keep a shared GPU reserved for "
            "the pods that carry them",
        ),
        *gpu_request_validations(sharing_enabled),
        quota_unit_validation(),
        mixed_mig_validation(),
        (
            NO_RENAMED_GPU,
            f"tenant {tenant}: {RENAMED_GPU}shared (renamed time slices) is not counted by KAI against any queue; "
            f"ask for {kai_api.GPU_RESOURCE} or a gpu-fraction",
        ),
        (
            NOT_PRIVILEGED,
            f"tenant {tenant}: a privileged container reaches every GPU of its node outside KAI's accounting (and "
            "the node itself): drop securityContext.privileged",
        ),
        (
            f"!({IS_UPDATE}) || ({shares_kept(ANN, OLD_ANN)} && {shares_kept(OLD_ANN, ANN)})",
            f"tenant {tenant}: {kai.FRACTION}, {kai.MEMORY}, {kai.NUM_DEVICES} and MIG annotations cannot change "
            "once the pod exists: KAI would count the GPU share it holds, or is being bound to, as changed "
            "(recreate the pod)",
        ),
        (
            shared_gpu_configmap_kais(),
            f"tenant {tenant}: the {SHARED_GPU_CONFIGMAP} annotation is KAI's (it names the ConfigMaps that give a GPU "
            "share its devices and memory limit): leave it out, and never change it",
        ),
        (
            EPHEMERAL_VOID,
            f"tenant {tenant}: an ephemeral container must set {kai_api.NVIDIA_VISIBLE_DEVICES} to 'void' (or "
            "'none') itself and have no other NVIDIA_* variable or envFrom, or its image's own ENV reaches the "
            f"node's GPUs (kubectl debug --env {kai_api.NVIDIA_VISIBLE_DEVICES}=void)",
        ),
        (
            FRACTION_CONTAINER_NOT_PROXY,
            f"tenant {tenant}: KAI gives a pod's GPU share to the container {kai_api.GPU_FRACTION_CONTAINER_NAME} "
            f"names, else the first, and here that is a service mesh's proxy ({' or '.join(MESH_PROXIES)}): set "
            f"{kai_api.GPU_FRACTION_CONTAINER_NAME} to the application's container, or inject the proxy as a native "
            'sidecar (config.alpha.linkerd.io/proxy-enable-native-sidecar or sidecar.istio.io/nativeSidecar: "true")',
        ),
    ]
    if memory_isolation:
        rules.append(
            (
                f"(!{has_key(ANN, ISOLATOR_OPT_OUT_ANNOTATION)} || {unchanged(ANN, ISOLATOR_OPT_OUT_ANNOTATION)}) && "
                f"(!{has_key(LABELS, ISOLATOR_OPT_OUT_LABEL)} || {unchanged(LABELS, ISOLATOR_OPT_OUT_LABEL)})",
                f"tenant {tenant}: the {ISOLATOR_OPT_OUT_ANNOTATION} annotation and the {ISOLATOR_OPT_OUT_LABEL} "
                "label opt a pod out of HAMi's GPU memory isolation (kai.sharing: isolated): uncapped, it can take "
                "the memory of the pods it shares its GPU with",
            )
        )
        rules.append(
            (
                isolation_env_kept(),
                f"tenant {tenant}: with GPU memory isolation (kai.sharing: isolated), a pod with a GPU share may not "
                f"set {MEMORY_LIMIT_VAR}_<n> or CUDA_REDIRECT, which lift HAMi-core's cap, nor an envFrom of its own, "
                "which could set them unseen: set each variable under env (valueFrom for ConfigMaps and Secrets)",
            )
        )
    return [{"expression": e, "message": m, "reason": "Forbidden"} for e, m in rules]


def match_conditions(release: str) -> list[dict[str, str]]:
    """Requests the policy skips: the host's StatefulSet controller writing a pod of the StatefulSet `release`.

    The chart names the control plane's StatefulSet after the release (loft-sh/vcluster@v0.36.1
    chart/templates/statefulset.yaml L4-6, the same at v0.37.0-rc.1; a StatefulSet while the volume claim is on,
    which kaistack keeps: ops/verify_health.py). The controller gives each pod it creates a controller reference
    to its set, kind StatefulSet and the set's name (kubernetes pkg/controller/statefulset/stateful_set_utils.go
    newStatefulSetPod, `GetPodFromTemplate(..., NewControllerRef(set, controllerKind))`). The user is checked
    first: an owner reference alone, which anyone may write, skips nothing. The kind is not held to `apps/v1`,
    since only the controller's own requests get this far.
    """
    owned = (
        "has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, "
        f"r.kind == 'StatefulSet' && r.name == {quote(release)} && has(r.controller) && r.controller)"
    )
    return [
        {
            "name": "not-the-vcluster-control-plane",
            "expression": f"!(request.userInfo.username in {cel_list(HOST_CONTROLLERS)} && {owned})",
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
    memory_isolation: bool = False,
    kai_namespace: str = kai_api.DEFAULT_NAMESPACE,
) -> dict[str, Any]:
    validations = pod_validations(
        tenant,
        queues,
        queue_label_key,
        pod_groups=pod_groups,
        sharing_enabled=sharing_enabled,
        memory_isolation=memory_isolation,
        kai_namespace=kai_namespace,
    )
    # vCluster adds ephemeral containers through their subresource (loft-sh/vcluster@v0.36.1
    # pkg/controllers/resources/pods/ephemeral_containers.go), which "pods" does not match. A status update may
    # change labels and annotations too (kubernetes pkg/registry/core/pod/strategy.go, podStatusStrategy:
    # PrepareForUpdate resets spec and owners only), so it is matched, held to leaving them as they were: the
    # kubelet's and KAI's status updates, and vCluster's (pkg/patcher/apply.go), carry status alone.
    status = f"({IS_STATUS})"
    checked = [{**v, "expression": f"{status} || ({v['expression']})"} for v in validations]
    checked.append(resize_validation(tenant))
    checked.append(
        {
            "expression": f"!({IS_UPDATE} && {status}) || ({_same_map('labels')} && {_same_map('annotations')})",
            "message": f"tenant {tenant}: a pods/status update may not change a pod's labels or annotations (its "
            "queue, PodGroup and GPU share are read from them)",
            "reason": "Forbidden",
        }
    )
    return validating_policy(
        policy_name(tenant),
        tenant,
        ["pods", "pods/ephemeralcontainers", "pods/status", "pods/resize"],
        checked,
        # kaistack names the vCluster release after the tenant (components/tenant.py).
        match_conditions(tenant),
    )


IS_STATUS = "has(request.subResource) && request.subResource == 'status'"
IS_RESIZE = "has(request.subResource) && request.subResource == 'resize'"
RESIZED = ("cpu", "memory")  # what pods/resize may change (kubernetes pkg/apis/core/validation, ValidatePodResize)


def _not_grown(field: str) -> str:
    """No container of `field` asks for more cpu or memory than the container of its name did: quantities compared
    by Kubernetes' CEL quantity library (k8s.io/apiserver pkg/cel/library/quantity.go; in the base environment from
    1.28, pkg/cel/environment/base.go), a request the old container lacked counting as growth."""
    new, old = f"object.spec.{field}", f"oldObject.spec.{field}"
    grown_from = (
        "has(o.resources) && has(o.resources.requests) && r in o.resources.requests && "
        "!quantity(string(c.resources.requests[r])).isGreaterThan(quantity(string(o.resources.requests[r])))"
    )
    return (
        f"!has({new}) || {new}.all(c, !has(c.resources) || !has(c.resources.requests) || "
        f"{cel_list(RESIZED)}.all(r, !(r in c.resources.requests) || "
        f"(has({old}) && {old}.exists(o, o.name == c.name && {grown_from}))))"
    )


def resize_validation(tenant: str) -> dict[str, str]:
    """From Kubernetes 1.35 vCluster's syncer copies a tenant's new container resources to the host pod through
    pods/resize (loft-sh/vcluster@v0.36.1 pkg/controllers/resources/pods/syncer.go:395, 413-430, 485-516). KAI checks
    a queue's limits only when it places a pod, so a running pod grown in place takes cpu or memory past them;
    shrinking, or a resize that leaves the requests as they were, passes. A refusal stops the syncer's other updates
    of that pod until the tenant takes the change back (syncer.go:395-398: it returns the error), and shows as a
    SyncError event on the tenant's pod."""
    return {
        "expression": f"!({IS_UPDATE} && {IS_RESIZE}) || "
        f"(({_not_grown('containers')}) && ({_not_grown('initContainers')}))",
        "message": f"tenant {tenant}: a pod may not grow its cpu or memory requests in place (pods/resize): KAI "
        "checks a queue's limits only when it places a pod; recreate the pod with the larger size (shrinking passes)",
        "reason": "Forbidden",
    }


def _same_map(field: str) -> str:
    new, old = f"object.metadata.{field}", f"oldObject.metadata.{field}"
    return f"(has({new}) ? {new} : {{}}) == (has({old}) ? {old} : {{}})"


def tenant_binding(tenant: str, host_namespace: str) -> dict[str, Any]:
    """Every pod in the tenant's host namespace: synced by its vCluster or written there directly."""
    return namespace_binding(policy_name(tenant), tenant, host_namespace)


def validating_policy(
    name: str,
    tenant: str,
    resources: list[str],
    validations: list[dict[str, str]],
    conditions: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """A tenant's ValidatingAdmissionPolicy over core/v1 `resources`: CREATE and UPDATE, failing closed, skipping
    only the requests `conditions` rule out."""
    match = {"matchConditions": conditions} if conditions else {}
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": {TENANT_LABEL: tenant}},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": resources,
                    }
                ]
            },
            **match,
            "validations": validations,
        },
    }


def namespace_binding(name: str, tenant: str, host_namespace: str) -> dict[str, Any]:
    """The policy `name` bound, denying, to everything in the tenant's host namespace."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name, "labels": {TENANT_LABEL: tenant}},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": host_namespace}},
            },
        },
    }
