# Long module: the resource model every rule shares (Res, PodTemplate, Workload) and the kind tables and search that
# find pod templates in any object; the tables, the search and the model are one contract, read together.
"""Resources as the rules see them, and the pod templates inside them.

Everything here reads engine props through `collections.abc.Mapping`/`Sequence` only: the engine
hands policies `_DictProxy`/`_ListProxy` objects (not dict/list) that raise `UnknownValueError` on a
preview-unknown value. Nothing here catches that error, so a rule that needs an unknown value is
skipped by the SDK (reported as an advisory "can't run policy ... during preview") instead of
reporting a violation it cannot know. Lint feeds plain dicts through the same functions.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kaistack.declaration import kai_api
from kaistack.declaration.marks import TENANT_LABEL
from placement.quantity import Quantity, QuantityError

# KAI's own and the GPU stack's chart workloads: not tenant workloads, never KAI-scheduled.
DEFAULT_EXEMPT_NAMESPACES = (
    kai_api.DEFAULT_NAMESPACE,
    kai_api.RESERVATION_NAMESPACE,
    "gpu-operator",
    "nvidia",
    "kube-system",
)
# Helm components: no pod template of their own (a Chart's children are checked as themselves).
CHART_COMPONENT_TYPES = ("kubernetes:helm.sh/v4:Chart", "kubernetes:helm.sh/v3:Chart")
HELM_TYPES = ("kubernetes:helm.sh/v3:Release", *CHART_COMPONENT_TYPES)
QUEUE_TYPE = kai_api.QUEUE.pulumi_type

# Where each built-in kind keeps its pod template(s) (pulumi.md §6.6). Other kinds are searched.
TEMPLATE_PATHS: dict[str, tuple[tuple[str, ...], ...]] = {
    "Pod": ((),),
    "Deployment": (("spec", "template"),),
    "StatefulSet": (("spec", "template"),),
    "ReplicaSet": (("spec", "template"),),
    "DaemonSet": (("spec", "template"),),
    "ReplicationController": (("spec", "template"),),
    "Job": (("spec", "template"),),
    "PodTemplate": (("template",),),
    "CronJob": (("spec", "jobTemplate", "spec", "template"),),
}
# Kubeflow training jobs: spec.<x>ReplicaSpecs.<Role>.template (Master/Worker for PyTorchJob).
REPLICA_SPECS = {
    "PyTorchJob": "pytorchReplicaSpecs",
    "TFJob": "tfReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "PaddleJob": "paddleReplicaSpecs",
    "JAXJob": "jaxReplicaSpecs",
}
# Kinds that never hold pods: skip the generic search (it would only find false positives or trip
# over unknown values in unrelated fields).
_NOT_WORKLOADS = frozenset(
    {
        "Namespace", "ConfigMap", "Secret", "Service", "ServiceAccount", "Role", "RoleBinding", "ClusterRole",
        "ClusterRoleBinding", "CustomResourceDefinition", "Queue", "PriorityClass", "ResourceQuota", "LimitRange",
        "NetworkPolicy", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "Ingress",
        "PersistentVolumeClaim", "StorageClass", "RuntimeClass",
    }
)  # fmt: skip
# The API groups those kind names belong to. A kind is read by the tables above only in its own group: a
# Knative Service (serving.knative.dev) runs pods, a Volcano Job (batch.volcano.sh) keeps them in
# spec.tasks[].template; both are searched like any other custom kind.
_GROUPS: dict[str, frozenset[str]] = {
    **dict.fromkeys(
        ("Pod", "ReplicationController", "PodTemplate", "Namespace", "ConfigMap", "Secret", "Service",
         "ServiceAccount", "ResourceQuota", "LimitRange", "PersistentVolumeClaim"),
        frozenset({"core"}),
    ),
    **dict.fromkeys(("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet"), frozenset({"apps", "extensions"})),
    **dict.fromkeys(("Job", "CronJob"), frozenset({"batch"})),
    **dict.fromkeys(("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"),
                    frozenset({"rbac.authorization.k8s.io"})),
    **dict.fromkeys(("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"),
                    frozenset({"admissionregistration.k8s.io"})),
    **dict.fromkeys(REPLICA_SPECS, frozenset({"kubeflow.org"})),
    "CustomResourceDefinition": frozenset({"apiextensions.k8s.io"}),
    "Queue": frozenset({"scheduling.run.ai"}),
    "PriorityClass": frozenset({"scheduling.k8s.io"}),
    "NetworkPolicy": frozenset({"networking.k8s.io"}),
    "Ingress": frozenset({"networking.k8s.io", "extensions"}),
    "StorageClass": frozenset({"storage.k8s.io"}),
    "RuntimeClass": frozenset({"node.k8s.io"}),
}  # fmt: skip
# Deep enough for Kubeflow Trainer v2's runtimes, whose pod template is 8 keys down
# (spec.template.spec.replicatedJobs[i].template.spec.template: kubeflow/trainer@v2.1.0
# manifests/base/runtimes/torch_distributed.yaml); found up to 9 keys down, a bound against hostile nesting.
_SEARCH_DEPTH = 10
# Policy engines' objects hold pod specs as patterns to match or patches to apply, not pods to run (a Kyverno rule
# setting schedulerName is no pod without a queue label).
POLICY_ENGINE_GROUPS = frozenset(
    {"kyverno.io", "policies.kyverno.io", "templates.gatekeeper.sh", "constraints.gatekeeper.sh",
     "mutations.gatekeeper.sh"}
)  # fmt: skip
PROJECT_LABEL = "project"  # KAI's pod-grouper takes the queue from it when no queue label is set
# `kubernetes:serving.knative.dev/<version>:Service`
KNATIVE_SERVICE = ("kubernetes:serving.knative.dev/", ":Service")
TRAINER_GROUP = "trainer.kubeflow.org"
TRAINING_RUNTIMES = ("TrainingRuntime", "ClusterTrainingRuntime")


@dataclass(frozen=True)
class Res:
    """One resource: a Pulumi resource (type token, inputs) or a manifest converted to the same shape."""

    type: str
    name: str
    props: Mapping[str, Any]
    urn: str = ""
    parent: str | None = None  # parent URN
    provider: str | None = None  # provider URN (or "urn::id" reference)
    # The Kubernetes provider's `namespace` input: where an object with no metadata.namespace goes (the engine
    # sends the provider's inputs with each resource, pulumi/pulumi pkg/resource/deploy/step_generator.go).
    provider_namespace: str | None = None
    # Read back from the API server (`kubectl get -o yaml` into `kaistack lint`), not a request to create:
    # fields the cluster wrote since (a Pod's nodeName, KAI's pod-group-name) say nothing of its author.
    live: bool = False


@dataclass(frozen=True)
class PodTemplate:
    """A pod's metadata and spec wherever it sits in its owner (`path` names it in messages)."""

    path: str  # "" for a Pod itself
    labels: Mapping[str, Any]
    annotations: Mapping[str, Any]
    spec: Mapping[str, Any]

    def at(self, field_path: str) -> str:
        """`spec.schedulerName` inside this template, as a path from the object's root."""
        return f"{self.path}.{field_path}" if self.path else field_path

    def containers(self) -> list[Mapping[str, Any]]:
        return [c for c in seq(self.spec.get("containers")) if isinstance(c, Mapping)]

    def init_containers(self) -> list[Mapping[str, Any]]:
        return [c for c in seq(self.spec.get("initContainers")) if isinstance(c, Mapping)]


