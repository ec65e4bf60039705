"""An existing cluster's node pools read from its live nodes (kaistack.stack.existing), where a mutation run of
existing.py (220 mutants: 159 killed or timed out by tests/workflows/test_existing_cluster.py and
tests/capacity/test_topology_check.py; of the 61 that survived, 55 are killed here and 6 change nothing) found
behaviour no other test pinned: which stacks are read from their nodes; where the kubeconfig is found (the stack's
own text, a Pulumi secret, ~/.kube/config, none); the place a refusal names; a cluster with no schedulable worker or
with more shapes than pools; how pools are named and numbered; the taints a pool keeps; the control-plane taints;
node fields that are missing or no quantity; the nodes an unplannable pool names.

Each test is one behaviour that tests/workflows/test_existing_cluster.py checks only in part or not at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

import pytest
from test_existing_cluster import GPU_TAINT, NODES, node

from kaistack.declaration import limits
from kaistack.declaration.model import StackConfig
from kaistack.declaration.model.cluster import ExistingSettings
from kaistack.declaration.parse import SECRET_PLACEHOLDER, ClusterUnreadable, ConfigError, parse_config
from kaistack.kube.client import KubeError
from kaistack.stack.existing import discover, needs_discovery, pools_from_nodes, read_live_nodes


def _l4(name: str, *, gpus: int = 1, taints: list[Any] | None = None) -> dict[str, Any]:
    return node(name, gpus=gpus, product="NVIDIA-L4", memory=23034, taints=taints)


WORKER = _l4("w1")


def _config(provider: str = "existing", *, pools: list[dict[str, Any]] | None = None, **existing: str) -> StackConfig:
    cluster: dict[str, Any] = {"provider": provider}
    if provider == "existing":
        cluster["existing"] = existing or {"context": "lab"}
    if pools is not None:
        cluster["nodePools"] = pools
    return parse_config({"cluster": cluster, "gpu": {"mode": "none"}, "queues": [{"name": "team"}]})


def _unreadable(settings: Any) -> NoReturn:
    raise KubeError("connection refused")


def _with_allocatable(base: dict[str, Any], **allocatable: str) -> dict[str, Any]:
    status = {"allocatable": {**base["status"]["allocatable"], **allocatable}}
    return {**base, "status": status}


def _with_taints(base: dict[str, Any], taints: list[Any]) -> dict[str, Any]:
    return {**base, "spec": {"taints": taints}}


# --- which stacks are read from their nodes ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "needed"),
    [
        (_config(), True),
        (_config(pools=[{"name": "cpu", "count": 1}]), False),
        (_config("kind"), False),
    ],
    ids=["existing-without-pools", "existing-with-pools", "kind-without-pools"],
)
def test_only_an_existing_cluster_that_declares_no_pools_is_read_from_its_nodes(
    config: StackConfig, needed: bool
) -> None:
    assert needs_discovery(config) is needed


def test_a_stack_that_declares_its_pools_is_returned_as_it_is_without_asking_the_cluster() -> None:
    config = _config(pools=[{"name": "cpu", "count": 1}])
    assert discover(config, "Pulumi.lab.yaml", _unreadable) == (config, [])


# --- the refusals ----------------------------------------------------------------------------------------------------


def test_an_unreadable_cluster_reached_by_the_stacks_own_kubeconfig_is_named_so() -> None:
    """No context to name: the refusal says the stack's kubeconfig, not "context None"."""
    with pytest.raises(ClusterUnreadable, match=r"none declared, and the nodes of the stack's kubeconfig could not"):
        discover(_config(kubeconfig="apiVersion: v1"), "Pulumi.lab.yaml", _unreadable)


def test_a_cluster_with_no_schedulable_worker_is_refused_not_checked_against_no_pools() -> None:
    """Only a control plane and a cordoned node: the stack's problem (exit 1), with what to declare instead."""
    only_unschedulable = [NODES[0], NODES[-1]]
    with pytest.raises(ConfigError) as err:
        discover(_config(), "Pulumi.lab.yaml", lambda settings: only_unschedulable)
    assert not isinstance(err.value, ClusterUnreadable)
    assert err.value.problems == [
        "cluster.nodePools: none declared, and context 'lab' has no schedulable worker node; declare "
        "cluster.nodePools (name, count, gpus, gpuProduct, gpuMemoryMiB, cpu, memory, taints) to check without the "
        "cluster"
    ]


