"""The cluster components, where a mutation run of components/cluster_kind.py, cluster_existing.py, cluster_eks.py,
eks_network.py, eks_addons.py and eks_access.py found behaviour no other test pinned.

The kind and nvkind create scripts are run with stub `kind`, `nvkind` and `kubectl` executables that write to stdout
and stderr as the real tools do; EKS stacks are resolved against moto first, as the program does.
"""

from __future__ import annotations

import json

import pulumi
import pytest
import yaml
from kind_stubs import run_create
from platform_testlib import PROVIDER, base_raw, inputs, named, of_type, run_program

from components.cluster_eks import EksCluster, kubeconfig_with_region
from components.cluster_kind import create_script, kind_config, kind_config_yaml, uses_nvkind
from components.eks_access import admin_access_entries
from components.eks_network import subnet_cidrs
from kaistack.declaration.model.cluster import SYSTEM_NODE_DISK_GIB, EksSettings
from kaistack.declaration.parse import parse_config

KUBECONFIG_OF_UNIT = "apiVersion: v1 # kubeconfig of unit\n"


def config_with(pools: list[dict], mode: str = "device-plugin"):
    raw = base_raw()
    raw["cluster"]["nodePools"] = pools
    raw["gpu"] = {"mode": mode}
    return parse_config(raw)


GPU_POOL = {"name": "g", "gpus": 1}


# --- the kind config -------------------------------------------------------------------------------


def test_kind_config_is_a_v1alpha4_cluster():
    """kind reads a config only as apiVersion kind.x-k8s.io/v1alpha4, kind Cluster and refuses any other
    (kubernetes-sigs/kind@v0.31.0:pkg/internal/apis/config/encoding/load.go:66-68)."""
    doc = yaml.safe_load(kind_config_yaml(config_with([GPU_POOL], mode="fake")))
    assert (doc["apiVersion"], doc["kind"]) == ("kind.x-k8s.io/v1alpha4", "Cluster")


def test_gpu_pools_are_not_wired_to_host_gpus_when_the_gpu_mode_is_none():
    """Without a GPU stack there is no device plugin to advertise the GPUs: no device mounts, no gpu.present."""
    worker = kind_config(config_with([GPU_POOL], mode="none"))["nodes"][1]
    assert "extraMounts" not in worker
    assert worker["labels"] == {"kaistack.io/node-pool": "g"}


def test_a_real_gpu_mode_without_gpu_pools_uses_plain_kind():
    """nvkind only adds GPU setup to kind; with no GPU worker the plain kind script needs no nvkind on the host."""
    config = config_with([{"name": "c", "count": 1}], mode="device-plugin")
    assert not uses_nvkind(config)
    assert "nvkind" not in create_script(config)


def test_gpu_and_cpu_pools_with_real_gpus_use_nvkind():
    config = config_with([GPU_POOL, {"name": "c", "count": 1}], mode="gpu-operator")
    assert uses_nvkind(config)


# --- the create scripts, run against stub tools --------------------------------------------------------

FAKE = config_with([GPU_POOL], mode="fake")
REAL = config_with([GPU_POOL], mode="device-plugin")


def test_a_new_kind_cluster_is_created_from_the_config_on_stdin_and_waits_for_the_control_plane(tmp_path):
    """kind's --wait defaults to 0s (kubernetes-sigs/kind@v0.31.0:pkg/cmd/kind/create/cluster/createcluster.go:81-86):
    without it `kind create` returns before the API server the next resources talk to is ready."""
    done, calls = run_create(tmp_path, FAKE)
    assert done.returncode == 0, done.stderr
    assert "kind create cluster --name unit --config - --wait 5m" in calls
    assert (tmp_path / "kind-config").read_text() == kind_config_yaml(FAKE)


def test_an_existing_kind_cluster_is_not_created_again(tmp_path):
    done, calls = run_create(tmp_path, FAKE, existing="unit\n")
    assert done.returncode == 0
    assert done.stdout == KUBECONFIG_OF_UNIT
    assert not any(c.startswith("kind create") for c in calls)


