"""Declared workloads (Pod, Deployment, Job, PyTorchJob) on the host or inside a tenant's vCluster.

Manifests come from components/podspec.py; this module only picks the resource type, the provider
(host, or the tenant's vCluster) and creates namespaces. PyTorchJob needs the Kubeflow training
operator's CRD in the target cluster: `cluster.trainingOperator: true` installs the pinned standalone
release into every cluster (host and/or tenant vClusters) that runs one; otherwise it must already be
there (see README).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.podspec import manifest
from components.tenant import Tenant
from kaistack.capacity.plan import priority_class
from kaistack.declaration import tenant_gangs, training_operator
from kaistack.declaration.marks import PRESENT_NAMESPACES
from kaistack.declaration.model import StackConfig, Workload


def _resource(name: str, work: Workload, body: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.Resource:
    if work.kind == "Pod":
        return k8s.core.v1.Pod(name, metadata=body["metadata"], spec=body["spec"], opts=opts)
    if work.kind == "Deployment":
        return k8s.apps.v1.Deployment(name, metadata=body["metadata"], spec=body["spec"], opts=opts)
    if work.kind == "Job":
        return k8s.batch.v1.Job(name, metadata=body["metadata"], spec=body["spec"], opts=opts)
    return k8s.apiextensions.CustomResource(
        name, api_version=body["apiVersion"], kind=body["kind"], metadata=body["metadata"], spec=body["spec"], opts=opts
    )


class Workloads(pulumi.ComponentResource):
    resources: dict[str, pulumi.Resource]
    namespaces: dict[str, k8s.core.v1.Namespace]
    training_operators: dict[str, k8s.kustomize.v2.Directory]

    def __init__(
        self,
        name: str,
        config: StackConfig,
        tenants: dict[str, Tenant],
        queues: Mapping[str, pulumi.Resource] | None = None,
        depends_on: list[pulumi.Resource] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("kaistack:index:Workloads", name, None, opts)
        self.resources = {}
        self.namespaces = {}
        self.training_operators = {}
        self._tenant_namespaces = {config.tenant(n).host_namespace: t.namespace for n, t in tenants.items()}
        self.pod_groups: dict[str, k8s.apiextensions.CustomResource] = {}
        after = list(depends_on or [])

        def placed(target: str) -> pulumi.ResourceOptions:
            # Host objects use the Platform's provider (inherited); a tenant's the vCluster's.
            if target == "host":
                return pulumi.ResourceOptions(parent=self)
            return pulumi.ResourceOptions(parent=self, provider=tenants[target].provider)

        if config.cluster.training_operator:
            # In the host and every tenant, whatever the stack declares today: installed only where a PyTorchJob
            # is declared, removing the last one would uninstall the operator and its CRDs, and every
            # PyTorchJob a team created by hand with them.
            for target in ["host", *(t.name for t in config.tenants)]:
                self._training_operator(name, config, target, placed(target), after)
        for work in config.workloads:
            target = work.tenant or "host"
            placement = placed(target)
            needs: list[pulumi.Resource] = list(after)
            # Only the workload's own queue: KAI leaves a pod of a missing queue unscheduled, and
            # depending on every queue makes a stack of N workloads x M queues quadratic to register.
            # KAI's default queues come with the release (in `after`).
            own_queue = (queues or {}).get(config.queue_of(work))
            if own_queue is not None:
                needs.append(own_queue)
            namespace = self._namespace(name, target, work.namespace, placement, after)
            if namespace is not None:
                needs.append(namespace)
            if work.kind == "PyTorchJob" and config.cluster.training_operator:
                needs.append(self.training_operators[target])
            if tenant_gangs.is_tenant_gang(work):
                needs.append(self._gang(name, config, work, tenants, own_queue))
            opts = pulumi.ResourceOptions(depends_on=needs)
            if work.kind == "PyTorchJob":
                # Same name, so the old one goes first; its pods go with it (training_operator.REPLACED_ON_CHANGES).
                opts = pulumi.ResourceOptions(
                    depends_on=needs,
                    replace_on_changes=[training_operator.REPLACED_ON_CHANGES],
                    delete_before_replace=True,
                )
            self.resources[work.name] = _resource(
                f"{name}-{work.name}", work, manifest(config, work), placement.merge(opts)
            )
        self.register_outputs(
            {
                "workloads": [
                    {
                        "name": w.name,
                        "kind": w.kind,
                        "namespace": w.namespace,
                        "tenant": w.tenant,
                        "queue": config.queue_of(w),
                    }
                    for w in config.workloads
                ]
            }
        )

    def _gang(
        self,
        name: str,
        config: StackConfig,
        work: Workload,
        tenants: dict[str, Tenant],
        queue: pulumi.Resource | None,
    ) -> k8s.apiextensions.CustomResource:
        """The host-side PodGroup a tenant gang's pods join, created before the job (tenant_gangs)."""
        body = tenant_gangs.pod_group(config, work, priority_class(work))
        tenant = tenants[str(work.tenant)]
        needs = [tenant.namespace, *([queue] if queue is not None else [])]
        gang = k8s.apiextensions.CustomResource(
            f"{name}-{work.name}-podgroup",
            api_version=body["apiVersion"],
            kind=body["kind"],
            metadata=body["metadata"],
            spec=body["spec"],
            opts=pulumi.ResourceOptions(parent=self, depends_on=needs),
        )
        self.pod_groups[work.name] = gang
        return gang

    def _namespace(
        self, name: str, target: str, namespace: str, placement: pulumi.ResourceOptions, after: list[pulumi.Resource]
    ) -> k8s.core.v1.Namespace | None:
        if namespace in PRESENT_NAMESPACES:
            return None
        if target == "host" and namespace in self._tenant_namespaces:
            # A bare Pod written into a tenant's host namespace (the model allows it in the tenant's queues):
            # the Tenant made that namespace; a second Namespace object of the name would fail to create.
            return self._tenant_namespaces[namespace]
        key = f"{target}/{namespace}"
        if key not in self.namespaces:
            prefix = name if target == "host" else f"{name}-{target}"
            self.namespaces[key] = k8s.core.v1.Namespace(
                f"{prefix}-ns-{namespace}",
                metadata={"name": namespace},
                opts=placement.merge(pulumi.ResourceOptions(depends_on=after)),
            )
        return self.namespaces[key]

    def _training_operator(
        self,
        name: str,
        config: StackConfig,
        target: str,
        placement: pulumi.ResourceOptions,
        after: list[pulumi.Resource],
    ) -> None:
        prefix = name if target == "host" else f"{name}-{target}"
        opts = pulumi.ResourceOptions(depends_on=after)
        if target != "host":
            # The tenant's admission policy admits only KAI-scheduled pods of its queues.
            tenant = config.tenant(target)
            opts.transforms = [kai_scheduled_operator(config.kai.queue_label_key, tenant.queues[0])]
        self.training_operators[target] = k8s.kustomize.v2.Directory(
            f"{prefix}-training-operator",
            directory=training_operator.KUSTOMIZATION,
            opts=placement.merge(opts),
        )


def kai_scheduled_operator(queue_label_key: str, queue: str) -> pulumi.ResourceTransform:
    """A transform for the operator kustomization's objects: its Deployment's pods are scheduled by KAI.

    `transforms` run in the engine on every child of the component, the provider-built children of a
    kustomize.v2.Directory included (Pulumi docs, "Resource options: transforms"); mocks do not run them.
    """

    def transform(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        if args.type_ != "kubernetes:apps/v1:Deployment":
            return None
        props = training_operator.schedule_with_kai(args.props, queue_label_key, queue)
        return None if props is None else pulumi.ResourceTransformResult(props, args.opts)

    return transform
