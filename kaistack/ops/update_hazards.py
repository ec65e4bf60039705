"""What `pulumi up` of a change would delete, replace or fail on, read from the two declarations (`kaistack diff`).

The checker says what a change does to capacity; this says what applying it does to what is already running, for
the changes whose cost a preview shows only as a "replace" or "delete" line among many:
- a tenant removed, renamed or moved to another host namespace: its namespace goes, and with it the vCluster's
  datastore, a volume claim there (loft-sh/vcluster@v0.36.1 chart/values.yaml persistence.volumeClaim);
- a tenant's kind NodePort moved (unset ones count up in declaration order), or a new one asked for: Pulumi updates
  before it deletes, so the port can still be held by the tenant that had it;
- the cluster's provider: the old cluster, or what kaistack made in an existing one, is deleted;
- KAI's or the GPU stack's namespace, the GPU mode, the kind cluster's config or name: a release or the whole
  cluster is replaced, deleting first (components.kai, components.gpu, components.cluster_kind);
- the topology's levels: the Topology object is replaced, deleting first (components.kai);
- `kai.defaultQueues`: KAI's chart writes its default queues at install only, so the change is never applied;
- the EKS version, pools and subnets (kaistack.ops.eks_hazards);
- a Job's or bare Pod's pod template: pulumi-kubernetes deletes and re-creates it (provider/pkg/provider/diff.go);
  a bare Pod's GPU share (an annotation) is patched in place instead, and KAI never reads it again;
- `cluster.trainingOperator` turned off: the operator goes with its PyTorchJob CRD, and every PyTorchJob with it;
- a host namespace kaistack made for workloads, now holding none: it is deleted with whatever else is in it.
"""

from __future__ import annotations

from kaistack.capacity.diff import Hazard
from kaistack.declaration import kai_api, tenant_sizing
from kaistack.declaration.marks import PRESENT_NAMESPACES
from kaistack.declaration.model import StackConfig
from kaistack.ops.eks_hazards import eks_hazards


def update_hazards(before: StackConfig, after: StackConfig) -> list[Hazard]:
    if before.cluster.provider != after.cluster.provider:
        # Every other hazard is one change to the same cluster; this change leaves it.
        return [_cluster_left(before, after)]
    hazards = _tenant_hazards(before, after)
    hazards += _platform_hazards(before, after)
    hazards += _workload_hazards(before, after)
    return hazards


def _cluster_left(before: StackConfig, after: StackConfig) -> Hazard:
    """The host provider's kind picks another cluster component (components/platform.py): the old one's resources are
    deleted, and every object kaistack made with them; the new cluster starts empty."""
    if after.cluster.provider == "existing":
        empty = "kaistack installs everything again in the existing cluster"
    else:
        empty = f"the new {after.cluster.provider} cluster starts empty"
    if before.cluster.provider == "existing":
        message = (
            "everything kaistack made in the existing cluster (KAI, the GPU stack, queues, the tenants' vClusters with "
            f"their datastores, workloads) is deleted from it; {empty}"
        )
    else:
        guard = " (the stack is protected: `pulumi up` refuses to delete it)" if before.cluster.protected else ""
        message = (
            f"the {before.cluster.provider} cluster {before.cluster.name} is deleted with every tenant, workload and "
            f"volume on it{guard}; {empty}"
        )
    return Hazard("cluster-replaced", before.cluster.name, message)


def _tenant_hazards(before: StackConfig, after: StackConfig) -> list[Hazard]:
    kept = {t.name: t for t in after.tenants}
    refused = " (the stack is protected: `pulumi up` refuses it until the tenant is unprotected)"
    guard = refused if after.cluster.protected else ""
    hazards = []
    for old in before.tenants:
        new = kept.get(old.name)
        if new is None:
            hazards.append(
                Hazard(
                    "tenant-deleted",
                    old.name,
                    f"deletes host namespace {old.host_namespace} and with it the vCluster's datastore: everything "
                    f"the tenant's users created{guard}",
                )
            )
        elif new.host_namespace != old.host_namespace:
            hazards.append(
                Hazard(
                    "tenant-moved",
                    old.name,
                    f"a new, empty vCluster in {new.host_namespace}; {old.host_namespace} and everything its users "
                    f"created are deleted{guard}",
                )
            )
    if before.cluster.provider == after.cluster.provider == "kind":
        hazards += _node_port_hazards(before, after)
    return hazards


