# Long module: the resource policies' rule table, one short pure function per policy in its own section; the rules
# share the subject/exemption helpers at the top, so splitting them would scatter one contract over many files.
"""Resource rules: pure functions `(Res, Settings, StackFacts) -> [message]`, one per policy.

The same functions run in the CrossGuard pack (props are engine proxies) and in `kaistack lint`
(props are plain dicts from manifests). Sources for every rule: kai.md §4 (workload contract),
vcluster-and-gpu.md §1.1/§1.4 (vCluster settings KAI needs).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from kaistack.declaration import kai_api
from kaistack.declaration.marks import TENANT_LABEL
from kaistack.declaration.model_servers import (
    CACHE_SIZE_FLAGS,
    FLAG,
    TGI_DEFAULT_FRACTION,
    default_utilization,
    launches_vllm,
    runs_tgi,
    sizes_cache,
    tgi_fractions,
    tgi_knob,
    utilizations,
)
from kaistack.guardrails.facts import LEGACY_QUEUE_LABEL, StackFacts, through_vcluster, workload_tenant
from kaistack.guardrails.fraction_container import fraction_container_problems
from kaistack.guardrails.gpu_requests import gpu_request_problems, mixed_mig_problems, quota_unit_problems, uint64_of
from kaistack.guardrails.helm_rules import vcluster_set_owner_false
from kaistack.guardrails.opaque_gpus import opaque_gpu_request
from kaistack.guardrails.podspec import (
    FRACTION,
    MEMORY,
    TRAINER_GROUP,
    TRAINING_RUNTIMES,
    PodTemplate,
    Res,
    Workload,
    api_group,
    builtin_kind,
    dig,
    kind_of,
    mapping,
    project_queue,
    queue_label,
    requests_gpu,
    seq,
    workload,
)
from kaistack.guardrails.settings import Settings
from kaistack.guardrails.unread import unread_constraints, unread_preemptibility

ResourceRule = Callable[[Res, Settings, StackFacts], list[str]]

EPSILON = 1e-9


def subject(res: Res, s: Settings, facts: StackFacts) -> Workload | None:
    """The workload to check, unless it is the platform's, in an exempt namespace. A Helm Chart's children are
    checked like any resource: kaistack installs its own charts as Releases, so a Chart is a team's workload, not
    the platform's (vendor charts in their usual namespaces are exempt by namespace). A tenant's workload is never
    exempt: inside its vCluster `kube-system` or `gpu-operator` is just a namespace of the tenant's."""
    wl = workload(res)
    if wl is None:
        return None
    if wl.namespace in s.exempt_namespaces:
        tenants = s.tenants if s.tenants is not None else facts.tenants
        if workload_tenant(wl, tenants or ())[0] is None:
            return None
    return wl


def may_be_kais(wl: Workload, t: PodTemplate, s: Settings) -> bool:
    """The template names KAI's scheduler, or is a patch that leaves the scheduler alone (it patches a KAI
    workload or none, so what it sets is judged)."""
    scheduler = t.spec.get("schedulerName")
    return scheduler == s.scheduler_name or (wl.partial and scheduler is None)


def _unique(messages: list[str]) -> list[str]:
    return list(dict.fromkeys(messages))


# --- kai-scheduler-name --------------------------------------------------------------------------


def is_tenant_workload(wl: Workload, s: Settings, facts: StackFacts) -> bool:
    """Label kaistack.io/tenant, a tenant's host namespace or vCluster provider, or a configured namespace."""
    return wl.namespace in s.tenant_namespaces or workload_tenant(wl, facts.tenants or ())[0] is not None


def kai_scheduler_name(res: Res, s: Settings, facts: StackFacts) -> list[str]:
    wl = subject(res, s, facts)
    if wl is None:
        return _opaque_gpus(res, s)
    key = s.queue_label_key or facts.queue_label_key
    tenant_scope = s.require_in_tenant_namespaces and is_tenant_workload(wl, s, facts)
    out = []
    for t in wl.templates:
        name = t.spec.get("schedulerName")
        if name == s.scheduler_name or (wl.partial and name is None):
            continue
        if wl.partial:
            # What the patched object asks for is not in the patch; moving its pods off KAI is.
            out.append(
                f"{t.at('spec.schedulerName')} is set to {name!r} by {wl.kind} {wl.name}: the patched pods would "
                f"leave KAI (no queue, no GPU accounting); patch in schedulerName: {s.scheduler_name}, or leave it out"
            )
            continue
        if requests_gpu(t):
            why = "the pod requests GPUs"
        elif queue_label(wl, t, key)[0] is not None:
            why = f"the pod is labelled for a KAI queue ({key})"
        elif tenant_scope:
            why = "it is a tenant workload (requireInTenantNamespaces)"
        else:
            continue
        shown = f"{name!r}" if name else "unset (default-scheduler)"
        out.append(
            f"{t.at('spec.schedulerName')} is {shown} but {why}: set schedulerName: {s.scheduler_name} "
            "(KAI's pod-grouper only handles pods with that scheduler; no other scheduler knows KAI queues "
            "or GPU shares)"
        )
    return _unique(out)


