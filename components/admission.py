"""In-cluster guardrails for tenant pods and objects: two ValidatingAdmissionPolicies + bindings per tenant.

Why on the host: KAI takes a pod's queue from its `kai.scheduler/queue` label, labels pass through
vCluster unchanged, and vCluster OSS cannot mutate synced pods, so a tenant can name any queue unless
the host refuses it (vcluster-and-gpu.md §1.7). `admissionregistration.k8s.io/v1`
ValidatingAdmissionPolicy is GA since Kubernetes 1.30 and needs no extra component (kind 1.35, EKS 1.34).
What the pod policy refuses, and why nothing in it can be forged by a tenant, is in
kaistack.guardrails.admission; the Services and volume claims a vCluster syncs are checked by a second policy
(kaistack.guardrails.admission_objects). Both build the manifests this component registers.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from kaistack.declaration.model import StackConfig, Tenant
from kaistack.declaration.tenant_gangs import tenant_gang_names
from kaistack.guardrails import admission, admission_objects


def tenant_policy(config: StackConfig, tenant: Tenant) -> dict[str, Any]:
    return admission.tenant_policy(
        tenant.name,
        tenant.queues,
        config.kai.queue_label_key,
        pod_groups=tenant_gang_names(config, tenant),
        sharing_enabled=config.kai.gpu_sharing,
        memory_isolation=config.kai.memory_isolation,
        # KAI's pod-grouper adds pod-group-name to every pod it groups: its user is in KAI's namespace.
        kai_namespace=config.kai.namespace,
    )


def tenant_binding(config: StackConfig, tenant: Tenant) -> dict[str, Any]:
    return admission.tenant_binding(tenant.name, tenant.host_namespace)


def objects_manifests(tenant: Tenant) -> tuple[dict[str, Any], dict[str, Any]]:
    return (
        admission_objects.tenant_objects_policy(tenant.name),
        admission_objects.tenant_objects_binding(tenant.name, tenant.host_namespace),
    )


def admission_manifests(config: StackConfig) -> list[dict[str, Any]]:
    return [
        m for t in config.tenants for m in (tenant_policy(config, t), tenant_binding(config, t), *objects_manifests(t))
    ]


class TenantAdmission(pulumi.ComponentResource):
    """`kaistack:index:TenantAdmission`: per tenant, a ValidatingAdmissionPolicy and its binding on the host."""

    policies: dict[str, k8s.admissionregistration.v1.ValidatingAdmissionPolicy]
    bindings: dict[str, k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding]

    def __init__(self, name: str, config: StackConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kaistack:index:TenantAdmission", name, None, opts)
        child_opts = pulumi.ResourceOptions(parent=self)
        self.policies = {}
        self.bindings = {}
        for tenant in config.tenants:
            policy = tenant_policy(config, tenant)
            binding = tenant_binding(config, tenant)
            self.policies[tenant.name] = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
                f"{name}-{tenant.name}-policy", metadata=policy["metadata"], spec=policy["spec"], opts=child_opts
            )
            self.bindings[tenant.name] = k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
                f"{name}-{tenant.name}-binding",
                metadata=binding["metadata"],
                spec=binding["spec"],
                opts=child_opts.merge(pulumi.ResourceOptions(depends_on=[self.policies[tenant.name]])),
            )
            objects, objects_binding = objects_manifests(tenant)
            self.policies[f"{tenant.name}/objects"] = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
                f"{name}-{tenant.name}-objects-policy",
                metadata=objects["metadata"],
                spec=objects["spec"],
                opts=child_opts,
            )
            self.bindings[f"{tenant.name}/objects"] = k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
                f"{name}-{tenant.name}-objects-binding",
                metadata=objects_binding["metadata"],
                spec=objects_binding["spec"],
                opts=child_opts.merge(pulumi.ResourceOptions(depends_on=[self.policies[f"{tenant.name}/objects"]])),
            )
        self.register_outputs(
            {
                "policies": [
                    name
                    for t in config.tenants
                    for name in (admission.policy_name(t.name), admission_objects.objects_policy_name(t.name))
                ]
            }
        )
