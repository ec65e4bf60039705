"""What `pulumi up` of a change does to an EKS cluster's control plane, node groups and subnets (`kaistack diff`).

- the EKS version: one minor up rolls every node group; a skipped minor or a downgrade fails (EKS refuses it);
- an EKS pool's instance type, zones, or the GPU disk size: its node group is replaced, the new one created before
  the old is drained (pulumi-eks ManagedNodeGroup; EKS cannot change them in place); a subnet whose range moves
  (components.eks_network.subnet_cidrs carves them by the zones' number and order) would be created over the old.
"""

from __future__ import annotations

from kaistack.capacity.diff import Hazard
from kaistack.declaration import versions
from kaistack.declaration.model import EksSettings, StackConfig


def eks_hazards(before: StackConfig, after: StackConfig) -> list[Hazard]:
    return _eks_version_hazards(before, after) + _node_group_hazards(before, after)


def _eks_version_hazards(before: StackConfig, after: StackConfig) -> list[Hazard]:
    """EKS moves a control plane one minor version per update and never back (UpdateClusterVersion); node groups
    follow the cluster's version (pulumi-eks nodegroup.ts), so an upgrade replaces every node."""
    old_eks, new_eks = before.cluster.eks, after.cluster.eks
    if not (before.cluster.provider == after.cluster.provider == "eks" and old_eks and new_eks):
        return []
    old, new = versions.kubernetes_minor(old_eks.version), versions.kubernetes_minor(new_eks.version)
    if old is None or new is None or old == new:
        return []
    (old_major, old_minor), (new_major, new_minor) = (tuple(int(p) for p in v.split(".")) for v in (old, new))
    if (new_major, new_minor) < (old_major, old_minor):
        message = f"EKS cannot downgrade a control plane ({old} -> {new}): `pulumi up` fails; keep {old}"
    elif new_major == old_major and new_minor == old_minor + 1:
        message = (
            f"the control plane is upgraded {old} -> {new}, then every node group rolls to new nodes (pods evicted)"
        )
        return [Hazard("eks-upgraded", "cluster", message)]
    else:
        message = (
            f"EKS upgrades one minor version at a time, so `pulumi up` fails on {old} -> {new}: set "
            f"{old_major}.{old_minor + 1} first, apply it, then go on"
        )
    return [Hazard("eks-version-refused", "cluster", message)]


def _node_group_hazards(before: StackConfig, after: StackConfig) -> list[Hazard]:
    if not (before.cluster.provider == after.cluster.provider == "eks" and before.cluster.eks and after.cluster.eks):
        return []
    old_eks, new_eks = before.cluster.eks, after.cluster.eks
    old_pools = {p.name: p for p in before.cluster.node_pools}
    disk = (old_eks.gpu_node_disk_gi_b, new_eks.gpu_node_disk_gi_b)
    # In an existing VPC the node groups take its subnetIds (components/eks_network.py): zones and privateNodes
    # are read only for the VPC kaistack makes, where they choose the subnets.
    own_vpc = old_eks.vpc_id is None and new_eks.vpc_id is None
    private = (old_eks.private_nodes, new_eks.private_nodes) if own_vpc else (False, False)
    zones = (set(old_eks.availability_zones), set(new_eks.availability_zones)) if own_vpc else (set(), set())
    given = (set(old_eks.subnet_ids), set(new_eks.subnet_ids)) if not own_vpc else (set(), set())
    moved = _moved_subnets(old_eks, new_eks)
    hazards = []
    if moved:
        hazards.append(
            Hazard(
                "subnets-replaced",
                "network",
                f"the subnets of {', '.join(sorted(moved))} get new ranges (a VPC kaistack makes carves them by the "
                "number and order of cluster.eks.availabilityZones): each is created before the old one is deleted, "
                "overlapping it, so `pulumi up` fails (a protected stack refuses outright); keep the list as it was",
            )
        )
    system = (old_eks.system_node_group.instance_type, new_eks.system_node_group.instance_type)
    if (
        system[0] != system[1]
        or zones[0] != zones[1]
        or private[0] != private[1]
        or given[0] != given[1]
        or (moved & zones[1])
    ):
        hazards.append(
            Hazard(
                "node-group-replaced",
                "system",
                "the system node group is replaced (instance type, zones or subnets changed): KAI and the tenants' "
                "vCluster pods move to its new nodes",
            )
        )
    for new in after.cluster.node_pools:
        old = old_pools.get(new.name)
        if old is None:
            continue
        spans = (set(old.availability_zones) or zones[0], set(new.availability_zones) or zones[1])
        changed = [
            key
            for key, a, b in (
                ("instanceType", old.instance_type, new.instance_type),
                ("zones", *spans),
                ("subnets", False, bool(moved & spans[1])),
                ("subnetIds", *given),
                ("gpuNodeDiskGiB", *disk) if new.gpu_count else ("", 0, 0),
                ("privateNodes", *private),
            )
            if key and a != b
        ]
        if changed:
            hazards.append(
                Hazard(
                    "node-group-replaced",
                    new.name,
                    f"{', '.join(changed)} changed: the node group is replaced, the new one created before the old is "
                    "drained (quota and capacity for both; its pods are evicted)",
                )
            )
    return hazards


def _moved_subnets(old: EksSettings, new: EksSettings) -> set[str]:
    """The zones whose node subnet (public, and private with privateNodes) gets another range, or goes."""
    if old.vpc_id is not None or new.vpc_id is not None:
        return set()
    from components.eks_network import subnet_cidrs

    def layout(eks: EksSettings) -> dict[str, tuple[str, str]]:
        public, private = subnet_cidrs(eks.vpc_cidr, len(eks.availability_zones))
        return {z: (public[i], private[i] if eks.private_nodes else "") for i, z in enumerate(eks.availability_zones)}

    before, after = layout(old), layout(new)
    return {z for z in before if z in after and before[z] != after[z]} | (set(before) - set(after))