@pytest.mark.parametrize("config", [FAKE, REAL], ids=["kind", "nvkind"])
@pytest.mark.parametrize("other", ["unit-old", "my-unit", "unit2"])
def test_a_cluster_whose_name_only_contains_the_stacks_is_another_cluster(tmp_path, config, other):
    """`kind get clusters` lists one name a line: only a whole line equal to the name is this stack's cluster."""
    done, calls = run_create(tmp_path, config, existing=f"{other}\n")
    assert done.returncode == 0, done.stderr
    assert any(c.startswith(("kind create cluster --name unit", "nvkind cluster create --name unit")) for c in calls)
    assert done.stdout == KUBECONFIG_OF_UNIT


def test_a_failing_kind_get_clusters_stops_the_kind_script_before_anything_is_created(tmp_path):
    """Read as "no cluster", kind would try to create a second cluster of the same name."""
    done, calls = run_create(tmp_path, FAKE, existing="unit\n", kind_get_fails=True)
    assert done.returncode != 0
    assert calls == ["kind get clusters"]
    assert done.stdout == ""


def test_nvkinds_own_output_does_not_reach_the_kubeconfig(tmp_path):
    done, _ = run_create(tmp_path, REAL)
    assert done.returncode == 0, done.stderr
    assert done.stdout == KUBECONFIG_OF_UNIT


def test_the_runtime_class_check_of_an_existing_nvkind_cluster_does_not_reach_the_kubeconfig(tmp_path):
    done, calls = run_create(tmp_path, REAL, existing="unit\n")
    assert done.returncode == 0, done.stderr
    assert any(c.startswith("kubectl") for c in calls)
    assert done.stdout == KUBECONFIG_OF_UNIT


def test_nvkind_creates_the_cluster_from_the_kind_config_on_stdin(tmp_path):
    """The kind config (device mounts, labels, taints) is nvkind's config template."""
    done, _ = run_create(tmp_path, REAL)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "nvkind-config").read_text() == kind_config_yaml(REAL)


@pytest.mark.parametrize("nvkind_rc", [0, 1])
def test_the_nvkind_script_leaves_no_temporary_file_behind(tmp_path, nvkind_rc):
    """The config template holds the stack's node layout; it is removed on success and on failure."""
    run_create(tmp_path, REAL, nvkind_rc=nvkind_rc)
    assert list((tmp_path / "tmp").iterdir()) == []


def test_an_existing_cluster_without_the_runtime_class_is_refused_naming_it_and_how_to_delete_it(tmp_path):
    done, _ = run_create(tmp_path, REAL, existing="unit\n", kubectl_rc=1)
    assert done.returncode == 1
    assert "kind cluster unit exists but has no RuntimeClass nvidia" in done.stderr
    assert "(kind delete cluster --name unit)" in done.stderr


@pytest.mark.parametrize("missing", ["kind", "nvkind", "kubectl"])
def test_every_tool_nvkind_needs_is_checked_before_anything_runs(tmp_path, missing):
    """A missing nvkind found only after `kind get clusters` would read as a failed nvkind setup."""
    done, calls = run_create(tmp_path, REAL, tools=tuple(t for t in ("kind", "nvkind", "kubectl") if t != missing))
    assert done.returncode == 1
    assert f"kaistack: {missing} is not installed" in done.stderr
    assert calls == []


# --- the kind component ------------------------------------------------------------------------------


def test_the_kind_command_and_provider_are_children_of_a_kind_cluster_component(mocks):
    """The component's type is part of every child's URN: another type would replace the cluster."""
    run_program(mocks, base_raw())
    component = named(mocks.resources, "kaistack-cluster")
    assert component.type == "kaistack:index:KindCluster"
    assert named(mocks.resources, "kaistack-cluster-create").parent == component.urn
    assert named(mocks.resources, "kaistack-cluster-provider").parent == component.urn


