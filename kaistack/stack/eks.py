"""EKS node pools: what each EC2 instance type really has, asked of AWS while a stack is loaded.

`resolve_node_pools(config)` fills the GPU facts (`gpus`, `gpuMemoryMiB`, `gpuProduct`) and the
allocatable `cpu`, `memory` and `pods` of every EKS pool from EC2 `DescribeInstanceTypes`, checks
that each type is offered in the stack's availability zones (`DescribeInstanceTypeOfferings`), and
adds what a GPU node needs before GPU feature discovery runs: the `nvidia.com/gpu.{product,count,
memory}` labels KAI reads for GPU-memory sharing and the `nvidia.com/gpu=true:NoSchedule` taint.
The system node group's allocatable `cpu`, `memory` and `pods` come the same way: CPU-only pods run
there, since the taint keeps them off every GPU pool. The placement checker, the node labels and the
policies then all see the same numbers.

A value declared by hand is kept when AWS agrees with it and is a ConfigError naming both values
when it does not. Without credentials (or without a network) the declared values are used as they
are, and a pool missing one is a ConfigError naming the key to declare.

boto3 only; no Pulumi import, so the CLI's `render`/`check` and the program share it. The shape
rules that need no AWS (instanceType set, sizes in range, zones) are the model's
(`kaistack.declaration.model.cluster.eks_shape_problems`). Answers are kept for one resolution only:
no module-level cache, so a long-lived process never plans with stale offerings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from kaistack.declaration.kai_api import GPU_COUNT_LABEL, GPU_MEMORY_LABEL, GPU_PRODUCT_LABEL, GPU_RESOURCE
from kaistack.declaration.limits import MAX_LIST_ITEMS
from kaistack.declaration.model import NodePool, StackConfig, SystemNodeGroup, Taint
from kaistack.declaration.parse import ConfigError, revalidated
from kaistack.stack.ec2 import RUN_AGAIN, AwsUnavailable, ClientCodeError, Ec2, InstanceFacts
from placement.quantity import cpu_millis, memory_bytes

GPU_TAINT = Taint(key=GPU_RESOURCE, value="true", effect="NoSchedule")
# AWS quotes GPU memory in marketing units (an L4's "24 GB" is 22888 MiB; the driver reports 23034 MiB; an
# H100's 81920 is 81559). A T4's 16384 is 15360 in nvidia-smi and GFD's label (per label dumps from running
# nodes; no NVIDIA page states it), 6.25% under. A declared value this far under or over AWS's is the same GPU.
GPU_MEMORY_UNDER = Decimal("0.07")
GPU_MEMORY_OVER = Decimal("0.05")


def resolve_node_pools(config: StackConfig, ec2: Any = None) -> StackConfig:
    """The config with every EKS pool's facts filled from EC2 (or checked against it); see `discover`."""
    return discover(config, ec2)[0]


def discover(config: StackConfig, ec2: Any = None) -> tuple[StackConfig, list[str]]:
    """The config with every EKS pool's facts filled from EC2 (or checked against it), and notes.

    `ec2` is a boto3 EC2 client to use instead of one built from the default credential chain for
    `cluster.eks.region` (tests inject a moto-backed client). Non-EKS stacks are returned unchanged.
    Raises ConfigError (one "kaistack:key.path: message" per problem) on contradictions, unknown
    instance types, types not offered in a chosen zone, or, without AWS, facts left undeclared.
    The notes say what the caller should tell the user (zones picked, facts taken unverified).
    """
    cluster = config.cluster
    if cluster.provider != "eks" or cluster.eks is None:
        return config, []
    region = cluster.eks.region
    ask = Ec2(ec2, region)
    try:
        facts, problems = _ask_aws(config, ask)
    except AwsUnavailable as err:
        return _from_declared(config, str(err), err.remedy)
    except ClientCodeError as err:  # an answer kaistack does not expect: said, and the declared facts are used
        return _from_declared(config, f"AWS refused a request: {err}", RUN_AGAIN)
    notes: list[str] = []
    zones = list(cluster.eks.availability_zones)
    if not zones and cluster.eks.vpc_id is None and not problems:
        zones, zone_problems = _pick_zones(ask, region, list(facts.values()))
        problems += zone_problems
        if not zone_problems:
            # Offerings change over time; a different pick later would replace the VPC's subnets.
            notes.append(
                f"cluster.eks.availabilityZones not set; picked {', '.join(zones)}. Pin them: pulumi config set "
                f"--path 'kaistack:cluster.eks.availabilityZones[0]' {zones[0]} (and [1], ...)"
            )
    pools: list[NodePool] = []
    for i, pool in enumerate(cluster.node_pools):
        where = f"kaistack:cluster.nodePools[{i}]"
        pool_facts = facts.get(pool.instance_type or "")
        if pool_facts is None:
            pools.append(pool)  # its unknown type is already a problem
            continue
        merged, pool_problems = _merge(pool, pool_facts, where)
        problems += pool_problems
        pools.append(merged)
    system = cluster.eks.system_node_group
    system_facts = facts.get(system.instance_type)
    if system_facts is not None:
        system, system_problems = _merge_system(system, system_facts)
        problems += system_problems
    if problems:
        raise ConfigError(sorted(problems))  # key-path order: pool by pool
    return _with_pools(config, pools, zones, system), notes


