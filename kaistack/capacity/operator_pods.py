"""Pods kaistack itself adds to a stack that KAI schedules in a tenant's queues, as workloads for the checker."""

from __future__ import annotations

from kaistack.declaration import tenant_sizing, training_operator
from kaistack.declaration.model import StackConfig, Workload


def training_operators(config: StackConfig) -> list[Workload]:
    """The training operator kaistack installs in each tenant (cluster.trainingOperator): KAI schedules its pod in
    the tenant's first queue (kaistack.declaration.training_operator), where it takes its share of the queue.
    Its container sets no resources, so the tenant's LimitRange defaults are its requests."""
    declared = {w.name for w in config.workloads}
    operators = []
    for tenant in config.tenants:
        if not tenant_sizing.runs_training_operator(config, tenant):
            continue
        base = f"{tenant.name}-training-operator"[:56].rstrip("-")
        name, n = base, 1
        while name in declared:  # a declared workload of that name: the report must tell them apart
            n += 1
            name = f"{base}-{n}"
        requests = {} if tenant.isolation.limit_range else {"cpu": "0", "memory": "0"}
        operators.append(
            Workload.model_validate(
                {
                    "name": name,
                    "kind": "Deployment",
                    "tenant": tenant.name,
                    "queue": tenant.queues[0],
                    "namespace": training_operator.NAMESPACE,
                    "image": "kubeflow/training-operator",
                    **requests,
                }
            )
        )
    return operators