def _node_port_hazards(before: StackConfig, after: StackConfig) -> list[Hazard]:
    """Pulumi creates and updates before it deletes, and orders unrelated updates as it likes, so a vCluster Service
    asking for a NodePort another tenant's Service held before the change can be refused ("provided port is already
    allocated") while that one still holds it."""

    def ports(config: StackConfig) -> dict[str, int]:
        return {
            t.name: config.tenant_node_port(t)
            for t in config.tenants
            if tenant_sizing.exposure(config, t) == "node-port"
        }

    had, has = ports(before), ports(after)
    holders = {port: name for name, port in had.items()}
    used = set(had.values()) | set(has.values())
    base = after.cluster.kind.tenant_port_base
    free = next((p for p in range(base, base + after.cluster.kind.tenant_ports) if p not in used), None)
    hazards = []
    for name, port in has.items():
        was = had.get(name)
        holder = holders.get(port)
        if was == port or (was is None and holder is None):
            continue
        if holder is None:  # never the tenant itself: its own port would be unchanged (skipped above)
            held = ""
        elif holder in has:
            held = f", which {holder} holds until its own update, in an order Pulumi picks"
        else:
            held = f", which {holder} holds until it is deleted, after the updates"
        if was is not None:
            hazards.append(
                Hazard(
                    "tenant-port-moved",
                    name,
                    f"its API NodePort moves {was} -> {port}{held}; set tenants[].nodePort: {was} to keep it",
                )
            )
            continue
        fix = f"set tenants[].nodePort: {free} (free in the range)" if free is not None else "apply it in two steps"
        hazards.append(
            Hazard(
                "tenant-port-taken",
                name,
                f"its API NodePort {port} is asked for by its new Service{held}, so `pulumi up` can fail on it; {fix}",
            )
        )
    return hazards


def _platform_hazards(before: StackConfig, after: StackConfig) -> list[Hazard]:
    hazards = []
    if before.kai.namespace != after.kai.namespace:
        # The chart keeps its SchedulingShard `default` and its default queues when it is uninstalled
        # (helm.sh/resource-policy: keep, KAI-Scheduler@v0.17.0 deployments/kai-scheduler/templates/
        # default-shard.yaml:10, default-queue.yaml:10,32), still annotated with the old release namespace, and Helm
        # refuses to install over an object another release namespace owns (helm/helm@v3.21.4
        # pkg/action/validate.go:65-92, install.go:356).
        kept = "SchedulingShard default" + (
            f", Queues {before.kai.default_queues.parent_name} and {before.kai.default_queues.child_name}"
            if before.kai.default_queues.create and after.kai.default_queues.create
            else ""
        )
        hazards.append(
            Hazard(
                "kai-replaced",
                "kai",
                f"KAI's release moves {before.kai.namespace} -> {after.kai.namespace}, deleted first: nothing is "
                f"scheduled until the new one is up, and its install fails on what the old one kept ({kept}, owned "
                f"by {before.kai.namespace}) until those are deleted; keep kai.namespace unless you mean to",
            )
        )
    elif before.kai.default_queues != after.kai.default_queues:
        # `{{- if and .Values.defaultQueue.createDefaultQueue .Release.IsInstall }}`, both queues with
        # `helm.sh/resource-policy: keep` (KAI-Scheduler@v0.17.0
        # deployments/kai-scheduler/templates/default-queue.yaml:4,10,32).
        dq = before.kai.default_queues
        hazards.append(
            Hazard(
                "default-queues-not-applied",
                "kai",
                "KAI's chart writes its default queues only when it is installed and keeps them after: the change to "
                f"kai.defaultQueues is not applied to {dq.parent_name} and {dq.child_name}, while the checker plans "
                "with it; edit those Queues by hand (kubectl edit queue) to match",
            )
        )
    old_top, new_top = before.cluster.topology, after.cluster.topology
    if old_top and new_top and old_top.name == new_top.name and old_top.levels != new_top.levels:
        hazards.append(
            Hazard(
                "topology-replaced",
                new_top.name,
                "its levels' node labels cannot change in place (KAI's Topology CRD): the Topology is deleted, then "
                "created again; pods that name it wait meanwhile, running ones stay where they are",
            )
        )
    old_gpu = (before.gpu.mode, before.gpu.release_namespace)
    new_gpu = (after.gpu.mode, after.gpu.release_namespace)
    if old_gpu != new_gpu and "none" not in (before.gpu.mode, after.gpu.mode):
        hazards.append(
            Hazard(
                "gpu-stack-replaced",
                "gpu",
                f"the GPU stack ({'/'.join(old_gpu)} -> {'/'.join(new_gpu)}) is deleted, then installed again: GPU "
                "pods are not admitted to new nodes meanwhile",
            )
        )
    if before.cluster.provider == after.cluster.provider == "kind" and _kind_inputs(before) != _kind_inputs(after):
        hazards.append(
            Hazard(
                "kind-cluster-replaced",
                before.cluster.name,
                "kind cannot change a running cluster: it is deleted and created again, with every tenant, workload "
                "and volume on it",
            )
        )
    if before.cluster.training_operator and not after.cluster.training_operator:
        hazards.append(
            Hazard(
                "training-operator-removed",
                "trainingOperator",
                "uninstalls the training operator and its PyTorchJob CRD: every PyTorchJob, declared or not, "
                "is deleted",
            )
        )
    hazards += eks_hazards(before, after)
    return hazards


