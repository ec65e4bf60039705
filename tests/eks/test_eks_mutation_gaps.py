"""Behaviour of kaistack.stack.ec2 / kaistack.stack.eks and components/cluster_eks.py that mutation testing found
unpinned: what a DescribeInstanceTypes answer becomes, which EC2 errors mean "AWS cannot be asked", and how the
declared facts meet AWS's.

Field names and shapes are botocore 1.44.8's EC2 model (botocore/data/ec2/2016-11-15/service-2.json, shipped in the
venv); the EKS AMI's numbers are awslabs/amazon-eks-ami@v20250103's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from eks_testlib import DECLARED_L4, REGION, eks_config, eks_raw

from components.cluster_eks import EksCluster, kubeconfig_with_region
from kaistack.declaration.limits import MAX_LIST_ITEMS
from kaistack.declaration.parse import ConfigError
from kaistack.ops.mocks import MockSession
from kaistack.stack.ec2 import AwsUnavailable, ClientCodeError, Ec2, InstanceFacts, call
from kaistack.stack.eks import discover, resolve_node_pools


def _client() -> Any:
    return boto3.client("ec2", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="y")


@contextmanager
def _answering(*items: dict[str, Any]) -> Iterator[Ec2]:
    """An `Ec2` whose DescribeInstanceTypes answers each of `items` in turn (a Stubber, so any field can be left out:
    service-2.json lists no member of InstanceTypeInfo, NetworkInfo or NetworkCardInfo as required)."""
    client = _client()
    with Stubber(client) as stub:
        for item in items:
            stub.add_response("describe_instance_types", {"InstanceTypes": [item]})
        yield Ec2(client, REGION)


def _described(**fields: Any) -> InstanceFacts:
    item = {"InstanceType": "x9.large", "VCpuInfo": {"DefaultVCpus": 4}, "MemoryInfo": {"SizeInMiB": 16384}, **fields}
    with _answering(item) as ec2:
        facts = ec2.describe("x9.large")
    assert facts is not None
    return facts


def _network(**fields: Any) -> dict[str, Any]:
    """A NetworkInfo with 50 IPv4 addresses per ENI: one ENI holds 49 pods (eni-max-pods.txt's formula)."""
    return {"Ipv4AddressesPerInterface": 50, **fields}


def _cards(*enis: int) -> list[dict[str, Any]]:
    return [{"NetworkCardIndex": i, "MaximumNetworkInterfaces": n} for i, n in enumerate(enis)]


# --- max pods: the default network card's ENIs (ec2._pod_enis) --------------------------------------------------


def test_pods_come_from_the_card_default_network_card_index_names() -> None:
    """max-pods-calculator.sh indexes NetworkCards by DefaultNetworkCardIndex (v20250103
    templates/al2/runtime/max-pods-calculator.sh L125-127): card 1's 2 ENIs, not card 0's 8 nor the total."""
    facts = _described(
        NetworkInfo=_network(MaximumNetworkInterfaces=10, DefaultNetworkCardIndex=1, NetworkCards=_cards(8, 2))
    )
    assert facts.max_pods == 2 * 49 + 2


def test_pods_come_from_card_zero_when_it_is_named_the_default() -> None:
    facts = _described(
        NetworkInfo=_network(MaximumNetworkInterfaces=10, DefaultNetworkCardIndex=0, NetworkCards=_cards(2, 8))
    )
    assert facts.max_pods == 2 * 49 + 2


def test_pods_come_from_card_zero_when_no_default_card_is_listed() -> None:
    """DefaultNetworkCardIndex is optional in service-2.json's NetworkInfo; network card 0 is the usual default."""
    facts = _described(NetworkInfo=_network(MaximumNetworkInterfaces=10, NetworkCards=_cards(2)))
    assert facts.max_pods == 2 * 49 + 2


@pytest.mark.parametrize(
    "network",
    [
        _network(MaximumNetworkInterfaces=2),
        _network(MaximumNetworkInterfaces=2, DefaultNetworkCardIndex=3, NetworkCards=_cards(8)),
        _network(MaximumNetworkInterfaces=2, NetworkCards=[{"NetworkCardIndex": 0}]),
    ],
    ids=["no-cards", "default-card-not-listed", "card-without-eni-count"],
)
def test_pods_fall_back_to_the_instances_eni_count_without_a_usable_default_card(network: dict[str, Any]) -> None:
    assert _described(NetworkInfo=network).max_pods == 2 * 49 + 2


@pytest.mark.parametrize("vcpus", [4, 48])
def test_a_type_without_network_info_gets_nodeadms_default_of_110_pods(vcpus: int) -> None:
    """nodeadm falls back to defaultMaxPods = 110 when it cannot compute the ENIs
    (awslabs/amazon-eks-ami@v20250103:nodeadm/internal/kubelet/eni_max_pods.go:17, CalcMaxPods)."""
    assert _described(VCpuInfo={"DefaultVCpus": vcpus}).max_pods == 110


def test_a_type_listing_no_ipv4_addresses_per_eni_still_plans_one_pod() -> None:
    """3 ENIs x (0 - 1) + 2 is below zero: a node always runs at least one pod."""
    assert _described(NetworkInfo={"MaximumNetworkInterfaces": 3}).max_pods == 1


@pytest.mark.parametrize(
    ("instance_type", "cap"),
    [("m6i.4xlarge", 110), ("m6i.32xlarge", 250)],
    ids=["16-vcpus", "128-vcpus"],
)
def test_max_pods_are_capped_by_vcpus_like_the_calculator(ec2: Any, instance_type: str, cap: int) -> None:
    """moto's m6i.4xlarge: 8 ENIs x 29 + 2 = 234; m6i.32xlarge: 15 x 49 + 2 = 737 (eni-max-pods.txt). The calculator
    caps them at 110 for few vCPUs and 250 for many: max-pods-calculator.sh L146-160 at v20250103."""
    facts = Ec2(ec2, REGION).describe(instance_type)
    assert facts is not None
    assert facts.max_pods == cap


# --- the GPU product label (InstanceFacts.gpu_product) -------------------------------------------------------


def _gpu(name: str, maker: str | None) -> dict[str, Any]:
    device: dict[str, Any] = {"Name": name, "Count": 1, "MemoryInfo": {"SizeInMiB": 16384}}
    if maker is not None:
        device["Manufacturer"] = maker
    return {"Gpus": [device]}


def test_a_gpu_name_that_already_starts_with_its_maker_is_not_prefixed_again() -> None:
    assert _described(GpuInfo=_gpu("NVIDIA A10G", "NVIDIA")).gpu_product == "NVIDIA-A10G"


def test_a_gpu_without_a_manufacturer_is_named_by_its_name_alone() -> None:
    """GpuDeviceInfo.Manufacturer is optional in service-2.json."""
    assert _described(GpuInfo=_gpu("L4", None)).gpu_product == "L4"


# --- the EKS AMI's kube-reserved CPU (InstanceFacts.allocatable_cpu_millis) ------------------------------------


@pytest.mark.parametrize(("vcpus", "reserved"), [(1, 60), (2, 60 + 10), (4, 60 + 10 + 5 + 5), (8, 80 + 4 * 2.5)])
def test_allocatable_cpu_is_the_vcpus_less_the_amis_kube_reserved(vcpus: int, reserved: float) -> None:
    """6% of the first core, 1% of the second, 0.5% of cores 3-4, 0.25% of the rest
    (awslabs/amazon-eks-ami@v20250103:templates/al2/runtime/bootstrap.sh get_cpu_millicores_to_reserve)."""
    assert _described(VCpuInfo={"DefaultVCpus": vcpus}).allocatable_cpu_millis == vcpus * 1000 - reserved


# --- which EC2 errors mean "AWS cannot be asked" (ec2.call) -----------------------------------------------------


def _client_error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "refused"}}, "DescribeInstanceTypes")


