"""An existing cluster without declared node pools: capacity read from its live nodes, or a clear refusal.

Node objects are shaped as `kubectl get nodes -o yaml` prints them on a GPU cluster with NVIDIA's GPU
feature discovery (labels nvidia.com/gpu.product, nvidia.com/gpu.memory in MiB; NVIDIA/k8s-device-plugin
@v0.20.0 docs/gpu-feature-discovery) and the device plugin's allocatable nvidia.com/gpu.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kaistack.cli import main
from kaistack.declaration.parse import ConfigError
from kaistack.stack.existing import pools_from_nodes
from kaistack.stack.load import LoadOptions, load_stack

ROOT = Path(__file__).resolve().parents[2]


def node(name: str, *, gpus: int = 0, product: str = "", memory: int = 0, taints: list[Any] | None = None) -> dict:
    labels = {"kubernetes.io/hostname": name}
    allocatable = {"cpu": "63900m", "memory": "515000Mi", "pods": "110", "ephemeral-storage": "900Gi"}
    if gpus:
        labels |= {
            "nvidia.com/gpu.product": product,
            "nvidia.com/gpu.memory": str(memory),
            "nvidia.com/gpu.count": str(gpus),
        }
        allocatable["nvidia.com/gpu"] = str(gpus)
    spec: dict[str, Any] = {"taints": taints} if taints else {}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": spec,
            "status": {"allocatable": allocatable, "capacity": allocatable}}  # fmt: skip


CONTROL_PLANE = node("cp", taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}])
GPU_TAINT = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
NODES = [
    CONTROL_PLANE,
    node("gpu-a", gpus=8, product="NVIDIA-H100-80GB-HBM3", memory=81559, taints=GPU_TAINT),
    node("gpu-b", gpus=8, product="NVIDIA-H100-80GB-HBM3", memory=81559, taints=GPU_TAINT),
    node("l4", gpus=1, product="NVIDIA-L4", memory=23034),
    node("cpu-1"),
    {**node("cordoned"), "spec": {"unschedulable": True}},
]

STACK = """\
config:
  kaistack:cluster:
    provider: existing
    existing:
      context: kind-kaistack-dev
  kaistack:gpu:
    mode: none
  kaistack:queues:
    - name: team
  kaistack:workloads:
    - name: train
      kind: Job
      image: x
      queue: team
      gpu: 8
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "Pulumi.lab.yaml").write_text(STACK)
    return tmp_path


def test_nodes_of_one_shape_become_one_pool_without_control_plane_or_cordoned_nodes() -> None:
    pools = {p.name: p for p in pools_from_nodes(NODES)}
    assert set(pools) == {"nvidia-h100-80gb-hbm3", "nvidia-l4", "cpu"}
    h100 = pools["nvidia-h100-80gb-hbm3"]
    assert (h100.count, h100.gpus, h100.gpu_memory_mi_b, h100.gpu_product) == (2, 8, 81559, "NVIDIA-H100-80GB-HBM3")
    assert [(t.key, t.value, t.effect) for t in h100.taints] == [("nvidia.com/gpu", "present", "NoSchedule")]
    assert str(pools["cpu"].cpu) == "63900m"
    assert pools["cpu"].count == 1


def test_check_places_work_on_the_discovered_nodes(project: Path) -> None:
    loaded = load_stack(project, "lab", LoadOptions(read_nodes=lambda settings: NODES))
    assert sum(p.count for p in loaded.config.cluster.node_pools) == 4
    assert loaded.notes == (
        "read 6 nodes from context 'kind-kaistack-dev': cpu (1 x 0 GPU), nvidia-h100-80gb-hbm3 "
        "(2 x 8 GPU NVIDIA-H100-80GB-HBM3), nvidia-l4 (1 x 1 GPU NVIDIA-L4)",
    )


def test_an_unreachable_cluster_is_refused_with_what_to_declare(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(project / "missing"))
    monkeypatch.setenv("HOME", str(project))
    with pytest.raises(ConfigError, match=r"cluster\.nodePools: none declared, and the nodes of context") as err:
        load_stack(project, "lab")
    assert "declare cluster.nodePools (name, count, gpus" in str(err.value)


