"""EksCluster: an EKS cluster with a system node group and one managed node group per node pool.

Same contract as KindCluster (docs/architecture.md, "Cluster components"): `kubeconfig` (a Pulumi
secret) and `provider` (an explicit pulumi_kubernetes.Provider every platform resource uses).

Built on the official `pulumi_eks` components. The pools it gets must already be resolved by
`kaistack.stack.eks.resolve_node_pools` (GPU count, product and memory per node, the GPU labels and
taint); this module only turns them into AWS resources, so the placement checker, the node labels and
the policies all read the same facts.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s

from components.eks_access import admin_access_entries
from components.eks_addons import assumed_by, managed_policy_arn, storage_addons
from components.eks_network import EksNetwork
from kaistack.declaration.kai_api import GPU_PRESENT_LABEL
from kaistack.declaration.marks import NODE_POOL_LABEL as POOL_LABEL
from kaistack.declaration.marks import SYSTEM_POOL
from kaistack.declaration.model import EksSettings, NodePool, StackConfig, Taint
from kaistack.declaration.model.cluster import SYSTEM_NODE_DISK_GIB

# EKS-optimized Amazon Linux 2023 AMIs. The NVIDIA variant ships the driver and the NVIDIA
# container toolkit (registered as containerd's runtime), so the GPU Operator runs with driver and
# toolkit disabled and the device plugin needs no host setup.
# Ref: https://docs.aws.amazon.com/eks/latest/APIReference/API_Nodegroup.html#AmazonEKS-Type-Nodegroup-amiType
GPU_AMI_TYPE = "AL2023_x86_64_NVIDIA"
CPU_AMI_TYPE = "AL2023_x86_64_STANDARD"
SYSTEM_DISK_GIB = SYSTEM_NODE_DISK_GIB
# EKS's node group API spells taint effects in upper snake case.
TAINT_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}
# What every EKS worker role needs (EKS user guide, "Amazon EKS node IAM role"), AWS managed policies whose ARNs
# start with the region's partition (pulumi-eks builds them the same way: nodejs/eks/cluster/cluster.ts at v4.3.0).
NODE_POLICIES = {
    "worker": "AmazonEKSWorkerNodePolicy",
    "cni": "AmazonEKS_CNI_Policy",
    "ecr": "AmazonEC2ContainerRegistryReadOnly",
}


class EksCluster(pulumi.ComponentResource):
    """`kaistack:index:EksCluster`: VPC (unless given), EKS control plane, node groups, kubeconfig, provider."""

    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider
    cluster: eks.Cluster
    system_node_group: eks.ManagedNodeGroup
    node_groups: dict[str, eks.ManagedNodeGroup]
    node_role: aws.iam.Role
    addons: list[pulumi.Resource]
    storage_class: k8s.storage.v1.StorageClass
    runtime_class: k8s.node.v1.RuntimeClass | None
    vpc: aws.ec2.Vpc | None

    def __init__(self, name: str, config: StackConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        # Refuse before registering anything, so a bad stack leaves no half-built component behind.
        settings = _checked_settings(config)
        super().__init__("kaistack:index:EksCluster", name, None, opts)
        cluster_name = config.cluster.name
        tags = {"kaistack.io/cluster": cluster_name, "kaistack.io/managed-by": "pulumi"}
        # Protection guards what is slow or stateful to rebuild: the control plane and its network.
        # Node groups stay replaceable so an instance-type change is an ordinary update.
        keep = pulumi.ResourceOptions(parent=self, protect=settings.protect)

        network = EksNetwork(name, cluster_name, settings, tags, keep)
        self.vpc = network.vpc
        self.node_role, attachments = self._node_role(name, settings.partition, tags)
        self.cluster = self._control_plane(name, cluster_name, settings, network, tags, keep)

        node_subnets = network.node_subnet_ids
        after = [*attachments, *network.ready]
        self.system_node_group = self._system_node_group(name, settings, node_subnets, tags, after)
        self.node_groups = {
            pool.name: _pool_node_group(
                name,
                pool,
                settings,
                self.cluster,
                self.node_role,
                network.node_subnets_in(pool.availability_zones),
                tags,
                after,
                self,
            )
            for pool in config.cluster.node_pools
        }

        nodes: list[pulumi.Resource] = [self.system_node_group, *self.node_groups.values()]
        self.addons = storage_addons(
            name, cluster_name, settings.partition, settings.version, self.cluster, tags, nodes, self
        )

        raw = self.cluster.kubeconfig
        self.kubeconfig = pulumi.Output.secret(raw.apply(lambda doc: kubeconfig_with_region(doc, settings.region)))
        self.provider = self._kubernetes_provider(name, [*nodes, *self.addons])
        self.storage_class = self._default_storage_class(name)
        self.runtime_class = self._nvidia_runtime_class(name) if config.gpu.mode == "device-plugin" else None
        self.register_outputs(
            {
                "kubeconfig": self.kubeconfig,
                "clusterName": cluster_name,
                "region": settings.region,
                "nodeGroups": sorted(self.node_groups),
            }
        )

    def _node_role(
        self, name: str, partition: str, tags: Mapping[str, str]
    ) -> tuple[aws.iam.Role, list[pulumi.Resource]]:
        """The IAM role every node group's instances run as, with the policies every EKS worker needs."""
        child = pulumi.ResourceOptions(parent=self)
        role = aws.iam.Role(
            f"{name}-node-role",
            assume_role_policy=assumed_by("ec2.amazonaws.com", "sts:AssumeRole"),
            tags=tags,
            opts=child,
        )
        attachments: list[pulumi.Resource] = [
            aws.iam.RolePolicyAttachment(
                f"{name}-node-{key}", role=role.name, policy_arn=managed_policy_arn(partition, policy), opts=child
            )
            for key, policy in NODE_POLICIES.items()
        ]
        return role, attachments

    def _control_plane(
        self,
        name: str,
        cluster_name: str,
        settings: EksSettings,
        network: EksNetwork,
        tags: Mapping[str, str],
        keep: pulumi.ResourceOptions,
    ) -> eks.Cluster:
        return eks.Cluster(
            f"{name}-eks",
            name=cluster_name,
            version=settings.version,
            vpc_id=network.vpc_id,
            public_subnet_ids=network.public_subnet_ids,
            private_subnet_ids=network.private_subnet_ids,
            subnet_ids=network.subnet_ids,
            # All capacity comes from the managed node groups.
            skip_default_node_group=True,
            # Access entries (the EKS API) instead of the aws-auth ConfigMap; the node role gets its
            # EC2_LINUX entry up front, as pulumi-eks' own managed-node-group examples do.
            authentication_mode=eks.AuthenticationMode.API,
            access_entries={
                "nodes": eks.AccessEntryArgs(principal_arn=self.node_role.arn, type=eks.AccessEntryType.EC2_LINUX),
                **admin_access_entries(settings),
            },
            # Tenants' vCluster NetworkPolicies (tenants[].isolation.networkPolicy) are only enforced
            # when the VPC CNI's network policy agent is on; EKS ships it off.
            vpc_cni_options=eks.VpcCniOptionsArgs(enable_network_policy=True),
            # EKS-side deletion protection backs up Pulumi's protect for prod. Always sent, false included:
            # pulumi_aws types the attribute's output Output[bool], as for computed ones, where an omitted
            # input keeps what the cluster has and a teardown after `protect: false` would be refused.
            deletion_protection=settings.protect,
            tags=tags,
            opts=pulumi.ResourceOptions.merge(keep, pulumi.ResourceOptions(depends_on=network.ready)),
        )

    def _system_node_group(
        self,
        name: str,
        settings: EksSettings,
        subnet_ids: Sequence[pulumi.Input[str]] | None,
        tags: Mapping[str, str],
        after: Sequence[pulumi.Resource],
    ) -> eks.ManagedNodeGroup:
        """The untainted CPU nodes the platform's own pods (KAI, operators, vCluster) run on."""
        system = settings.system_node_group
        # Node groups take `cluster.core` and the role's ARN, plain data rather than resource
        # references (pulumi-eks' own managed-nodegroups example does the same): the in-process mock
        # engine behind `kaistack render` cannot rehydrate references to other resources.
        return eks.ManagedNodeGroup(
            f"{name}-system",
            cluster=self.cluster.core,
            node_role_arn=self.node_role.arn,
            instance_types=[system.instance_type],
            ami_type=CPU_AMI_TYPE,
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=system.min_size, desired_size=system.desired_size, max_size=system.max_size
            ),
            labels={POOL_LABEL: SYSTEM_POOL},
            disk_size=SYSTEM_DISK_GIB,
            subnet_ids=subnet_ids,
            tags={**tags, POOL_LABEL: SYSTEM_POOL},
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(after)),
        )

    def _kubernetes_provider(self, name: str, depends_on: Sequence[pulumi.Resource]) -> k8s.Provider:
        # Everything Kubernetes waits for nodes and storage: Helm releases (KAI, GPU stack) need
        # somewhere to run and vCluster's StatefulSet needs its volume.
        return k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends_on)),
        )

    def _default_storage_class(self, name: str) -> k8s.storage.v1.StorageClass:
        # EKS (1.30+) marks no StorageClass default and its gp2 class uses the in-tree name; vCluster's
        # PVC needs a default class served by the EBS CSI driver.
        return k8s.storage.v1.StorageClass(
            f"{name}-gp3",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name="gp3", annotations={"storageclass.kubernetes.io/is-default-class": "true"}
            ),
            provisioner="ebs.csi.aws.com",
            parameters={"type": "gp3", "encrypted": "true"},
            reclaim_policy="Delete",
            volume_binding_mode="WaitForFirstConsumer",  # the volume lands in the zone of the pod's node
            allow_volume_expansion=True,
            opts=pulumi.ResourceOptions(parent=self, provider=self.provider),
        )

    def _nvidia_runtime_class(self, name: str) -> k8s.node.v1.RuntimeClass:
        # KAI's fractional pods and GPU reservation pods ask for RuntimeClass `nvidia` by name. The
        # NVIDIA AMI defines containerd runtime `nvidia` (its default runtime), but only the GPU
        # Operator creates the RuntimeClass object (nvkind does on kind); with the device plugin alone
        # the cluster has to.
        return k8s.node.v1.RuntimeClass(
            f"{name}-nvidia",
            metadata=k8s.meta.v1.ObjectMetaArgs(name="nvidia"),
            handler="nvidia",
            opts=pulumi.ResourceOptions(parent=self, provider=self.provider),
        )