def test_nodes_in_more_shapes_than_a_cluster_may_have_pools_are_refused_under_the_clusters_key() -> None:
    shapes = [_with_allocatable(node(f"n{i}"), cpu=str(i + 1)) for i in range(limits.MAX_NODE_POOLS + 1)]
    with pytest.raises(ConfigError) as err:
        discover(_config(), "Pulumi.lab.yaml", lambda settings: shapes)
    assert err.value.problems[0].startswith("kaistack:cluster.nodePools: List should have at most 1000 items")
    assert err.value.problems[-1].startswith("(the pools were read from the nodes of context 'lab'; declare ")


# --- where the kubeconfig is found -----------------------------------------------------------------------------------


def test_the_stacks_own_kubeconfig_text_is_the_one_read(fake_kube: Any, tmp_path: Path) -> None:
    fake_kube.responses["/api/v1/nodes"] = {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": [WORKER]}
    settings = ExistingSettings(kubeconfig=fake_kube.kubeconfig(tmp_path).read_text())
    assert [n["metadata"]["name"] for n in read_live_nodes(settings)] == ["w1"]


def test_a_kubeconfig_held_as_a_pulumi_secret_is_refused_as_one_only_pulumi_can_read() -> None:
    with pytest.raises(KubeError, match=r"^the kubeconfig is a Pulumi secret, which only `pulumi up`/`preview` can"):
        read_live_nodes(ExistingSettings(kubeconfig=SECRET_PLACEHOLDER))


def test_without_kubeconfig_the_users_home_kubeconfig_is_read(
    fake_kube: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_kube.responses["/api/v1/nodes"] = {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": [WORKER]}
    (tmp_path / ".kube").mkdir()
    fake_kube.kubeconfig(tmp_path).rename(tmp_path / ".kube" / "config")
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    nodes = read_live_nodes(ExistingSettings(context="kind-kaistack-dev"))
    assert [n["metadata"]["name"] for n in nodes] == ["w1"]


def test_with_no_kubeconfig_anywhere_the_refusal_says_where_one_is_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(KubeError, match=r"^no kubeconfig: set KUBECONFIG or create ~/\.kube/config$"):
        read_live_nodes(ExistingSettings(context="lab"))


# --- how nodes become pools ------------------------------------------------------------------------------------------


def test_pools_of_one_gpu_model_in_several_shapes_are_numbered_from_2() -> None:
    """L4 nodes untainted, tainted, and with two GPUs are three pools: nvidia-l4, then -2 and -3."""
    nodes = [_l4("a"), _l4("b", taints=GPU_TAINT), _l4("c", gpus=2)]
    assert [(p.name, p.gpus, len(p.taints)) for p in pools_from_nodes(nodes)] == [
        ("nvidia-l4", 1, 0),
        ("nvidia-l4-2", 1, 1),
        ("nvidia-l4-3", 2, 0),
    ]


def test_a_taint_that_is_no_mapping_is_passed_over() -> None:
    [pool] = pools_from_nodes([_with_taints(node("a"), ["nvidia.com/gpu", {"key": "k", "effect": "NoExecute"}])])
    assert [(t.key, t.effect) for t in pool.taints] == [("k", "NoExecute")]


@pytest.mark.parametrize(
    "taint",
    [{"key": "k", "effect": "PreferNoSchedule"}, {"key": "", "effect": "NoSchedule"}, {"key": "k"}],
    ids=["prefer-no-schedule", "no-key", "no-effect"],
)
def test_a_taint_that_repels_no_pod_is_not_kept(taint: dict[str, str]) -> None:
    """KAI places pods against NoSchedule and NoExecute taints; a preference, or a taint without key or effect,
    refuses nothing."""
    [pool] = pools_from_nodes([_with_taints(node("a"), [taint])])
    assert pool.taints == []


def test_a_product_label_with_no_letter_or_digit_is_refused_for_the_label_alone() -> None:
    """The pool's name falls back to `nodes`: the refusal is the label's, not a name kaistack made up."""
    odd = node("odd", gpus=1, product="--", memory=23034)
    with pytest.raises(ConfigError) as err:
        pools_from_nodes([odd])
    assert len(err.value.problems) == 1
    assert "node odd is not one kaistack can plan (node.gpuProduct: " in err.value.problems[0]


@pytest.mark.parametrize("field", ["cpu", "memory", "ephemeral-storage"])
def test_an_allocatable_quantity_that_is_no_quantity_is_read_as_none(field: str) -> None:
    [pool] = pools_from_nodes([_with_allocatable(node("a"), **{field: "lots"})])
    read = {"cpu": pool.cpu, "memory": pool.memory, "ephemeral-storage": pool.ephemeral_storage}[field]
    assert str(read) == "0"


@pytest.mark.parametrize(
    ("pods", "read"), [("250", 250), (None, 110), ("many", 110)], ids=["said", "missing", "no-number"]
)
def test_a_node_takes_the_pods_it_says_else_the_kubelets_default_110(pods: str | None, read: int) -> None:
    base = node("a")
    allocatable = {k: v for k, v in base["status"]["allocatable"].items() if k != "pods"}
    if pods is not None:
        allocatable["pods"] = pods
    [pool] = pools_from_nodes([{**base, "status": {"allocatable": allocatable}}])
    assert pool.pods == read


@pytest.mark.parametrize("label", [None, "unknown"], ids=["missing", "no-number"])
def test_a_gpu_node_without_a_memory_label_leaves_the_pools_gpu_memory_unknown(label: str | None) -> None:
    gpu = _l4("a")
    labels = {k: v for k, v in gpu["metadata"]["labels"].items() if k != "nvidia.com/gpu.memory"}
    if label is not None:
        labels["nvidia.com/gpu.memory"] = label
    [pool] = pools_from_nodes([{**gpu, "metadata": {"name": "a", "labels": labels}}])
    assert (pool.gpus, pool.gpu_memory_mi_b) == (1, None)


@pytest.mark.parametrize("count", ["0", "lots"], ids=["zero", "no-number"])
def test_a_mig_profile_the_node_offers_none_of_is_no_mig(count: str) -> None:
    """The device plugin can leave a profile at 0 after the MIG layout changes: the pool has no MIG devices."""
    gpu = node("a", gpus=1, product="NVIDIA-A100", memory=40000)
    [pool] = pools_from_nodes([_with_allocatable(gpu, **{"nvidia.com/mig-1g.5gb": count})])
    assert (pool.mig, pool.mig_strategy) == ({}, "none")


@pytest.mark.parametrize("key", ["node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"])
def test_a_control_plane_node_is_left_out_by_its_current_or_its_legacy_taint(key: str) -> None:
    control_plane = node("cp", taints=[{"key": key, "effect": "NoSchedule"}])
    assert [p.name for p in pools_from_nodes([control_plane, WORKER])] == ["nvidia-l4"]


def test_a_control_plane_node_that_only_prefers_no_pods_is_a_worker() -> None:
    """A PreferNoSchedule control-plane taint refuses no pod: KAI may place work there, so its capacity counts."""
    control_plane = node("cp", taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "PreferNoSchedule"}])
    [pool] = pools_from_nodes([control_plane])
    assert (pool.name, pool.count, pool.taints) == ("cpu", 1, [])


def test_pools_of_one_gpu_model_are_numbered_in_the_order_of_their_alphabetically_first_node() -> None:
    """Whatever order the API server lists them in: the tainted pool holds node a, so it is the unnumbered one."""
    nodes = [_l4("m"), _l4("z", taints=GPU_TAINT), _l4("a", taints=GPU_TAINT), _l4("n")]
    assert [(p.name, p.count, len(p.taints)) for p in pools_from_nodes(nodes)] == [
        ("nvidia-l4", 2, 1),
        ("nvidia-l4-2", 2, 0),
    ]


def test_a_gpu_node_without_a_product_label_is_in_a_pool_named_gpu() -> None:
    gpu = _l4("a", gpus=2)
    labels = {k: v for k, v in gpu["metadata"]["labels"].items() if k != "nvidia.com/gpu.product"}
    [pool] = pools_from_nodes([{**gpu, "metadata": {"name": "a", "labels": labels}}])
    assert (pool.name, pool.gpus, pool.gpu_product) == ("gpu", 2, None)


def test_a_run_of_characters_a_pool_name_cannot_hold_becomes_one_dash() -> None:
    [pool] = pools_from_nodes([node("a", gpus=1, product="NVIDIA_-_RTX.A6000", memory=49140)])
    assert pool.name == "nvidia-rtx-a6000"


def test_a_long_product_names_its_pool_by_its_first_50_characters() -> None:
    """Room is left for the -2, -3 ... of a second pool of the model within the 63 of a DNS label."""
    [pool] = pools_from_nodes([node("a", gpus=1, product="NVIDIA" + "X" * 57, memory=49140)])
    assert pool.name == "nvidia" + "x" * 44


@pytest.mark.parametrize(
    ("count", "named"), [(3, "n0, n1, n2"), (4, "n0, n1, n2 ...")], ids=["three-named", "four-the-first-three"]
)
def test_unplannable_nodes_are_named_by_their_first_three_names_in_order(count: int, named: str) -> None:
    big = [node(f"n{i}", gpus=200, product="NVIDIA-H100", memory=81559) for i in reversed(range(count))]
    with pytest.raises(ConfigError) as err:
        pools_from_nodes(big)
    assert f"and node {named} is not one kaistack can plan (" in err.value.problems[0]