def test_a_kind_cluster_deleted_outside_pulumi_does_not_wedge_the_stack(mocks):
    """`kind delete cluster` leaves the provider's objects unreachable: the provider drops them from the state
    (pulumi/pulumi-kubernetes@v4.32.0:provider/pkg/provider/provider.go:1922-1926)."""
    run_program(mocks, base_raw())
    assert inputs(named(mocks.resources, "kaistack-cluster-provider"))["deleteUnreachable"] == "true"


# --- EKS: a stack with declared pool facts, run without AWS credentials ---------------------------------

ZONES = ["us-west-2a", "us-west-2b"]
L4_POOL = {
    "name": "l4",
    "instanceType": "g6.xlarge",
    "count": 2,
    "gpus": 1,
    "gpuProduct": "NVIDIA-L4",
    "gpuMemoryMiB": 22888,
    "cpu": "3920m",
    "memory": "15391Mi",
    "pods": 58,
}
CPU_POOL = {
    "name": "cpu",
    "instanceType": "m6i.xlarge",
    "count": 1,
    "gpus": 0,
    "cpu": "3920m",
    "memory": "15391Mi",
    "pods": 58,
}


def eks_raw(pools=(L4_POOL,), mode="gpu-operator", **eks):
    raw = base_raw()
    raw["cluster"] = {
        "provider": "eks",
        "name": "kaistack-test",
        "eks": {"region": "us-west-2", "availabilityZones": ZONES, **eks},
        "nodePools": [dict(p) for p in pools],
    }
    raw["gpu"] = {"mode": mode}
    return raw


def eks_stack(mocks, pools=(L4_POOL,), mode="gpu-operator", **eks):
    run_program(mocks, eks_raw(pools, mode, **eks))
    return mocks.resources


def one(resources, type_: str, name: str):
    """The resource of that type named kaistack-cluster-<name>."""
    matches = [r for r in of_type(resources, type_) if r.name == f"kaistack-cluster-{name}"]
    assert len(matches) == 1, (type_, name, [r.name for r in of_type(resources, type_)])
    return matches[0]


SUBNET = "aws:ec2/subnet:Subnet"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
ASSOCIATION = "aws:ec2/routeTableAssociation:RouteTableAssociation"
NAT = "aws:ec2/natGateway:NatGateway"
IGW = "aws:ec2/internetGateway:InternetGateway"
NODE_GROUP = "eks:index:ManagedNodeGroup"
ADDON = "aws:eks/addon:Addon"


def mock_id(resource) -> str:
    return f"{resource.name}-id"  # the id the mock engine gives a resource


def test_public_subnets_route_to_the_internet_and_private_ones_through_the_nat_gateway(mocks):
    resources = eks_stack(mocks)
    igw, nat = one(resources, IGW, "igw"), one(resources, NAT, "nat")
    assert inputs(one(resources, ROUTE_TABLE, "public"))["routes"] == [
        {"cidrBlock": "0.0.0.0/0", "gatewayId": mock_id(igw)}
    ]
    assert inputs(one(resources, ROUTE_TABLE, "private"))["routes"] == [
        {"cidrBlock": "0.0.0.0/0", "natGatewayId": mock_id(nat)}
    ]
    routed = {inputs(a)["subnetId"]: inputs(a)["routeTableId"] for a in of_type(resources, ASSOCIATION)}
    assert routed == {
        mock_id(one(resources, SUBNET, f"{tier}-{zone}")): mock_id(one(resources, ROUTE_TABLE, tier))
        for tier in ("public", "private")
        for zone in ZONES
    }


def test_the_nat_gateway_sits_in_a_public_subnet_once_the_internet_gateway_exists(mocks):
    """A NAT gateway reaches the internet through its subnet's internet gateway: created before the gateway is
    attached, AWS leaves it failed."""
    resources = eks_stack(mocks)
    nat = one(resources, NAT, "nat")
    assert inputs(nat)["subnetId"] == mock_id(one(resources, SUBNET, f"public-{ZONES[0]}"))
    assert one(resources, IGW, "igw").urn in nat.dependencies
    assert inputs(one(resources, "aws:ec2/eip:Eip", "nat"))["domain"] == "vpc"


