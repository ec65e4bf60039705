"""EksCluster under Pulumi mocks: what the engine would receive for the staging and prod stacks.

pulumi-eks' Cluster and ManagedNodeGroup are remote components: under mocks they register with
their inputs and create no children (pulumi.md §2), so these tests assert on those inputs. Pools are
resolved through kaistack.stack.eks against moto first, as the program does.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest
import yaml
from eks_testlib import PROJECT_DIR, REGION, eks_config, eks_raw, stack

from components.cluster_eks import (
    CPU_AMI_TYPE,
    GPU_AMI_TYPE,
    EksCluster,
    kubeconfig_with_region,
)
from components.eks_network import subnet_cidrs
from kaistack.declaration.model.cluster import EksSettings
from kaistack.declaration.parse import ConfigError
from kaistack.ops.mocks import MockSession
from kaistack.stack.eks import resolve_node_pools

SECRET_SIG = "4dabf18193072939515e22adb298388d"  # pulumi's special-signature key for secret values
NG = "eks:index:ManagedNodeGroup"


def _build(config: Any) -> tuple[EksCluster, pulumi.Output[Any]]:
    cluster = EksCluster("kaistack", config)
    done = pulumi.Output.all(cluster.provider.urn, cluster.storage_class.urn, *[a.urn for a in cluster.addons])
    return cluster, done


def _inputs(mocks: MockSession, typ: str, name: str) -> dict[str, Any]:
    return dict(mocks.named(typ, name).inputs)


# --- node groups ------------------------------------------------------------------------------------


@pulumi.runtime.test
def test_prod_gpu_node_group(mocks: MockSession, ec2: Any) -> None:
    """One managed node group per pool: type, scaling, NVIDIA AMI, GPU labels KAI reads, GPU taint."""
    _, done = _build(resolve_node_pools(stack("prod"), ec2))

    def check(_: Any) -> None:
        group = _inputs(mocks, NG, "kaistack-h100")
        assert group["instanceTypes"] == ["p5.48xlarge"]
        assert group["scalingConfig"] == {"minSize": 1, "desiredSize": 1, "maxSize": 2}
        assert group["amiType"] == GPU_AMI_TYPE == "AL2023_x86_64_NVIDIA"
        assert group["capacityType"] == "ON_DEMAND"
        assert group["diskSize"] == 500
        assert group["labels"] == {
            "nvidia.com/gpu.product": "NVIDIA-H100",
            "nvidia.com/gpu.count": "8",
            "nvidia.com/gpu.memory": "81920",
            "nvidia.com/gpu.present": "true",
            "kaistack.io/node-pool": "h100",
        }
        assert group["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]

    return done.apply(check)


@pulumi.runtime.test
def test_staging_gpu_node_group_and_discovered_labels(mocks: MockSession, ec2: Any) -> None:
    _, done = _build(resolve_node_pools(stack("staging"), ec2))

    def check(_: Any) -> None:
        group = _inputs(mocks, NG, "kaistack-l4")
        assert group["instanceTypes"] == ["g6.xlarge"]
        assert group["scalingConfig"] == {"minSize": 0, "desiredSize": 2, "maxSize": 3}
        assert group["amiType"] == GPU_AMI_TYPE
        assert group["labels"]["nvidia.com/gpu.memory"] == "22888"
        assert group["labels"]["nvidia.com/gpu.product"] == "NVIDIA-L4"

    return done.apply(check)


@pulumi.runtime.test
def test_system_node_group_is_untainted_standard_ami(mocks: MockSession, ec2: Any) -> None:
    _, done = _build(resolve_node_pools(stack("prod"), ec2))

    def check(_: Any) -> None:
        group = _inputs(mocks, NG, "kaistack-system")
        assert group["instanceTypes"] == ["m6i.xlarge"]
        assert group["amiType"] == CPU_AMI_TYPE
        assert group["scalingConfig"] == {"minSize": 3, "desiredSize": 3, "maxSize": 4}
        assert group["labels"] == {"kaistack.io/node-pool": "system"}
        assert "taints" not in group

    return done.apply(check)


@pulumi.runtime.test
def test_undeclared_pool_sizes_default_to_count(mocks: MockSession, ec2: Any) -> None:
    """minSize/maxSize left out: the group stays at `count` nodes (what the checker plans)."""
    _, done = _build(resolve_node_pools(eks_config(count=3), ec2))

    def check(_: Any) -> None:
        group = _inputs(mocks, NG, "kaistack-l4")
        assert group["scalingConfig"] == {"minSize": 3, "desiredSize": 3, "maxSize": 3}

    return done.apply(check)


# --- the cluster ------------------------------------------------------------------------------------


@pulumi.runtime.test
def test_cluster_inputs(mocks: MockSession, ec2: Any) -> None:
    """No default node group; access entries with the node role as EC2_LINUX; the stack's name/version."""
    _, done = _build(resolve_node_pools(stack("prod"), ec2))

    def check(_: Any) -> None:
        cluster = _inputs(mocks, "eks:index:Cluster", "kaistack-eks")
        assert cluster["name"] == "kaistack-prod"
        assert cluster["version"] == "1.34"  # the stack's pin: a running control plane moves one minor per update
        assert cluster["skipDefaultNodeGroup"] is True
        assert cluster["authenticationMode"] == "API"
        assert cluster["accessEntries"]["nodes"] == {
            "principalArn": "arn:aws:iam::123456789012:role/kaistack-node-role",
            "type": "EC2_LINUX",
        }
        assert len(cluster["publicSubnetIds"]) == len(cluster["privateSubnetIds"]) == 3
        assert cluster["vpcCniOptions"]["enableNetworkPolicy"] is True

    return done.apply(check)


