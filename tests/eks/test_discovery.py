"""kaistack.stack.eks against moto's EC2 (its real instance-type and offering data), never real AWS."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import moto
import pytest
from botocore.stub import Stubber
from eks_testlib import DECLARED_L4, REGION, eks_config, eks_raw, stack

from kaistack.declaration.model import Taint
from kaistack.declaration.parse import ConfigError, parse_config
from kaistack.stack import ec2 as ec2_module
from kaistack.stack.eks import GPU_TAINT, discover, resolve_node_pools


def _pool(config: Any, index: int = 0) -> Any:
    return config.cluster.node_pools[index]


def _problems(excinfo: pytest.ExceptionInfo[ConfigError]) -> list[str]:
    return excinfo.value.problems


# --- discovered values ------------------------------------------------------------------------------


def test_g6_xlarge_gpu_facts_come_from_describe_instance_types(ec2: Any) -> None:
    """An undeclared g6.xlarge pool gets 1 NVIDIA L4 with 22888 MiB, as EC2 reports it."""
    pool = _pool(resolve_node_pools(eks_config(), ec2))
    assert (pool.gpus, pool.gpu_product, pool.gpu_memory_mi_b) == (1, "NVIDIA-L4", 22888)


def test_p5_48xlarge_gpu_facts_come_from_describe_instance_types(ec2: Any) -> None:
    pool = _pool(resolve_node_pools(eks_config(instanceType="p5.48xlarge", count=1), ec2))
    assert (pool.gpus, pool.gpu_product, pool.gpu_memory_mi_b) == (8, "NVIDIA-H100", 81920)


def test_cpu_memory_pods_are_the_eks_ami_allocatable_estimate(ec2: Any) -> None:
    """4 vCPU / 16 GiB / 4 ENIs x 15 IPs: 80m and 11x58+255 MiB kube-reserved, 100Mi eviction, 58 pods."""
    pool = _pool(resolve_node_pools(eks_config(), ec2))
    assert (str(pool.cpu), str(pool.memory), pool.pods) == ("3920m", "15391Mi", 58)


def test_gpu_pools_get_the_labels_kai_reads_and_the_gpu_taint(ec2: Any) -> None:
    """KAI's gpu-memory sharing needs nvidia.com/gpu.memory before GFD has run on the node."""
    pool = _pool(resolve_node_pools(eks_config(labels={"team": "ml"}), ec2))
    assert pool.labels == {
        "team": "ml",
        "nvidia.com/gpu.product": "NVIDIA-L4",
        "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.memory": "22888",
    }
    assert pool.taints == [GPU_TAINT]


def test_a_declared_gpu_taint_is_not_duplicated(ec2: Any) -> None:
    taint = {"key": "nvidia.com/gpu", "effect": "NoExecute"}
    pool = _pool(resolve_node_pools(eks_config(taints=[taint]), ec2))
    assert pool.taints == [Taint(key="nvidia.com/gpu", effect="NoExecute")]


def test_cpu_only_pool_gets_no_gpu_labels_or_taint(ec2: Any) -> None:
    pool = _pool(resolve_node_pools(eks_config(instanceType="m6i.2xlarge"), ec2))
    assert (pool.gpus, pool.gpu_product, pool.gpu_memory_mi_b) == (0, None, None)
    assert (pool.labels, pool.taints) == ({}, [])


def test_declared_values_that_agree_with_aws_are_kept(ec2: Any) -> None:
    """GFD's longer product name and the driver's MiB figure (within 5%) name the same GPU. Both are what NVML
    reported on a real H100 (tests/data/nvml/h100.json, test_local_gpus_recorded.py)."""
    config = eks_config(
        instanceType="p5.48xlarge", count=1, gpus=8, gpuProduct="NVIDIA-H100-80GB-HBM3", gpuMemoryMiB=81559, cpu="96"
    )
    pool = _pool(resolve_node_pools(config, ec2))
    facts = (pool.gpus, pool.gpu_product, pool.gpu_memory_mi_b, str(pool.cpu))
    assert facts == (8, "NVIDIA-H100-80GB-HBM3", 81559, "96")


def test_resolving_twice_gives_the_same_config(ec2: Any) -> None:
    once = resolve_node_pools(eks_config(), ec2)
    assert resolve_node_pools(once, ec2) == once


def test_non_eks_stacks_are_returned_unchanged(ec2: Any) -> None:
    raw = eks_raw(gpus=1)
    raw["cluster"] = {"provider": "kind", "nodePools": [{"name": "gpu", "gpus": 2}]}
    raw["gpu"] = {"mode": "fake"}
    config = eks_config(raw)
    assert resolve_node_pools(config, ec2) is config


# --- errors -----------------------------------------------------------------------------------------