@pytest.mark.parametrize("command", ["check", "render", "validate", "diff"])
def test_kaistack_offline_exits_3_the_environment_with_the_message_not_a_pod_type(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """The cluster the stack leaves its nodes to cannot be read: exit 3 (environment), as diagnose and verify; each
    command's --help says so (tests/workflows/test_workflow_cli_help.py)."""
    monkeypatch.setenv("KUBECONFIG", str(project / "missing"))
    monkeypatch.setenv("HOME", str(project))
    base = ["--base-file", str(project / "Pulumi.lab.yaml")] if command == "diff" else []
    assert main([command, "--stack", "lab", "--project", str(project), *base]) == 3
    err = capsys.readouterr().err
    assert "none declared" in err
    assert "pod type ()" not in err


def test_live_nodes_are_read_through_the_kubeconfig(
    project: Path, fake_kube: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real client against the fake API on loopback: GET /api/v1/nodes, then the check fits 8 GPUs."""
    fake_kube.responses["/api/v1/nodes"] = {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": NODES}
    monkeypatch.setenv("KUBECONFIG", str(fake_kube.kubeconfig(tmp_path)))
    assert main(["check", "--stack", "lab", "--project", str(project), "--json"]) == 0
    report = yaml.safe_load(capsys.readouterr().out)
    assert report["fits"] is True
    assert ("/api/v1/nodes", {"limit": "500"}) in [
        (p, {k: v for k, v in q.items() if k == "limit"}) for p, q in fake_kube.requests
    ]


def test_a_discovered_pool_carries_its_nodes_allocatable_ephemeral_storage() -> None:
    """KAI compares ephemeral storage like CPU (resource_requirment.go L66-67); the node says how much it has."""
    pools = {p.name: p for p in pools_from_nodes(NODES)}
    assert str(pools["cpu"].ephemeral_storage) == "900Gi"


def test_nodes_whose_disks_differ_by_a_few_bytes_stay_one_pool_offering_the_smallest() -> None:
    a, b = node("a"), node("b")
    a["status"]["allocatable"] = {**a["status"]["allocatable"], "ephemeral-storage": "95491281146"}
    b["status"]["allocatable"] = {**b["status"]["allocatable"], "ephemeral-storage": "95491281000"}
    [pool] = pools_from_nodes([a, b])
    assert pool.count == 2
    assert pool.ephemeral_storage is not None
    assert pool.ephemeral_storage.units == 95491281000


def test_a_node_that_reports_no_ephemeral_storage_leaves_its_pools_unknown() -> None:
    a, b = node("a"), node("b")
    b["status"]["allocatable"] = {k: v for k, v in b["status"]["allocatable"].items() if k != "ephemeral-storage"}
    [pool] = pools_from_nodes([a, b])
    assert pool.ephemeral_storage is None


def test_lint_with_such_a_stack_exits_3_too(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(project / "missing"))
    monkeypatch.setenv("HOME", str(project))
    pod = ROOT / "tests" / "data" / "manifests" / "001-gpu-pod.yaml"
    assert main(["lint", "--stack", "lab", "--project", str(project), "--json", str(pod)]) == 3
    assert yaml.safe_load(capsys.readouterr().out)["exitCode"] == 3


def test_promote_into_such_a_stack_exits_3_not_a_refused_promotion(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The target's nodes cannot be read: the environment's problem, not the promoted file's (exit 1)."""
    monkeypatch.setenv("KUBECONFIG", str(project / "missing"))
    monkeypatch.setenv("HOME", str(project))
    (project / "Pulumi.dev.yaml").write_text((ROOT / "Pulumi.dev.yaml").read_text())
    lab = yaml.safe_load((project / "Pulumi.lab.yaml").read_text())
    lab["config"]["kaistack:kai"] = {"version": "v0.16.0"}
    (project / "Pulumi.lab.yaml").write_text(yaml.safe_dump(lab, sort_keys=False))
    assert main(["promote", "dev", "lab", "--dry-run", "--project", str(project)]) == 3
    assert "could not be read" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("nodes", "why"),
    [
        ([node("big", gpus=200, product="NVIDIA-H100", memory=81559)], r"node\.gpus: Input should be less than or"),
        ([node("n1", gpus=1, product="NVIDIA-L4", memory=2**40)], r"node\.gpuMemoryMiB: Input should be less than or"),
    ],
)
def test_a_node_kaistack_cannot_plan_is_named_and_the_pools_to_declare_said(nodes: list[Any], why: str) -> None:
    """A cluster's node outside the NodePool model (over 128 GPUs, a GPU memory label past 2**31 MiB) was exit 70."""
    with pytest.raises(ConfigError, match=rf"none declared, and node \w+ is not one kaistack can plan \({why}"):
        pools_from_nodes(nodes)


@pytest.mark.parametrize(("label", "strategy"), [(None, "none"), ("", "none"), ("weird", "none"), ("single", "single")])
def test_a_mig_nodes_strategy_is_read_as_kai_reads_its_label(label: str | None, strategy: str) -> None:
    """KAI@v0.17.0 pkg/scheduler/api/node_info/node_info.go:698-710 (GetMigStrategy): a missing, empty or unknown
    nvidia.com/mig.strategy is MigStrategyNone, which refuses no pod (:335-343); a missing one had been read as
    mixed, which refuses every whole-GPU and fractional pod."""
    mig = node("m", gpus=1, product="NVIDIA-A100", memory=40000)
    if label is not None:
        mig["metadata"]["labels"]["nvidia.com/mig.strategy"] = label
    mig["status"]["allocatable"]["nvidia.com/mig-1g.5gb"] = "7"
    (pool,) = pools_from_nodes([mig])
    assert (pool.mig_strategy, pool.mig) == (strategy, {"nvidia.com/mig-1g.5gb": 7})


def test_a_node_kaistack_cannot_plan_is_the_stack_files_problem(project: Path) -> None:
    big = node("big", gpus=200, product="NVIDIA-H100", memory=81559)
    with pytest.raises(ConfigError) as err:
        load_stack(project, "lab", LoadOptions(read_nodes=lambda settings: [big]))
    head = "invalid kaistack config in Pulumi.lab.yaml (1 problem):\n  cluster.nodePools: none declared, and node big"
    assert str(err.value).startswith(head)


def test_pools_read_without_a_declared_topology_level_are_named_not_a_crash(project: Path) -> None:
    """The stack's own rules hold for the pools read from the nodes: a topology level the nodes are not labelled
    with was exit 70 (StackConfig's cross-field rule raised past the load path)."""
    stack = project / "Pulumi.lab.yaml"
    document = yaml.safe_load(stack.read_text())
    document["config"]["kaistack:cluster"]["topology"] = {"name": "zones", "levels": ["topology.kubernetes.io/zone"]}
    stack.write_text(yaml.safe_dump(document))
    with pytest.raises(ConfigError) as err:
        load_stack(project, "lab", LoadOptions(read_nodes=lambda settings: NODES))
    problems = err.value.problems
    assert any(p.startswith("kaistack:cluster.nodePools[0].labels: pool ") for p in problems), problems
    assert problems[-1].startswith("(the pools were read from the nodes of context 'kind-kaistack-dev'; declare")


@pytest.mark.parametrize(
    "odd",
    [
        {"metadata": None},
        {"metadata": {"name": "odd", "labels": ["nvidia.com/gpu.product"]}},
        {"spec": None, "status": None},
        {"spec": {"taints": {"key": "x"}}, "status": {"allocatable": None}},
        {"status": ["allocatable"]},
    ],
    ids=["null-metadata", "labels-a-list", "null-spec-and-status", "taints-a-map", "status-a-list"],
)
def test_a_node_whose_fields_have_another_shape_reads_them_as_absent_not_a_crash(odd: dict[str, Any]) -> None:
    pools = pools_from_nodes([node("gpu-a", gpus=8, product="NVIDIA-L4", memory=23034), {**node("cpu-1"), **odd}])
    assert sorted(p.name for p in pools) == ["cpu", "nvidia-l4"]
    [cpu] = [p for p in pools if p.name == "cpu"]
    assert (cpu.count, cpu.gpus) == (1, None)


def test_a_product_name_cut_at_a_dash_names_a_pool_without_a_trailing_dash() -> None:
    """Pool names are cut to 50 characters and must stay DNS labels (a mutation run's review found one ending in
    '-' refused by the model, though the node's label was valid)."""
    [pool] = pools_from_nodes([node("n1", gpus=1, product="A" * 49 + "-B", memory=1000)])
    assert pool.name == "a" * 49