# --- what AWS says, checked against the declaration -------------------------------------------------


def _ask_aws(config: StackConfig, ec2: Ec2) -> tuple[dict[str, InstanceFacts], list[str]]:
    eks = config.cluster.eks
    assert eks is not None
    region = eks.region
    system_type = eks.system_node_group.instance_type
    wanted: dict[str, list[str]] = {}  # instance type -> key paths using it
    zones: dict[str, list[str]] = {}  # key path -> the zones its node group spans
    for i, pool in enumerate(config.cluster.node_pools):
        if pool.instance_type:
            key = f"kaistack:cluster.nodePools[{i}].instanceType"
            wanted.setdefault(pool.instance_type, []).append(key)
            zones[key] = list(pool.availability_zones or eks.availability_zones)
    wanted.setdefault(system_type, []).append("kaistack:cluster.eks.systemNodeGroup.instanceType")
    facts: dict[str, InstanceFacts] = {}
    problems: list[str] = []
    for instance_type, keys in wanted.items():
        found = ec2.describe(instance_type)
        if found is None:
            problems += [
                f"{key}: {instance_type!r} is not an EC2 instance type AWS knows in {region} "
                "(DescribeInstanceTypes: InvalidInstanceType)"
                for key in keys
            ]
            continue
        facts[instance_type] = found
        if "x86_64" not in found.architectures:
            problems += [
                f"{key}: {instance_type} is {'/'.join(found.architectures)}; kaistack's EKS node groups use the "
                "x86_64 AL2023 AMIs, pick an x86_64 instance type"
                for key in keys
            ]
        for key in keys:
            problems += [f"{key}: {m}" for m in _offer_problems(ec2, eks, found, key, zones.get(key))]
    return facts, problems


def _offer_problems(ec2: Ec2, eks: Any, facts: InstanceFacts, key: str, zones: list[str] | None) -> list[str]:
    """EKS refuses a node group with a subnet in a zone that does not offer its type (CreateNodegroup:
    "Your requested instance type ... is not supported in your requested Availability Zone")."""
    offered = ec2.offered_zones(facts.instance_type)
    if not offered:
        return [f"{facts.instance_type} is offered in no availability zone of {eks.region}"]
    spans = eks.availability_zones if zones is None else zones
    if not spans:
        return []  # an existing VPC without listed zones: the region offering it is all we can check
    missing = [z for z in spans if z not in offered]
    if not missing:
        return []
    pool_zones = key.removesuffix(".instanceType") + ".availabilityZones"
    source = (
        pool_zones
        if zones is not None and zones != list(eks.availability_zones)
        else ("kaistack:cluster.eks.availabilityZones")
    )
    message = (
        f"{facts.instance_type} is not offered in {', '.join(missing)} ({source}); "
        f"AWS offers it in {', '.join(sorted(offered))}"
    )
    usable = [z for z in eks.availability_zones if z in offered]
    if zones is not None and usable:
        message += f"; set {pool_zones} to {usable} to keep this pool's node group in those zones"
    return [message]


