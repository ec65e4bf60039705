"""kaistack's own labels: how objects kaistack creates say which tenant, pool or workload they belong to."""

from __future__ import annotations

TENANT_LABEL = "kaistack.io/tenant"  # workloads, their pods and the tenant's host namespace
NODE_POOL_LABEL = "kaistack.io/node-pool"  # every node of a declared pool
SYSTEM_POOL = "system"  # that label on the EKS system node group, which no declared pool may take
WORKLOAD_LABEL = "app"  # every workload object and pod template: the workload's name
# Pulumi type tokens of kaistack's components (components/*.py).
PLATFORM_TYPE = "kaistack:index:Platform"
TENANT_TYPE = "kaistack:index:Tenant"

# Namespaces every cluster (and vCluster) has: kaistack never creates or deletes them (components.workloads).
PRESENT_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