@pytest.mark.parametrize(
    "code",
    [
        "AuthFailure",
        "UnauthorizedOperation",
        "InvalidClientTokenId",
        "ExpiredToken",
        "RequestExpired",
        "SignatureDoesNotMatch",
        "OptInRequired",
    ],
)
def test_credential_and_authorization_errors_mean_aws_cannot_be_asked(code: str) -> None:
    """Each is about the caller's credentials, clock or account, not the request: the declared facts are used."""

    def refused() -> None:
        raise _client_error(code)

    with pytest.raises(AwsUnavailable, match=rf"AWS refused DescribeInstanceTypes \({code}: refused\)"):
        call(refused)


def test_any_other_ec2_error_keeps_its_code() -> None:
    def refused() -> None:
        raise _client_error("InvalidParameterCombination")

    with pytest.raises(ClientCodeError) as err:
        call(refused)
    assert err.value.code == "InvalidParameterCombination"


def test_a_client_without_credentials_falls_back_to_the_declared_facts(no_aws: None) -> None:
    """A client handed in without credentials fails its first call with botocore's NoCredentialsError."""
    client = boto3.client("ec2", region_name=REGION)
    resolved, notes = discover(eks_config(**DECLARED_L4), client)
    assert resolved.cluster.node_pools[0].gpu_product == "NVIDIA-L4"
    assert any(note.startswith("no usable AWS credentials (Unable to locate credentials)") for note in notes), notes