@dataclass(frozen=True)
class Workload:
    """A resource that creates pods: its own metadata (the pod-grouper's top owner) and its templates."""

    res: Res
    kind: str
    name: str
    namespace: str
    labels: Mapping[str, Any]
    annotations: Mapping[str, Any]
    templates: tuple[PodTemplate, ...] = field(default_factory=tuple)
    # A Pulumi `<Kind>Patch`: only the fields it sets, merged into an object kaistack does not see, so
    # a field it leaves out is not missing.
    partial: bool = False
    # What KAI's pod-grouper reads as the top owner's metadata, and where it sits: the object's own, except a
    # CronJob's, whose pods' top owner is their Job, made from spec.jobTemplate.metadata. `labels` and
    # `annotations` stay the object's own (its tenant, a misplaced share annotation).
    owner_labels: Mapping[str, Any] = field(default_factory=dict)
    owner_annotations: Mapping[str, Any] = field(default_factory=dict)
    owner_metadata: str = "metadata"

    def describe(self) -> str:
        return f"{self.kind}/{self.name}"


# --- small readers -------------------------------------------------------------------------------


def mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def seq(value: Any) -> Sequence[Any]:
    return value if isinstance(value, Sequence) and not isinstance(value, str | bytes) else ()


def dig(value: Any, *keys: str) -> Any:
    """value[k1][k2]... or None when a step is missing or not a mapping."""
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def split_type(resource_type: str) -> tuple[str, str] | None:
    """`kubernetes:apps/v1:Deployment` -> ("apps/v1", "Deployment"); core group -> ("v1", kind)."""
    parts = resource_type.split(":")
    if len(parts) != 3 or parts[0] != "kubernetes":
        return None
    group, _, version = parts[1].rpartition("/")
    return (version if group in ("core", "") else f"{group}/{version}"), parts[2]


