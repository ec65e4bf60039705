"""The cluster: provider (kind, existing, EKS), node pools (the capacity the checker plans with) and EKS shape rules."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from kaistack.declaration import limits, versions
from kaistack.declaration.marks import NODE_POOL_LABEL, SYSTEM_POOL
from kaistack.declaration.model.base import (
    TENANT_NODE_PORT_BASE,
    KubeQuantity,
    LabelMap,
    LabelValue,
    Model,
    Name,
    QualifiedName,
    SomeText,
    Text,
)
from kaistack.declaration.model.topology import ClusterTopology
from placement.quantity import Quantity


class Taint(Model):
    key: QualifiedName = Field(description="Taint key, e.g. nvidia.com/gpu")
    value: LabelValue | None = Field(default=None, description="Taint value (none = the key alone)")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(
        default="NoSchedule", description="Taint effect"
    )


class NodePool(Model):
    """A group of identical worker nodes; its declared capacity is what the placement checker uses.

    For kind, `count` workers are created; for EKS, `count` is the managed node group's desired size and
    `minSize`/`maxSize` its bounds, and the checker plans for `count`. kaistack installs no autoscaler: the
    group stays at `count`, and one you add has its size set back to `count` by a `pulumi up --refresh`.
    GPU facts left unset on an EKS pool are discovered from EC2.
    """

    name: Name = Field(
        description="Pool name (a DNS label); kind and EKS nodes are labelled kaistack.io/node-pool=<name>"
    )
    count: int = Field(default=1, ge=0, le=limits.MAX_NODES, description="Nodes in the pool (EKS: desired size)")
    min_size: int | None = Field(default=None, ge=0, le=limits.MAX_NODES, description="EKS: smallest node count")
    max_size: int | None = Field(default=None, ge=0, le=limits.MAX_NODES, description="EKS: largest node count")
    instance_type: Text | None = Field(default=None, description="EKS: EC2 instance type, e.g. g6.xlarge")
    gpus: int | None = Field(
        default=None, ge=0, le=limits.MAX_GPUS_PER_NODE, description="Whole GPUs per node (EKS: from EC2 if unset)"
    )
    gpu_memory_mi_b: int | None = Field(
        default=None,
        gt=0,
        le=2**31,
        alias="gpuMemoryMiB",
        description="Memory of one GPU, in MiB (the nvidia.com/gpu.memory label KAI reads)",
    )
    gpu_product: LabelValue | None = Field(
        default=None, description="GPU model, the nvidia.com/gpu.product label value GFD writes, e.g. NVIDIA-L4"
    )
    # kind + real GPUs: which host GPUs this pool's workers see (nvkind's extraMounts); "all" or indices.
    gpu_devices: Literal["all"] | Annotated[list[Annotated[int, Field(ge=0, le=1023)]], Field(max_length=1024)] = Field(
        default="all", description="kind + real GPUs: host GPU indices for this pool's workers, or 'all'"
    )
    cpu: KubeQuantity = Field(
        default=Quantity.parse("8"), description="Allocatable CPU per node, a Kubernetes quantity in cores ('8')"
    )
    memory: KubeQuantity = Field(
        default=Quantity.parse("32Gi"), description="Allocatable memory per node, a Kubernetes quantity ('32Gi')"
    )
    pods: int = Field(default=110, gt=0, le=100_000, description="Max pods per node")
    # KAI compares every allocatable dimension, ephemeral storage included (kaistack.capacity.plan). Unset, it is
    # derived from the root volume on EKS and read from the nodes of an existing cluster; on kind (the host's
    # disk) it is not checked.
    ephemeral_storage: KubeQuantity | None = Field(
        default=None, description="Allocatable ephemeral storage per node ('180Gi'; EKS: from the root volume)"
    )
    mig_strategy: Literal["none", "single", "mixed"] = Field(default="none", description="nvidia.com/mig.strategy")
    mig: dict[Text, int] = Field(
        default_factory=dict, description="mixed MIG: devices per node by resource, e.g. nvidia.com/mig-1g.10gb: 7"
    )
    labels: LabelMap = Field(default_factory=dict, description="Extra node labels")
    taints: Annotated[list[Taint], Field(max_length=limits.MAX_LIST_ITEMS)] = Field(
        default_factory=list, description="Node taints"
    )
    # EKS refuses a node group whose subnets lie in a zone that does not offer its instance type, and the
    # largest GPU types are offered in one zone or two: such a pool spans only the zones listed here.
    availability_zones: Annotated[list[Text], Field(max_length=32)] = Field(
        default_factory=list,
        description="EKS: the zones of cluster.eks.availabilityZones this pool's node group spans (unset: all)",
    )

    @property
    def gpu_count(self) -> int:
        return self.gpus or 0

    @field_validator("mig")
    @classmethod
    def _mig_profiles(cls, value: dict[str, int]) -> dict[str, int]:
        for profile, count in value.items():
            if not re.fullmatch(r"nvidia\.com/mig-[0-9]+g\.[0-9]+gb", profile):
                raise ValueError(f"MIG profile {profile!r} must look like 'nvidia.com/mig-1g.10gb'")
            most = limits.MAX_GPUS_PER_NODE * 7  # 7 is the most MIG slices one GPU splits into
            if not 0 <= count <= most:
                raise ValueError(f"MIG device count for {profile} must be 0..{most}, got {count}")
        return value


class KindSettings(Model):
    node_image: Text = Field(default=versions.KIND_NODE_IMAGE, description="kindest/node image (pin by digest)")
    # kind maps host ports only when the cluster is created: a port added later replaces the cluster
    # (every tenant and workload gone). So a fixed range is mapped once, whatever the tenants are.
    tenant_ports: int = Field(
        default=10, ge=1, le=100, description="NodePorts mapped to localhost from tenantPortBase, one per tenant API"
    )
    # Docker binds each mapped port on the host, so two kind stacks on one machine need different ranges.
    tenant_port_base: int = Field(
        default=TENANT_NODE_PORT_BASE,
        ge=30000,
        le=32767,
        description="First NodePort mapped to localhost (30000-32767; a second kind stack on the host needs its own)",
    )

    @model_validator(mode="after")
    def _ports_in_node_port_range(self) -> KindSettings:
        last = self.tenant_port_base + self.tenant_ports - 1
        if last > 32767:
            raise ValueError(
                f"tenantPortBase {self.tenant_port_base} + tenantPorts {self.tenant_ports} ends at {last}, past the "
                "Kubernetes NodePort range 30000-32767; lower tenantPortBase or tenantPorts"
            )
        return self


class ExistingSettings(Model):
    """An existing cluster (OpenShift, OpenNebula, ...): a kubeconfig (secret config) or a context."""

    kubeconfig: Annotated[str, Field(max_length=1_000_000)] | None = Field(
        default=None, description="Admin kubeconfig (set it as a Pulumi secret)"
    )
    context: Text | None = Field(default=None, description="A context of your own kubeconfig ($KUBECONFIG)")

    @model_validator(mode="after")
    def _one_source(self) -> ExistingSettings:
        if not self.kubeconfig and not self.context:
            raise ValueError(
                "needs 'kubeconfig' (pulumi config set --secret --path kaistack:cluster.existing.kubeconfig ...) "
                "or 'context'"
            )
        return self


class SystemNodeGroup(Model):
    instance_type: Text = Field(default="m6i.large", description="EC2 instance type of the system nodes")
    min_size: int = Field(default=2, ge=1, le=1000, description="Smallest system node count")
    max_size: int = Field(default=3, ge=1, le=1000, description="Largest system node count")
    desired_size: int = Field(default=2, ge=1, le=1000, description="Desired system node count")
    # Where CPU-only pods run on EKS (GPU pools carry the GPU taint). Read from EC2 with AWS credentials;
    # declared, they let `kaistack check` model taints offline too.
    cpu: KubeQuantity | None = Field(
        default=None, description="Allocatable CPU per system node ('1930m'); from EC2 when AWS can be asked"
    )
    memory: KubeQuantity | None = Field(
        default=None, description="Allocatable memory per system node ('7056Mi'); from EC2 when AWS can be asked"
    )
    pods: int | None = Field(
        default=None, gt=0, le=100_000, description="Max pods per system node; from EC2 when AWS can be asked"
    )

    @property
    def capacity_known(self) -> bool:
        return self.cpu is not None and self.memory is not None and self.pods is not None


# The system node group's root volume (components.cluster_eks); GPU pools take cluster.eks.gpuNodeDiskGiB.
SYSTEM_NODE_DISK_GIB = 50


# Partitions other than `aws` and their regions (botocore 1.44.8 data/partitions.json, regionRegex).
AWS_PARTITIONS = (
    ("aws-cn", r"cn-\w+-\d+"),
    ("aws-us-gov", r"us-gov-\w+-\d+"),
    ("aws-iso", r"us-iso-\w+-\d+"),
    ("aws-iso-b", r"us-isob-\w+-\d+"),
    ("aws-iso-e", r"eu-isoe-\w+-\d+"),
    ("aws-iso-f", r"us-isof-\w+-\d+"),
    ("aws-eusc", r"eusc-de-\w+-\d+"),
)


class EksSettings(Model):
    region: SomeText = Field(description="AWS region, e.g. us-west-2")
    version: Text = Field(default=versions.EKS_KUBERNETES_VERSION, description="EKS Kubernetes version")
    vpc_id: SomeText | None = Field(default=None, description="An existing VPC (else kaistack creates one)")
    subnet_ids: Annotated[list[SomeText], Field(max_length=100)] = Field(
        default_factory=list, description="Subnets of the existing VPC (2+ zones)"
    )
    availability_zones: Annotated[list[Text], Field(max_length=32)] = Field(
        default_factory=list, description="Zones for a new VPC (unset: picked from EC2 offerings)"
    )
    vpc_cidr: Text = Field(default="10.0.0.0/16", description="CIDR of a new VPC")
    system_node_group: SystemNodeGroup = Field(default=SystemNodeGroup(), description="The non-GPU system nodes")
    # Nodes in private subnets behind one NAT gateway (~$0.045/h + $0.045/GB); false puts them in
    # public subnets with public IPs (no NAT cost, inbound still closed by the node security group).
    # Only used when kaistack creates the VPC.
    private_nodes: bool = Field(default=True, description="Nodes in private subnets behind one NAT gateway")
    # Root volume per GPU node: the NVIDIA AMI plus CUDA/PyTorch images outgrow EKS's 20 GiB default.
    gpu_node_disk_gi_b: int = Field(
        default=200, ge=20, le=16384, alias="gpuNodeDiskGiB", description="Root volume per GPU node, in GiB"
    )
    protect: bool = Field(default=False, description="Protect the cluster, its VPC and KAI from deletion")
    # pulumi-eks grants cluster admin to the principal that creates the cluster only
    # (bootstrapClusterCreatorAdminPermissions, nodejs/eks/cluster/cluster.ts at v4.3.0): every other one that
    # runs `pulumi preview`/`up` or `kaistack verify` (CI's roles, a teammate) needs an access entry.
    admin_principals: Annotated[list[Text], Field(max_length=limits.MAX_LIST_ITEMS)] = Field(
        default_factory=list,
        description="IAM role/user ARNs given cluster admin besides the creator (CI's preview and deploy roles)",
    )

    @property
    def partition(self) -> str:
        """The AWS partition `region` is in: the start of every ARN there (`arn:aws-cn:...` in China)."""
        return next((p for p, pattern in AWS_PARTITIONS if re.fullmatch(pattern, self.region)), "aws")

    @field_validator("admin_principals")
    @classmethod
    def _iam_arns(cls, value: list[str]) -> list[str]:
        for arn in value:
            if not re.fullmatch(r"arn:aws(-[a-z-]+)?:iam::[0-9]{12}:(role|user)/[A-Za-z0-9+=,.@_/-]{1,512}", arn):
                raise ValueError(
                    f"{arn!r} is not an IAM role or user ARN (like 'arn:aws:iam::123456789012:role/ci-deploy'); "
                    "an assumed-role session ARN (arn:aws:sts::...) names no principal an access entry can take"
                )
        if len(set(value)) != len(value):
            raise ValueError("each principal once: EKS refuses a second access entry for the same ARN")
        return value


class ClusterConfig(Model):
    provider: Literal["kind", "existing", "eks"] = Field(description="Where the cluster comes from")
    name: Name = Field(default="kaistack", description="Cluster name")
    node_pools: Annotated[list[NodePool], Field(max_length=limits.MAX_NODE_POOLS)] = Field(
        default_factory=list, description="Worker node pools: the capacity the placement checker plans with"
    )
    kind: KindSettings = Field(default=KindSettings(), description="kind settings")
    existing: ExistingSettings | None = Field(default=None, description="How to reach an existing cluster")
    eks: EksSettings | None = Field(default=None, description="EKS settings")
    # Install the Kubeflow training operator (PyTorchJob CRD) into the host and every tenant's vCluster, whether
    # or not the stack declares a PyTorchJob there today; false = it is already there (components/workloads.py).
    training_operator: bool = Field(
        default=False, description="Install the Kubeflow training operator in the host and every tenant vCluster"
    )
    # KAI's Topology CR, built from node labels the pools carry (kaistack.declaration.model.topology).
    topology: ClusterTopology | None = Field(
        default=None, description="Topology levels from node labels, broadest first, for topology-aware placement"
    )

    @property
    def protected(self) -> bool:
        """`cluster.eks.protect`: what holds state or schedules everything is protected from deletion."""
        return bool(self.provider == "eks" and self.eks is not None and self.eks.protect)

    @model_validator(mode="after")
    def _provider_settings(self) -> ClusterConfig:
        if self.provider == "existing" and self.existing is None:
            raise ValueError("provider 'existing' needs an 'existing' block with 'kubeconfig' or 'context'")
        if self.provider == "eks" and self.eks is None:
            raise ValueError("provider 'eks' needs an 'eks' block with at least 'region'")
        names = [p.name for p in self.node_pools]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"node pool names must be unique; repeated: {', '.join(dupes)}")
        zoned = [p.name for p in self.node_pools if p.availability_zones]
        if zoned and self.provider != "eks":
            raise ValueError(f"node pool availabilityZones applies to EKS only; set on {', '.join(zoned)}")
        total = sum(max(p.count, p.max_size or 0) for p in self.node_pools)
        if total > limits.MAX_NODES:
            raise ValueError(f"node pools add up to {total} nodes; kaistack plans for at most {limits.MAX_NODES}")
        return self


# What a kubelet may label its own Node with, among the kubernetes.io and k8s.io names (kubernetes/kubelet@v0.35.0
# pkg/apis/well_known_labels.go: kubeletLabels, kubeletLabelNamespaces). kubelet refuses to start with any other
# such --node-labels key (kubernetes/kubernetes cmd/kubelet/app/options/options.go ValidateKubeletFlags), and both
# kind (kubeadm's node-labels) and an EKS managed node group (nodeadm) give a pool's labels to kubelet that way.
KUBELET_LABELS = frozenset(
    {
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
    }
)
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")


def _kubelet_refuses(key: str) -> bool:
    prefix = key.partition("/")[0] if "/" in key else ""
    kubernetes = any(prefix == d or prefix.endswith("." + d) for d in ("kubernetes.io", "k8s.io"))
    allowed = key in KUBELET_LABELS or any(prefix == n or prefix.endswith("." + n) for n in KUBELET_LABEL_NAMESPACES)
    return kubernetes and not allowed


def node_label_problems(cluster: ClusterConfig) -> list[str]:
    """Labels kubelet would refuse on the nodes kaistack creates (kind, EKS); an existing cluster's are only read."""
    if cluster.provider not in ("kind", "eks"):
        return []
    return [
        f"cluster.nodePools[{i}].labels.{key}: kubelet refuses to start with a kubernetes.io or k8s.io label it may "
        f"not set itself (it may: {', '.join(sorted(KUBELET_LABELS))}, and *.{', *.'.join(KUBELET_LABEL_NAMESPACES)}); "
        "use your own prefix, or label the node after it joins"
        for i, pool in enumerate(cluster.node_pools)
        for key in pool.labels
        if _kubelet_refuses(key)
    ]


