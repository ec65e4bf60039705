"""EksNetwork: the network an EksCluster runs in, the VPC kaistack creates or the one the stack names.

A plain helper, not a ComponentResource: its resources are the EksCluster's own children (the
options it is given carry `parent=` and the cluster's protection), and a component in between would
change every one of their URNs.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence

import pulumi
import pulumi_aws as aws

from kaistack.declaration.model import EksSettings


class EksNetwork:
    """The VPC kaistack creates (public subnets + optional private ones behind one NAT gateway), or the given one."""

    vpc: aws.ec2.Vpc | None
    vpc_id: pulumi.Input[str]
    # What the cluster and its node groups wait for: every subnet's route table association.
    ready: list[pulumi.Resource]
    public_subnet_ids: list[pulumi.Output[str]] | None
    private_subnet_ids: list[pulumi.Output[str]] | None
    subnet_ids: list[str] | None
    node_subnet_ids: Sequence[pulumi.Input[str]] | None
    # The node subnet of each zone of a VPC kaistack creates (empty for a given VPC, whose zones it does not know).
    node_subnet_by_zone: dict[str, pulumi.Input[str]]

    def __init__(
        self,
        name: str,
        cluster_name: str,
        settings: EksSettings,
        tags: Mapping[str, str],
        opts: pulumi.ResourceOptions,
    ) -> None:
        self._name = name
        self._cluster_name = cluster_name
        self._tags = tags
        self._opts = opts  # the whole network shares the cluster's protection
        self.vpc = None
        self.ready = []
        self.public_subnet_ids = None
        self.private_subnet_ids = None
        self.subnet_ids = None
        self.node_subnet_by_zone = {}
        if settings.vpc_id is not None:
            self.vpc_id = settings.vpc_id
            self.subnet_ids = list(settings.subnet_ids)
            self.node_subnet_ids = list(settings.subnet_ids)
            return
        vpc = self.vpc = self._new_vpc(settings.vpc_cidr)
        self.vpc_id = vpc.id
        zones = settings.availability_zones
        public_cidrs, private_cidrs = subnet_cidrs(settings.vpc_cidr, len(zones))
        # Nodes in public subnets need public IPs to reach ECR/EKS without a NAT gateway.
        igw, public = self._public_tier(vpc, zip(zones, public_cidrs, strict=True), not settings.private_nodes)
        self.public_subnet_ids = [s.id for s in public]
        self.node_subnet_ids = self.public_subnet_ids
        if settings.private_nodes:
            private = self._private_tier(vpc, zip(zones, private_cidrs, strict=True), public[0], igw)
            self.private_subnet_ids = [s.id for s in private]
            self.node_subnet_ids = self.private_subnet_ids
        self.node_subnet_by_zone = dict(zip(zones, self.node_subnet_ids, strict=True))

    def node_subnets_in(self, zones: Sequence[str]) -> Sequence[pulumi.Input[str]] | None:
        """A node group's subnets: those of its pool's zones (model-checked to be the VPC's), else every one."""
        if not zones:
            return self.node_subnet_ids
        return [self.node_subnet_by_zone[z] for z in zones]

    def _new_vpc(self, cidr: str) -> aws.ec2.Vpc:
        return aws.ec2.Vpc(
            f"{self._name}-vpc",
            cidr_block=cidr,
            enable_dns_hostnames=True,  # EKS nodes register by private DNS name
            enable_dns_support=True,
            tags={**self._tags, "Name": self._cluster_name},
            opts=self._opts,
        )

    def _public_tier(
        self, vpc: aws.ec2.Vpc, zones_and_cidrs: Iterable[tuple[str, str]], public_ips: bool
    ) -> tuple[aws.ec2.InternetGateway, list[aws.ec2.Subnet]]:
        """The internet gateway and the public subnets routed through it."""
        tags, opts = self._tags, self._opts
        igw = aws.ec2.InternetGateway(f"{self._name}-igw", vpc_id=vpc.id, tags=dict(tags), opts=opts)
        route_table = aws.ec2.RouteTable(
            f"{self._name}-public",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
            tags={**tags, "Name": f"{self._cluster_name}-public"},
            opts=opts,
        )
        subnets = self._subnets(vpc, "public", zones_and_cidrs, route_table, "kubernetes.io/role/elb", public_ips)
        return igw, subnets

    def _private_tier(
        self,
        vpc: aws.ec2.Vpc,
        zones_and_cidrs: Iterable[tuple[str, str]],
        nat_subnet: aws.ec2.Subnet,
        igw: aws.ec2.InternetGateway,
    ) -> list[aws.ec2.Subnet]:
        """The private subnets, their egress through one NAT gateway in `nat_subnet`."""
        tags, opts = self._tags, self._opts
        # One NAT gateway, not one per zone: a zone outage costs egress for private nodes elsewhere,
        # three gateways would triple the fixed cost of a platform mostly paid for in GPUs.
        eip = aws.ec2.Eip(f"{self._name}-nat", domain="vpc", tags=dict(tags), opts=opts)
        nat = aws.ec2.NatGateway(
            f"{self._name}-nat",
            allocation_id=eip.allocation_id,
            subnet_id=nat_subnet.id,
            tags={**tags, "Name": f"{self._cluster_name}-nat"},
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[igw])),
        )
        route_table = aws.ec2.RouteTable(
            f"{self._name}-private",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)],
            tags={**tags, "Name": f"{self._cluster_name}-private"},
            opts=opts,
        )
        return self._subnets(vpc, "private", zones_and_cidrs, route_table, "kubernetes.io/role/internal-elb")

    def _subnets(
        self,
        vpc: aws.ec2.Vpc,
        tier: str,
        zones_and_cidrs: Iterable[tuple[str, str]],
        route_table: aws.ec2.RouteTable,
        role_tag: str,
        public_ips: bool | None = None,
    ) -> list[aws.ec2.Subnet]:
        """One subnet per zone in `tier`, tagged for the load balancer role, routed through `route_table`."""
        # Subnet discovery tags for the AWS load balancer controller / in-tree service controller.
        owned = {f"kubernetes.io/cluster/{self._cluster_name}": "shared"}
        subnets = []
        for zone, cidr in zones_and_cidrs:
            subnet = aws.ec2.Subnet(
                f"{self._name}-{tier}-{zone}",
                vpc_id=vpc.id,
                cidr_block=cidr,
                availability_zone=zone,
                map_public_ip_on_launch=public_ips,
                tags={**self._tags, **owned, "Name": f"{self._cluster_name}-{tier}-{zone}", role_tag: "1"},
                opts=self._opts,
            )
            assoc = aws.ec2.RouteTableAssociation(
                f"{self._name}-{tier}-{zone}", subnet_id=subnet.id, route_table_id=route_table.id, opts=self._opts
            )
            subnets.append(subnet)
            self.ready.append(assoc)
        return subnets


def subnet_cidrs(vpc_cidr: str, zones: int) -> tuple[list[str], list[str]]:
    """Equal subnets carved from the VPC: the first `zones` public, the next `zones` private."""
    network = ipaddress.ip_network(vpc_cidr)
    bits = max(2, (2 * zones - 1).bit_length())
    blocks = [str(b) for b in network.subnets(prefixlen_diff=bits)]
    return blocks[:zones], blocks[zones : 2 * zones]