def test_unknown_instance_type_names_the_key_and_the_type(ec2: Any) -> None:
    with pytest.raises(ConfigError, match=r"nodePools\[0\]\.instanceType: 'g6\.huge' is not an EC2 instance type"):
        resolve_node_pools(eks_config(instanceType="g6.huge"), ec2)


def test_unknown_system_node_group_type_names_its_key(ec2: Any) -> None:
    raw = eks_raw()
    raw["cluster"]["eks"]["systemNodeGroup"] = {"instanceType": "m99.large"}
    with pytest.raises(ConfigError, match=r"eks\.systemNodeGroup\.instanceType: 'm99\.large' is not an EC2"):
        resolve_node_pools(eks_config(raw), ec2)


def test_system_node_group_pods_above_what_eks_gives_is_a_contradiction(ec2: Any) -> None:
    raw = eks_raw()
    raw["cluster"]["eks"]["systemNodeGroup"] = {"instanceType": "m6i.large", "pods": 111}
    with pytest.raises(ConfigError, match=r"systemNodeGroup\.pods: declared 111 but EKS gives m6i\.large at most 29"):
        resolve_node_pools(eks_config(raw), ec2)


def test_type_not_offered_in_a_zone_names_the_zones_and_where_it_is_offered(ec2: Any) -> None:
    """moto's offerings: p5e.48xlarge only in us-west-2c."""
    with pytest.raises(ConfigError) as excinfo:
        resolve_node_pools(eks_config(instanceType="p5e.48xlarge", count=1), ec2)
    (problem,) = _problems(excinfo)
    assert problem == (
        "kaistack:cluster.nodePools[0].instanceType: p5e.48xlarge is not offered in us-west-2a, us-west-2b "
        "(kaistack:cluster.eks.availabilityZones); AWS offers it in us-west-2c"
    )


def test_a_zone_missing_from_a_partial_offering_is_named_alone(ec2: Any) -> None:
    """moto's offerings: g5.xlarge in us-west-2a/b/c, not d."""
    raw = eks_raw(instanceType="g5.xlarge")
    raw["cluster"]["eks"]["availabilityZones"] = ["us-west-2a", "us-west-2d"]
    with pytest.raises(ConfigError, match=r"g5\.xlarge is not offered in us-west-2d \(.*offers it in us-west-2a"):
        resolve_node_pools(eks_config(raw), ec2)


def test_contradicting_gpu_count_names_both_values(ec2: Any) -> None:
    with pytest.raises(ConfigError) as excinfo:
        resolve_node_pools(eks_config(gpus=4), ec2)
    assert _problems(excinfo) == [
        "kaistack:cluster.nodePools[0].gpus: declared 4 but AWS says g6.xlarge has 1 GPU (NVIDIA-L4)"
    ]


def test_contradicting_gpu_memory_names_both_values(ec2: Any) -> None:
    with pytest.raises(ConfigError, match=r"gpuMemoryMiB: declared 24576 but AWS says g6\.xlarge has 22888 MiB"):
        resolve_node_pools(eks_config(gpuMemoryMiB=24576), ec2)


def test_contradicting_gpu_product_names_both_values(ec2: Any) -> None:
    with pytest.raises(ConfigError, match=r"gpuProduct: declared 'NVIDIA-A10G' but AWS says g6\.xlarge has NVIDIA L4"):
        resolve_node_pools(eks_config(gpuProduct="NVIDIA-A10G"), ec2)


def test_gfds_own_t4_product_and_memory_are_aws_t4(ec2: Any) -> None:
    """GFD labels a T4 `Tesla-T4` (NVIDIA/cloud-native-docs gpu-operator/gpu-sharing.rst) with 15360 MiB; EC2 says
    T4 and 16384 MiB. The README tells users to declare what GFD reports, which was refused twice."""
    pool = _pool(
        resolve_node_pools(eks_config(instanceType="g4dn.xlarge", gpuProduct="Tesla-T4", gpuMemoryMiB=15360), ec2)
    )
    assert (pool.gpu_product, pool.gpu_memory_mi_b) == ("Tesla-T4", 15360)


def test_gpu_memory_far_under_awss_is_a_contradiction(ec2: Any) -> None:
    with pytest.raises(ConfigError, match=r"gpuMemoryMiB: declared 20000 but AWS says g6\.xlarge has 22888 MiB"):
        resolve_node_pools(eks_config(gpuMemoryMiB=20000), ec2)


def test_a_gpu_slice_instance_type_is_refused_not_taken_for_a_cpu_pool(ec2: Any) -> None:
    """moto's g6f.xlarge: Count 0, GpuPartitionSize 0.125 of an L4; it was planned as a CPU node."""
    with pytest.raises(ConfigError, match=r"instanceType: g6f\.xlarge gives a 0\.125 slice of one L4 GPU"):
        resolve_node_pools(eks_config(instanceType="g6f.xlarge"), ec2)


