"""The whole platform: cluster -> GPU enablement -> KAI -> queues -> tenants -> workloads.

Order matters on a fresh cluster and is made explicit with depends_on: the GPU stack before KAI (its
operator reads GPU node labels at start), KAI before queues (the Queue CRD) and before workloads (its
admission webhook mutates fractional pods), queues before workloads (KAI skips pods whose queue does
not exist yet).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_kubernetes as k8s

from components.cluster_existing import ExistingCluster
from components.cluster_kind import KindCluster
from components.gpu import GpuStack
from components.kai import KaiScheduler, resource_values
from components.queues import QueueTree
from components.tenant import Tenant
from components.workloads import Workloads
from kaistack.capacity import ephemeral
from kaistack.declaration.model import StackConfig

if TYPE_CHECKING:  # pulumi_aws/pulumi_eks are slow to import; only EKS stacks load them
    from components.cluster_eks import EksCluster


def platform_summary(config: StackConfig) -> dict[str, Any]:
    """The camelCase facts the policy pack's stack policies read (docs/architecture.md, Platform)."""
    pool_keys = (
        "name",
        "count",
        "gpus",
        "gpuMemoryMiB",
        "gpuProduct",
        "cpu",
        "memory",
        "pods",
        "migStrategy",
        "mig",
        "labels",
        "taints",
    )
    pools = []
    for pool in config.cluster.node_pools:
        dumped = pool.model_dump(by_alias=True, mode="json")
        pools.append({key: dumped[key] for key in pool_keys})
        storage = ephemeral.pool_allocatable(config, pool)  # declared, or derived from the EKS root volume
        if storage is not None:
            pools[-1]["ephemeralStorage"] = str(storage)
    kai = config.kai
    dq = kai.default_queues
    return {
        "nodePools": pools,
        "kai": {
            "version": kai.version,
            "namespace": kai.namespace,
            "sharing": kai.sharing,
            "gpuSharing": kai.gpu_sharing,
            "placementStrategy": kai.placement_strategy,
            "queueLabelKey": kai.queue_label_key,
            # The policy pack's kai-capacity reads it: `warn` and `off` deploy a stack that does not fit.
            "capacityCheck": kai.capacity_check,
            "capacityCheckMaxSeconds": kai.capacity_check_max_seconds,
            "defaultQueues": {
                "create": dq.create,
                "parentName": dq.parent_name,
                "childName": dq.child_name,
                "parentResources": resource_values(dq.parent_resources),
                "childResources": resource_values(dq.child_resources),
            },
        },
        "tenants": [{"name": t.name, "namespace": t.host_namespace, "queues": list(t.queues)} for t in config.tenants],
        # Declaration order, which KAI's tie-breaks follow (creation order): the policy pack rebuilds the workloads
        # from resources, which the engine hands it in no set order.
        "workloadOrder": [{"name": w.name, "tenant": w.tenant or ""} for w in config.workloads],
    }


class Platform(pulumi.ComponentResource):
    """`kaistack:index:Platform`.

    Its props (and outputs) `nodePools`, `kai`, `tenants`, `workloadOrder` are the summary above; the SDK turns prop
    names into output attributes, so the child components live under other names.
    """

    # KindCluster, ExistingCluster or EksCluster (not named here: the SDK evaluates these annotations,
    # and EksCluster is imported only for EKS stacks).
    cluster: pulumi.ComponentResource
    gpu: GpuStack | None
    scheduler: KaiScheduler
    queues: QueueTree
    vclusters: dict[str, Tenant]
    workloads: Workloads
    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider

    def __init__(self, name: str, config: StackConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        summary = platform_summary(config)
        super().__init__("kaistack:index:Platform", name, summary, opts)
        self.cluster = self._cluster(f"{name}-cluster", config, pulumi.ResourceOptions(parent=self))
        self.provider = self.cluster.provider
        self.kubeconfig = self.cluster.kubeconfig
        # Every Kubernetes object below goes to this cluster, never to an ambient kubeconfig.
        k8s_opts = pulumi.ResourceOptions(parent=self, providers={"kubernetes": self.provider})

        self.gpu = None
        if config.gpu.mode != "none":
            # The device plugin's pods name the nvidia RuntimeClass; the cluster creates it where it must.
            runtime = getattr(self.cluster, "runtime_class", None)
            self.gpu = GpuStack(f"{name}-gpu", config, depends_on=[runtime] if runtime else [], opts=k8s_opts)
        existing = config.cluster.existing
        # An existing cluster's provider uses its context; with no kubeconfig in config, from the user's own.
        own_kubeconfig = existing is not None and not existing.kubeconfig
        self.scheduler = KaiScheduler(
            f"{name}-kai",
            config,
            depends_on=[self.gpu.release] if self.gpu else [],
            kubeconfig=None if own_kubeconfig else self.kubeconfig,
            context=existing.context if existing is not None else None,
            opts=k8s_opts,
        )
        self.queues = QueueTree(f"{name}-queues", config, kai_ready=self.scheduler.ready, opts=k8s_opts)
        # Host-side admission: synced tenant pods must use KAI, the tenant's queues and valid GPU shares. It goes
        # first: the API server checks only pods created once the binding exists, never those already admitted.
        from components.admission import TenantAdmission

        self.admission = TenantAdmission(f"{name}-admission", config, opts=k8s_opts)
        # HAMi's isolator injects its library into GPU-sharing pods when they are admitted (KAI-Scheduler@v0.17.0
        # docs/gpu-sharing/hami/README.md, Architecture): a pod admitted before its webhook exists runs unisolated
        # until it is re-created.
        isolator = [self.scheduler.isolator] if self.scheduler.isolator else []
        self.vclusters = {
            t.name: Tenant(
                f"{name}-{t.name}",
                config,
                t,
                host_provider=self.provider,
                after=[self.admission, *isolator],
                opts=k8s_opts,
            )
            for t in config.tenants
        }
        self.workloads = Workloads(
            f"{name}-workloads",
            config,
            tenants=self.vclusters,
            queues=self.queues.queues,
            depends_on=[
                self.scheduler.ready,
                *([self.scheduler.topology] if self.scheduler.topology else []),
                *isolator,
            ],
            opts=k8s_opts,
        )
        self.register_outputs(
            {
                **summary,
                "kubeconfig": self.kubeconfig,
                "queueTree": self.queues.tree,
                "tenantAccess": [t.summary for t in self.vclusters.values()],
            }
        )

    @staticmethod
    def _cluster(
        name: str, config: StackConfig, opts: pulumi.ResourceOptions
    ) -> KindCluster | ExistingCluster | EksCluster:
        provider = config.cluster.provider
        if provider == "kind":
            return KindCluster(name, config, opts=opts)
        if provider == "existing":
            return ExistingCluster(name, config, opts=opts)
        if provider == "eks":
            from components.cluster_eks import EksCluster

            # `config` comes resolved by kaistack.stack.eks (__main__.py): GPU facts, labels, taint.
            return EksCluster(name, config, opts=opts)
        raise pulumi.RunError(f"cluster.provider {provider!r} is not wired into components/platform.py yet")