def _pool_node_group(
    name: str,
    pool: NodePool,
    settings: EksSettings,
    cluster: eks.Cluster,
    role: aws.iam.Role,
    subnet_ids: Sequence[pulumi.Input[str]] | None,
    tags: Mapping[str, str],
    after: Sequence[pulumi.Resource],
    parent: pulumi.Resource,
) -> eks.ManagedNodeGroup:
    low, desired, high = scaling(pool)
    has_gpus = pool.gpu_count > 0
    return eks.ManagedNodeGroup(
        f"{name}-{pool.name}",
        cluster=cluster.core,
        node_role_arn=role.arn,
        instance_types=[pool.instance_type or ""],  # never empty: _check_resolved refuses such pools
        ami_type=GPU_AMI_TYPE if has_gpus else CPU_AMI_TYPE,
        capacity_type="ON_DEMAND",
        scaling_config=aws.eks.NodeGroupScalingConfigArgs(min_size=low, desired_size=desired, max_size=high),
        labels=node_labels(pool),
        taints=[node_group_taint(t) for t in pool.taints],
        disk_size=settings.gpu_node_disk_gi_b if has_gpus else SYSTEM_DISK_GIB,
        subnet_ids=subnet_ids,
        tags={**tags, POOL_LABEL: pool.name},
        opts=pulumi.ResourceOptions(parent=parent, depends_on=list(after)),
    )