# A VPC kaistack creates spans this many zones when the stack names none: EKS needs 2, a third keeps
# the control plane's ENIs and the nodes spread without adding fixed cost (one NAT gateway either way).
AUTO_ZONES = 3


def _pick_zones(ec2: Ec2, region: str, facts: list[InstanceFacts]) -> tuple[list[str], list[str]]:
    """The first zones (by name) of the region that are available and offer every pool's type."""
    candidates = ec2.available_zones()
    for found in facts:
        candidates &= ec2.offered_zones(found.instance_type)
    zones = sorted(candidates)[:AUTO_ZONES]
    if len(zones) >= 2:
        return zones, []
    types = ", ".join(sorted(f.instance_type for f in facts))
    return zones, [
        f"kaistack:cluster.eks.availabilityZones: EKS needs 2 zones, but only {len(zones)} zone(s) of {region} "
        f"offer all of {types} ({', '.join(zones) or 'none'}); list 2 or more zones in "
        "kaistack:cluster.eks.availabilityZones and give a pool whose type is offered in fewer its own "
        "nodePools[].availabilityZones, or use other instance types or another region"
    ]


# --- merging AWS facts with what the stack declares -------------------------------------------------


def _merge(pool: NodePool, facts: InstanceFacts, where: str) -> tuple[NodePool, list[str]]:
    declared = pool.model_fields_set
    itype = facts.instance_type
    gpu_desc = f" ({facts.gpu_product})" if facts.gpu_product else ""
    problems: list[str] = []
    update: dict[str, Any] = {}

    if facts.gpu_partition < 1:
        problems.append(
            f"{where}.instanceType: {itype} gives a {facts.gpu_partition:g} slice of one {facts.gpu_name} GPU, which "
            "EC2 counts as 0 GPUs; kaistack plans whole GPUs per node (share them with KAI's fractions instead)"
        )
    elif facts.gpus and (facts.gpu_manufacturer or "").upper() != "NVIDIA":
        problems.append(
            f"{where}.instanceType: {itype} has {facts.gpu_manufacturer} GPUs; kaistack's GPU stack "
            "(device plugin / GPU Operator, KAI GPU sharing) needs NVIDIA GPUs"
        )
    if pool.gpus is not None and pool.gpus != facts.gpus:
        problems.append(
            f"{where}.gpus: declared {pool.gpus} but AWS says {itype} has {facts.gpus} GPU"
            f"{'s' * (facts.gpus != 1)}{gpu_desc}"
        )
    update["gpus"] = facts.gpus
    if facts.gpus:
        if pool.gpu_product is not None and not _same_product(pool.gpu_product, facts):
            problems.append(
                f"{where}.gpuProduct: declared {pool.gpu_product!r} but AWS says {itype} has "
                f"{facts.gpu_manufacturer} {facts.gpu_name} GPUs (label value {facts.gpu_product!r})"
            )
        # A consistent declared product is kept: it may be GFD's longer name (NVIDIA-H100-80GB-HBM3).
        update["gpu_product"] = pool.gpu_product or facts.gpu_product
        aws_mib = facts.gpu_memory_mib
        if pool.gpu_memory_mi_b is not None and aws_mib and not _close(pool.gpu_memory_mi_b, aws_mib):
            problems.append(
                f"{where}.gpuMemoryMiB: declared {pool.gpu_memory_mi_b} but AWS says {itype} has {aws_mib} MiB "
                f"per GPU{gpu_desc}"
            )
        update["gpu_memory_mi_b"] = pool.gpu_memory_mi_b or aws_mib
    else:
        for key, field in (("gpuProduct", "gpu_product"), ("gpuMemoryMiB", "gpu_memory_mi_b")):
            if getattr(pool, field) is not None:
                problems.append(f"{where}.{key}: declared {getattr(pool, field)!r} but AWS says {itype} has no GPUs")
        update["gpu_product"] = None
        update["gpu_memory_mi_b"] = None

    # cpu/memory: a declared value may be below the machine (what the team wants to plan with),
    # never above it. Undeclared ones become the EKS AMI's allocatable estimate.
    if "cpu" in declared:
        if cpu_millis(pool.cpu) > facts.vcpus * 1000:
            problems.append(f"{where}.cpu: declared {pool.cpu} but AWS says {itype} has {facts.vcpus} vCPUs")
    else:
        update["cpu"] = f"{facts.allocatable_cpu_millis}m"
    if "memory" in declared:
        if memory_bytes(pool.memory) > facts.memory_mib * 2**20:
            problems.append(
                f"{where}.memory: declared {pool.memory} but AWS says {itype} has {facts.memory_mib}Mi of memory"
            )
    else:
        update["memory"] = f"{facts.allocatable_memory_mib}Mi"
    if "pods" not in declared:
        update["pods"] = facts.max_pods
    elif pool.pods is not None and pool.pods > facts.max_pods:
        problems.append(
            f"{where}.pods: declared {pool.pods} but EKS gives {itype} at most {facts.max_pods} pods (VPC CNI, "
            "default network card)"
        )

    try:
        merged = revalidated(pool, where, **update)
    except ConfigError as err:  # a fact from AWS the declaration's rules refuse (a GPU name no label can hold)
        from_aws = [p + " (AWS's GPU name; declare gpuProduct as GFD writes it, e.g. NVIDIA-L4)" for p in err.problems]
        return pool, [*problems, *(from_aws if "gpu_product" not in declared else err.problems)]
    labels, taints, label_problems = _gpu_node_marks(merged, where)
    problems += label_problems
    if label_problems:  # the pool is refused by what they say
        return merged, problems
    return revalidated(merged, where, labels=labels, taints=taints), problems  # the marks checked, so it holds