def _opaque_gpus(res: Res, s: Settings) -> list[str]:
    """A custom kind asking for GPUs where kaistack finds no pod template (kaistack.guardrails.opaque_gpus)."""
    meta = mapping(res.props.get("metadata"))
    platform = meta.get("namespace") in s.exempt_namespaces and TENANT_LABEL not in mapping(meta.get("labels"))
    where = None if platform else opaque_gpu_request(res, s.scheduler_name)
    if where is None:
        return []
    return [
        f"{where} asks for GPUs, but kaistack cannot read this {kind_of(res.type)}'s pods (its controller builds "
        f"them) and nothing in it names schedulerName: {s.scheduler_name}: its pods would go to the default "
        "scheduler, outside KAI's queues and GPU accounting; set the scheduler its controller passes to its pods "
        "(Argo's spec.schedulerName, Tekton's podTemplate.schedulerName, a KServe component's schedulerName)"
    ]


# --- kai-queue-label -----------------------------------------------------------------------------


def kai_queue_label(res: Res, s: Settings, facts: StackFacts) -> list[str]:
    wl = subject(res, s, facts)
    if wl is None:
        return []
    key = s.queue_label_key or facts.queue_label_key
    leaves = s.queues if s.queues is not None else facts.leaf_queues
    listed = f" (declared leaf queues: {', '.join(sorted(leaves))})" if leaves else ""
    tenant, _ = workload_tenant(wl, facts.tenants or ())
    # A Deployment/Job/... inside a tenant's vCluster: bare pods on the host.
    bare = through_vcluster(wl, facts.tenants or ()) and bool(wl.templates[0].path)
    out = []
    # A Kubeflow Trainer runtime is no owner of its pods: KAI skips each TrainJob for its JobSet, whose labels come
    # from the runtime's spec.template.metadata (podspec.workload's owner) and the TrainJob's spec.labels, and adds the
    # TrainJob's own labels the JobSet lacks (KAI@v0.17.0 pkg/podgrouper/podgrouper/hub/hub.go:322-327,
    # plugins/skiptopowner/skiptopowner.go propagateMetadataDownChain), then the pod's; the runtime need not name a
    # queue, and its own metadata.labels reach nothing.
    runtime = api_group(res.type) == TRAINER_GROUP and wl.kind in TRAINING_RUNTIMES
    for t in wl.templates:
        if not may_be_kais(wl, t, s):
            continue
        queue, where = queue_label(wl, t, key, top_owner=not bare)
        if queue is None and runtime:
            if key in wl.labels:
                out.append(f"{key} is on the {wl.kind}'s own metadata.labels, which KAI's pod-grouper does not read: "
                           f"put it on each TrainJob's metadata.labels, or on the {wl.kind}'s spec.template.metadata."
                           f"labels (the JobSet's) or {t.at('metadata.labels')}")  # fmt: skip
            continue
        if queue is None and wl.partial:
            continue  # a patch that leaves the pod's label alone: the object it patches may well have it
        if queue is None and bare and queue_label(wl, t, key)[0] is not None:
            out.append(
                f"{key} is only on the {wl.kind}'s {wl.owner_metadata}.labels; inside tenant {tenant}'s vCluster the "
                "host sees bare pods (setOwner: false), so KAI reads only the pod's labels: add it to "
                f"{t.at('metadata.labels')}"
            )
        elif queue is None:
            legacy, legacy_where = queue_label(wl, t, LEGACY_QUEUE_LABEL)
            derived, derived_where = project_queue(wl, t, top_owner=not bare)
            if derived is not None:
                unknown = " (not a declared leaf queue)" if leaves is not None and derived not in leaves else ""
                out.append(
                    f"no {key} label: KAI takes the queue from {derived_where} instead, queue {derived}{unknown}; "
                    f"say which queue with {key} (a project label is no queue label to the tenants' admission)"
                )
            elif legacy is not None:
                out.append(
                    f"{legacy_where} has the legacy label {LEGACY_QUEUE_LABEL}: {legacy}, which KAI stopped reading "
                    f"in v0.6.0: use {key} instead ({key}: {legacy})"
                )
            elif key in wl.annotations or key in t.annotations:
                out.append(f"{key} is set as an annotation; KAI reads only labels: move it to metadata.labels")
            elif key in wl.labels and wl.owner_metadata != "metadata":
                # A CronJob's Jobs, a Knative Service's Revisions: KAI reads the queue there, not on this object.
                reads = _owner_then_pod(wl, t)
                out.append(f"{key} is on the {wl.kind}'s own metadata.labels, which KAI's pod-grouper does not "
                           f"read (it reads {reads}): move it to {wl.owner_metadata}.labels")  # fmt: skip
            else:
                owner, pod_labels = f"{wl.owner_metadata}.labels", t.at("metadata.labels")
                where = (
                    "in metadata.labels"
                    if not t.path
                    else f"on the {wl.kind}'s pod template ({pod_labels})"
                    if owner == pod_labels
                    else f"on the {wl.kind} ({owner}) or its pod template ({pod_labels})"
                )
                out.append(
                    f"no {key} label {where}: KAI puts the pod in default-queue (quota 0 in the chart defaults); "
                    f"add {key}: <leaf queue>{listed}"
                )
        elif not queue:
            # CalcPodGroupQueue (KAI@v0.17.0 default_grouper.go:134-146) returns the first label found, even
            # empty: the PodGroup names queue "", which no Queue can be called.
            out.append(f"{where} {key} is empty: KAI takes it as the queue's name and no queue has it: add {key}: "
                       f"<leaf queue>{listed}")  # fmt: skip
        elif leaves is not None and queue not in leaves:
            out.append(f"{where} {key}: {queue} is not a declared leaf queue (KAI only schedules leaf queues){listed}")
    return _unique(out)