def type_token(api_version: str, kind: str) -> str:
    """The Pulumi type token pulumi-kubernetes gives a manifest of this apiVersion/kind."""
    group, _, version = api_version.rpartition("/")
    return f"kubernetes:{group or 'core'}/{version}:{kind}"


def kind_of(resource_type: str) -> str:
    split = split_type(resource_type)
    return split[1] if split else resource_type.rsplit(":", 1)[-1]


def api_group(resource_type: str) -> str | None:
    """`kubernetes:argoproj.io/v1alpha1:Workflow` -> `argoproj.io`; `core` for the core group; None otherwise."""
    parts = resource_type.split(":")
    if len(parts) != 3 or parts[0] != "kubernetes":
        return None
    return parts[1].rpartition("/")[0] or "core"


def builtin_kind(resource_type: str) -> str | None:
    """The kind when the tables above know it in this API group; None for a custom kind of the same name."""
    parts = resource_type.split(":")
    if len(parts) != 3 or parts[0] != "kubernetes":
        return None
    group = parts[1].rpartition("/")[0] or "core"
    return parts[2] if group in _GROUPS.get(parts[2], ()) else None


def patched_kind(resource_type: str) -> str | None:
    """`kubernetes:apps/v1:DeploymentPatch` (pulumi-kubernetes' server-side apply patch) -> `Deployment`."""
    if not resource_type.endswith("Patch"):
        return None
    return builtin_kind(resource_type.removesuffix("Patch"))


def urn_types(urn: str) -> list[str]:
    """The type chain of a URN (`...::parentType$childType::name`), outermost first."""
    parts = urn.split("::")
    return parts[2].split("$") if len(parts) >= 4 else []


# --- workloads and pod templates -----------------------------------------------------------------


def workload(res: Res) -> Workload | None:
    """The workload view of a resource, or None when it has no pod template."""
    if res.type in HELM_TYPES or not res.type.startswith("kubernetes:"):
        return None
    if api_group(res.type) in POLICY_ENGINE_GROUPS:
        return None
    kind = kind_of(res.type)
    patched = patched_kind(res.type)
    known = patched or builtin_kind(res.type)
    if known in _NOT_WORKLOADS:
        return None
    templates = tuple(pod_templates(known or "", res.props, partial=patched is not None))
    if not templates:
        return None
    meta = mapping(res.props.get("metadata"))
    name = meta.get("name") or res.name
    namespace = meta.get("namespace") or res.provider_namespace or "default"
    # KAI's pod-grouper takes a CronJob's pods' top owner to be their Job (kai-scheduler/KAI-Scheduler@v0.17.0
    # pkg/podgrouper/podgrouper/plugins/cronjobs/crobjob-grouper.go), which carries jobTemplate's metadata, not
    # the CronJob's own.
    owner, owner_at = meta, "metadata"
    if known == "CronJob":
        owner, owner_at = mapping(dig(res.props, "spec", "jobTemplate", "metadata")), "spec.jobTemplate.metadata"
    elif res.type.startswith(KNATIVE_SERVICE[0]) and res.type.endswith(KNATIVE_SERVICE[1]):
        # KAI's Knative grouper reads the queue from the pod's Revision, then the pod (KAI@v0.17.0
        # pkg/podgrouper/podgrouper/plugins/knative/knative.go:56-118, CalcPodGroupQueue(rev, pod)); Knative builds
        # the Revision's metadata from spec.template's, never the Service's own (knative/serving
        # pkg/reconciler/configuration/resources/revision.go, MakeRevision).
        owner, owner_at = mapping(dig(res.props, "spec", "template", "metadata")), "spec.template.metadata"
    elif api_group(res.type) == TRAINER_GROUP and kind in TRAINING_RUNTIMES:
        # KAI skips a TrainJob and groups by its JobSet (KAI@v0.17.0 pkg/podgrouper/podgrouper/hub/hub.go:322-327),
        # whose labels Trainer takes from the runtime's spec.template.metadata, never its own metadata
        # (kubeflow/trainer@067e5c66 pkg/runtime/core/trainingruntime.go newRuntimeInfo: `propagationLabels :=
        # maps.Clone(jobSetTemplateSpec.Labels)`, with RuntimeInfo given trainingRuntime.Spec.Template alone).
        owner, owner_at = mapping(dig(res.props, "spec", "template", "metadata")), "spec.template.metadata"
    return Workload(
        res=res,
        kind=kind,
        name=str(name),
        namespace=str(namespace),
        labels=mapping(meta.get("labels")),
        annotations=mapping(meta.get("annotations")),
        owner_labels=mapping(owner.get("labels")),
        owner_annotations=mapping(owner.get("annotations")),
        owner_metadata=owner_at,
        templates=templates,
        partial=patched is not None,
    )