def test_a_missing_region_means_aws_cannot_be_asked() -> None:
    from botocore.exceptions import NoRegionError

    def regionless() -> None:
        raise NoRegionError()

    with pytest.raises(AwsUnavailable, match=r"no AWS region \(You must specify a region\.\)"):
        call(regionless)


# --- DescribeInstanceTypes / DescribeInstanceTypeOfferings (ec2.Ec2) ---------------------------------------------


@pytest.mark.parametrize("code", ["InvalidInstanceType", "InvalidParameterValue"])
def test_a_type_ec2_rejects_as_invalid_is_an_unknown_type(code: str) -> None:
    """moto answers an unknown type with InvalidInstanceType (moto 5.2.5 ec2/models/instance_types.py,
    describe_instance_types); kaistack reads InvalidParameterValue, the code of a refused parameter, the same way:
    the pool's type is unknown, which is the pool's problem, not a crash."""
    client = _client()
    with Stubber(client) as stub:
        stub.add_client_error("describe_instance_types", code, "bad type")
        assert Ec2(client, REGION).describe("g6.huge") is None


def test_other_describe_instance_types_errors_are_raised_with_their_code() -> None:
    client = _client()
    with Stubber(client) as stub:
        stub.add_client_error("describe_instance_types", "InvalidParameterCombination", "no", http_status_code=400)
        with pytest.raises(ClientCodeError) as err:
            Ec2(client, REGION).describe("g6.xlarge")
    assert err.value.code == "InvalidParameterCombination"


@pytest.mark.parametrize(
    ("code", "status"),
    [("RequestLimitExceeded", 503), ("Throttling", 400), ("InternalError", 500), ("SomethingNew", 503), ("", 429)],
)
def test_an_ec2_still_busy_after_botocores_retries_means_aws_cannot_be_asked(code: str, status: int) -> None:
    """botocore@1.44.8 retries/standard.py retries these codes and statuses (:464-469, :510-525); one still failing
    after its attempts is AWS being busy, not kaistack asking wrong: it was an internal error (exit 70)."""
    client = _client()
    with Stubber(client) as stub:
        stub.add_client_error("describe_instance_types", code, "slow down", http_status_code=status)
        with pytest.raises(AwsUnavailable, match=r"AWS did not answer DescribeInstanceTypes \("):
            Ec2(client, REGION).describe("g6.xlarge")