def scaling(pool: NodePool) -> tuple[int, int, int]:
    """(min, desired, max): desired is the pool's count, the size the placement checker plans for."""
    low = pool.min_size if pool.min_size is not None else pool.count
    high = pool.max_size if pool.max_size is not None else max(pool.count, 1)
    return low, pool.count, high


def node_labels(pool: NodePool) -> dict[str, str]:
    """The pool's labels (discovery already added nvidia.com/gpu.{product,count,memory}) plus its name.

    GPU pools also get `nvidia.com/gpu.present=true`, which the device plugin's default node affinity
    accepts without NFD (vcluster-and-gpu.md §2), as on kind (cluster_kind.REAL_GPU_NODE_LABELS).
    """
    labels = {**pool.labels, POOL_LABEL: pool.name}
    if pool.gpu_count:
        labels.setdefault(GPU_PRESENT_LABEL, "true")
    return labels


def node_group_taint(taint: Taint) -> aws.eks.NodeGroupTaintArgs:
    return aws.eks.NodeGroupTaintArgs(key=taint.key, value=taint.value, effect=TAINT_EFFECTS[taint.effect])


def kubeconfig_with_region(kubeconfig: Any, region: str) -> str:
    """The kubeconfig as a JSON string (pulumi-eks gives an object), with `--region` on `aws eks get-token`.

    pulumi-eks has passed the region itself since pulumi/pulumi-eks#1498 (nodejs/eks/cluster/cluster.ts at
    v4.3.0, generateKubeconfig); older releases left it out (pulumi/pulumi-eks#1038), and the token was then
    requested in whatever region the shell defaulted to. An existing `--region` is kept.
    """
    doc = json.loads(kubeconfig) if isinstance(kubeconfig, str) else copy.deepcopy(kubeconfig)
    for user in doc.get("users") or []:
        spec = (user.get("user") or {}).get("exec")
        if spec and spec.get("command") == "aws":
            args = list(spec.get("args") or [])
            if "--region" not in args:
                spec["args"] = ["--region", region, *args]
    return json.dumps(doc)