def pod_templates(kind: str, props: Mapping[str, Any], partial: bool = False) -> Iterator[PodTemplate]:
    """The pod templates of an object of `kind`. `partial` (a `<Kind>Patch`): a template that sets only its
    metadata is one too; the labels and annotations it applies are judged (a queue label, a GPU share)."""

    def is_template(node: Any) -> bool:
        if not isinstance(node, Mapping):
            return False
        if isinstance(node.get("spec"), Mapping):
            return True
        # A patch's metadata alone: unknown at preview, it is no template (raising would turn every policy, the
        # stack-wide ones too, into a "can't run policy" advisory for the whole stack), as the search treats unknowns.
        meta = known(node, "metadata") if partial else None
        return isinstance(meta, Mapping) and all(
            known(meta, k, _UNKNOWN) is not _UNKNOWN for k in ("labels", "annotations")
        )

    if kind in TEMPLATE_PATHS:
        for path in TEMPLATE_PATHS[kind]:
            node = dig(props, *path) if path else props
            if is_template(node):
                yield _template(".".join(path), node)
        return
    if kind in REPLICA_SPECS:
        key = REPLICA_SPECS[kind]
        for role, replica in mapping(dig(props, "spec", key)).items():
            node = dig(replica, "template")
            if is_template(node):
                yield _template(f"spec.{key}.{role}.template", node)
        return
    # Any other kind (JobSet, RayCluster, LeaderWorkerSet, ...): every {metadata?, spec: {containers}}.
    yield from _search(props, "", _SEARCH_DEPTH)


def _template(path: str, node: Mapping[str, Any]) -> PodTemplate:
    meta = mapping(node.get("metadata"))
    return PodTemplate(
        path=path,
        labels=mapping(meta.get("labels")),
        annotations=mapping(meta.get("annotations")),
        spec=mapping(node.get("spec")),
    )


def _search(node: Any, path: str, depth: int) -> Iterator[PodTemplate]:
    if depth <= 0:
        return
    if isinstance(node, Mapping):
        spec = known(node, "spec")
        if path and isinstance(spec, Mapping) and seq(known(spec, "containers")):
            yield _template(path, node)
            return
        for key in node:
            yield from _search(known(node, key), f"{path}.{key}" if path else str(key), depth - 1)
    elif isinstance(node, Sequence) and not isinstance(node, str | bytes):
        for i in range(len(node)):
            yield from _search(known(node, i), f"{path}[{i}]", depth - 1)


_UNKNOWN = object()


def known(node: Any, key: Any, unknown: Any = None) -> Any:
    """node[key], or `unknown` (None) for a preview-unknown value.

    Only the generic searches skip unknowns (this one for pod templates, opaque_gpus' for GPU requests): they walk
    every field of an unfamiliar kind (a computed `status` is unknown at preview), and an unknown there is nothing.
    The rules themselves still raise on an unknown value they need.
    """
    try:
        return node.get(key) if isinstance(node, Mapping) else node[key]
    except Exception as err:
        if type(err).__name__ == "UnknownValueError":  # pulumi_policy.proxy, not imported here
            return unknown
        raise


