"""The stack model: everything under the `kaistack:` config namespace, parsed once into frozen types.

It imports no Pulumi, so the Pulumi program, the placement checker, the policy pack and the CLI all
share it. Field names are Python snake_case; config keys are the camelCase aliases (`nodePools`,
`gpuMemoryMiB`), as Pulumi stack files and Kubernetes write them. Cross-field rules live in
`StackConfig`'s validator so a stack that parses is a stack the program can create in full.
Turning raw config into this model (and pydantic errors into messages naming the key) is
`kaistack.declaration.parse`'s job.
"""

from kaistack.declaration.model.base import (
    NON_PREEMPTIBLE_THRESHOLD,
    TENANT_NODE_PORT_BASE,
    KubeQuantity,
    Model,
    Name,
)
from kaistack.declaration.model.cluster import (
    ClusterConfig,
    EksSettings,
    ExistingSettings,
    KindSettings,
    NodePool,
    SystemNodeGroup,
    Taint,
    eks_scaling,
    eks_shape_problems,
)
from kaistack.declaration.model.gpu import (
    DevicePluginSettings,
    FakeGpuSettings,
    GpuConfig,
    GpuOperatorSettings,
    TimeSlicing,
)
from kaistack.declaration.model.kai import KaiConfig
from kaistack.declaration.model.queues import DefaultQueues, Queue, QueueResources, ResourceBlock
from kaistack.declaration.model.stack import StackConfig
from kaistack.declaration.model.tenants import Tenant, TenantIsolation, TenantResourceQuota, VClusterSettings
from kaistack.declaration.model.topology import ClusterTopology, TopologyPlacement
from kaistack.declaration.model.workloads import PyTorchReplicas, Workload

__all__ = [
    "NON_PREEMPTIBLE_THRESHOLD",
    "TENANT_NODE_PORT_BASE",
    "ClusterConfig",
    "ClusterTopology",
    "DefaultQueues",
    "DevicePluginSettings",
    "EksSettings",
    "ExistingSettings",
    "FakeGpuSettings",
    "GpuConfig",
    "GpuOperatorSettings",
    "KaiConfig",
    "KindSettings",
    "KubeQuantity",
    "Model",
    "Name",
    "NodePool",
    "PyTorchReplicas",
    "Queue",
    "QueueResources",
    "ResourceBlock",
    "StackConfig",
    "SystemNodeGroup",
    "Taint",
    "Tenant",
    "TenantIsolation",
    "TenantResourceQuota",
    "TimeSlicing",
    "TopologyPlacement",
    "VClusterSettings",
    "Workload",
    "eks_scaling",
    "eks_shape_problems",
]