def _merge_system(group: SystemNodeGroup, facts: InstanceFacts) -> tuple[SystemNodeGroup, list[str]]:
    """The system node group's allocatable, as for a pool: declared values checked, the rest from EC2."""
    where = "kaistack:cluster.eks.systemNodeGroup"
    itype = facts.instance_type
    problems: list[str] = []
    update: dict[str, Any] = {}
    if group.cpu is None:
        update["cpu"] = f"{facts.allocatable_cpu_millis}m"
    elif cpu_millis(group.cpu) > facts.vcpus * 1000:
        problems.append(f"{where}.cpu: declared {group.cpu} but AWS says {itype} has {facts.vcpus} vCPUs")
    if group.memory is None:
        update["memory"] = f"{facts.allocatable_memory_mib}Mi"
    elif memory_bytes(group.memory) > facts.memory_mib * 2**20:
        problems.append(
            f"{where}.memory: declared {group.memory} but AWS says {itype} has {facts.memory_mib}Mi of memory"
        )
    if group.pods is None:
        update["pods"] = facts.max_pods
    elif group.pods > facts.max_pods:
        problems.append(
            f"{where}.pods: declared {group.pods} but EKS gives {itype} at most {facts.max_pods} pods (VPC CNI, "
            "default network card)"
        )
    try:
        return revalidated(group, where, **update), problems
    except ConfigError as err:
        return group, [*problems, *err.problems]


def _gpu_node_marks(pool: NodePool, where: str) -> tuple[dict[str, str], list[Taint], list[str]]:
    """Labels KAI needs before GFD runs, and the GPU taint, added to what the pool declares."""
    labels = dict(pool.labels)
    taints = list(pool.taints)
    problems: list[str] = []
    if not pool.gpu_count:
        return labels, taints, problems
    wanted = {GPU_COUNT_LABEL: str(pool.gpu_count)}
    if pool.gpu_product:
        wanted[GPU_PRODUCT_LABEL] = pool.gpu_product
    if pool.gpu_memory_mi_b:
        wanted[GPU_MEMORY_LABEL] = str(pool.gpu_memory_mi_b)
    for key, value in wanted.items():
        if key in labels and labels[key] != value:
            problems.append(f"{where}.labels: {key}={labels[key]!r} contradicts the pool's GPU facts ({key}={value!r})")
        labels.setdefault(key, value)
    if not any(t.key == GPU_TAINT.key for t in taints):
        taints.append(GPU_TAINT)
    for key, marks in (("labels", labels), ("taints", taints)):
        if len(marks) > MAX_LIST_ITEMS:
            problems.append(
                f"{where}.{key}: {len(marks)} with the GPU {key} kaistack adds, over the {MAX_LIST_ITEMS} a node "
                "pool may have"
            )
    return labels, taints, problems