def test_each_subnet_takes_its_zones_block_of_the_vpc_and_its_tiers_load_balancer_tag(mocks):
    """Subnet discovery for load balancers: kubernetes.io/cluster/<name> on every subnet, role/elb on public ones,
    role/internal-elb on private ones (EKS user guide, "Subnet requirements and considerations")."""
    resources = eks_stack(mocks, vpcCidr="10.20.0.0/16")
    public, private = subnet_cidrs("10.20.0.0/16", len(ZONES))
    for tier, blocks, role in (("public", public, "elb"), ("private", private, "internal-elb")):
        for zone, block in zip(ZONES, blocks, strict=True):
            subnet = inputs(one(resources, SUBNET, f"{tier}-{zone}"))
            assert (subnet["cidrBlock"], subnet["availabilityZone"]) == (block, zone)
            assert subnet["tags"] == {
                "kaistack.io/cluster": "kaistack-test",
                "kaistack.io/managed-by": "pulumi",
                "kubernetes.io/cluster/kaistack-test": "shared",
                "Name": f"kaistack-test-{tier}-{zone}",
                f"kubernetes.io/role/{role}": "1",
            }


def test_with_private_nodes_the_public_subnets_give_no_public_ips(mocks):
    resources = eks_stack(mocks)
    assert [inputs(one(resources, SUBNET, f"public-{z}")).get("mapPublicIpOnLaunch") for z in ZONES] == [False] * 2


def test_the_new_vpc_resolves_private_dns_names_and_is_named_for_the_cluster(mocks):
    """EKS nodes register under their private DNS names, which need both VPC DNS attributes."""
    vpc = inputs(one(eks_stack(mocks, vpcCidr="10.20.0.0/16"), "aws:ec2/vpc:Vpc", "vpc"))
    assert (vpc["cidrBlock"], vpc["enableDnsHostnames"], vpc["enableDnsSupport"]) == ("10.20.0.0/16", True, True)
    assert vpc["tags"]["Name"] == "kaistack-test"


def test_the_control_plane_and_every_node_group_wait_for_every_subnets_routes(mocks):
    """Nodes that boot before their subnet is routed cannot reach EKS and never join."""
    resources = eks_stack(mocks, pools=(L4_POOL, CPU_POOL))
    associations = {a.urn for a in of_type(resources, ASSOCIATION)}
    assert len(associations) == 2 * len(ZONES)
    waiting = [one(resources, "eks:index:Cluster", "eks"), *of_type(resources, NODE_GROUP)]
    assert len(waiting) == 4
    for resource in waiting:
        assert associations <= set(resource.dependencies), resource.name


def test_every_node_group_waits_for_the_node_roles_policies(mocks):
    """Instances that start before their role may pull images and run the CNI cannot join the cluster."""
    resources = eks_stack(mocks, pools=(L4_POOL, CPU_POOL))
    attachments = {
        a.urn for a in of_type(resources, "aws:iam/rolePolicyAttachment:RolePolicyAttachment") if "-node-" in a.name
    }
    assert len(attachments) == 3
    for group in of_type(resources, NODE_GROUP):
        assert attachments <= set(group.dependencies), group.name


def test_the_node_role_is_assumed_by_ec2_instances(mocks):
    """IAM refuses a policy document with an element it does not know (IAM user guide, "IAM JSON policy element
    reference"); 2012-10-17 is the current policy language version."""
    policy = json.loads(inputs(one(eks_stack(mocks), "aws:iam/role:Role", "node-role"))["assumeRolePolicy"])
    assert policy == {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}],
    }