@pulumi.runtime.test
def test_prod_protects_the_control_plane_and_its_network(mocks: MockSession, ec2: Any) -> None:
    _, done = _build(resolve_node_pools(stack("prod"), ec2))

    def check(_: Any) -> None:
        protect = {(r.type, r.name): r.protect for r in mocks.monitor.records}
        assert protect[("eks:index:Cluster", "kaistack-eks")] is True
        assert protect[("aws:ec2/vpc:Vpc", "kaistack-vpc")] is True
        assert protect[("aws:ec2/natGateway:NatGateway", "kaistack-nat")] is True
        assert _inputs(mocks, "eks:index:Cluster", "kaistack-eks")["deletionProtection"] is True
        # Node groups stay replaceable (an instance-type change is an ordinary update).
        assert protect[(NG, "kaistack-h100")] is False

    return done.apply(check)


@pulumi.runtime.test
def test_staging_protects_nothing(mocks: MockSession, ec2: Any) -> None:
    _, done = _build(resolve_node_pools(stack("staging"), ec2))

    def check(_: Any) -> None:
        assert not any({(r.type, r.name): r.protect for r in mocks.monitor.records}.values())
        # False, not left out: an omitted computed input keeps the protection a stack once had.
        assert _inputs(mocks, "eks:index:Cluster", "kaistack-eks")["deletionProtection"] is False

    return done.apply(check)


@pulumi.runtime.test
def test_kubeconfig_is_a_secret_with_the_region(mocks: MockSession, ec2: Any) -> None:
    cluster, done = _build(resolve_node_pools(stack("prod"), ec2))

    def check(args: Any) -> None:
        _, kubeconfig, is_secret = args
        assert is_secret
        exec_args = json.loads(kubeconfig)["users"][0]["user"]["exec"]["args"]
        assert exec_args[:2] == ["--region", REGION]
        provider = _inputs(mocks, "pulumi:providers:kubernetes", "kaistack-k8s")
        assert provider["kubeconfig"][SECRET_SIG]  # handed to the provider still marked secret

    is_secret = pulumi.Output.from_input(cluster.kubeconfig.is_secret())
    return pulumi.Output.all(done, cluster.kubeconfig, is_secret).apply(check)


@pulumi.runtime.test
def test_children_are_parented_to_the_component(mocks: MockSession, ec2: Any) -> None:
    _, done = _build(resolve_node_pools(stack("staging"), ec2))

    def check(_: Any) -> None:
        parents = {(r.type, r.name): r.parent or "" for r in mocks.monitor.records}
        children = {
            k: v for k, v in parents.items() if k[0] not in ("kaistack:index:EksCluster", "pulumi:pulumi:Stack")
        }
        assert children
        assert all("kaistack:index:EksCluster::kaistack" in p for p in children.values()), children

    return done.apply(check)