def _kind_inputs(config: StackConfig) -> tuple[str, str]:
    from components.cluster_kind import kind_config_yaml  # pulumi's import cost, only for two kind stacks

    return kind_config_yaml(config), config.cluster.name


def _workload_hazards(before: StackConfig, after: StackConfig) -> list[Hazard]:
    from components.podspec import manifest

    hazards = []
    old_work = {w.name: w for w in before.workloads}
    for new in after.workloads:
        old = old_work.get(new.name)
        if old is not None and old.kind != new.kind:  # another resource type: the old one goes, with its pods
            moved_on = f"its kind changes ({old.kind} -> {new.kind}): the running {old.kind} is deleted"
            hazards.append(Hazard("workload-restarted", new.name, moved_on))
            continue
        if old is None or new.kind not in ("Job", "Pod", "PyTorchJob"):
            continue
        moved = (old.tenant, old.namespace) != (new.tenant, new.namespace)
        body_before, body_after = manifest(before, old), manifest(after, new)
        if moved or _fixed(body_before) != _fixed(body_after):
            what = "it moves to another namespace or cluster" if moved else "fields it cannot change in place change"
            hazards.append(
                Hazard("workload-restarted", new.name, f"{what}: the running {new.kind} is deleted, then created again")
            )
        elif new.kind == "Pod" and _scheduling(body_before, before.kai.queue_label_key) != _scheduling(
            body_after, after.kai.queue_label_key
        ):
            # A Pod's labels and annotations are patched in place, but KAI reads these when it schedules the pod.
            hazards.append(
                Hazard(
                    "workload-not-updated",
                    new.name,
                    "its GPU share, topology, queue or priority change in place, but the running Pod keeps what KAI "
                    "read when it scheduled it: delete the Pod (or `pulumi up --replace` it) to apply the change",
                )
            )
    kept = {(w.tenant, w.namespace) for w in after.workloads}
    # A host workload in a tenant's host namespace uses the Tenant's Namespace (components.workloads).
    tenant_owned = {t.host_namespace for t in after.tenants}
    for tenant, namespace in sorted({(w.tenant, w.namespace) for w in before.workloads} - kept, key=str):
        if namespace not in PRESENT_NAMESPACES and not (tenant is None and namespace in tenant_owned):
            hazards.append(
                Hazard(
                    "namespace-deleted",
                    namespace if tenant is None else f"{tenant}/{namespace}",
                    "no declared workload is left in it: kaistack's namespace is deleted with everything in it "
                    "(Secrets, volume claims)",
                )
            )
    return hazards


# What KAI reads of a bare Pod once, when its PodGroup is made and the pod placed (kaistack.declaration.kai_api):
# its GPU share, its topology constraint, its queue, priority and preemptibility.
SCHEDULING_KEYS = (
    kai_api.GPU_FRACTION,
    kai_api.GPU_MEMORY,
    kai_api.GPU_FRACTION_NUM_DEVICES,
    kai_api.TOPOLOGY,
    kai_api.TOPOLOGY_REQUIRED_PLACEMENT,
    kai_api.TOPOLOGY_PREFERRED_PLACEMENT,
    kai_api.PRIORITY_CLASS_LABEL,
    kai_api.PREEMPTIBILITY_LABEL,
)


def _scheduling(body: dict[str, object], queue_label: str) -> object:
    metadata = body.get("metadata")
    if not isinstance(metadata, dict):
        return {}
    keys = (*SCHEDULING_KEYS, queue_label)
    return {
        (part, k): v
        for part in ("labels", "annotations")
        if isinstance(metadata.get(part), dict)
        for k, v in metadata[part].items()
        if k in keys
    }


def _fixed(body: dict[str, object]) -> object:
    """What pulumi-kubernetes cannot change in place (provider/pkg/provider/diff.go): a Job's template,
    parallelism and completions; a Pod's spec (nearly every field of it). A PyTorchJob's replica templates,
    which kaistack replaces (training_operator.REPLACED_ON_CHANGES)."""
    spec = body.get("spec")
    if not isinstance(spec, dict):
        return spec
    if body.get("kind") == "PyTorchJob":
        replicas = spec.get("pytorchReplicaSpecs")
        if not isinstance(replicas, dict):
            return None
        return {role: r.get("template") if isinstance(r, dict) else None for role, r in replicas.items()}
    if body.get("kind") != "Job":
        return spec
    return spec.get("template"), spec.get("parallelism"), spec.get("completions")