def test_gpus_declared_on_a_cpu_instance_type_is_a_contradiction(ec2: Any) -> None:
    with pytest.raises(ConfigError, match=r"gpus: declared 2 but AWS says m6i\.large has 0 GPUs"):
        resolve_node_pools(eks_config(instanceType="m6i.large", gpus=2), ec2)


def test_a_multi_card_instance_gets_the_pods_of_its_default_network_card(ec2: Any) -> None:
    """p5.48xlarge: 32 ENIs over 32 network cards, 2 on the default one, which is all the VPC CNI uses for pods:
    2 x (50 - 1) + 2 = 100 (awslabs/amazon-eks-ami@v20250103:templates/al2/runtime/max-pods-calculator.sh
    L125-127; templates/shared/runtime/eni-max-pods.txt "p5.48xlarge 100"), and 11 x 100 + 255 MiB reserved."""
    pool = _pool(resolve_node_pools(eks_config(instanceType="p5.48xlarge", count=1), ec2))
    assert (pool.pods, str(pool.memory)) == (100, "2095697Mi")


def test_pods_declared_above_what_eks_gives_is_a_contradiction(ec2: Any) -> None:
    with pytest.raises(ConfigError, match=r"pods: declared 250 but EKS gives p5\.48xlarge at most 100 pods"):
        resolve_node_pools(eks_config(instanceType="p5.48xlarge", count=1, pods=250), ec2)


def test_cpu_declared_above_the_machine_is_a_contradiction(ec2: Any) -> None:
    """The model's default cpu (8) would be wrong for a 4-vCPU g6.xlarge when written out by hand."""
    with pytest.raises(ConfigError, match=r"cpu: declared 8 but AWS says g6\.xlarge has 4 vCPUs"):
        resolve_node_pools(eks_config(cpu="8"), ec2)


def test_memory_declared_above_the_machine_is_a_contradiction(ec2: Any) -> None:
    with pytest.raises(ConfigError, match=r"memory: declared 32Gi but AWS says g6\.xlarge has 16384Mi"):
        resolve_node_pools(eks_config(memory="32Gi"), ec2)


def test_a_gpu_label_contradicting_the_facts_is_an_error(ec2: Any) -> None:
    with pytest.raises(ConfigError, match=r"labels: nvidia\.com/gpu\.count='2' contradicts"):
        resolve_node_pools(eks_config(labels={"nvidia.com/gpu.count": "2"}), ec2)


def _gpu_type(itype: str, name: str, maker: str, mib: int) -> dict[str, Any]:
    """One DescribeInstanceTypes entry with one GPU of `name`: types moto's data lacks, or with odd names."""
    return {
        "InstanceType": itype,
        "VCpuInfo": {"DefaultVCpus": 4},
        "MemoryInfo": {"SizeInMiB": 16384},
        "ProcessorInfo": {"SupportedArchitectures": ["x86_64"]},
        "GpuInfo": {"Gpus": [{"Name": name, "Manufacturer": maker, "Count": 1, "MemoryInfo": {"SizeInMiB": mib}}]},
    }


@contextmanager
def _stubbed_ec2(gpu_type: dict[str, Any]) -> Iterator[Any]:
    """An EC2 client answering for `gpu_type` (the pool) and m6i.large (the system node group), in both zones."""
    client = boto3.client("ec2", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="y")
    m6i = {"InstanceType": "m6i.large", "VCpuInfo": {"DefaultVCpus": 2}, "MemoryInfo": {"SizeInMiB": 8192}}
    itype = gpu_type["InstanceType"]
    zones = [{"InstanceType": t, "Location": f"{REGION}{z}"} for t in (itype, "m6i.large") for z in "ab"]
    with Stubber(client) as stub:
        stub.add_response("describe_instance_types", {"InstanceTypes": [gpu_type]})
        stub.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": zones[:2]})
        stub.add_response("describe_instance_types", {"InstanceTypes": [m6i]})
        stub.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": zones[2:]})
        yield client


def test_non_nvidia_gpus_are_refused() -> None:
    """g4ad carries AMD Radeon GPUs (not in moto's data: stubbed); kaistack's GPU stack needs NVIDIA."""
    with (
        _stubbed_ec2(_gpu_type("g4ad.xlarge", "Radeon Pro V520", "AMD", 8192)) as client,
        pytest.raises(ConfigError, match=r"g4ad\.xlarge has AMD GPUs; kaistack's GPU stack .* needs NVIDIA"),
    ):
        resolve_node_pools(eks_config(instanceType="g4ad.xlarge"), client)


def test_arm_instance_types_are_refused(ec2: Any) -> None:
    with pytest.raises(ConfigError, match=r"g5g\.xlarge is arm64; .*x86_64"):
        resolve_node_pools(eks_config(instanceType="g5g.xlarge"), ec2)


