"""In-cluster guardrails for tenant pods: one ValidatingAdmissionPolicy + binding per tenant, on the host.

Why on the host: KAI takes a pod's queue from its `kai.scheduler/queue` label, labels pass through
vCluster unchanged, and vCluster OSS cannot mutate synced pods, so a tenant can name any queue unless
the host refuses it (vcluster-and-gpu.md §1.7). `admissionregistration.k8s.io/v1`
ValidatingAdmissionPolicy is GA since Kubernetes 1.30 and needs no extra component (kind 1.33, EKS 1.33).

What it refuses, in the tenant's host namespace, for pods the tenant's vCluster syncs (label
`vcluster.loft.sh/managed-by: <release>`, which vCluster stamps and a tenant cannot forge):
- `spec.schedulerName` other than `kai-scheduler`;
- no `kai.scheduler/queue` label, or one naming a queue that is not the tenant's;
- invalid GPU-sharing annotations (the policy pack's kai-gpu-sharing-annotations, same grammar).
The vCluster's own CoreDNS (virtual kube-system, `k8s-app: kube-dns`) is let through: it is the
default scheduler's and the tenant's DNS depends on it.

The CEL is plain CEL (`has`, `in`, `matches`, `double`, `int`, `all`): no Kubernetes-only libraries, so
tests evaluate the very same strings with cel-python against the pods the CrossGuard tests use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from kaistack.declaration import kai_api
from kaistack.declaration.kai_api import SCHEDULER_NAME as SCHEDULER
from kaistack.declaration.marks import TENANT_LABEL
from kaistack.declaration.model import StackConfig, Tenant
from kaistack.declaration.vcluster_api import MANAGED_BY_LABEL as MANAGED_BY
from kaistack.declaration.vcluster_api import VIRTUAL_NAMESPACE_LABEL as VIRTUAL_NAMESPACE

# Same grammar as policies/rules.py DECIMAL / INTEGER; `[.]` instead of `\\.` keeps the CEL free of escapes.
DECIMAL = "^([0-9]+([.][0-9]*)?|[.][0-9]+)$"
INTEGER = "^[0-9]{1,18}$"

ANN = "object.metadata.annotations"
HAS_ANN = f"has({ANN})"


def _has_annotation(key: str) -> str:
    # Parenthesised: CEL's `!` binds tighter than `in` (`!'k' in m` negates the string).
    return f"('{key}' in {ANN})"


def _annotation(key: str) -> str:
    return f"{ANN}['{key}']"


def _cel_list(items: Sequence[str]) -> str:
    return "[" + ", ".join(f"'{item}'" for item in items) + "]"


def match_conditions() -> list[dict[str, str]]:
    """Skip the vCluster's CoreDNS (the default scheduler's pod in the virtual kube-system)."""
    labels = "object.metadata.labels"
    return [
        {
            "name": "not-vcluster-dns",
            "expression": f"!(has({labels}) && '{VIRTUAL_NAMESPACE}' in {labels} && "
            f"{labels}['{VIRTUAL_NAMESPACE}'] == 'kube-system' && 'k8s-app' in {labels} && "
            f"{labels}['k8s-app'] == 'kube-dns')",
        }
    ]


def pod_validations(queues: Sequence[str], queue_label_key: str, tenant: str) -> list[dict[str, str]]:
    """The CEL validations for one tenant's pods (each one expression, message, reason)."""
    labels = "object.metadata.labels"
    share = f"({_has_annotation(kai_api.GPU_FRACTION)} || {_has_annotation(kai_api.GPU_MEMORY)})"
    fraction = _annotation(kai_api.GPU_FRACTION)
    memory = _annotation(kai_api.GPU_MEMORY)
    devices = _annotation(kai_api.GPU_FRACTION_NUM_DEVICES)
    rules = [
        (
            f"has(object.spec.schedulerName) && object.spec.schedulerName == '{SCHEDULER}'",
            f"tenant {tenant}: pods must set spec.schedulerName: {SCHEDULER} (KAI schedules tenant pods on the host)",
        ),
        (
            f"has({labels}) && '{queue_label_key}' in {labels} && {labels}['{queue_label_key}'] in {_cel_list(queues)}",
            f"tenant {tenant}: pods must carry the label {queue_label_key} naming one of the tenant's queues: "
            f"{', '.join(queues)}",
        ),
        (
            f"!{HAS_ANN} || !{_has_annotation(kai_api.GPU_FRACTION)} || ({fraction}.matches('{DECIMAL}') && "
            f"double({fraction}) > 0.0 && double({fraction}) < 1.0)",
            "gpu-fraction must be a decimal strictly between 0 and 1 (use an nvidia.com/gpu limit for whole GPUs)",
        ),
        (
            f"!{HAS_ANN} || !{_has_annotation(kai_api.GPU_MEMORY)} || "
            f"({memory}.matches('{INTEGER}') && int({memory}) > 0)",
            "gpu-memory must be a positive integer (MiB)",
        ),
        (
            f"!{HAS_ANN} || !({_has_annotation(kai_api.GPU_FRACTION)} && {_has_annotation(kai_api.GPU_MEMORY)})",
            "use gpu-fraction or gpu-memory, not both",
        ),
        (
            f"!{HAS_ANN} || !{share} || object.spec.containers.all(c, !has(c.resources) || "
            "!has(c.resources.limits) || !('nvidia.com/gpu' in c.resources.limits))",
            "a pod with gpu-fraction or gpu-memory must not also have an nvidia.com/gpu limit",
        ),
        (
            f"!{HAS_ANN} || !{_has_annotation(kai_api.GPU_FRACTION_NUM_DEVICES)} || ({devices}.matches('{INTEGER}') && "
            f"int({devices}) > 0 && {share})",
            "gpu-fraction-num-devices must be a positive integer and comes with gpu-fraction or gpu-memory",
        ),
    ]
    return [{"expression": e, "message": m, "reason": "Forbidden"} for e, m in rules]


def tenant_queues(config: StackConfig, tenant: Tenant) -> list[str]:
    """The tenant's queues; a tenant without a list may use any leaf queue (as the model allows)."""
    return list(tenant.queues) or sorted(config.leaf_queue_names())


def policy_name(tenant: Tenant) -> str:
    return f"kaistack-tenant-{tenant.name}"


def tenant_policy(config: StackConfig, tenant: Tenant) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": policy_name(tenant), "labels": {TENANT_LABEL: tenant.name}},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["pods"],
                    }
                ]
            },
            "matchConditions": match_conditions(),
            "validations": pod_validations(tenant_queues(config, tenant), config.kai.queue_label_key, tenant.name),
        },
    }


def tenant_binding(config: StackConfig, tenant: Tenant) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": policy_name(tenant), "labels": {TENANT_LABEL: tenant.name}},
        "spec": {
            "policyName": policy_name(tenant),
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": tenant.host_namespace}},
                # vCluster's release is named after the tenant (components/tenant.py).
                "objectSelector": {"matchLabels": {MANAGED_BY: tenant.name}},
            },
        },
    }


def admission_manifests(config: StackConfig) -> list[dict[str, Any]]:
    return [m for t in config.tenants for m in (tenant_policy(config, t), tenant_binding(config, t))]


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
        self.register_outputs({"policies": [policy_name(t) for t in config.tenants]})