@pulumi.runtime.test
def test_storage_for_vcluster(mocks: MockSession, ec2: Any) -> None:
    """EBS CSI driver (Pod Identity) and a default gp3 StorageClass, so vCluster's PVC binds."""
    _, done = _build(resolve_node_pools(stack("staging"), ec2))

    def check(_: Any) -> None:
        addons = {a.inputs["addonName"]: a.inputs for a in mocks.of_type("aws:eks/addon:Addon")}
        assert set(addons) == {"eks-pod-identity-agent", "aws-ebs-csi-driver"}
        # Pinned to AWS's default for the cluster's version (the mocks' stand-in name): an upgrade moves them.
        assert {a: i["addonVersion"] for a, i in addons.items()} == {
            "eks-pod-identity-agent": "v0.0.0-eks-pod-identity-agent-for-1.34",
            "aws-ebs-csi-driver": "v0.0.0-aws-ebs-csi-driver-for-1.34",
        }
        assert addons["aws-ebs-csi-driver"]["podIdentityAssociations"][0]["serviceAccount"] == "ebs-csi-controller-sa"
        sc = _inputs(mocks, "kubernetes:storage.k8s.io/v1:StorageClass", "kaistack-gp3")
        assert sc["provisioner"] == "ebs.csi.aws.com"
        assert sc["metadata"]["annotations"] == {"storageclass.kubernetes.io/is-default-class": "true"}

    return done.apply(check)


@pulumi.runtime.test
def test_device_plugin_mode_creates_runtime_class_nvidia(mocks: MockSession, ec2: Any) -> None:
    """The AL2023 NVIDIA AMI's nodeadm names containerd's NVIDIA runtime `nvidia` when the NVIDIA container runtime
    is installed (awslabs/amazon-eks-ami@v20260724 nodeadm/internal/containerd/runtime_config_nvidia.go:10-13,
    31-35): the RuntimeClass's handler must be that name."""
    raw = eks_raw()
    raw["gpu"] = {"mode": "device-plugin"}
    cluster, done = _build(resolve_node_pools(eks_config(raw), ec2))
    assert cluster.runtime_class is not None

    def check(_: Any) -> None:
        rc = _inputs(mocks, "kubernetes:node.k8s.io/v1:RuntimeClass", "kaistack-nvidia")
        assert (rc["metadata"]["name"], rc["handler"]) == ("nvidia", "nvidia")

    return pulumi.Output.all(done, cluster.runtime_class.urn).apply(check)


@pulumi.runtime.test
def test_gpu_operator_mode_leaves_runtime_class_to_the_operator(mocks: MockSession, ec2: Any) -> None:
    cluster, done = _build(resolve_node_pools(stack("prod"), ec2))
    assert cluster.runtime_class is None
    return done


# --- the network ------------------------------------------------------------------------------------


@pulumi.runtime.test
def test_prod_nodes_sit_in_private_subnets_behind_one_nat(mocks: MockSession, ec2: Any) -> None:
    _, done = _build(resolve_node_pools(stack("prod"), ec2))

    def check(_: Any) -> None:
        assert len(mocks.of_type("aws:ec2/natGateway:NatGateway")) == 1
        subnets = {s.name: s.inputs for s in mocks.of_type("aws:ec2/subnet:Subnet")}
        assert sorted(s["availabilityZone"] for s in subnets.values()) == sorted(
            ["us-west-2a", "us-west-2b", "us-west-2c"] * 2
        )
        private = sorted(f"{n}-id" for n in subnets if "-private-" in n)  # the mock engine's ids
        assert sorted(_inputs(mocks, NG, "kaistack-h100")["subnetIds"]) == private

    return done.apply(check)


@pulumi.runtime.test
def test_the_nat_gateway_takes_the_elastic_ips_address(mocks: MockSession, ec2: Any) -> None:
    """A public NAT gateway needs its Elastic IP's allocation id (aws_nat_gateway allocation_id); the mock engine
    now computes one, as AWS does, so the render shows the link."""
    _, done = _build(resolve_node_pools(stack("prod"), ec2))

    def check(_: Any) -> None:
        (eip,) = mocks.of_type("aws:ec2/eip:Eip")
        (nat,) = mocks.of_type("aws:ec2/natGateway:NatGateway")
        assert nat.inputs["allocationId"] == f"eipalloc-{eip.name}"
        assert eip.urn in nat.dependencies

    return done.apply(check)


@pulumi.runtime.test
def test_staging_nodes_use_public_subnets_without_nat(mocks: MockSession, ec2: Any) -> None:
    _, done = _build(resolve_node_pools(stack("staging"), ec2))

    def check(_: Any) -> None:
        assert not mocks.of_type("aws:ec2/natGateway:NatGateway")
        subnets = mocks.of_type("aws:ec2/subnet:Subnet")
        assert [s.inputs["mapPublicIpOnLaunch"] for s in subnets] == [True, True]
        assert sorted(_inputs(mocks, NG, "kaistack-l4")["subnetIds"]) == sorted(f"{s.name}-id" for s in subnets)

    return done.apply(check)