def test_every_problem_is_reported_at_once(ec2: Any) -> None:
    raw = eks_raw(gpus=4)
    raw["cluster"]["nodePools"].append({"name": "bad", "instanceType": "nope.large"})
    with pytest.raises(ConfigError) as excinfo:
        resolve_node_pools(eks_config(raw), ec2)
    assert [p.split(":", 2)[1] for p in _problems(excinfo)] == [
        "cluster.nodePools[0].gpus",
        "cluster.nodePools[1].instanceType",
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"instanceType": None}, r"nodePools\[0\]\.instanceType: required on EKS"),
        ({"count": 5, "maxSize": 3}, r"nodePools\[0\]\.count: 5 must lie between minSize \(5\) and maxSize \(3\)"),
        ({"count": 0, "maxSize": 0}, r"nodePools\[0\]\.maxSize: EKS node groups need maxSize >= 1"),
        # components/cluster_eks.py labels the system node group kaistack.io/node-pool=system.
        ({"name": "system"}, r"nodePools\[0\]\.name: 'system' names the EKS system node group"),
    ],
)
def test_pool_shape_problems_need_no_aws(no_aws: None, change: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve_node_pools(eks_config(**change))


def test_one_zone_is_not_enough_for_eks(no_aws: None) -> None:
    raw = eks_raw(gpus=1, gpuMemoryMiB=22888, gpuProduct="NVIDIA-L4")
    raw["cluster"]["eks"]["availabilityZones"] = ["us-west-2a"]
    with pytest.raises(ConfigError, match=r"eks\.availabilityZones: EKS needs subnets in at least 2 zones"):
        resolve_node_pools(eks_config(raw))


def test_without_zones_kaistack_picks_three_that_offer_every_type(ec2: Any) -> None:
    """g5.xlarge is not offered in us-west-2d (moto), so d is never picked for it; the pick is announced."""
    raw = eks_raw(instanceType="g5.xlarge")
    del raw["cluster"]["eks"]["availabilityZones"]
    resolved, notes = discover(eks_config(raw), ec2)
    assert resolved.cluster.eks is not None
    assert resolved.cluster.eks.availability_zones == ["us-west-2a", "us-west-2b", "us-west-2c"]
    assert any("picked us-west-2a, us-west-2b, us-west-2c. Pin them" in note for note in notes)


def test_without_zones_a_type_offered_in_one_zone_is_an_error(ec2: Any) -> None:
    raw = eks_raw(instanceType="p5e.48xlarge", count=1)
    del raw["cluster"]["eks"]["availabilityZones"]
    with pytest.raises(ConfigError, match=r"EKS needs 2 zones, but only 1 zone\(s\) of us-west-2 offer all of"):
        resolve_node_pools(eks_config(raw), ec2)


def test_without_zones_and_without_aws_the_key_is_named(no_aws: None) -> None:
    raw = eks_raw(gpus=1, gpuMemoryMiB=22888, gpuProduct="NVIDIA-L4")
    del raw["cluster"]["eks"]["availabilityZones"]
    with pytest.raises(ConfigError, match=r"kaistack:cluster\.eks\.availabilityZones: not declared and AWS cannot"):
        resolve_node_pools(eks_config(raw))


def test_zones_must_belong_to_the_region(no_aws: None) -> None:
    raw = eks_raw()
    raw["cluster"]["eks"]["availabilityZones"] = ["us-west-2a", "us-east-1b"]
    with pytest.raises(ConfigError, match=r"'us-east-1b' is not a zone of region 'us-west-2'"):
        resolve_node_pools(eks_config(raw))


def test_an_existing_vpc_needs_subnets_and_is_checked_region_wide(ec2: Any) -> None:
    raw = eks_raw(instanceType="p5e.48xlarge", count=1)
    raw["cluster"]["eks"] = {"region": REGION, "vpcId": "vpc-123", "subnetIds": ["subnet-a", "subnet-b"]}
    assert _pool(resolve_node_pools(eks_config(raw), ec2)).gpu_product == "NVIDIA-H200"
    raw["cluster"]["eks"]["subnetIds"] = ["subnet-a"]
    with pytest.raises(ConfigError, match=r"eks\.subnetIds: with an existing vpcId give at least 2 subnet ids"):
        resolve_node_pools(eks_config(raw), ec2)


# --- without AWS ------------------------------------------------------------------------------------


def test_without_credentials_declared_values_are_used(no_aws: None) -> None:
    config = eks_config(**DECLARED_L4)
    resolved, notes = discover(config)
    pool = _pool(resolved)
    assert (pool.gpus, pool.gpu_product, pool.gpu_memory_mi_b) == (1, "NVIDIA-L4", 22888)
    assert (str(pool.cpu), str(pool.memory), pool.pods) == ("3920m", "15391Mi", 58)
    assert pool.labels["nvidia.com/gpu.memory"] == "22888"
    assert pool.taints == [GPU_TAINT]
    assert any("no AWS credentials found" in note for note in notes)


def test_without_credentials_undeclared_facts_name_the_keys_to_declare(no_aws: None) -> None:
    with pytest.raises(ConfigError) as excinfo:
        resolve_node_pools(eks_config(gpus=1))
    problems = _problems(excinfo)
    assert [p.split(":")[1] for p in problems] == [
        "cluster.nodePools[0].gpuMemoryMiB",
        "cluster.nodePools[0].gpuProduct",
        "cluster.nodePools[0].cpu",
        "cluster.nodePools[0].memory",
        "cluster.nodePools[0].pods",
    ]
    assert all("not declared and AWS cannot be asked (no AWS credentials found)" in p for p in problems)
    assert "g6.xlarge" in problems[0]


def test_without_credentials_a_pool_without_gpus_declared_names_gpus(no_aws: None) -> None:
    with pytest.raises(ConfigError, match=r"kaistack:cluster\.nodePools\[0\]\.gpus: not declared"):
        resolve_node_pools(eks_config())


def test_access_denied_falls_back_to_declared_values() -> None:
    """Credentials that may not call DescribeInstanceTypes count as "AWS cannot be asked"."""
    client = boto3.client("ec2", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="y")
    with Stubber(client) as stub:
        stub.add_client_error("describe_instance_types", "UnauthorizedOperation", "not allowed")
        pool = _pool(resolve_node_pools(eks_config(**DECLARED_L4), client))
    assert pool.gpus == 1
    with Stubber(client) as stub:
        stub.add_client_error("describe_instance_types", "UnauthorizedOperation", "not allowed")
        with pytest.raises(ConfigError, match=r"gpuProduct: not declared and AWS cannot be asked \(AWS refused"):
            resolve_node_pools(eks_config(gpus=1, gpuMemoryMiB=22888), client)


@pytest.mark.parametrize(
    ("code", "status", "remedy"),
    [
        ("UnauthorizedOperation", 403, "give valid AWS credentials allowed ec2:DescribeInstanceTypes"),
        ("RequestLimitExceeded", 503, "run again when EC2 answers"),
        ("InvalidParameterCombination", 400, "run again when EC2 answers"),
    ],
)
def test_undeclared_facts_say_what_would_let_kaistack_ask_aws(code: str, status: int, remedy: str) -> None:
    """Credentials would not help an EC2 that is busy or answered oddly: the error names what would."""
    client = boto3.client("ec2", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="y")
    with Stubber(client) as stub:
        stub.add_client_error("describe_instance_types", code, "no", http_status_code=status)
        with pytest.raises(ConfigError) as excinfo:
            resolve_node_pools(eks_config(gpus=1, gpuMemoryMiB=22888), client)
    problems = _problems(excinfo)
    assert problems
    assert all(f"declare it, or {remedy}" in p for p in problems), problems
    if "credentials" not in remedy:
        assert not any("credentials" in p for p in problems), problems


def test_undeclared_zones_without_a_network_say_to_reach_ec2(monkeypatch: pytest.MonkeyPatch) -> None:
    from botocore.exceptions import EndpointConnectionError

    def unreachable(**_: Any) -> Any:
        raise EndpointConnectionError(endpoint_url="https://ec2.us-west-2.amazonaws.com/")

    client = boto3.client("ec2", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="y")
    monkeypatch.setattr(client, "describe_instance_types", unreachable)
    raw = eks_raw(**DECLARED_L4)
    raw["cluster"]["eks"].pop("availabilityZones", None)
    with pytest.raises(ConfigError) as excinfo:
        resolve_node_pools(eks_config(raw), client)
    (problem,) = _problems(excinfo)
    assert problem.startswith("kaistack:cluster.eks.availabilityZones: not declared and AWS cannot be asked")
    assert problem.endswith("or run again where EC2's endpoint can be reached (network, proxy, endpoint_url)")


def test_each_instance_type_is_asked_about_once_per_resolution(ec2: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two pools of one type cost one DescribeInstanceTypes call; nothing is kept between resolutions."""
    raw = eks_raw()
    raw["cluster"]["nodePools"].append({**raw["cluster"]["nodePools"][0], "name": "second"})
    asked: list[str] = []
    real = ec2_module.call

    def counting(method: Any, **kwargs: Any) -> Any:
        asked.extend(kwargs.get("InstanceTypes", []))
        return real(method, **kwargs)

    monkeypatch.setattr(ec2_module, "call", counting)
    resolve_node_pools(eks_config(raw), ec2)
    assert asked.count("g6.xlarge") == 1
    resolve_node_pools(eks_config(raw), ec2)
    assert asked.count("g6.xlarge") == 2


# --- the stacks -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["staging", "prod"])
def test_stack_facts_match_aws(ec2: Any, name: str) -> None:
    """The declared facts are AWS's own, so offline render/check see what online ones do."""
    config = stack(name)
    online = resolve_node_pools(config, ec2)
    for declared, resolved in zip(config.cluster.node_pools, online.cluster.node_pools, strict=True):
        for field in ("gpus", "gpu_product", "gpu_memory_mi_b", "cpu", "memory", "pods"):
            assert getattr(declared, field) == getattr(resolved, field), f"{name}: {declared.name}.{field}"


@pytest.mark.parametrize("name", ["staging", "prod"])
def test_stack_resolves_offline_to_the_same_config(no_aws: None, name: str) -> None:
    """Without credentials the declared facts are used; they give exactly what moto's AWS gives."""
    offline = resolve_node_pools(stack(name))
    with moto.mock_aws():
        client = boto3.client("ec2", region_name=REGION, aws_access_key_id="t", aws_secret_access_key="t")
        online = resolve_node_pools(stack(name), client)
    assert offline == online


# --- the system node group: where CPU-only pods run -------------------------------------------------


def test_the_system_node_groups_allocatable_comes_from_describe_instance_types(ec2: Any) -> None:
    """m6i.large, the default: 2 vCPU / 8 GiB / 3 ENIs x 10 IPs: 70m and 11x29+255 MiB kube-reserved, 29 pods."""
    system = resolve_node_pools(eks_config(), ec2).cluster.eks.system_node_group
    assert (str(system.cpu), str(system.memory), system.pods) == ("1930m", "7518Mi", 29)


def test_a_declared_system_node_group_cpu_within_the_machine_is_kept(ec2: Any) -> None:
    raw = eks_raw()
    raw["cluster"]["eks"]["systemNodeGroup"] = {"cpu": "1500m"}
    system = resolve_node_pools(eks_config(raw), ec2).cluster.eks.system_node_group
    assert (str(system.cpu), system.pods) == ("1500m", 29)


@pytest.mark.parametrize(
    ("declared", "problem"),
    [
        ({"memory": "64Gi"}, "memory: declared 64Gi but AWS says m6i.large has 8192Mi of memory"),
        ({"cpu": "4"}, "cpu: declared 4 but AWS says m6i.large has 2 vCPUs"),
        # Just above the machine: the comparisons are strict at the machine's own figures.
        ({"cpu": "2001m"}, "cpu: declared 2001m but AWS says m6i.large has 2 vCPUs"),
        ({"memory": "8193Mi"}, "memory: declared 8193Mi but AWS says m6i.large has 8192Mi of memory"),
        ({"pods": 30}, "pods: declared 30 but EKS gives m6i.large at most 29 pods (VPC CNI, default network card)"),
    ],
)
def test_a_declared_system_node_group_value_above_the_machine_names_both_values(
    ec2: Any, declared: dict[str, str], problem: str
) -> None:
    raw = eks_raw()
    raw["cluster"]["eks"]["systemNodeGroup"] = declared
    with pytest.raises(ConfigError) as excinfo:
        resolve_node_pools(eks_config(raw), ec2)
    assert _problems(excinfo) == [f"kaistack:cluster.eks.systemNodeGroup.{problem}"]


def test_without_aws_the_system_node_groups_allocatable_stays_as_declared(no_aws: None) -> None:
    config, _ = discover(eks_config(**DECLARED_L4))
    assert not config.cluster.eks.system_node_group.capacity_known


# --- a pool in fewer zones than the cluster ------------------------------------------------------------


def _three_zones(**pool: Any) -> dict[str, Any]:
    raw = eks_raw(**pool)
    raw["cluster"]["eks"]["availabilityZones"] = ["us-west-2a", "us-west-2b", "us-west-2c"]
    return raw


def test_type_offered_in_fewer_zones_than_the_cluster_suggests_the_pools_own_zones(ec2: Any) -> None:
    """moto's offerings: p5e.48xlarge only in us-west-2c; EKS refuses a node group with a subnet elsewhere."""
    with pytest.raises(ConfigError) as excinfo:
        resolve_node_pools(eks_config(_three_zones(instanceType="p5e.48xlarge", count=1)), ec2)
    assert _problems(excinfo) == [
        "kaistack:cluster.nodePools[0].instanceType: p5e.48xlarge is not offered in us-west-2a, us-west-2b "
        "(kaistack:cluster.eks.availabilityZones); AWS offers it in us-west-2c; set "
        "kaistack:cluster.nodePools[0].availabilityZones to ['us-west-2c'] to keep this pool's node group in those "
        "zones"
    ]


def test_pool_in_the_zones_that_offer_its_type_resolves(ec2: Any) -> None:
    raw = _three_zones(instanceType="p5e.48xlarge", count=1, availabilityZones=["us-west-2c"])
    resolved = resolve_node_pools(eks_config(raw), ec2)
    assert resolved.cluster.node_pools[0].availability_zones == ["us-west-2c"]
    assert resolved.cluster.node_pools[0].gpus == 8


def test_pool_zone_its_type_is_not_offered_in_names_the_pools_key(ec2: Any) -> None:
    raw = _three_zones(instanceType="p5e.48xlarge", count=1, availabilityZones=["us-west-2b", "us-west-2c"])
    with pytest.raises(ConfigError) as excinfo:
        resolve_node_pools(eks_config(raw), ec2)
    (problem,) = _problems(excinfo)
    assert problem.startswith(
        "kaistack:cluster.nodePools[0].instanceType: p5e.48xlarge is not offered in us-west-2b "
        "(kaistack:cluster.nodePools[0].availabilityZones); AWS offers it in us-west-2c"
    )


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda raw: raw["cluster"]["nodePools"][0].update(availabilityZones=["us-west-2d"]),
            "kaistack:cluster.nodePools[0].availabilityZones: 'us-west-2d' is not one of "
            "cluster.eks.availabilityZones (us-west-2a, us-west-2b, us-west-2c)",
        ),
        (
            lambda raw: (
                raw["cluster"]["nodePools"][0].update(availabilityZones=["us-west-2a"]),
                raw["cluster"]["eks"].pop("availabilityZones"),
            ),
            "kaistack:cluster.nodePools[0].availabilityZones: list cluster.eks.availabilityZones too",
        ),
        (
            lambda raw: (
                raw["cluster"]["nodePools"][0].update(availabilityZones=["us-west-2a"]),
                raw["cluster"]["eks"].update(vpcId="vpc-0abc", subnetIds=["subnet-1", "subnet-2"]),
            ),
            "kaistack:cluster.nodePools[0].availabilityZones: only with the VPC kaistack creates",
        ),
        (
            lambda raw: raw["cluster"]["nodePools"][0].update(availabilityZones=["us-west-2a", "us-west-2a"]),
            "kaistack:cluster.nodePools[0].availabilityZones: each zone once",
        ),
    ],
    ids=["not-a-cluster-zone", "cluster-zones-unset", "existing-vpc", "repeated"],
)
def test_pool_zones_must_be_the_clusters_own(no_aws: None, change: Any, expected: str) -> None:
    raw = _three_zones(gpus=1, gpuMemoryMiB=22888, gpuProduct="NVIDIA-L4")
    change(raw)
    with pytest.raises(ConfigError, match=re.escape(expected)):
        eks_config(raw)


