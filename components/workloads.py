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
from kaistack.declaration import tenant_gangs
from kaistack.declaration.model import StackConfig, Workload

# Kubeflow training operator (v1 API, kubeflow.org/v1 PyTorchJob), the stable release the Kubeflow
# install guide names (kubeflow.org/docs/components/training/installation: `kubectl apply
# --server-side -k "github.com/kubeflow/training-operator.git/manifests/overlays/standalone?ref=v1.8.1"`).
TRAINING_OPERATOR_VERSION = "v1.8.1"
# kustomize.v2.Directory hands the string to kustomize's own loader, which splits repository from
# path at `//` and takes the ref from `?ref=` (kustomize api v0.21.1 internal/git/repospec.go;
# pulumi-kubernetes v4.32.0 provider/pkg/provider/kustomize/v2/directory.go passes it unchanged). A
# GitHub `/tree/<ref>/` page URL is not understood (pulumi/pulumi-kubernetes#3358). Needs `git` where
# the provider runs.
TRAINING_OPERATOR_KUSTOMIZATION = (
    f"https://github.com/kubeflow/training-operator//manifests/overlays/standalone?ref={TRAINING_OPERATOR_VERSION}"
)
# Namespaces that always exist (or that another component creates) are never declared again.
PRESENT_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})


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
        self.pod_groups: dict[str, k8s.apiextensions.CustomResource] = {}
        after = list(depends_on or [])
        for work in config.workloads:
            target = work.tenant or "host"
            # Host workloads use the Platform's provider (inherited); tenant workloads the vCluster's.
            placement = pulumi.ResourceOptions(parent=self)
            if work.tenant is not None:
                placement = pulumi.ResourceOptions(parent=self, provider=tenants[work.tenant].provider)
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
                needs.append(self._training_operator(name, target, placement, after))
            if tenant_gangs.is_tenant_gang(work):
                needs.append(self._gang(name, config, work, tenants, own_queue))
            self.resources[work.name] = _resource(
                f"{name}-{work.name}",
                work,
                manifest(config, work),
                placement.merge(pulumi.ResourceOptions(depends_on=needs)),
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
        self, name: str, target: str, placement: pulumi.ResourceOptions, after: list[pulumi.Resource]
    ) -> k8s.kustomize.v2.Directory:
        if target not in self.training_operators:
            prefix = name if target == "host" else f"{name}-{target}"
            self.training_operators[target] = k8s.kustomize.v2.Directory(
                f"{prefix}-training-operator",
                directory=TRAINING_OPERATOR_KUSTOMIZATION,
                opts=placement.merge(pulumi.ResourceOptions(depends_on=after)),
            )
        return self.training_operators[target]