@pulumi.runtime.test
def test_pool_with_its_own_zones_gets_only_those_zones_node_subnets(mocks: MockSession, ec2: Any) -> None:
    """p5e.48xlarge is offered in us-west-2c only (moto): its node group takes that zone's subnet, the rest all."""
    raw = eks_raw(instanceType="p5e.48xlarge", count=1, availabilityZones=["us-west-2c"])
    raw["cluster"]["eks"]["availabilityZones"] = ["us-west-2a", "us-west-2b", "us-west-2c"]
    raw["cluster"]["nodePools"].append({"name": "cpu", "instanceType": "m6i.xlarge", "count": 1})
    _, done = _build(resolve_node_pools(eks_config(raw), ec2))

    def check(_: Any) -> None:
        zone_of = {f"{s.name}-id": s.inputs["availabilityZone"] for s in mocks.of_type("aws:ec2/subnet:Subnet")}
        private = {i for i in zone_of if "-private-" in i}
        assert [zone_of[i] for i in _inputs(mocks, NG, "kaistack-l4")["subnetIds"]] == ["us-west-2c"]
        assert set(_inputs(mocks, NG, "kaistack-l4")["subnetIds"]) <= private
        assert set(_inputs(mocks, NG, "kaistack-cpu")["subnetIds"]) == private

    return done.apply(check)


@pulumi.runtime.test
def test_existing_vpc_creates_no_network(mocks: MockSession, ec2: Any) -> None:
    raw = eks_raw()
    raw["cluster"]["eks"] = {"region": REGION, "vpcId": "vpc-0abc", "subnetIds": ["subnet-1", "subnet-2"]}
    _, done = _build(resolve_node_pools(eks_config(raw), ec2))

    def check(_: Any) -> None:
        assert not [r for r in mocks.monitor.records if r.type.startswith("aws:ec2/")]
        cluster = _inputs(mocks, "eks:index:Cluster", "kaistack-eks")
        assert (cluster["vpcId"], cluster["subnetIds"]) == ("vpc-0abc", ["subnet-1", "subnet-2"])

    return done.apply(check)


# --- refusals and helpers ---------------------------------------------------------------------------


@pulumi.runtime.test
def test_the_component_reads_no_config(mocks: MockSession, ec2: Any) -> None:
    """aws:region is the load path's rule (tests/eks/test_load_region.py): the component uses the model's region."""
    mocks.set_config({}, {"aws:region": "eu-west-1"})
    cluster, done = _build(resolve_node_pools(stack("staging"), ec2))

    def check(args: Any) -> None:
        exec_args = json.loads(args[1])["users"][0]["user"]["exec"]["args"]
        assert exec_args[:2] == ["--region", REGION]

    return pulumi.Output.all(done, cluster.kubeconfig).apply(check)


@pulumi.runtime.test
def test_unresolved_pools_are_refused(mocks: MockSession, no_aws: None) -> None:
    with pytest.raises(pulumi.RunError, match=r"not resolved \(kaistack:cluster\.nodePools\[0\]\)"):
        EksCluster("kaistack", eks_config())


def test_kubeconfig_with_region_keeps_an_existing_region() -> None:
    doc = {"users": [{"user": {"exec": {"command": "aws", "args": ["--region", "eu-west-1", "eks", "get-token"]}}}]}
    assert json.loads(kubeconfig_with_region(json.dumps(doc), REGION)) == doc


@pytest.mark.parametrize(
    ("zones", "expected_public", "expected_private"),
    [
        (2, ["10.0.0.0/18", "10.0.64.0/18"], ["10.0.128.0/18", "10.0.192.0/18"]),
        (3, ["10.0.0.0/19", "10.0.32.0/19", "10.0.64.0/19"], ["10.0.96.0/19", "10.0.128.0/19", "10.0.160.0/19"]),
    ],
)
def test_subnet_cidrs_do_not_overlap(zones: int, expected_public: list[str], expected_private: list[str]) -> None:
    assert subnet_cidrs("10.0.0.0/16", zones) == (expected_public, expected_private)


@pytest.mark.parametrize("name", ["staging", "prod"])
def test_shipped_eks_stacks_pin_their_kubernetes_version(name: str) -> None:
    """A default only for new stacks: EKS refuses a control-plane update of more than one minor version, so a
    running stack whose version came from kaistack's default would break on the next `pulumi up` after it moved."""
    raw = yaml.safe_load((PROJECT_DIR / f"Pulumi.{name}.yaml").read_text())["config"]["kaistack:cluster"]
    assert "version" in raw["eks"]


def test_a_new_stack_gets_a_version_in_eks_standard_support() -> None:
    assert EksSettings(region="us-west-2").version == "1.35"  # standard support until 2027-03-27 (versions.py)


# --- who may use the cluster -----------------------------------------------------------------------------