# --- what a pod asks of KAI ----------------------------------------------------------------------

GPU_RESOURCE = kai_api.GPU_RESOURCE
FRACTION = kai_api.GPU_FRACTION
MEMORY = kai_api.GPU_MEMORY
NUM_DEVICES = kai_api.GPU_FRACTION_NUM_DEVICES


def requests_gpu(template: PodTemplate) -> bool:
    """Whole GPUs (NVIDIA or AMD, which KAI counts too), renamed time slices (nvidia.com/gpu.shared, which it
    does not), MIG slices, or a KAI share (fraction/memory annotation). Init containers count: the scheduler
    reserves the larger of any init container's request and the containers' sum (sidecars added)."""
    if FRACTION in template.annotations or MEMORY in template.annotations:
        return True
    for container in (*template.containers(), *template.init_containers()):
        resources = mapping(container.get("resources"))
        for block in (mapping(resources.get("limits")), mapping(resources.get("requests"))):
            if gpu_resource_asked(block) is not None:
                return True
    return False


def gpu_resource_asked(block: Mapping[str, Any]) -> str | None:
    """The first GPU resource a resource list (`limits`, `requests`) asks a nonzero amount of."""
    return next((str(k) for k in block if _is_gpu_resource(str(k)) and _not_zero(block, k)), None)


def _not_zero(block: Mapping[str, Any], key: Any) -> bool:
    """`nvidia.com/gpu: 0`, as charts render it by default, asks for nothing; anything that is not a quantity
    (an unknown at preview, a typo the API server refuses) is taken as a request."""
    try:
        return Quantity.parse(block[key]).value != 0
    except QuantityError:
        return True
    except Exception as err:
        if type(err).__name__ == "UnknownValueError":  # pulumi_policy.proxy at preview: unknown, so a request
            return True
        raise


def _is_gpu_resource(name: str) -> bool:
    return (
        name in (GPU_RESOURCE, kai_api.AMD_GPU_RESOURCE)
        or name.startswith(GPU_RESOURCE + ".")
        or name.startswith(kai_api.MIG_RESOURCE_PREFIX)
    )


def shares_gpu(template: PodTemplate) -> bool:
    return FRACTION in template.annotations or MEMORY in template.annotations


def queue_label(
    wl: Workload, template: PodTemplate, key: str, top_owner: bool = True, project: bool = False
) -> tuple[str | None, str]:
    """The queue KAI's pod-grouper reads: the top owner's label first, then the pod's (labels only).

    `top_owner=False` for workloads inside a vCluster: with setOwner false the host sees bare pods,
    so only the pod template's labels reach KAI (vcluster-and-gpu.md §1.1-1.3). `project`: without the label,
    the queue KAI derives from a `project` label (project_queue), as for a pod KAI schedules.
    """
    for labels, where in _label_places(wl, template, top_owner):
        value = labels.get(key)
        if value is not None:
            return str(value), where
    return project_queue(wl, template, top_owner) if project else (None, "")


def project_queue(wl: Workload, template: PodTemplate, top_owner: bool = True) -> tuple[str | None, str]:
    """The queue KAI's pod-grouper takes when no queue label is set: a `project` label's value (the top owner's,
    then the pod's), suffixed with `-<node pool>` when the pod has KAI's node-pool label (KAI@v0.17.0
    pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go:134-166; `project` is
    plugins/constants/constants.go:8, the node-pool key's default pkg/common/constants/constants.go:26)."""
    for labels, where in _label_places(wl, template, top_owner):
        value = labels.get(PROJECT_LABEL)
        if value is not None:
            if not value:
                break  # an empty project: KAI's default queue
            pool = template.labels.get(kai_api.NODE_POOL_LABEL)
            return (f"{value}-{pool}" if pool is not None else str(value)), f"{where} {PROJECT_LABEL}"
    return None, ""


def _label_places(wl: Workload, template: PodTemplate, top_owner: bool) -> list[tuple[Mapping[str, Any], str]]:
    places = [(wl.owner_labels, f"{wl.owner_metadata}.labels"), (template.labels, template.at("metadata.labels"))]
    return places if top_owner else places[1:]


def tenant_label(wl: Workload) -> str | None:
    for labels in (wl.labels, *(t.labels for t in wl.templates)):
        value = labels.get(TENANT_LABEL)
        if value:
            return str(value)
    return None