def eks_shape_problems(cluster: ClusterConfig) -> list[str]:
    """What an EKS cluster must look like, before AWS is asked anything (each line starts with its key path)."""
    eks = cluster.eks
    if cluster.provider != "eks" or eks is None:
        return []
    problems: list[str] = []
    for i, pool in enumerate(cluster.node_pools):
        where = f"cluster.nodePools[{i}]"
        if not pool.instance_type:
            problems.append(f"{where}.instanceType: required on EKS (an EC2 instance type such as 'g6.xlarge')")
        low, _, high = eks_scaling(pool)
        if not low <= pool.count <= high:
            problems.append(
                f"{where}.count: {pool.count} must lie between minSize ({low}) and maxSize ({high}); "
                "count is the node group's desired size"
            )
        if high < 1:
            problems.append(f"{where}.maxSize: EKS node groups need maxSize >= 1, got {high}")
        if pool.name == SYSTEM_POOL:
            problems.append(
                f"{where}.name: {SYSTEM_POOL!r} names the EKS system node group ({NODE_POOL_LABEL}={SYSTEM_POOL}); "
                "pick another pool name"
            )
    system = eks.system_node_group
    if not system.min_size <= system.desired_size <= system.max_size:
        problems.append(
            f"cluster.eks.systemNodeGroup.desiredSize: {system.desired_size} must lie between "
            f"minSize ({system.min_size}) and maxSize ({system.max_size})"
        )
    if eks.vpc_id is None and len(eks.availability_zones) == 1:
        problems.append(
            "cluster.eks.availabilityZones: EKS needs subnets in at least 2 zones; list 2 or more "
            f"zones of {eks.region}, or leave the key out and kaistack picks zones offering every pool's type"
        )
    if eks.vpc_id is not None and len(eks.subnet_ids) < 2:
        problems.append("cluster.eks.subnetIds: with an existing vpcId give at least 2 subnet ids in different zones")
    for i, arn in enumerate(eks.admin_principals):
        if arn.split(":")[1] != eks.partition:
            problems.append(
                f"cluster.eks.adminPrincipals[{i}]: {arn!r} is in partition {arn.split(':')[1]!r}, but region "
                f"{eks.region!r} is in {eks.partition!r}; an access entry takes principals of its own partition"
            )
    for zone in eks.availability_zones:
        if not zone.startswith(eks.region):
            problems.append(f"cluster.eks.availabilityZones: {zone!r} is not a zone of region {eks.region!r}")
    for i, pool in enumerate(cluster.node_pools):
        problems += _pool_zone_problems(f"cluster.nodePools[{i}].availabilityZones", pool, eks)
    return problems


def _pool_zone_problems(where: str, pool: NodePool, eks: EksSettings) -> list[str]:
    zones = pool.availability_zones
    if not zones:
        return []
    if eks.vpc_id is not None:
        return [f"{where}: only with the VPC kaistack creates; with vpcId the pool spans every subnet of subnetIds"]
    if not eks.availability_zones:
        return [f"{where}: list cluster.eks.availabilityZones too, the zones the pool's zones are taken from"]
    problems = [
        f"{where}: {zone!r} is not one of cluster.eks.availabilityZones ({', '.join(eks.availability_zones)})"
        for zone in zones
        if zone not in eks.availability_zones
    ]
    if len(set(zones)) != len(zones):
        problems.append(f"{where}: each zone once")
    return problems


def eks_scaling(pool: NodePool) -> tuple[int, int, int]:
    """(min, desired, max) of an EKS node group: desired is the pool's count, the size the checker plans for."""
    low = pool.min_size if pool.min_size is not None else pool.count
    high = pool.max_size if pool.max_size is not None else max(pool.count, 1)
    return low, pool.count, high