def _owner_then_pod(wl: Workload, t: PodTemplate) -> str:
    """Where KAI's pod-grouper looks for the queue label, in its order."""
    owner, pod = f"{wl.owner_metadata}.labels", t.at("metadata.labels")
    return owner if owner == pod else f"{owner}, then {pod}"


# --- kai-gpu-sharing-annotations -----------------------------------------------------------------


def sharing_problems(t: PodTemplate, sharing_enabled: bool = True, partial: bool = False) -> list[str]:
    """KAI's own admission verdict (kaistack.guardrails.gpu_requests; the host's CEL says the same)."""
    return gpu_request_problems(
        t.annotations,
        t.containers(),
        t.init_containers(),
        sharing_enabled=sharing_enabled,
        where=t.at("metadata.annotations"),
        partial=partial,
    )


_NV_FRACTIONS = re.compile(kai_api.NV_FRACTIONS_ANNOTATION)


def kai_gpu_sharing_annotations(res: Res, s: Settings, facts: StackFacts) -> list[str]:
    wl = subject(res, s, facts)
    if wl is None:
        return []
    out = []
    for t in wl.templates:
        out += sharing_problems(t, partial=wl.partial)  # sharing switched off: kai-gpu-sharing-enabled's finding
        out += quota_unit_problems(t.annotations, where=t.at("metadata.annotations"))
        out += mixed_mig_problems(t.annotations, t.containers(), t.init_containers(), where=t.at("spec"))
        out += [
            f"{t.at('metadata.annotations')}.{key} is an NvFractions annotation (KAI's global.gpuSharingMode: "
            "NvFractions), in no KAI release kaistack supports (newest v0.17.0): KAI ignores it and the pod gets "
            f"no GPU share; use {FRACTION} or {MEMORY}"
            for key in t.annotations
            if isinstance(key, str) and _NV_FRACTIONS.match(key)
        ]
        if t.path and any(k in wl.annotations and k not in t.annotations for k in (FRACTION, MEMORY)):
            out.append(
                f"{FRACTION}/{MEMORY} is on the {wl.kind}'s own metadata.annotations; KAI reads the pod's: move it "
                f"to {t.at('metadata.annotations')}"
            )
    return _unique(out)