CI_DEPLOY = "arn:aws:iam::123456789012:role/ci-deploy"
CI_PREVIEW = "arn:aws:iam::123456789012:role/ci-preview"


def _with_admins(*arns: str) -> Any:
    raw = eks_raw()
    raw["cluster"]["eks"]["adminPrincipals"] = list(arns)
    return eks_config(raw)


@pulumi.runtime.test
def test_admin_principals_get_cluster_admin_access_entries(mocks: MockSession, ec2: Any) -> None:
    """pulumi-eks gives admin to the cluster's creator only (bootstrapClusterCreatorAdminPermissions,
    pulumi/pulumi-eks@v4.3.0 nodejs/eks/cluster/cluster.ts): CI's other role needs its own access entry,
    with the AWS-managed AmazonEKSClusterAdminPolicy over the whole cluster."""
    _, done = _build(resolve_node_pools(_with_admins(CI_DEPLOY, CI_PREVIEW), ec2))

    def check(_: Any) -> None:
        entries = _inputs(mocks, "eks:index:Cluster", "kaistack-eks")["accessEntries"]
        admins = sorted((e for k, e in entries.items() if k.startswith("admin-")), key=lambda e: e["principalArn"])
        assert [e["principalArn"] for e in admins] == [CI_DEPLOY, CI_PREVIEW]
        for entry in admins:
            assert entry["accessPolicies"] == {
                "admin": {
                    "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy",
                    "accessScope": {"type": "cluster"},
                }
            }

    return done.apply(check)


def test_an_access_entrys_name_does_not_depend_on_the_lists_order() -> None:
    from components.eks_access import admin_access_entries

    first = admin_access_entries(_with_admins(CI_DEPLOY, CI_PREVIEW).cluster.eks)
    second = admin_access_entries(_with_admins(CI_PREVIEW, CI_DEPLOY).cluster.eks)
    assert {k: v.principal_arn for k, v in first.items()} == {k: v.principal_arn for k, v in second.items()}


@pytest.mark.parametrize(
    ("arn", "problem"),
    [
        ("arn:aws:sts::123456789012:assumed-role/ci/session", "not an IAM role or user ARN"),
        ("ci-deploy", "not an IAM role or user ARN"),
        (CI_DEPLOY + "|" + CI_DEPLOY, "not an IAM role or user ARN"),
    ],
)
def test_an_admin_principal_must_be_an_iam_role_or_user(arn: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=r"cluster\.eks\.adminPrincipals: .*" + problem):
        _with_admins(arn)


def test_an_admin_principal_is_listed_once() -> None:
    with pytest.raises(ConfigError, match="each principal once"):
        _with_admins(CI_DEPLOY, CI_DEPLOY)


@pulumi.runtime.test
def test_managed_policy_arns_start_with_the_regions_partition(mocks: MockSession, ec2: Any) -> None:
    """In China every ARN starts arn:aws-cn:, and IAM refuses an arn:aws: policy there (pulumi-eks builds its
    own policy ARNs from the partition: nodejs/eks/cluster/cluster.ts at v4.3.0)."""
    resolved = resolve_node_pools(stack("staging"), ec2)
    assert resolved.cluster.eks is not None
    china = resolved.cluster.eks.model_copy(
        update={"region": "cn-north-1", "availability_zones": ["cn-north-1a", "cn-north-1b"], "admin_principals": []}
    )
    _, done = _build(resolved.replace(cluster=resolved.cluster.replace(eks=china)))

    def check(_: Any) -> None:
        attachments = mocks.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        arns = sorted(a.inputs["policyArn"] for a in attachments)
        assert arns == [
            "arn:aws-cn:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
            "arn:aws-cn:iam::aws:policy/AmazonEKSWorkerNodePolicy",
            "arn:aws-cn:iam::aws:policy/AmazonEKS_CNI_Policy",
            "arn:aws-cn:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy",
        ]

    return done.apply(check)


def test_an_admin_principal_of_another_partition_than_the_regions_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"adminPrincipals\[0\]: .* is in partition 'aws-cn', but region 'us-west-2'"):
        _with_admins("arn:aws-cn:iam::123456789012:role/ci-deploy")


@pytest.mark.parametrize(
    ("region", "partition"),
    [
        ("us-west-2", "aws"),
        ("cn-northwest-1", "aws-cn"),
        ("us-gov-west-1", "aws-us-gov"),
        ("us-isob-east-1", "aws-iso-b"),
    ],
)
def test_a_regions_partition(region: str, partition: str) -> None:
    from kaistack.declaration.model import EksSettings

    assert EksSettings(region=region).partition == partition
