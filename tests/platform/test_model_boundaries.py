"""The stack model's boundaries and guards, one each: the cases a mutation run of model/stack.py and
model/cluster.py found no test for (a limit off by one, a guard dropped, a provider's block read on another
provider). Each passes here and failed on its mutant."""

from __future__ import annotations

import copy
import re

import pytest
from platform_testlib import base_raw

from kaistack.declaration import limits
from kaistack.declaration.model.cluster import eks_scaling
from kaistack.declaration.parse import ConfigError, parse_config

KIND = base_raw()
EKS = {
    "cluster": {
        "provider": "eks",
        "name": "t",
        "eks": {"region": "us-west-2", "version": "1.34", "availabilityZones": ["us-west-2a", "us-west-2b"]},
        "nodePools": [{"name": "l4", "instanceType": "g6.xlarge", "count": 2}],
    },
    "gpu": {"mode": "gpu-operator", "gpuOperator": {"driver": False, "toolkit": False}},
}


def kind(**c):
    r = copy.deepcopy(KIND)
    r["cluster"].update(c)
    return r


def eks(**e):
    r = copy.deepcopy(EKS)
    r["cluster"]["eks"].update(e)
    return r


def test_an_eks_block_on_a_kind_cluster_is_not_checked_for_dra():
    parse_config(kind(eks={"region": "us-west-2", "version": "1.33"}))


def test_an_existing_vpc_needs_no_system_node_per_zone():
    raw = eks(vpcId="vpc-1", subnetIds=["s-1", "s-2"], availabilityZones=["us-west-2a", "us-west-2b", "us-west-2c"])
    raw["queues"] = [{"name": "team"}]
    raw["tenants"] = [{"name": "a", "queues": ["team"]}]
    parse_config(raw)


def test_a_queue_chain_exactly_max_depth_deep_is_accepted():
    from kaistack.declaration import limits

    r = copy.deepcopy(KIND)
    n = limits.MAX_QUEUE_DEPTH
    r["queues"] = [{"name": "q0"}] + [{"name": f"q{i}", "parent": f"q{i - 1}"} for i in range(1, n)]
    parse_config(r)
    r["queues"].append({"name": f"q{n}", "parent": f"q{n - 1}"})
    with pytest.raises(ConfigError, match=f"levels deep; kaistack allows at most {n}"):
        parse_config(r)


def _nvkind(mode="device-plugin", **pool):
    r = kind(nodePools=[{"name": "gpu", "count": 10, "gpus": 1, **pool}])
    r["gpu"] = {"mode": mode}
    return r


def _tenanted(**kai):
    r = copy.deepcopy(KIND)
    r["tenants"] = [{"name": "a", "queues": ["team"]}]
    r["kai"] = kai
    return r


def test_void_or_none_nvidia_visible_devices_passes_the_deviceaccess_check():
    for value in ("void", "none"):
        r = _tenanted()
        r["workloads"] = [
            {"name": "w", "kind": "Job", "queue": "team", "image": "x", "env": {"NVIDIA_VISIBLE_DEVICES": value}}
        ]
        parse_config(r)


def test_a_shared_gpu_pod_may_carry_nvidia_visible_devices():
    r = _tenanted(sharing="fractions")
    r["workloads"] = [
        {
            "name": "w",
            "kind": "Job",
            "queue": "team",
            "image": "x",
            "gpuFraction": 0.5,
            "env": {"NVIDIA_VISIBLE_DEVICES": "0"},
        }
    ]
    parse_config(r)


def _sliced(rename, **kai):
    r = _tenanted(**kai)
    r["gpu"] = {"mode": "device-plugin", "devicePlugin": {"timeSlicing": {"replicas": 2, "renameByDefault": rename}}}
    r["workloads"] = [
        {"name": "w", "kind": "Job", "queue": "team", "image": "x", "env": {"NVIDIA_VISIBLE_DEVICES": "0"}}
    ]
    return r