# --- gpu-memory-utilization-within-fraction ------------------------------------------------------


def _floor3(value: float) -> float:
    """A suggestion never above the share (0.4883 -> 0.488, not 0.489)."""
    return math.floor(value * 1000 + EPSILON) / 1000


def pod_share(t: PodTemplate, gpu_memory_mib: int | None) -> tuple[float, str] | None:
    """The part of one GPU the pod was promised, or None when the annotations don't say (validly)."""
    fraction, memory = t.annotations.get(FRACTION), t.annotations.get(MEMORY)
    if sharing_problems(t) or (fraction is None and memory is None):
        return None
    if fraction is not None:
        return float(fraction), f"gpu-fraction {float(fraction):g}"
    if gpu_memory_mib:
        share = uint64_of(str(memory)) / gpu_memory_mib
        return share, f"gpu-memory {memory} MiB of a {gpu_memory_mib} MiB GPU = {share:.3g}"
    return None  # gpu-memory without a known GPU size: the share depends on the node


def gpu_memory_utilization_within_fraction(res: Res, s: Settings, facts: StackFacts) -> list[str]:
    wl = subject(res, s, facts)
    if wl is None or facts.memory_isolated:  # isolated: the container sees its share as the whole GPU
        return []
    # The pod may land on any GPU pool; vLLM takes u x the GPU it lands on, so the largest GPU is the bound.
    gpu_mib = s.node_gpu_memory_mib or (max(facts.gpu_memory_mib) if facts.gpu_memory_mib else None)
    out = []
    for t in wl.templates:
        share = pod_share(t, gpu_mib)
        if share is None:
            continue
        bound, desc = share
        # Init containers too: KAI gives the share to the container gpu-fraction-container-name names, looking
        # among the init containers first (KAI@v0.17.0 pkg/binder/common/gpu_access.go:194-204), and a native
        # sidecar (restartPolicy: Always) serves beside the others.
        for i, c in enumerate([*t.init_containers(), *t.containers()]):
            name = c.get("name", i)
            vllm_default = default_utilization(str(c.get("image") or ""), s.vllm_default_utilization)
            servers = (
                ("vLLM", "GPU memory utilization", utilizations(c, s.utilization_env_vars), launches_vllm(c), FLAG,
                 vllm_default),
                ("TGI", "TGI's CUDA memory fraction", tgi_fractions(c), runs_tgi(c), tgi_knob(c), TGI_DEFAULT_FRACTION),
            )  # fmt: skip
            for server, setting, found, runs, flag, default in servers:
                # A vLLM that sizes its cache by bytes or blocks takes what the weights and that cache need, and still
                # starts only when utilization x the GPU is free (vllm-project/vllm@35d5cda gpu_worker.py init_device).
                sized = server == "vLLM" and sizes_cache(c)
                takes = (
                    "it still starts only when that much of the GPU is free (it sizes its cache by "
                    f"{' or '.join(CACHE_SIZE_FLAGS)}), which the GPU's other pods hold"
                    if sized
                    else "it would take memory promised to the GPU's other pods"
                )
                out += [
                    f"container {name} sets {setting} {u.value:g} ({u.where}), above the pod's share ({desc}); KAI "
                    f"does not isolate GPU memory, so {takes}: use at most {_floor3(bound):g}"
                    for u in found
                    if u.value is not None and u.value > bound + EPSILON
                ]
                if not found and not wl.partial and runs and default > bound + EPSILON:
                    verb = "needs" if sized else "takes"
                    out.append(
                        f"container {name} runs {server} without {flag}, so {server} {verb} its default {default:g} "
                        f"of the GPU's memory{' free to start' if sized else ''}, above the pod's share ({desc}): add "
                        f"{flag}={_floor3(bound):g} (or less)"
                    )
    return _unique(out)


# --- kai-no-bypass -------------------------------------------------------------------------------