@pytest.mark.parametrize(("code", "status"), [("RequestLimitExceeded", 503), ("InvalidParameterCombination", 400)])
def test_discovery_falls_back_to_the_declared_facts_when_ec2_answers_with_an_error(code: str, status: int) -> None:
    """Neither a busy EC2 nor an answer kaistack does not expect stops the program: the declared facts are used,
    and a note says why (render, check and `pulumi up` went on to exit 70 with "a bug in kaistack")."""
    client = _client()
    with Stubber(client) as stub:
        stub.add_client_error("describe_instance_types", code, "no", http_status_code=status)
        resolved, notes = discover(eks_config(**DECLARED_L4), client)
    assert resolved.cluster.node_pools[0].gpu_product == "NVIDIA-L4"
    assert any(code in note for note in notes), notes


def test_offered_zones_follow_next_token_to_the_last_page() -> None:
    """DescribeInstanceTypeOfferings pages by NextToken (botocore/data/ec2/2016-11-15/paginators-1.json)."""
    client = _client()
    request = {
        "LocationType": "availability-zone",
        "Filters": [{"Name": "instance-type", "Values": ["g6.xlarge"]}],
    }
    page = [
        {"InstanceType": "g6.xlarge", "LocationType": "availability-zone", "Location": f"{REGION}{z}"} for z in "abc"
    ]
    with Stubber(client) as stub:
        stub.add_response(
            "describe_instance_type_offerings", {"InstanceTypeOfferings": page[:1], "NextToken": "t1"}, request
        )
        stub.add_response(
            "describe_instance_type_offerings",
            {"InstanceTypeOfferings": page[1:2], "NextToken": "t2"},
            {**request, "NextToken": "t1"},
        )
        stub.add_response(
            "describe_instance_type_offerings", {"InstanceTypeOfferings": page[2:]}, {**request, "NextToken": "t2"}
        )
        assert Ec2(client, REGION).offered_zones("g6.xlarge") == {f"{REGION}a", f"{REGION}b", f"{REGION}c"}
        stub.assert_no_pending_responses()


# --- components/cluster_eks.py --------------------------------------------------------------------------------


def _kind_stack_with_an_eks_block() -> Any:
    """The model lets a kind stack keep an `eks` block (kaistack.declaration.model.cluster, ClusterConfig: only
    provider 'eks' requires one); the block alone does not make it an EKS stack."""
    raw = eks_raw(**DECLARED_L4)
    raw["cluster"]["provider"] = "kind"
    raw["gpu"] = {"mode": "fake"}
    config = eks_config(raw)
    assert config.cluster.eks is not None
    return config


def test_the_eks_component_refuses_a_kind_stack_that_carries_an_eks_block(mocks: MockSession) -> None:
    config = _kind_stack_with_an_eks_block()
    with pytest.raises(ValueError, match=r"EksCluster needs kaistack:cluster\.provider 'eks'"):
        EksCluster("kaistack", config)
    assert mocks.resources == []


def test_an_empty_describe_instance_types_answer_is_an_unknown_type() -> None:
    client = _client()
    with Stubber(client) as stub:
        stub.add_response("describe_instance_types", {"InstanceTypes": []})
        assert Ec2(client, REGION).describe("g6.xlarge") is None


def test_zones_are_picked_among_available_availability_zones_only() -> None:
    """DescribeAvailabilityZones also lists Local and Wavelength Zones, and zones that are not `available`
    (service-2.json, DescribeAvailabilityZonesRequest.Filters: zone-type, state); EKS node subnets need neither."""
    client = _client()
    request = {
        "Filters": [
            {"Name": "zone-type", "Values": ["availability-zone"]},
            {"Name": "state", "Values": ["available"]},
        ]
    }
    with Stubber(client) as stub:
        stub.add_response("describe_availability_zones", {"AvailabilityZones": [{"ZoneName": "us-west-2a"}]}, request)
        assert Ec2(client, REGION).available_zones() == {"us-west-2a"}