def test_time_slicing_without_rename_keeps_device_access_on():
    with pytest.raises(ConfigError, match="is overwritten with 'void'"):
        parse_config(_sliced(False))
    parse_config(_sliced(True))  # renamed: off by default


def test_explicit_block_with_unrenamed_time_slicing_is_accepted():
    r = _sliced(False, blockNvidiaVisibleDevices=True)
    r["workloads"] = []
    parse_config(r)


def test_an_existing_cluster_ignores_a_stray_eks_version():
    r = copy.deepcopy(KIND)
    r["cluster"].update(provider="existing", existing={"context": "c"}, eks={"region": "us-west-2", "version": "1.20"})
    r["gpu"] = {"mode": "none"}
    r["tenants"] = [{"name": "a", "queues": ["team"]}]
    assert parse_config(r).host_kubernetes_minor() is None


def test_the_kind_port_range_ends_at_base_plus_ports_minus_one():
    def stack(port, url=None):
        r = kind(kind={"tenantPortBase": 30000, "tenantPorts": 2})
        r["tenants"] = [{"name": "a", "queues": ["team"], "nodePort": port, **({"apiServerUrl": url} if url else {})}]
        return r

    parse_config(stack(30001))
    with pytest.raises(
        ConfigError, match=r"tenants\[0\].nodePort: 30002 is outside the ports the kind cluster maps \(30000-30001\)"
    ):
        parse_config(stack(30002))
    parse_config(stack(30002, url="https://a.example"))  # reached another way: not checked


def test_a_host_minor_vcluster_lacks_needs_an_explicit_tenant_kubernetes():
    r = kind(kind={"nodeImage": "kindest/node:v1.20.0"})
    r["tenants"] = [{"name": "a", "queues": ["team"]}]
    with pytest.raises(ConfigError, match=r"tenants\[0\].vcluster.kubernetes: the host runs Kubernetes 1.20"):
        parse_config(r)
    r["tenants"][0]["vcluster"] = {"kubernetes": "1.33"}
    parse_config(r)


def test_a_prefer_no_schedule_taint_on_a_fake_gpu_pool_is_accepted():
    r = copy.deepcopy(KIND)
    r["cluster"]["nodePools"][0]["taints"] = [{"key": "dedicated", "effect": "PreferNoSchedule"}]
    parse_config(r)


def test_tenant_lookup_of_an_undeclared_name_raises_key_error():
    with pytest.raises(KeyError):
        parse_config(KIND).tenant("nope")


def test_an_undeclared_workload_tenant_lists_the_declared_ones():
    r = _tenanted()
    r["workloads"] = [{"name": "w", "kind": "Job", "queue": "team", "image": "x", "tenant": "b"}]
    with pytest.raises(ConfigError, match=r"'b' is not a declared tenant; tenants: a$"):
        parse_config(r)


def test_a_compared_stack_skips_the_deploy_only_refusals():
    r = eks(version="1.33")
    with pytest.raises(ConfigError, match="serves the DRA API only at beta"):
        parse_config(r)
    parse_config(r, compared=True)  # a diff's base is only simulated


def test_a_copy_of_a_compared_stack_stays_compared():
    base = parse_config(eks(version="1.33"), compared=True)
    base.replace(workloads=[])  # validated again with compared: no DRA refusal


def test_no_queues_at_all_names_none_declared():
    r = copy.deepcopy(KIND)
    r["queues"], r["kai"] = [], {"defaultQueues": {"create": False}}
    parse_config(r)
    r["workloads"] = [{"name": "w", "kind": "Job", "queue": "team", "image": "x"}]
    with pytest.raises(ConfigError, match=r"'team' is not a declared queue; leaf queues: none declared"):
        parse_config(r)