def bypass_problems(
    wl: Workload, t: PodTemplate, tenant: str | None, key: str, own_gangs: tuple[str, ...] = ()
) -> list[str]:
    """Ways a pod meant for KAI skips it; the host's admission CEL refuses the same for tenant pods."""
    out = []
    # A running pod read back from the API: the scheduler wrote its nodeName and KAI's pod-grouper its
    # pod-group-name; the host's admission judged how it was created.
    bound = wl.res.live and wl.kind == "Pod" and not t.path
    node = t.spec.get("nodeName")
    if node and not bound:
        out.append(
            f"{t.at('spec.nodeName')} is {node!r}: a pod with a preset node is run by the kubelet without any "
            "scheduler, so KAI never sees it (no queue, no GPU accounting): remove it and use a nodeSelector"
        )
    app = t.labels.get(kai_api.APP_LABEL)
    if app in kai_api.UTILITY_POD_APPS:
        out.append(
            f"{t.at('metadata.labels')} {kai_api.APP_LABEL}: {app!r} is how KAI tells its own utility pods: it "
            "charges a resource-reservation pod's node no GPUs, so the GPUs this pod holds would look free to KAI "
            "(KAI@v0.17.0 node_info.go:470-473, utility_pods.go); use another app label"
        )
    if tenant is None:
        return out
    group = t.annotations.get(kai_api.POD_GROUP_NAME)
    if group is not None and group not in own_gangs and not bound:
        out.append(
            f"{t.at('metadata.annotations')} {kai_api.POD_GROUP_NAME}: {group!r} on a pod of tenant {tenant}: "
            "KAI's pod-grouper sets it; a pod that names a PodGroup joins it and its queue, whoever owns it. "
            f"Remove it (the host refuses it); use the {key} label for the queue"
        )
    renamed = sorted(
        {
            str(name)
            for c in (*t.containers(), *t.init_containers())
            for block in (mapping(dig(c, "resources", "limits")), mapping(dig(c, "resources", "requests")))
            for name in block
            if str(name).startswith(kai_api.GPU_RESOURCE + ".")
        }
    )
    if renamed:
        out.append(
            f"{', '.join(renamed)} on a pod of tenant {tenant}: renamed time slices are counted against no KAI queue "
            f"(KAI reads {kai_api.GPU_RESOURCE}), so the tenant's quota would not hold them; the host refuses it"
        )
    privileged = [
        str(mapping(c).get("name"))
        for c in (*t.containers(), *t.init_containers())
        if mapping(mapping(c).get("securityContext")).get("privileged") is True
    ]
    if privileged:
        out.append(
            f"container {', '.join(privileged)} of a pod of tenant {tenant} is privileged: it reaches every GPU of its "
            "node outside KAI's accounting (and the node itself); drop securityContext.privileged (the host refuses it)"
        )
    priority = t.spec.get("priorityClassName")
    if isinstance(priority, str) and priority.startswith("system-"):
        out.append(
            f"{t.at('spec.priorityClassName')} is {priority!r} on a pod of tenant {tenant}: system-* classes are for "
            "the host's own pods (KAI would rank it above every workload in the cluster)"
        )
    label = t.labels.get(kai_api.PRIORITY_CLASS_LABEL)
    if isinstance(label, str) and label.startswith("system-"):
        out.append(
            f"{t.at('metadata.labels')} {kai_api.PRIORITY_CLASS_LABEL}: {label!r} on a pod of tenant {tenant}: KAI's "
            "pod-grouper takes the priority class from this label before spec.priorityClassName, and system-* "
            "classes are for the host's own pods (KAI would rank it above every workload in the cluster)"
        )
    return out


def kai_no_bypass(res: Res, s: Settings, facts: StackFacts) -> list[str]:
    wl = subject(res, s, facts)
    if wl is None:
        return []
    key = s.queue_label_key or facts.queue_label_key
    tenant = workload_tenant(wl, facts.tenants or ())[0]
    if tenant is None and wl.namespace in s.tenant_namespaces:
        tenant = wl.namespace
    out = []
    hosts = [t for t in facts.tenants or () if wl.namespace == t.namespace]
    host_namespace = bool(hosts)
    # The admission policy lets through the StatefulSet controller's pods of the vCluster's own StatefulSet, which
    # the chart names after the release and kaistack the release after the tenant (admission.match_conditions);
    # a patch or a PodTemplate creates no pods of its own.
    kind = builtin_kind(wl.res.type)
    control_plane = kind == "StatefulSet" and any(wl.name == t.name for t in hosts)
    owned = not wl.partial and kind not in ("Pod", "PodTemplate") and not control_plane
    if host_namespace and owned and not through_vcluster(wl, facts.tenants or ()):
        out.append(
            f"{wl.kind} {wl.name} runs pods in tenant {tenant}'s host namespace {wl.namespace}, where the admission "
            "policy refuses pods with owners (KAI would take their queue and priority from the owner, which it "
            f"cannot see): create it inside the tenant's vCluster (tenant: {tenant}) or in another namespace"
        )
    owners = seq(mapping(wl.res.props.get("metadata")).get("ownerReferences"))
    if host_namespace and kind == "Pod" and owners:
        out.append(
            f"Pod {wl.name} in tenant {tenant}'s host namespace {wl.namespace} has ownerReferences, which the "
            "admission policy refuses (KAI takes a pod's queue and priority from its top owner first, which that "
            "policy cannot see): remove them (a vCluster syncs pods without owners with setOwner: false)"
        )
    for t in wl.templates:
        if tenant is None and t.spec.get("schedulerName") != s.scheduler_name and not requests_gpu(t):
            continue  # not a KAI pod and not a tenant's: nothing of KAI's to bypass
        own = facts.tenant(tenant) if tenant is not None else None
        out += bypass_problems(wl, t, tenant, key, own.pod_groups if own is not None else ())
    return _unique(out)