def test_the_default_client_asks_the_stacks_region_and_gives_up_sooner_than_botocore(aws: None) -> None:
    """`render`/`check` must not hang without a network: shorter timeouts than a plain boto3 client's."""
    client = Ec2(None, REGION).client
    plain = boto3.client("ec2", region_name=REGION)
    assert client.meta.region_name == REGION
    assert client.meta.config.connect_timeout < plain.meta.config.connect_timeout
    assert client.meta.config.read_timeout < plain.meta.config.read_timeout


def test_without_a_client_discovery_asks_aws_through_the_default_credential_chain(aws: None) -> None:
    """moto's EC2 with moto's credentials in the environment: the facts are AWS's, no fallback note."""
    resolved, notes = discover(eks_config())
    assert resolved.cluster.node_pools[0].gpu_product == "NVIDIA-L4"
    assert notes == []


# --- kaistack.stack.eks: offerings and zones -------------------------------------------------------------------


def _m6i_large() -> dict[str, Any]:
    return {"InstanceType": "m6i.large", "VCpuInfo": {"DefaultVCpus": 2}, "MemoryInfo": {"SizeInMiB": 8192}}


def test_a_type_offered_in_no_zone_of_the_region_is_named() -> None:
    """DescribeInstanceTypeOfferings may list no zone for a type DescribeInstanceTypes knows."""
    g6 = {"InstanceType": "g6.xlarge", "VCpuInfo": {"DefaultVCpus": 4}, "MemoryInfo": {"SizeInMiB": 16384}}
    both = [{"InstanceType": "m6i.large", "Location": f"{REGION}{z}"} for z in "ab"]
    client = _client()
    with Stubber(client) as stub:
        stub.add_response("describe_instance_types", {"InstanceTypes": [g6]})
        stub.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": []})
        stub.add_response("describe_instance_types", {"InstanceTypes": [_m6i_large()]})
        stub.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": both})
        with pytest.raises(ConfigError) as err:
            resolve_node_pools(eks_config(), client)
    assert err.value.problems == [
        "kaistack:cluster.nodePools[0].instanceType: g6.xlarge is offered in no availability zone of us-west-2"
    ]


def test_a_system_node_group_type_missing_from_a_cluster_zone_names_the_clusters_zones(ec2: Any) -> None:
    """moto's offerings: g5.xlarge in us-west-2a/b/c, not d. The system node group spans every cluster zone, so
    there is no zone key of its own to suggest."""
    raw = eks_raw()
    raw["cluster"]["eks"]["availabilityZones"] = ["us-west-2a", "us-west-2d"]
    raw["cluster"]["eks"]["systemNodeGroup"] = {"instanceType": "g5.xlarge"}
    with pytest.raises(ConfigError) as err:
        resolve_node_pools(eks_config(raw), ec2)
    assert err.value.problems == [
        "kaistack:cluster.eks.systemNodeGroup.instanceType: g5.xlarge is not offered in us-west-2d "
        "(kaistack:cluster.eks.availabilityZones); AWS offers it in us-west-2a, us-west-2b, us-west-2c"
    ]


def test_an_unknown_type_is_the_only_problem_when_zones_are_left_to_pick(ec2: Any) -> None:
    """No zones are picked while a type is unknown: p5e.48xlarge alone (moto: us-west-2c only) would fail the pick."""
    raw = eks_raw(instanceType="p5e.48xlarge", count=1)
    raw["cluster"]["nodePools"].append({"name": "bad", "instanceType": "nope.large"})
    del raw["cluster"]["eks"]["availabilityZones"]
    with pytest.raises(ConfigError) as err:
        resolve_node_pools(eks_config(raw), ec2)
    assert [p.split(":", 2)[1] for p in err.value.problems] == ["cluster.nodePools[1].instanceType"]


# --- kaistack.stack.eks: declared facts against AWS's ------------------------------------------------------------


@pytest.mark.parametrize(("key", "value"), [("gpuProduct", "NVIDIA-L4"), ("gpuMemoryMiB", 22888)])
def test_gpu_facts_declared_on_a_cpu_type_are_a_contradiction(ec2: Any, key: str, value: Any) -> None:
    with pytest.raises(ConfigError) as err:
        resolve_node_pools(eks_config(instanceType="m6i.large", **{key: value}), ec2)
    assert err.value.problems == [
        f"kaistack:cluster.nodePools[0].{key}: declared {value!r} but AWS says m6i.large has no GPUs"
    ]