def test_a_cpu_pool_on_eks_runs_the_standard_ami_with_the_system_disk(mocks):
    """AL2023_x86_64_STANDARD: the EKS-optimized Amazon Linux 2023 AMI without NVIDIA drivers (EKS API reference,
    Nodegroup amiType)."""
    group = inputs(one(eks_stack(mocks, pools=(L4_POOL, CPU_POOL), gpuNodeDiskGiB=300), NODE_GROUP, "cpu"))
    assert group["amiType"] == "AL2023_x86_64_STANDARD"
    assert group["diskSize"] == SYSTEM_NODE_DISK_GIB
    assert group["labels"] == {"kaistack.io/node-pool": "cpu"}
    assert group["taints"] == []


def test_a_gpu_pool_on_eks_gets_the_declared_gpu_disk(mocks):
    assert inputs(one(eks_stack(mocks, gpuNodeDiskGiB=300), NODE_GROUP, "l4"))["diskSize"] == 300


def test_node_groups_are_tagged_with_the_cluster_and_their_pool(mocks):
    resources = eks_stack(mocks)
    common = {"kaistack.io/cluster": "kaistack-test", "kaistack.io/managed-by": "pulumi"}
    assert inputs(one(resources, NODE_GROUP, "l4"))["tags"] == {**common, "kaistack.io/node-pool": "l4"}
    assert inputs(one(resources, NODE_GROUP, "system"))["tags"] == {**common, "kaistack.io/node-pool": "system"}


def test_the_system_node_group_takes_the_node_subnets(mocks):
    resources = eks_stack(mocks)
    private = sorted(mock_id(one(resources, SUBNET, f"private-{z}")) for z in ZONES)
    assert sorted(inputs(one(resources, NODE_GROUP, "system"))["subnetIds"]) == private
    assert inputs(one(resources, NODE_GROUP, "system"))["diskSize"] == SYSTEM_NODE_DISK_GIB


def test_the_eks_kubernetes_provider_waits_for_every_node_group_and_add_on(mocks):
    """Helm releases need nodes to run on, and vCluster's volume needs the EBS CSI driver."""
    resources = eks_stack(mocks, pools=(L4_POOL, CPU_POOL))
    waited = {r.urn for r in [*of_type(resources, NODE_GROUP), *of_type(resources, ADDON)]}
    assert len(waited) == 5
    assert waited <= set(one(resources, PROVIDER, "k8s").dependencies)


def test_the_default_storage_class_makes_encrypted_gp3_volumes_in_the_pods_zone(mocks):
    resources = eks_stack(mocks)
    storage = one(resources, "kubernetes:storage.k8s.io/v1:StorageClass", "gp3")
    assert {k: v for k, v in inputs(storage).items() if k not in ("apiVersion", "kind", "metadata", "provisioner")} == {
        "parameters": {"type": "gp3", "encrypted": "true"},
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowVolumeExpansion": True,
    }
    assert inputs(storage)["metadata"]["name"] == "gp3"
    assert storage.provider.startswith(one(resources, PROVIDER, "k8s").urn + "::")


def test_the_nvidia_runtime_class_is_created_through_the_eks_provider(mocks):
    resources = eks_stack(mocks, mode="device-plugin")
    runtime_class = one(resources, "kubernetes:node.k8s.io/v1:RuntimeClass", "nvidia")
    assert runtime_class.provider.startswith(one(resources, PROVIDER, "k8s").urn + "::")


def test_the_eks_add_ons_wait_for_the_cluster_and_its_nodes(mocks):
    """An add-on's pods need nodes: EKS reports an add-on created before them as degraded."""
    resources = eks_stack(mocks, pools=(L4_POOL, CPU_POOL))
    needed = {one(resources, "eks:index:Cluster", "eks").urn, *(g.urn for g in of_type(resources, NODE_GROUP))}
    for addon in of_type(resources, ADDON):
        assert needed <= set(addon.dependencies), addon.name