def test_pool_zones_outside_eks_are_refused() -> None:
    raw = {"cluster": {"provider": "kind", "nodePools": [{"name": "gpu", "gpus": 1, "availabilityZones": ["a"]}]}}
    with pytest.raises(ConfigError, match=r"node pool availabilityZones applies to EKS only; set on gpu"):
        parse_config(raw)


SECRET = "s3cr3t-XYZ"


def test_a_failing_credential_process_falls_back_without_quoting_its_output(
    no_aws: None, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """botocore's CredentialRetrievalError carries the process's stderr whole (botocore 1.44.8 credentials.py,
    ProcessProvider._retrieve_credentials_using): the declared facts are used and the note names only the class."""
    config = tmp_path / "aws-config"
    config.write_text(f"[default]\ncredential_process = sh -c \"echo 'client_secret={SECRET}' >&2; exit 1\"\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    raw = eks_raw(gpus=1, gpuMemoryMiB=22888, gpuProduct="NVIDIA-L4", cpu=4, memory="16Gi", pods=58)
    _resolved, notes = discover(eks_config(raw))
    assert any("CredentialRetrievalError; its message is not shown" in note for note in notes), notes
    assert SECRET not in "\n".join(notes)


def test_a_credential_error_inside_a_call_is_not_quoted() -> None:
    from botocore.exceptions import CredentialRetrievalError, EndpointConnectionError

    def refresh_fails() -> None:
        raise CredentialRetrievalError(provider="custom-process", error_msg=f"client_secret={SECRET}")

    with pytest.raises(ec2_module.AwsUnavailable, match="CredentialRetrievalError") as err:
        ec2_module.call(refresh_fails)
    assert SECRET not in str(err.value)

    def unreachable() -> None:
        raise EndpointConnectionError(endpoint_url="https://ec2.us-west-2.amazonaws.com/")

    with pytest.raises(ec2_module.AwsUnavailable, match=r"AWS is unreachable \(.*https://ec2\.us-west-2"):
        ec2_module.call(unreachable)


def _declared_only() -> Any:
    return eks_config(eks_raw(gpus=1, gpuMemoryMiB=22888, gpuProduct="NVIDIA-L4", cpu=4, memory="16Gi", pods=58))


def test_a_missing_aws_profile_falls_back_to_the_declared_facts(no_aws: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore raises ProfileNotFound when the session is built, before any call (it was an internal error)."""
    monkeypatch.setenv("AWS_PROFILE", "nope")
    _resolved, notes = discover(_declared_only())
    assert any("AWS settings could not be used (The config profile (nope) could not be found)" in n for n in notes)


def test_a_credential_process_that_prints_no_json_falls_back_without_quoting_it(
    no_aws: None, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """botocore json.loads the process's stdout unguarded (credentials.py ProcessProvider): a JSONDecodeError."""
    config = tmp_path / "aws-config"
    config.write_text(f"[default]\ncredential_process = sh -c \"echo 'not json {SECRET}'\"\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    _resolved, notes = discover(_declared_only())
    assert any("AWS credentials could not be read (JSONDecodeError; not shown)" in n for n in notes), notes
    assert SECRET not in "\n".join(notes)


def _ssl_error() -> Exception:
    from botocore.exceptions import SSLError

    return SSLError(endpoint_url="https://ec2.us-west-2.amazonaws.com/", error="CERTIFICATE_VERIFY_FAILED")


def _read_timeout() -> Exception:
    from botocore.exceptions import ReadTimeoutError

    return ReadTimeoutError(endpoint_url="https://ec2.us-west-2.amazonaws.com/ CERTIFICATE_VERIFY_FAILED")


@pytest.mark.parametrize("make", [_ssl_error, _read_timeout])
def test_network_errors_are_quoted_as_unreachable(make: Any) -> None:
    def fails() -> None:
        raise make()

    with pytest.raises(ec2_module.AwsUnavailable, match=r"AWS is unreachable \(.*CERTIFICATE_VERIFY_FAILED"):
        ec2_module.call(fails)


def test_an_http_client_error_is_named_by_what_it_wraps_not_quoted() -> None:
    """botocore wraps any exception of the HTTP client whole (httpsession.py send); urllib3's LocationParseError for a
    proxy URL it cannot parse quotes the URL, password included (botocore masks only ProxyError)."""
    from botocore.exceptions import HTTPClientError
    from urllib3.exceptions import LocationParseError

    def fails() -> None:
        raise HTTPClientError(error=LocationParseError("http://ci:S3CRETPW@proxy.corp:99999"))

    with pytest.raises(ec2_module.AwsUnavailable, match=r"HTTPClientError: LocationParseError; its message") as err:
        ec2_module.call(fails)
    assert "S3CRETPW" not in str(err.value)


def test_an_invalid_ec2_endpoint_falls_back_to_the_declared_facts(
    no_aws: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """botocore reads AWS_ENDPOINT_URL_EC2 when the client is built and raises ValueError (it was exit 70)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x" * 40)
    monkeypatch.setenv("AWS_ENDPOINT_URL_EC2", "localhost:4566")
    _resolved, notes = discover(_declared_only())
    assert any("ValueError building the EC2 client" in n for n in notes), notes


# --- what kaistack adds must hold to the declaration's rules ---------------------------------------------


def test_a_gpu_product_that_is_no_label_value_is_refused_with_its_key() -> None:
    """gpuProduct becomes the node's nvidia.com/gpu.product label: "NVIDIA L4" was exit 70 when the labels were
    made; it is refused where it is declared."""
    with pytest.raises(ConfigError, match=r"nodePools\[0\]\.gpuProduct: 'NVIDIA L4' is not a Kubernetes label value"):
        eks_config(gpus=1, gpuMemoryMiB=22888, gpuProduct="NVIDIA L4")


def test_labels_past_the_limit_with_the_gpu_labels_kaistack_adds_name_the_key(no_aws: None) -> None:
    labels = {f"team.example/l{i}": "x" for i in range(999)}
    config = eks_config(gpus=1, gpuMemoryMiB=22888, gpuProduct="NVIDIA-L4", labels=labels)
    with pytest.raises(ConfigError) as excinfo:
        resolve_node_pools(config)
    assert any(
        re.search(r"nodePools\[0\]\.labels: 1002 with the GPU labels kaistack adds, over the 1000", p)
        for p in _problems(excinfo)
    )


def test_a_product_from_aws_that_is_no_label_value_names_the_key_to_declare() -> None:
    """EC2's GPU name becomes the label (spaces as '-', as GFD writes it); a name no label can hold is the key's
    problem, not a crash."""
    odd = _gpu_type("g6.xlarge", "L4 (rev 2)", "NVIDIA", 22888)
    with _stubbed_ec2(odd) as client, pytest.raises(ConfigError) as excinfo:
        resolve_node_pools(eks_config(gpus=2), client)
    problems = _problems(excinfo)
    # Every problem at once: the GPU count AWS contradicts too, not only the name it gives.
    assert [p.split(":", 2)[1] for p in problems] == ["cluster.nodePools[0].gpuProduct", "cluster.nodePools[0].gpus"]
    assert problems[0].startswith("kaistack:cluster.nodePools[0].gpuProduct: 'NVIDIA-L4-(rev-2)' is not a Kubernetes")
    assert problems[0].endswith("(AWS's GPU name; declare gpuProduct as GFD writes it, e.g. NVIDIA-L4)")