def _checked_settings(config: StackConfig) -> EksSettings:
    """The stack's EKS settings, or RunError for a stack this component cannot build.

    aws:region against kaistack:cluster.eks.region is the load path's rule (kaistack.stack.load):
    components never read config.
    """
    settings = config.cluster.eks
    if config.cluster.provider != "eks" or settings is None:
        raise ValueError("EksCluster needs kaistack:cluster.provider 'eks' and a kaistack:cluster.eks block")
    _check_resolved(config.cluster.node_pools)
    if settings.vpc_id is None and len(settings.availability_zones) < 2:
        raise pulumi.RunError(
            "kaistack:cluster.eks.availabilityZones: a new VPC needs 2 or more zones; "
            "kaistack.stack.eks.resolve_node_pools picks them when AWS credentials are available"
        )
    return settings


def _check_resolved(pools: Sequence[NodePool]) -> None:
    missing = [
        f"kaistack:cluster.nodePools[{i}]"
        for i, p in enumerate(pools)
        if not p.instance_type or p.gpus is None or (p.gpus and (p.gpu_product is None or p.gpu_memory_mi_b is None))
    ]
    if missing:
        raise pulumi.RunError(
            f"EKS node pools not resolved ({', '.join(missing)}): call kaistack.stack.eks.resolve_node_pools "
            "on the config before building the platform"
        )