def test_the_ebs_csi_driver_waits_for_the_pod_identity_agent_and_its_roles_policy(mocks):
    """The driver's controller gets its credentials from the Pod Identity agent, with the role's permissions."""
    resources = eks_stack(mocks)
    driver = one(resources, ADDON, "ebs-csi")
    agent = one(resources, ADDON, "pod-identity")
    policy = one(resources, "aws:iam/rolePolicyAttachment:RolePolicyAttachment", "ebs-csi")
    assert {agent.urn, policy.urn} <= set(driver.dependencies)
    association = inputs(driver)["podIdentityAssociations"]
    # the mock engine's ARN of the role kaistack-cluster-ebs-csi
    assert association == [
        {
            "roleArn": "arn:aws:iam::123456789012:role/kaistack-cluster-ebs-csi",
            "serviceAccount": "ebs-csi-controller-sa",
        }
    ]


def test_the_ebs_csi_role_is_assumed_through_eks_pod_identity(mocks):
    """EKS Pod Identity assumes a role with sts:AssumeRole and sts:TagSession from pods.eks.amazonaws.com
    (EKS user guide, "Create an IAM role for EKS Pod Identity")."""
    role = inputs(one(eks_stack(mocks), "aws:iam/role:Role", "ebs-csi"))
    assert json.loads(role["assumeRolePolicy"]) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
            }
        ],
    }


def test_the_eks_component_refuses_a_new_vpc_in_one_zone_before_registering_anything(mocks):
    """EKS needs subnets in at least two zones (EKS user guide, "VPC and subnet requirements"); the model refuses
    such a stack, and the component does not rely on it."""
    config = parse_config(eks_raw())
    assert config.cluster.eks is not None
    one_zone = config.cluster.eks.model_copy(update={"availability_zones": ["us-west-2a"]})
    with pytest.raises(pulumi.RunError, match=r"availabilityZones: a new VPC needs 2 or more zones"):
        # model_copy: past the model's own check
        EksCluster(
            "kaistack", config.model_copy(update={"cluster": config.cluster.model_copy(update={"eks": one_zone})})
        )
    assert mocks.resources == []


def test_an_existing_vpcs_subnets_carry_every_node_group(mocks):
    resources = eks_stack(mocks, pools=(L4_POOL, CPU_POOL), vpcId="vpc-0abc", subnetIds=["subnet-1", "subnet-2"])
    for group in of_type(resources, NODE_GROUP):
        assert inputs(group)["subnetIds"] == ["subnet-1", "subnet-2"], group.name


# --- kubeconfig_with_region ---------------------------------------------------------------------------


def test_kubeconfig_with_region_adds_the_region_to_an_aws_exec_without_arguments():
    doc = {"users": [{"name": "u", "user": {"exec": {"command": "aws"}}}]}
    exec_ = json.loads(kubeconfig_with_region(doc, "us-west-2"))["users"][0]["user"]["exec"]
    assert exec_["args"] == ["--region", "us-west-2"]


def test_kubeconfig_with_region_leaves_other_users_alone():
    doc = {
        "users": [
            {"name": "token", "user": {"token": "t"}},
            {"name": "iam", "user": {"exec": {"command": "aws-iam-authenticator", "args": ["token", "-i", "c"]}}},
            {"name": "empty", "user": None},
        ]
    }
    assert json.loads(kubeconfig_with_region(json.dumps(doc), "us-west-2")) == doc


def test_kubeconfig_with_region_reads_a_kubeconfig_without_users():
    assert json.loads(kubeconfig_with_region({"users": None, "clusters": []}, "us-west-2")) == {
        "users": None,
        "clusters": [],
    }