def test_more_pods_than_kaistack_plans_for_are_refused():
    from kaistack.declaration import limits

    r = copy.deepcopy(KIND)
    n = limits.MAX_PODS // limits.MAX_REPLICAS
    r["workloads"] = [
        {"name": f"w{i}", "kind": "Deployment", "queue": "team", "image": "x", "replicas": limits.MAX_REPLICAS}
        for i in range(n)
    ]
    parse_config(r)
    r["workloads"][0]["replicas"] += 0
    r["workloads"].append({"name": "extra", "kind": "Pod", "queue": "team", "image": "x"})
    with pytest.raises(ConfigError, match=f"pods in all; kaistack plans for at most {limits.MAX_PODS}"):
        parse_config(r)


def test_gpu_operator_on_kind_goes_through_nvkind_too():
    with pytest.raises(ConfigError, match=r"10 kind workers with real GPUs"):
        parse_config(_nvkind(mode="gpu-operator", gpuDevices=[0]))


def test_an_eks_block_on_a_kind_cluster_is_not_shape_checked():
    parse_config(kind(eks={"region": "us-west-2", "availabilityZones": ["us-west-2a"]}))


def test_an_existing_vpc_ignores_a_single_listed_zone():
    parse_config(eks(vpcId="vpc-1", subnetIds=["s-1", "s-2"], availabilityZones=["us-west-2a"]))
    with pytest.raises(ConfigError, match="EKS needs subnets in at least 2 zones"):
        parse_config(eks(availabilityZones=["us-west-2a"]))


def test_mig_device_counts_are_bounded_per_node():
    from kaistack.declaration import limits

    most = limits.MAX_GPUS_PER_NODE * 7
    r = copy.deepcopy(KIND)
    r["cluster"]["nodePools"][0]["mig"] = {"nvidia.com/mig-1g.10gb": most}
    parse_config(r)
    r["cluster"]["nodePools"][0]["mig"] = {"nvidia.com/mig-1g.10gb": most + 1}
    with pytest.raises(
        ConfigError, match=f"MIG device count for nvidia.com/mig-1g.10gb must be 0..{most}, got {most + 1}"
    ):
        parse_config(r)


def test_the_kind_port_range_may_end_at_32767():
    parse_config(kind(kind={"tenantPortBase": 32758, "tenantPorts": 10}))
    with pytest.raises(ConfigError, match="ends at 32768, past the Kubernetes NodePort range"):
        parse_config(kind(kind={"tenantPortBase": 32759, "tenantPorts": 10}))


def test_node_pools_may_add_up_to_max_nodes():
    from kaistack.declaration import limits

    r = kind(nodePools=[{"name": "cpu", "count": limits.MAX_NODES}])
    r["gpu"] = {"mode": "none"}
    parse_config(r)
    r["cluster"]["nodePools"].append({"name": "one", "count": 1})
    with pytest.raises(ConfigError, match=f"add up to {limits.MAX_NODES + 1} nodes"):
        parse_config(r)


def test_system_capacity_is_known_only_with_cpu_memory_and_pods():
    from kaistack.declaration.model.cluster import SystemNodeGroup

    assert SystemNodeGroup(cpu="2", memory="7Gi", pods=29).capacity_known
    for partial in ({"memory": "7Gi", "pods": 29}, {"cpu": "2", "pods": 29}, {"cpu": "2", "memory": "7Gi"}):
        assert not SystemNodeGroup(**partial).capacity_known


def test_sharing_off_refuses_only_shared_gpu_workloads():
    r = copy.deepcopy(KIND)
    r["kai"] = {"sharing": "off"}
    r["workloads"] = [{"name": "w", "kind": "Job", "queue": "team", "image": "x", "gpu": 1}]
    parse_config(r)
    r["workloads"][0] = {"name": "w", "kind": "Job", "queue": "team", "image": "x", "gpuFraction": 0.5}
    with pytest.raises(ConfigError, match=r"workloads\[0\]: gpuFraction/gpuMemoryMiB need kaistack:kai.sharing"):
        parse_config(r)


def _labelled(raw, labels):
    raw["cluster"]["nodePools"][0]["labels"] = labels
    return raw