def test_a_pool_declaring_exactly_its_machine_is_kept(ec2: Any) -> None:
    """g6.xlarge: 4 vCPUs, 16384 MiB, 58 pods (moto; eni-max-pods.txt "g6.xlarge 58"): a declared value may equal the
    machine's, only above it is a contradiction."""
    pool = resolve_node_pools(eks_config(cpu="4", memory="16Gi", pods=58), ec2).cluster.node_pools[0]
    assert (str(pool.cpu), str(pool.memory), pool.pods) == ("4", "16Gi", 58)


def test_a_system_node_group_declaring_exactly_its_machine_is_kept(ec2: Any) -> None:
    """m6i.large: 2 vCPUs, 8192 MiB, 29 pods (eni-max-pods.txt "m6i.large 29")."""
    raw = eks_raw()
    raw["cluster"]["eks"]["systemNodeGroup"] = {"cpu": "2", "memory": "8Gi", "pods": 29}
    system = resolve_node_pools(eks_config(raw), ec2).cluster.eks.system_node_group
    assert (str(system.cpu), str(system.memory), system.pods) == ("2", "8Gi", 29)


@pytest.mark.parametrize("declared", ["nvidia_l4", "L4"])
def test_a_gpu_product_spelled_otherwise_still_names_awss_gpu(ec2: Any, declared: str) -> None:
    pool = resolve_node_pools(eks_config(gpuProduct=declared), ec2).cluster.node_pools[0]
    assert pool.gpu_product == declared


def test_a_gpu_product_that_only_starts_with_awss_gpu_name_is_another_gpu(ec2: Any) -> None:
    """An L40S is not an L4: GFD's longer names continue after a '-' (NVIDIA-H100-80GB-HBM3)."""
    with pytest.raises(ConfigError, match=r"gpuProduct: declared 'NVIDIA-L40S' but AWS says g6\.xlarge has NVIDIA L4"):
        resolve_node_pools(eks_config(gpuProduct="NVIDIA-L40S"), ec2)


# --- the GPU marks kaistack adds, against the model's list limit ---------------------------------------------------


def test_taints_past_the_limit_with_the_gpu_taint_kaistack_adds_name_the_key(no_aws: None) -> None:
    taints = [{"key": f"team.example/t{i}", "effect": "NoSchedule"} for i in range(MAX_LIST_ITEMS)]
    with pytest.raises(ConfigError) as err:
        resolve_node_pools(eks_config(taints=taints, **DECLARED_L4))
    assert err.value.problems == [
        f"kaistack:cluster.nodePools[0].taints: {MAX_LIST_ITEMS + 1} with the GPU taints kaistack adds, over the "
        f"{MAX_LIST_ITEMS} a node pool may have"
    ]


def test_labels_that_reach_the_limit_with_the_gpu_labels_are_accepted(no_aws: None) -> None:
    """nvidia.com/gpu.{count,product,memory}: three labels added to a GPU pool."""
    labels = {f"team.example/l{i}": "x" for i in range(MAX_LIST_ITEMS - 3)}
    pool = resolve_node_pools(eks_config(labels=labels, **DECLARED_L4)).cluster.node_pools[0]
    assert len(pool.labels) == MAX_LIST_ITEMS


def test_discovery_leaves_a_kind_stack_with_an_eks_block_unchanged(ec2: Any) -> None:
    config = _kind_stack_with_an_eks_block()
    assert resolve_node_pools(config, ec2) is config


def _existing_vpc(**pool: Any) -> dict[str, Any]:
    raw = eks_raw(**pool)
    raw["cluster"]["eks"] = {"region": REGION, "vpcId": "vpc-123", "subnetIds": ["subnet-a", "subnet-b"]}
    return raw