def test_every_taggable_aws_resource_names_its_cluster_and_owner(mocks):
    """The tags are how a shared AWS account tells which stack owns (and pays for) a resource."""
    resources = eks_stack(mocks)
    untaggable = ("aws:ec2/routeTableAssociation:", "aws:iam/rolePolicyAttachment:")
    taggable = [r for r in resources if r.type.startswith(("aws:", "eks:")) and not r.type.startswith(untaggable)]
    assert {r.type for r in taggable} >= {
        "aws:ec2/vpc:Vpc",
        IGW,
        ROUTE_TABLE,
        SUBNET,
        "aws:ec2/eip:Eip",
        NAT,
        "aws:iam/role:Role",
        ADDON,
        "eks:index:Cluster",
        NODE_GROUP,
    }
    for resource in taggable:
        tags = inputs(resource).get("tags", {})
        assert {k: tags.get(k) for k in ("kaistack.io/cluster", "kaistack.io/managed-by")} == {
            "kaistack.io/cluster": "kaistack-test",
            "kaistack.io/managed-by": "pulumi",
        }, (resource.type, resource.name)


@pytest.mark.parametrize(("type_", "name"), [(ROUTE_TABLE, "public"), (ROUTE_TABLE, "private"), (NAT, "nat")])
def test_route_tables_and_the_nat_gateway_are_named_for_the_cluster(mocks, type_, name):
    assert inputs(one(eks_stack(mocks), type_, name))["tags"]["Name"] == f"kaistack-test-{name}"


# --- an existing cluster ------------------------------------------------------------------------------


def existing_raw(**existing) -> dict:
    raw = base_raw()
    raw["cluster"] = {"provider": "existing", "nodePools": [{"name": "gpu", "gpus": 1}], "existing": existing}
    return raw


def test_the_existing_clusters_provider_is_a_child_of_its_component(mocks):
    run_program(mocks, existing_raw(context="lab-admin"))
    component = named(mocks.resources, "kaistack-cluster")
    assert component.type == "kaistack:index:ExistingCluster"
    assert named(mocks.resources, "kaistack-cluster-provider").parent == component.urn


def test_the_exported_context_kubeconfig_is_a_v1_config_kubectl_reads(mocks):
    """kubectl decodes each file of KUBECONFIG as clientcmd's v1 Config, refusing another apiVersion or kind
    (kubernetes/client-go@v0.35.7:tools/clientcmd/loader.go:436-446)."""
    program = run_program(mocks, existing_raw(context="lab-admin"))
    exported = yaml.safe_load(mocks.loop.run_until_complete(program["platform"].kubeconfig.future()))
    assert (exported["apiVersion"], exported["kind"], exported["current-context"]) == ("v1", "Config", "lab-admin")


def test_an_empty_kubeconfig_next_to_a_context_selects_the_context(mocks):
    program = run_program(mocks, existing_raw(kubeconfig="", context="lab-admin"))
    assert inputs(named(mocks.resources, "kaistack-cluster-provider")) == {"context": "lab-admin"}
    exported = yaml.safe_load(mocks.loop.run_until_complete(program["platform"].kubeconfig.future()))
    assert exported["current-context"] == "lab-admin"


def test_an_admin_principals_access_entry_keeps_the_name_earlier_releases_gave_it():
    """pulumi-eks names the AccessEntry resource after the key (pulumi/pulumi-eks@v4.3.0:
    nodejs/eks/cluster/authenticationMode.ts:184-186): a new key replaces the entry, creating the new one first,
    and EKS refuses a second access entry for the same principal."""
    settings = EksSettings(region="us-west-2", admin_principals=["arn:aws:iam::123456789012:role/ci-deploy"])
    assert list(admin_access_entries(settings)) == ["admin-599d5ba7a2"]


def test_the_internet_gateway_is_attached_to_the_new_vpc(mocks):
    resources = eks_stack(mocks)
    assert inputs(one(resources, IGW, "igw"))["vpcId"] == mock_id(one(resources, "aws:ec2/vpc:Vpc", "vpc"))


def test_a_protected_stack_protects_every_part_of_its_network_under_the_cluster_component(mocks):
    """The NAT gateway's Elastic IP included: released, the gateway it belongs to stops working."""
    resources = eks_stack(mocks, protect=True)
    component = named(resources, "kaistack-cluster").urn
    network = [r for r in resources if r.type.startswith("aws:ec2/")]
    assert {r.type for r in network} >= {"aws:ec2/eip:Eip", NAT, IGW, SUBNET, ROUTE_TABLE, ASSOCIATION}
    for resource in network:
        assert (resource.parent, resource.protect) == (component, True), (resource.type, resource.name)