def test_a_stray_protect_on_a_kind_clusters_eks_block_protects_nothing():
    assert not parse_config(kind(eks={"region": "us-west-2", "protect": True})).cluster.protected
    assert parse_config(eks(protect=True)).cluster.protected


@pytest.mark.parametrize("key", ["kubernetes.io/gpu", "k8s.io/gpu"])
@pytest.mark.parametrize("raw", [kind(), copy.deepcopy(EKS)], ids=["kind", "eks"])
def test_a_bare_kubernetes_io_or_k8s_io_label_is_refused_on_kind_and_eks(raw, key):
    with pytest.raises(ConfigError, match=rf"labels\.{key}: kubelet refuses to start"):
        parse_config(_labelled(copy.deepcopy(raw), {key: "a"}))


@pytest.mark.parametrize(
    ("region", "partition"),
    [
        ("cn-north-1", "aws-cn"),
        ("us-gov-east-1", "aws-us-gov"),
        ("us-iso-east-1", "aws-iso"),
        ("us-isob-east-1", "aws-iso-b"),
        ("eu-isoe-west-1", "aws-iso-e"),
        ("us-isof-south-1", "aws-iso-f"),
        ("eusc-de-east-1", "aws-eusc"),
    ],
)
def test_each_partitions_region_takes_its_own_principals(region, partition):
    raw = eks(region=region, availabilityZones=[f"{region}a", f"{region}b"])
    raw["cluster"]["eks"]["adminPrincipals"] = [f"arn:{partition}:iam::123456789012:role/ci"]
    parse_config(raw)
    raw["cluster"]["eks"]["adminPrincipals"] = ["arn:aws:iam::123456789012:role/ci"]
    with pytest.raises(ConfigError, match=rf"in partition 'aws', but region '{region}' is in '{partition}'"):
        parse_config(raw)


def test_an_eks_pool_without_max_size_scales_to_at_least_one_node():
    raw = copy.deepcopy(EKS)
    raw["cluster"]["nodePools"] += [{"name": "idle", "instanceType": "g6.xlarge", "count": 0}]
    pools = parse_config(raw).cluster.node_pools
    assert [eks_scaling(p) for p in pools] == [(2, 2, 2), (0, 0, 1)]


def test_mig_device_counts_may_be_zero_but_not_negative():
    r = copy.deepcopy(KIND)
    r["cluster"]["nodePools"][0]["mig"] = {"nvidia.com/mig-1g.10gb": 0}
    assert parse_config(r).cluster.node_pools[0].mig == {"nvidia.com/mig-1g.10gb": 0}
    r["cluster"]["nodePools"][0]["mig"] = {"nvidia.com/mig-1g.10gb": -1}
    with pytest.raises(ConfigError, match=r"MIG device count for nvidia\.com/mig-1g\.10gb must be 0\.\.[0-9]+, got -1"):
        parse_config(r)


def test_a_pools_max_size_counts_toward_max_nodes_and_an_empty_pool_not():
    r = copy.deepcopy(EKS)
    r["cluster"]["nodePools"] = [{"name": "a", "instanceType": "m6i.large", "count": 1, "maxSize": limits.MAX_NODES}]
    parse_config(r)
    r["cluster"]["nodePools"].append({"name": "b", "instanceType": "m6i.large", "count": 0})
    parse_config(r)
    r["cluster"]["nodePools"][1]["count"] = 1
    with pytest.raises(ConfigError, match=f"add up to {limits.MAX_NODES + 1} nodes"):
        parse_config(r)


def test_the_system_node_groups_desired_size_lies_between_its_bounds():
    outside = r"systemNodeGroup.desiredSize: 4 must lie between minSize \(2\) and maxSize \(3\)"
    with pytest.raises(ConfigError, match=outside):
        parse_config(eks(systemNodeGroup={"minSize": 2, "maxSize": 3, "desiredSize": 4}))