def _same_product(declared: str, facts: InstanceFacts) -> bool:
    """`NVIDIA-L4`, `L4`, `nvidia l4` and GFD's `NVIDIA-H100-80GB-HBM3` all name AWS's L4 / H100, and GFD's
    `Tesla-T4` (NVIDIA/cloud-native-docs gpu-operator/gpu-sharing.rst) AWS's T4: NVML keeps the Tesla brand."""

    def norm(text: str) -> str:
        text = re.sub(r"[\s_]+", "-", text.strip().upper())
        maker = (facts.gpu_manufacturer or "").upper()
        return (text.removeprefix(f"{maker}-") if maker else text).removeprefix("TESLA-")

    name = norm(facts.gpu_name or "")
    value = norm(declared)
    return bool(name) and (value == name or value.startswith(f"{name}-"))


def _close(declared: int, aws: int) -> bool:
    return -GPU_MEMORY_UNDER * aws <= Decimal(declared) - aws <= GPU_MEMORY_OVER * aws


# --- without AWS ------------------------------------------------------------------------------------


def _from_declared(config: StackConfig, reason: str, remedy: str) -> tuple[StackConfig, list[str]]:
    """Use the declared facts unverified, or name every key that must be declared.

    `remedy` is what would let kaistack ask AWS (it differs for missing credentials and a busy EC2).
    """
    problems: list[str] = []
    pools: list[NodePool] = []
    hint = f"declare it, or {remedy} so kaistack can read it from EC2 DescribeInstanceTypes"
    eks = config.cluster.eks
    if eks is not None and eks.vpc_id is None and not eks.availability_zones:
        problems.append(
            f"kaistack:cluster.eks.availabilityZones: not declared and AWS cannot be asked ({reason}); list 2 or "
            f"more zones of {eks.region} that offer every pool's instance type, or {remedy}"
        )
    for i, pool in enumerate(config.cluster.node_pools):
        where = f"kaistack:cluster.nodePools[{i}]"
        itype = pool.instance_type or "?"
        gpu_facts = {"gpuMemoryMiB": pool.gpu_memory_mi_b, "gpuProduct": pool.gpu_product} if pool.gpus else {}
        missing = ["gpus"] if pool.gpus is None else [key for key, value in gpu_facts.items() if value is None]
        # Else the model's defaults (8 CPUs, 32Gi) would plan a g6.xlarge (4 vCPUs) as twice its size.
        missing += [key for key in ("cpu", "memory", "pods") if key not in pool.model_fields_set]
        problems += [
            f"{where}.{key}: not declared and AWS cannot be asked ({reason}); {hint} for {itype}" for key in missing
        ]
        labels, taints, mark_problems = _gpu_node_marks(pool, where)
        problems += mark_problems
        if not mark_problems:  # else the pool is refused below, by what the marks say
            pools.append(revalidated(pool, where, labels=labels, taints=taints))
    if problems:
        raise ConfigError(problems)
    note = f"{reason}; using the declared EKS node pool facts without checking them against AWS"
    return _with_pools(config, pools), [note]


def _with_pools(
    config: StackConfig,
    pools: Iterable[NodePool],
    zones: list[str] | None = None,
    system: SystemNodeGroup | None = None,
) -> StackConfig:
    update: dict[str, Any] = {"node_pools": list(pools)}
    eks = config.cluster.eks
    eks_update: dict[str, Any] = {}
    if eks is not None and zones is not None and zones != eks.availability_zones:
        eks_update["availability_zones"] = zones
    if eks is not None and system is not None and system != eks.system_node_group:
        eks_update["system_node_group"] = system
    if eks is not None and eks_update:
        update["eks"] = eks.replace(**eks_update)
    return config.replace(cluster=config.cluster.replace(**update))