def test_an_existing_vpc_gets_no_zones_picked(ec2: Any) -> None:
    """Its subnets are the user's: the zones they lie in are not kaistack's to choose."""
    resolved, notes = discover(eks_config(_existing_vpc()), ec2)
    assert resolved.cluster.eks is not None
    assert (resolved.cluster.eks.availability_zones, notes) == ([], [])


def test_offline_an_existing_vpc_needs_no_zones_declared(no_aws: None) -> None:
    resolved, _notes = discover(eks_config(_existing_vpc(**DECLARED_L4)))
    assert resolved.cluster.node_pools[0].gpu_product == "NVIDIA-L4"


def test_a_type_offered_in_exactly_two_zones_gets_those_two(ec2: Any) -> None:
    """moto's offerings: h1.2xlarge in us-west-2b and us-west-2c only; two zones are what EKS needs."""
    raw = eks_raw(instanceType="h1.2xlarge")
    del raw["cluster"]["eks"]["availabilityZones"]
    resolved = resolve_node_pools(eks_config(raw), ec2)
    assert resolved.cluster.eks is not None
    assert resolved.cluster.eks.availability_zones == ["us-west-2b", "us-west-2c"]


@contextmanager
def _gpu_pool_ec2(gpu: dict[str, Any]) -> Iterator[Any]:
    """A client answering for g9.xlarge with `gpu` as its one GpuDeviceInfo (the pool) and m6i.large (the system
    node group), both offered in us-west-2a/b; a None in `gpu` leaves that field out."""
    device = {"Name": "L4", "Manufacturer": "NVIDIA", "Count": 1, **gpu}
    g9 = {
        "InstanceType": "g9.xlarge",
        "VCpuInfo": {"DefaultVCpus": 4},
        "MemoryInfo": {"SizeInMiB": 16384},
        "GpuInfo": {"Gpus": [{k: v for k, v in device.items() if v is not None}]},
    }
    client = _client()
    with Stubber(client) as stub:
        for item in (g9, _m6i_large()):
            zones = [{"InstanceType": item["InstanceType"], "Location": f"{REGION}{z}"} for z in "ab"]
            stub.add_response("describe_instance_types", {"InstanceTypes": [item]})
            stub.add_response("describe_instance_type_offerings", {"InstanceTypeOfferings": zones})
        yield client


@pytest.mark.parametrize("declared", [9300, 10500], ids=["7%-under", "5%-over"])
def test_gpu_memory_exactly_at_the_tolerance_is_the_same_gpu(declared: int) -> None:
    """AWS's 10000 MiB: 7% under and 5% over are the bounds (kaistack.stack.eks GPU_MEMORY_UNDER/OVER)."""
    with _gpu_pool_ec2({"MemoryInfo": {"SizeInMiB": 10000}}) as client:
        pool = resolve_node_pools(
            eks_config(instanceType="g9.xlarge", gpuMemoryMiB=declared), client
        ).cluster.node_pools[0]
    assert pool.gpu_memory_mi_b == declared


def test_a_declared_gpu_memory_is_kept_when_ec2_lists_none() -> None:
    """GpuDeviceInfo.MemoryInfo is optional in service-2.json: nothing to check the declared value against."""
    with _gpu_pool_ec2({}) as client:
        pool = resolve_node_pools(eks_config(instanceType="g9.xlarge", gpuMemoryMiB=22888), client).cluster.node_pools[
            0
        ]
    assert pool.gpu_memory_mi_b == 22888


@pytest.mark.parametrize(
    ("declared", "problem"),
    [
        ({"cpu": "4001m"}, "cpu: declared 4001m but AWS says g6.xlarge has 4 vCPUs"),
        ({"memory": "16385Mi"}, "memory: declared 16385Mi but AWS says g6.xlarge has 16384Mi of memory"),
        ({"pods": 59}, "pods: declared 59 but EKS gives g6.xlarge at most 58 pods"),
    ],
    ids=["cpu", "memory", "pods"],
)
def test_a_pool_declaring_just_above_its_machine_is_a_contradiction(
    ec2: Any, declared: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError) as err:
        resolve_node_pools(eks_config(**declared), ec2)
    (only,) = err.value.problems
    assert only.startswith(f"kaistack:cluster.nodePools[0].{problem}")


