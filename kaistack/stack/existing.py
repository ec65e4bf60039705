"""Capacity of an existing cluster that declares no node pools: read from its live nodes.

What KAI itself reads from a node (kai.md §2; KAI@v0.17.0 pkg/scheduler/api/node_info): allocatable
`nvidia.com/gpu` and MIG resources, the GPU feature discovery labels `nvidia.com/gpu.product`,
`nvidia.com/gpu.memory` (MiB) and `nvidia.com/mig.strategy`, allocatable cpu, memory and pods, and
the node's taints. Nodes with the same shape become one pool, so `kaistack check` and the Platform's
capacity gate work as for declared pools. Control-plane and unschedulable nodes are left out, as the
scheduler leaves them out.

Without a readable cluster (offline, no credentials, a secret kubeconfig the stack file cannot
show) the stack is refused with what to declare instead, never checked against zero nodes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kaistack.declaration import kai_api
from kaistack.declaration.model import NodePool, StackConfig
from kaistack.declaration.parse import (
    NAMESPACE,
    SECRET_PLACEHOLDER,
    ClusterUnreadable,
    ConfigError,
    model_problems,
    revalidated,
)
from placement.quantity import Quantity, QuantityError

CONTROL_PLANE_TAINTS = ("node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master")
WHAT_TO_DECLARE = (
    "declare cluster.nodePools (name, count, gpus, gpuProduct, gpuMemoryMiB, cpu, memory, taints) to check "
    "without the cluster"
)


def needs_discovery(config: StackConfig) -> bool:
    return config.cluster.provider == "existing" and not config.cluster.node_pools


def discover(config: StackConfig, source: str, read_nodes: Any = None) -> tuple[StackConfig, list[str]]:
    """The config with pools read from the cluster's nodes, and a note saying so; ConfigError when unreadable.

    `read_nodes(settings) -> list[node dict]` is the seam tests replace; by default the cluster named by
    `cluster.existing` is asked through kaistack.kube.
    """
    if not needs_discovery(config):
        return config, []
    settings = config.cluster.existing
    where = f"context {settings.context!r}" if settings and settings.context else "the stack's kubeconfig"
    try:
        nodes = (read_nodes or read_live_nodes)(settings)
    except Exception as err:  # KubeError, or a kubeconfig that cannot be used here
        raise ClusterUnreadable(
            [
                f"cluster.nodePools: none declared, and the nodes of {where} could not be read ({err}); "
                f"{WHAT_TO_DECLARE}"
            ],
            source,
        ) from err
    topology = config.cluster.topology
    try:
        pools = pools_from_nodes(nodes, tuple(topology.levels) if topology else ())
    except ConfigError as err:
        raise ConfigError(err.problems, source) from None
    if not pools:
        raise ConfigError(
            [f"cluster.nodePools: none declared, and {where} has no schedulable worker node; {WHAT_TO_DECLARE}"],
            source,
        )
    read = f"(the pools were read from the nodes of {where}; {WHAT_TO_DECLARE})"
    try:  # the cluster's limits (pools, nodes), then the stack's own rules (a topology level the nodes lack)
        cluster = revalidated(config.cluster, "kaistack:cluster", source, node_pools=pools)
        resolved = revalidated(config, NAMESPACE, source, cluster=cluster)
    except ConfigError as err:
        raise ConfigError([*err.problems, read], source) from None
    summary = ", ".join(
        f"{p.name} ({p.count} x {p.gpus or 0} GPU {p.gpu_product or ''})".replace(" )", ")") for p in pools
    )
    return resolved, [f"read {len(nodes)} nodes from {where}: {summary}"]


def read_live_nodes(settings: Any) -> list[dict[str, Any]]:
    from kaistack.kube.client import KubeClient, KubeError
    from kaistack.kube.resources import Node

    text, base = _kubeconfig(settings)
    if text is None:
        raise KubeError("the kubeconfig is a Pulumi secret, which only `pulumi up`/`preview` can read")
    with KubeClient.from_kubeconfig(text, context=settings.context, base_dir=base) as client:
        return client.list(Node)


def _kubeconfig(settings: Any) -> tuple[str | None, Path]:
    from kaistack.kube.client import KubeError
    from kaistack.kube.kubeconfig import default_kubeconfig, from_environment, read_kubeconfig

    if settings.kubeconfig:
        return (None if settings.kubeconfig == SECRET_PLACEHOLDER else settings.kubeconfig), Path.cwd()
    merged = from_environment(os.environ)
    if merged is not None:
        return merged.text, merged.base_dir
    path = default_kubeconfig()
    if path is not None:
        return read_kubeconfig(path), path.parent

    raise KubeError("no kubeconfig: set KUBECONFIG or create ~/.kube/config")


def pools_from_nodes(nodes: Sequence[Mapping[str, Any]], levels: Sequence[str] = ()) -> list[NodePool]:
    """Schedulable worker nodes grouped by shape into node pools (named after GPU model, or `cpu`).

    With cluster.topology `levels`, a node's labels for them are part of its shape: nodes in different
    racks become different pools, so the checker puts each in its domain (the hostname level excepted:
    every node has its own, and the checker gives it one).
    """
    shapes: dict[tuple[Any, ...], list[str]] = {}
    fields: dict[tuple[Any, ...], dict[str, Any]] = {}
    storage_least: dict[tuple[Any, ...], str] = {}
    unknown: set[tuple[Any, ...]] = set()
    for node in nodes:
        shape = _shape(node)
        if shape is None:
            continue
        labels = _labels(node)
        placed = {level: str(labels[level]) for level in levels if level != kai_api.HOSTNAME_LABEL and level in labels}
        if placed:
            shape["labels"] = placed
        # Disks of one kind differ by a few bytes from node to node: storage is no reason to split a pool, and
        # the pool offers what its smallest node has.
        storage = shape.pop("ephemeralStorage", None)
        key = tuple(sorted((k, repr(v)) for k, v in shape.items()))
        shapes.setdefault(key, []).append(str(_metadata(node).get("name", "")))
        if storage is None:
            unknown.add(key)  # one node that does not say makes the pool's unknown
        elif key not in storage_least or _bytes(storage) < _bytes(storage_least[key]):
            storage_least[key] = storage
        fields[key] = shape
    pools = []
    used: set[str] = set()
    for key in sorted(shapes, key=lambda k: sorted(shapes[k])[0]):
        shape = fields[key]
        base = _pool_name(shape)
        name = base
        n = 2
        while name in used:
            name, n = f"{base}-{n}", n + 1
        used.add(name)
        if key in storage_least and key not in unknown:
            shape = {**shape, "ephemeralStorage": storage_least[key]}
        try:
            pools.append(NodePool.model_validate({"name": name, "count": len(shapes[key]), **shape}))
        except ValidationError as err:  # a node kaistack cannot plan: more GPUs than a pool may have, an odd label
            named = ", ".join(sorted(shapes[key])[:3]) + (" ..." if len(shapes[key]) > 3 else "")
            raise ConfigError(
                [
                    f"cluster.nodePools: none declared, and node {named} is not one kaistack can plan ({line}); "
                    f"{WHAT_TO_DECLARE}"
                    for line in model_problems(err, "node", NodePool)
                ]
            ) from None
    return pools


def _shape(node: Mapping[str, Any]) -> dict[str, Any] | None:
    spec = _field(node, "spec")
    if spec.get("unschedulable"):
        return None
    taints = [t for t in _list(spec.get("taints")) if isinstance(t, Mapping)]
    if any(t.get("key") in CONTROL_PLANE_TAINTS and t.get("effect") == "NoSchedule" for t in taints):
        return None
    labels = _labels(node)
    allocatable = _field(_field(node, "status"), "allocatable")
    shape: dict[str, Any] = {
        "cpu": _quantity(allocatable.get("cpu"), "0"),
        "memory": _quantity(allocatable.get("memory"), "0"),
        "pods": int(_number(allocatable.get("pods"), 110)),
    }
    ephemeral = allocatable.get("ephemeral-storage")
    if ephemeral is not None:
        shape["ephemeralStorage"] = _quantity(ephemeral, "0")
    gpus = int(_number(allocatable.get(kai_api.GPU_RESOURCE), 0))
    if gpus:
        shape["gpus"] = gpus
        if labels.get(kai_api.GPU_PRODUCT_LABEL):
            shape["gpuProduct"] = str(labels[kai_api.GPU_PRODUCT_LABEL])
        memory = _number(labels.get(kai_api.GPU_MEMORY_LABEL), 0)
        if memory:
            shape["gpuMemoryMiB"] = int(memory)
    mig = {
        str(k): int(_number(v, 0))
        for k, v in allocatable.items()
        if str(k).startswith(kai_api.MIG_RESOURCE_PREFIX) and _number(v, 0)
    }
    if mig:
        shape["mig"] = mig
        shape["migStrategy"] = kai_api.mig_strategy(labels)
    kept = [
        {"key": t["key"], "effect": t["effect"], **({"value": t["value"]} if t.get("value") else {})}
        for t in taints
        if t.get("key") and t.get("effect") in ("NoSchedule", "NoExecute")
    ]
    if kept:
        shape["taints"] = kept
    return shape


# A node's fields as the API server's schema has them; another shape (null, a list) reads as absent.
def _field(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _metadata(node: Mapping[str, Any]) -> Mapping[str, Any]:
    return _field(node, "metadata")


def _labels(node: Mapping[str, Any]) -> Mapping[str, Any]:
    return _field(_metadata(node), "labels")


def _pool_name(shape: Mapping[str, Any]) -> str:
    product = str(shape.get("gpuProduct") or ("gpu" if shape.get("gpus") else "cpu")).lower()
    cleaned = "".join(c if c.isalnum() else "-" for c in product).strip("-")
    # Cut to 50, then no dash may end it: a pool name is a DNS label (the model refuses one that ends in "-").
    return "-".join(p for p in cleaned.split("-") if p)[:50].rstrip("-") or "nodes"


def _bytes(quantity: str) -> int:
    return Quantity.parse(quantity).units


def _quantity(value: Any, default: str) -> str:
    try:
        return str(Quantity.parse(value if value is not None else default))
    except QuantityError:
        return default


def _number(value: Any, default: float) -> float:
    try:
        return float(Quantity.parse(value).value) if value is not None else default
    except QuantityError:
        return default