def test_an_empty_eks_pool_keeps_a_node_group_that_may_grow_to_one_node(mocks):
    """EKS requires a node group's maxSize to be at least 1 (EKS API reference, NodegroupScalingConfig)."""
    group = inputs(one(eks_stack(mocks, pools=(L4_POOL, dict(CPU_POOL, count=0))), NODE_GROUP, "cpu"))
    assert group["scalingConfig"] == {"minSize": 0, "desiredSize": 0, "maxSize": 1}


def test_eks_node_groups_spell_every_taint_effect_as_the_eks_api_does(mocks):
    """EKS's NodegroupTaint effect is NO_SCHEDULE, NO_EXECUTE or PREFER_NO_SCHEDULE (EKS API reference, Taint)."""
    taints = [
        {"key": "a", "value": "1", "effect": "NoSchedule"},
        {"key": "b", "value": "2", "effect": "NoExecute"},
        {"key": "c", "value": "3", "effect": "PreferNoSchedule"},
    ]
    group = inputs(one(eks_stack(mocks, pools=(L4_POOL, dict(CPU_POOL, taints=taints))), NODE_GROUP, "cpu"))
    assert group["taints"] == [
        {"key": "a", "value": "1", "effect": "NO_SCHEDULE"},
        {"key": "b", "value": "2", "effect": "NO_EXECUTE"},
        {"key": "c", "value": "3", "effect": "PREFER_NO_SCHEDULE"},
    ]


@pytest.mark.parametrize("missing", ["gpuProduct", "gpuMemoryMiB"])
def test_the_eks_component_refuses_a_gpu_pool_without_its_gpu_facts(mocks, missing):
    """The node labels KAI and the placement checker read come from these facts."""
    pool = {k: v for k, v in L4_POOL.items() if k != missing}
    with pytest.raises(pulumi.RunError, match=r"EKS node pools not resolved \(kaistack:cluster\.nodePools\[0\]\)"):
        EksCluster("kaistack", parse_config(eks_raw(pools=(pool,))))
    assert mocks.resources == []


def test_the_eks_component_refuses_a_pool_whose_gpu_count_is_unknown(mocks):
    pool = {k: v for k, v in L4_POOL.items() if k not in ("gpus", "gpuProduct", "gpuMemoryMiB")}
    with pytest.raises(pulumi.RunError, match=r"EKS node pools not resolved \(kaistack:cluster\.nodePools\[0\]\)"):
        EksCluster("kaistack", parse_config(eks_raw(pools=(pool,))))


def test_each_route_table_association_keeps_its_subnets_name(mocks):
    """A renamed association is replaced, the new one created first, and AWS refuses a second route table
    association for a subnet: the names stay those earlier releases gave them."""
    resources = eks_stack(mocks)
    names = {a.name: inputs(a)["subnetId"] for a in of_type(resources, ASSOCIATION)}
    assert names == {s.name: mock_id(s) for s in of_type(resources, SUBNET)}


def test_the_eks_component_refuses_a_stack_of_another_provider(mocks):
    with pytest.raises(ValueError, match=r"EksCluster needs kaistack:cluster\.provider 'eks'"):
        EksCluster("kaistack", parse_config(base_raw()))
    assert mocks.resources == []


def test_the_node_roles_policy_attachments_keep_their_names(mocks):
    """A renamed attachment is replaced: the new one attaches the policy again (a no-op), then deleting the old one
    detaches it, and the nodes lose the policy."""
    attachments = {
        a.name: inputs(a)["policyArn"]
        for a in of_type(eks_stack(mocks), "aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if "-node-" in a.name
    }
    assert attachments == {
        "kaistack-cluster-node-worker": "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "kaistack-cluster-node-cni": "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
        "kaistack-cluster-node-ecr": "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
    }