def test_a_declared_gpu_label_that_agrees_with_the_facts_is_kept(ec2: Any) -> None:
    labels = {"nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.count": "1"}
    pool = resolve_node_pools(eks_config(labels=labels), ec2).cluster.node_pools[0]
    assert pool.labels["nvidia.com/gpu.product"] == "NVIDIA-L4"
    assert pool.labels["nvidia.com/gpu.count"] == "1"


def test_labels_past_the_limit_with_the_gpu_labels_name_the_key_when_aws_is_asked(ec2: Any) -> None:
    labels = {f"team.example/l{i}": "x" for i in range(MAX_LIST_ITEMS - 1)}
    with pytest.raises(ConfigError) as err:
        resolve_node_pools(eks_config(labels=labels), ec2)
    assert err.value.problems == [
        f"kaistack:cluster.nodePools[0].labels: {MAX_LIST_ITEMS + 2} with the GPU labels kaistack adds, over the "
        f"{MAX_LIST_ITEMS} a node pool may have"
    ]


def test_a_gpu_ec2_names_no_manufacturer_for_is_not_taken_for_nvidias() -> None:
    """GpuDeviceInfo.Manufacturer is optional in service-2.json; kaistack's GPU stack needs NVIDIA GPUs."""
    with _gpu_pool_ec2({"Manufacturer": None}) as client, pytest.raises(ConfigError) as err:
        resolve_node_pools(eks_config(instanceType="g9.xlarge"), client)
    assert any("needs NVIDIA GPUs" in p for p in err.value.problems), err.value.problems


def test_gpus_declared_on_a_cpu_type_name_no_gpu_product(ec2: Any) -> None:
    with pytest.raises(ConfigError) as err:
        resolve_node_pools(eks_config(instanceType="m6i.large", gpus=2), ec2)
    assert err.value.problems == ["kaistack:cluster.nodePools[0].gpus: declared 2 but AWS says m6i.large has 0 GPUs"]


def test_zero_gpus_declared_on_a_gpu_type_is_a_contradiction(ec2: Any) -> None:
    with pytest.raises(ConfigError) as err:
        resolve_node_pools(eks_config(gpus=0), ec2)
    assert err.value.problems == [
        "kaistack:cluster.nodePools[0].gpus: declared 0 but AWS says g6.xlarge has 1 GPU (NVIDIA-L4)"
    ]


def test_kubeconfig_with_region_puts_the_region_before_the_aws_execs_own_arguments() -> None:
    """pulumi-eks's exec runs `aws eks get-token --cluster-name ...` (pulumi/pulumi-eks@v4.3.0:
    nodejs/eks/cluster/cluster.ts:211-220, which has added `--region` since; older releases did not): the region
    goes first, the exec's own arguments are kept."""
    doc = {"users": [{"user": {"exec": {"command": "aws", "args": ["eks", "get-token", "--cluster-name", "c"]}}}]}
    exec_ = json.loads(kubeconfig_with_region(doc, REGION))["users"][0]["user"]["exec"]
    assert exec_["args"] == ["--region", REGION, "eks", "get-token", "--cluster-name", "c"]


def test_without_zones_three_are_picked_where_the_region_offers_more(ec2: Any) -> None:
    """moto's us-west-2 offers g6.xlarge in all four zones; a new VPC spans three (kaistack.stack.eks.AUTO_ZONES:
    EKS needs 2, a third spreads the nodes at no fixed cost)."""
    raw = eks_raw()
    del raw["cluster"]["eks"]["availabilityZones"]
    resolved = resolve_node_pools(eks_config(raw), ec2)
    assert resolved.cluster.eks is not None
    assert resolved.cluster.eks.availability_zones == ["us-west-2a", "us-west-2b", "us-west-2c"]