# --- kai-unread-constraints ----------------------------------------------------------------------


def kai_unread_constraints(res: Res, s: Settings, facts: StackFacts) -> list[str]:
    """What KAI never reads of a pod spec (kaistack.guardrails.unread), on the pods it schedules."""
    wl = subject(res, s, facts)
    if wl is None:
        return []
    scheduled = [t for t in wl.templates if t.spec.get("schedulerName") == s.scheduler_name]
    found = [pair for t in scheduled for pair in unread_constraints(t)]
    if scheduled and wl.kind != "Pod":  # the pod-grouper reads the top owner's label before the pod's
        found = unread_preemptibility(wl.owner_labels, f"{wl.owner_metadata}.labels") + found
    return [f"{problem}. Fix: {fix}" for problem, fix in found]


# --- kai-fraction-container ----------------------------------------------------------------------


def kai_fraction_container(res: Res, s: Settings, facts: StackFacts) -> list[str]:
    """A GPU share that goes to a mesh proxy or away from vLLM (kaistack.guardrails.fraction_container)."""
    wl = subject(res, s, facts)
    if wl is None or wl.partial:  # a patch's containers are not the pod's: which is first is unknown
        return []
    found = [pair for t in wl.templates for pair in fraction_container_problems(t, admitted=res.live)]
    return [f"{problem}. Fix: {fix}" for problem, fix in found]


RESOURCE_RULES: dict[str, ResourceRule] = {
    "kai-scheduler-name": kai_scheduler_name,
    "kai-queue-label": kai_queue_label,
    "vcluster-set-owner-false": vcluster_set_owner_false,
    "kai-gpu-sharing-annotations": kai_gpu_sharing_annotations,
    "gpu-memory-utilization-within-fraction": gpu_memory_utilization_within_fraction,
    "kai-no-bypass": kai_no_bypass,
    "kai-unread-constraints": kai_unread_constraints,
    "kai-fraction-container": kai_fraction_container,
}

DESCRIPTIONS: dict[str, str] = {
    "kai-scheduler-name": "GPU workloads (and KAI-queued pods) must set schedulerName: kai-scheduler.",
    "kai-queue-label": "Pods scheduled by KAI carry the kai.scheduler/queue label naming a declared leaf queue.",
    "vcluster-set-owner-false": "vCluster releases set experimental.syncSettings.setOwner: false and keep the "
    "virtual scheduler off.",
    "kai-gpu-sharing-annotations": "KAI GPU-sharing annotations are valid: 0.005 <= gpu-fraction < 1 (KAI counts "
    "less as 0 GPUs of quota), gpu-memory a positive integer (MiB), never both, never with an nvidia.com/gpu limit.",
    "gpu-memory-utilization-within-fraction": "A shared-GPU pod's server (vLLM, TGI) takes no more GPU memory than "
    "the pod's share.",
    "kai-no-bypass": "Pods meant for KAI do not skip it: no preset spec.nodeName; tenant pods set no pod-group-name "
    "annotation and no system-* priority class.",
    "kai-unread-constraints": "Pods KAI schedules set no topologySpreadConstraints, preferred node affinity or "
    "preemptionPolicy: Never, which KAI does not read (pod anti-affinity spreads pods; required terms choose nodes).",
    "kai-fraction-container": "A GPU-sharing pod's share goes to the container that uses the GPU (KAI gives it to the "
    "first container unless gpu-fraction-container-name names another): not a service mesh's proxy, not away from "
    "vLLM.",
}