def test_kubernetes_io_namespaces_match_whole_domain_labels_only():
    parse_config(_labelled(kind(), {"notkubernetes.io/a": "x", "k8s.io": "x"}))
    with pytest.raises(ConfigError, match=r"labels\.xnode\.kubernetes\.io/a: kubelet refuses to start"):
        parse_config(_labelled(kind(), {"xnode.kubernetes.io/a": "x"}))


def _pool(**fields):  # type: ignore[no-untyped-def]
    raw = copy.deepcopy(KIND)
    raw["cluster"]["nodePools"][0].update(fields)
    return raw


def _second_pool(**fields):  # type: ignore[no-untyped-def]
    raw = copy.deepcopy(KIND)
    raw["cluster"]["nodePools"].append({"name": "more", "count": 1, **fields})
    return raw


def _system(**fields):  # type: ignore[no-untyped-def]
    return eks(systemNodeGroup={"minSize": 1, "maxSize": 1000, "desiredSize": 1, **fields})


# (key path in the error, a stack with the value, lowest allowed, highest allowed): the Field bounds the schema
# snapshot alone guarded (a mutation run changed each and only test_shipped_schema_is_the_generated_one noticed).
BOUNDS = {
    "pool count": ("cluster.nodePools[0].count", lambda v: _pool(count=v), 0, limits.MAX_NODES),
    "pool gpus": ("cluster.nodePools[1].gpus", lambda v: _second_pool(gpus=v), 0, limits.MAX_GPUS_PER_NODE),
    "pool pods": ("cluster.nodePools[0].pods", lambda v: _pool(pods=v), 1, 100_000),
    "pool gpuMemoryMiB": ("cluster.nodePools[0].gpuMemoryMiB", lambda v: _pool(gpuMemoryMiB=v), 1, 2**31),
    "kind tenantPorts": (
        "cluster.kind.tenantPorts",
        lambda v: kind(kind={"tenantPortBase": 30000, "tenantPorts": v}),
        1,
        100,
    ),
    "system minSize": (
        "cluster.eks.systemNodeGroup.minSize",
        lambda v: _system(minSize=v, desiredSize=max(v, 1)),
        1,
        1000,
    ),
    "system maxSize": ("cluster.eks.systemNodeGroup.maxSize", lambda v: _system(maxSize=v), 1, 1000),
}


@pytest.mark.parametrize("case", sorted(BOUNDS))
def test_each_numeric_bound_accepts_its_ends_and_refuses_one_past_them(case: str) -> None:
    key, stack, lowest, highest = BOUNDS[case]
    parse_config(stack(lowest))
    parse_config(stack(highest))
    for past in (lowest - 1, highest + 1):
        with pytest.raises(ConfigError, match=re.escape(f"kaistack:{key}:")):
            parse_config(stack(past))


@pytest.mark.parametrize("strategy", ["none", "single", "mixed"])
def test_each_mig_strategy_gfd_writes_is_accepted_and_kept(strategy: str) -> None:
    assert parse_config(_pool(migStrategy=strategy)).cluster.node_pools[0].mig_strategy == strategy


def test_a_mig_strategy_gfd_never_writes_is_refused_naming_the_allowed_ones() -> None:
    with pytest.raises(ConfigError, match=r"nodePools\[0\]\.migStrategy: .*'none', 'single' or 'mixed'"):
        parse_config(_pool(migStrategy="auto"))


@pytest.mark.parametrize(
    ("fields", "key"),
    [
        ({"vpcId": "", "subnetIds": ["s-1", "s-2"]}, r"eks\.vpcId"),
        ({"vpcId": "vpc-1", "subnetIds": ["s-1", ""]}, r"eks\.subnetIds\[1\]"),
        ({"region": ""}, r"eks\.region"),
    ],
    ids=["vpcId", "subnetIds", "region"],
)
def test_an_empty_aws_identifier_is_refused(fields: dict[str, object], key: str) -> None:
    """An empty vpcId read as "an existing VPC": EKS got an empty VPC id and no VPC was created."""
    with pytest.raises(ConfigError, match=rf"{key}: String should have at least 1 character"):
        parse_config(eks(**fields))
