"""`kaistack.capacity.plan`: what a declared stack becomes in the checker's snapshot, field by field.

A wrong mapping is a wrong "fits", so each test pins one thing the declaration says (a pool's allocatable,
labels, MIG devices, a queue's limit, a workload's request or grouping, KAI's scheduler settings) where the
simulator reads it, or the verdict that follows from it.
"""

from __future__ import annotations

import copy
from typing import Any

from kaistack.capacity.check import CapacityReport, check
from kaistack.capacity.plan import plan
from kaistack.capacity.report import to_json
from kaistack.declaration import kai_api, tenant_gangs
from kaistack.declaration.marks import NODE_POOL_LABEL
from kaistack.declaration.parse import parse_config
from placement.model import Job, Node

IMAGE = "busybox:1.37.0"
EKS = {"region": "us-west-2", "availabilityZones": ["us-west-2a", "us-west-2b"]}
M6I_LARGE = {"cpu": "1930m", "memory": "7518Mi", "pods": 29}


def _stack(*workloads: dict[str, Any], pool: dict[str, Any] | None = None, **overrides: Any) -> dict[str, Any]:
    """One kind node of 2 GPUs, 8 CPUs and 32Gi (or `pool`), fake GPUs, one unlimited queue `q`, tenant `t`."""
    raw: dict[str, Any] = {
        "cluster": {
            "provider": "kind",
            "nodePools": [pool or {"name": "gpu", "gpus": 2, "cpu": "8", "memory": "32Gi"}],
        },
        "gpu": {"mode": "fake"},
        "queues": [{"name": "q"}],
        "tenants": [{"name": "t", "queues": ["q"]}],
        "workloads": list(workloads),
    }
    raw.update(overrides)
    return raw


def _eks(*workloads: dict[str, Any], gpu: dict[str, Any] | None = None, **system: Any) -> dict[str, Any]:
    """One g6.xlarge (1 x L4, GPU-tainted as kaistack.stack.eks makes every GPU pool) and a system group."""
    pool = {
        "name": "l4",
        "instanceType": "g6.xlarge",
        "gpus": 1,
        "gpuProduct": "NVIDIA-L4",
        "gpuMemoryMiB": 22888,
        "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
    }
    eks = {**EKS, "systemNodeGroup": {**M6I_LARGE, **system}}
    return {
        "cluster": {"provider": "eks", "eks": eks, "nodePools": [pool]},
        "gpu": gpu or {"mode": "gpu-operator"},
        "queues": [{"name": "q"}],
        "workloads": list(workloads),
    }


def _work(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "kind": "Pod", "image": IMAGE, "queue": "q", **fields}


def _check(raw: dict[str, Any]) -> CapacityReport:
    return check(parse_config(copy.deepcopy(raw), source="test"), "t")


def _status(raw: dict[str, Any], workload: str) -> str:
    return next(w.status for w in _check(raw).workloads if w.name == workload)


def _nodes(raw: dict[str, Any]) -> dict[str, Node]:
    return {n.name: n for n in plan(parse_config(copy.deepcopy(raw), source="test")).snapshot.nodes}


def _jobs(raw: dict[str, Any], workload: str) -> list[Job]:
    snapshot = plan(parse_config(copy.deepcopy(raw), source="test")).snapshot
    return [j for j in snapshot.jobs if j.name == workload or j.name.startswith(f"{workload}#")]


# --- nodes ------------------------------------------------------------------------------------------------


def test_a_pools_pod_limit_caps_the_pods_on_each_of_its_nodes() -> None:
    pool = {"name": "gpu", "gpus": 2, "cpu": "8", "memory": "32Gi", "pods": 2}
    verdict = next(w for w in _check(_stack(_work("w", kind="Deployment", replicas=3, cpu="10m"), pool=pool)).workloads)
    assert [p.status for p in verdict.pods].count("Pending") == 1


def test_a_pools_mig_strategy_and_devices_reach_its_nodes() -> None:
    mig = {"nvidia.com/mig-1g.10gb": 7}
    pool = {"name": "a100", "gpus": 1, "migStrategy": "mixed", "mig": mig}
    (node,) = _nodes(_stack(pool=pool)).values()
    assert (node.mig_strategy, dict(node.mig)) == ("mixed", mig)


def test_an_existing_clusters_nodes_do_not_carry_kaistacks_pool_label() -> None:
    """kaistack labels only the nodes it creates (components/cluster_kind.py, components/cluster_eks.py)."""
    raw = _stack()
    raw["cluster"].update(provider="existing", existing={"context": "lab"})
    (node,) = _nodes(raw).values()
    assert NODE_POOL_LABEL not in node.labels


def test_a_kind_stack_with_a_leftover_eks_block_has_no_system_nodes() -> None:
    """The EKS system node group exists only when the provider is eks, whatever else the stack still declares."""
    raw = _stack()
    raw["cluster"]["eks"] = {**EKS, "systemNodeGroup": M6I_LARGE}
    assert list(_nodes(raw)) == ["gpu-0"]


def test_eks_system_nodes_have_the_declared_allocatable_no_gpus_and_the_system_pool_label() -> None:
    nodes = _nodes(_eks(desiredSize=2))
    system = [n for n in nodes.values() if n.labels.get(NODE_POOL_LABEL) == "system"]
    assert [n.name for n in system] == ["system-0", "system-1"]
    for node in system:
        assert (node.gpus, node.memory_bytes, node.pods) == (0, 7518 * 2**20, 29)
        assert node.labels[kai_api.HOSTNAME_LABEL] == node.name


def test_on_eks_a_cpu_only_pod_asking_ephemeral_storage_runs_on_a_system_node() -> None:
    """A system node's root volume is known (components.cluster_eks), so its ephemeral storage is offered."""
    report = _check(_eks(_work("web", cpu="100m", ephemeralStorage="1Gi")))
    web = next(w for w in report.workloads if w.name == "web")
    assert web.status == "Running"
    assert web.pods[0].node.startswith("system-")


# --- GPU memory and advertised GPUs --------------------------------------------------------------------


def test_with_gfd_a_memory_label_the_pool_declares_is_its_gpu_memory() -> None:
    """No gpuMemoryMiB: the pool's own nvidia.com/gpu.memory label is what KAI reads."""
    pool = {"name": "gpu", "gpus": 2, "labels": {kai_api.GPU_MEMORY_LABEL: "10000"}}
    raw = _stack(_work("m", gpuMemoryMiB=2000), pool=pool, gpu={"mode": "gpu-operator"})
    assert _status(raw, "m") == "Running"


def test_a_memory_label_that_is_not_a_number_is_an_unknown_gpu_memory() -> None:
    pool = {"name": "gpu", "gpus": 2, "labels": {kai_api.GPU_MEMORY_LABEL: "24Gi"}}
    raw = _stack(_work("m", gpuMemoryMiB=2000), pool=pool, gpu={"mode": "gpu-operator"})
    verdict = next(w for w in _check(raw).workloads if w.name == "m")
    assert verdict.status == "Pending"
    assert any(kai_api.GPU_MEMORY_LABEL in r for r in verdict.reasons)


def test_fake_gpus_without_a_declared_memory_have_the_fake_operators_memory() -> None:
    pool = {"name": "gpu", "gpus": 2}
    raw = _stack(_work("m", gpuMemoryMiB=2000), pool=pool, gpu={"mode": "fake", "fake": {"gpuMemoryMiB": 8000}})
    assert _status(raw, "m") == "Running"
    assert _nodes(raw)["gpu-0"].gpu_memory_mib == 8000


def test_a_cpu_only_pool_has_no_gpu_memory_even_with_fake_gpus() -> None:
    raw = _stack(pool={"name": "gpu", "gpus": 2})
    raw["cluster"]["nodePools"].append({"name": "cpu", "count": 1})
    assert _nodes(raw)["cpu-0"].gpu_memory_mib is None


def test_the_gpu_operators_gfd_labels_the_declared_memory_whatever_devicePlugin_gfd_says() -> None:
    """devicePlugin.gfd is the standalone device plugin's switch; the GPU Operator runs GFD itself."""
    pool = {"name": "gpu", "gpus": 2, "gpuMemoryMiB": 10000}
    gpu = {"mode": "gpu-operator", "devicePlugin": {"gfd": False}}
    assert _status(_stack(_work("m", gpuMemoryMiB=2000), pool=pool, gpu=gpu), "m") == "Running"


def test_on_eks_the_declared_gpu_memory_is_a_node_label_even_without_gfd() -> None:
    """kaistack.stack.eks writes the pool's gpuMemoryMiB as nvidia.com/gpu.memory on the node group itself."""
    raw = _eks(_work("m", gpuMemoryMiB=2000), gpu={"mode": "device-plugin", "devicePlugin": {"gfd": False}})
    assert _status(raw, "m") == "Running"


def test_time_slicing_renamed_to_gpu_shared_advertises_no_nvidia_gpu() -> None:
    """NVIDIA/k8s-device-plugin@v0.20.0:README.md "With CUDA Time-Slicing": renameByDefault advertises the
    replicas as nvidia.com/gpu.shared, so the node has no nvidia.com/gpu at all."""
    slicing = {"replicas": 4, "renameByDefault": True}
    raw = _stack(
        pool={"name": "gpu", "gpus": 2}, gpu={"mode": "device-plugin", "devicePlugin": {"timeSlicing": slicing}}
    )
    assert _nodes(raw)["gpu-0"].gpus == 0


# --- queues -------------------------------------------------------------------------------------------


def test_a_queues_memory_limit_keeps_out_the_pod_that_would_exceed_it() -> None:
    """A preemptible pod may go above the quota, never above the limit."""
    queues = [{"name": "q", "resources": {"memory": {"quota": "1Gi", "limit": "2Gi"}}}]
    raw = _stack(_work("over-quota", memory="1536Mi"), _work("over-limit", memory="1Gi"), queues=queues)
    assert (_status(raw, "over-quota"), _status(raw, "over-limit")) == ("Running", "Pending")


# --- pods and their requests ----------------------------------------------------------------------------


def test_a_pods_memory_request_is_checked_against_the_node() -> None:
    raw = _stack(_work("fits", memory="16Gi"), _work("too-big", memory="40Gi"))
    assert (_status(raw, "fits"), _status(raw, "too-big")) == ("Running", "Pending")


def test_a_fraction_on_several_devices_needs_that_many_gpus() -> None:
    """gpuDevices: the fraction on each of that many GPUs (KAI's gpu-fraction-num-devices)."""
    pool = {"name": "gpu", "gpus": 1, "cpu": "8", "memory": "32Gi"}
    raw = _stack(_work("two", gpuFraction=0.5, gpuDevices=2), pool=pool)
    assert _status(raw, "two") == "Pending"


def test_a_shared_gpu_pod_asks_for_no_whole_gpu() -> None:
    (job,) = _jobs(_stack(_work("serve", gpuFraction=0.5)), "serve")
    assert job.tasks[0].gpu == 0


def test_a_cpu_only_pods_node_selector_is_checked() -> None:
    """No GPU, so no toleration: the nodeSelector alone must still reach the pod."""
    pool = {"name": "gpu", "gpus": 2, "cpu": "8", "memory": "32Gi", "labels": {"tier": "a100"}}
    raw = _stack(_work("web", cpu="100m", nodeSelector={"tier": "h100"}), pool=pool)
    assert _status(raw, "web") == "Pending"


def test_a_pytorch_worker_asks_at_least_the_init_containers_cpu_and_memory() -> None:
    """kubeflow/trainer@v1.8.1:pkg/controller.v1/pytorch/initcontainer.go:44-45: init-pytorch requests 50m CPU
    and 10Mi; a worker asking less asks that (KAI@v0.17.0 pod_info.go SetMaxResource)."""
    work = _work("ddp", kind="PyTorchJob", cpu="10m", memory="1Mi", pytorch={"master": 1, "workers": 1})
    (job,) = _jobs(_stack(work), "ddp")
    master, worker = job.tasks
    assert (master.cpu_millis, master.memory_bytes) == (10, 2**20)
    assert (worker.cpu_millis, worker.memory_bytes) == (50, 10 * 2**20)


# --- how pods become PodGroups --------------------------------------------------------------------------


def test_a_host_job_is_one_elastic_podgroup_of_all_its_pods() -> None:
    """KAI >= v0.15's pod-grouper: one PodGroup per batch Job, minMember 1."""
    jobs = _jobs(_stack(_work("j", kind="Job", replicas=2, cpu="10m")), "j")
    assert [(len(j.tasks), j.min_member) for j in jobs] == [(2, 1)]


def test_a_tenants_job_is_one_podgroup_per_pod() -> None:
    """vCluster syncs the Job's pods to the host as bare pods without owners (`setOwner: false`)."""
    jobs = _jobs(_stack(_work("j", kind="Job", replicas=2, cpu="10m", tenant="t")), "j")
    assert [(len(j.tasks), j.min_member) for j in jobs] == [(1, 1), (1, 1)]


def test_a_tenant_gangs_subgroups_are_those_of_the_podgroup_kaistack_writes() -> None:
    work = _work("ddp", kind="PyTorchJob", gpu=1, tenant="t", pytorch={"master": 1, "workers": 1})
    raw = _stack(work)
    config = parse_config(copy.deepcopy(raw), source="test")
    written = tenant_gangs.pod_group(config, config.workloads[0], "train")["spec"]["subGroups"]
    (job,) = _jobs(raw, "ddp")
    assert [g.name for g in job.sub_groups] == [g["name"] for g in written]
    assert written


# --- notes ---------------------------------------------------------------------------------------------


def test_a_pool_that_declares_its_ephemeral_storage_leaves_no_note() -> None:
    pool = {"name": "gpu", "gpus": 2, "cpu": "8", "memory": "32Gi", "ephemeralStorage": "100Gi"}
    report = _check(_stack(_work("w", ephemeralStorage="10Gi"), pool=pool))
    assert report.notes == ()


def test_the_ephemeral_storage_note_is_given_when_any_workload_asks_for_storage() -> None:
    report = _check(_stack(_work("w", ephemeralStorage="10Gi"), _work("other")))
    assert any(n.startswith("ephemeralStorage is not checked: pool gpu") for n in report.notes)


# --- the report's view of each workload ---------------------------------------------------------------


def test_the_report_says_a_host_workload_is_on_the_host_and_a_tenants_in_its_tenant() -> None:
    report = to_json(_check(_stack(_work("a"), _work("b", tenant="t"))))
    assert {w["name"]: w["where"] for w in report["workloads"]} == {"a": "host", "b": "tenant t"}


# --- KAI's scheduler settings -----------------------------------------------------------------------------


def test_the_scheduler_settings_are_kais_defaults() -> None:
    """kai-scheduler/KAI-Scheduler@v0.17.0:cmd/scheduler/app/options/options.go:38 (16 consolidation preemptees)
    and :124 (use-scheduling-signatures true)."""
    placement = plan(parse_config(_stack(), source="test")).placement
    assert (placement.max_consolidation_preemptees, placement.use_scheduling_signatures) == (16, True)


def test_the_spread_placement_strategy_spreads_nodes_and_gpus() -> None:
    """kai-scheduler/KAI-Scheduler@v0.17.0:docs/operator/scheduler-config-customization.md:55: gpupack or
    gpuspread by placementStrategy.gpu; kaistack sets both from kai.placementStrategy."""
    placement = plan(parse_config(_stack(kai={"placementStrategy": "spread"}), source="test")).placement
    assert (placement.node, placement.gpu) == ("spread", "spread")


# --- the GPU toleration ---------------------------------------------------------------------------------


def _tainted(taint: dict[str, str]) -> dict[str, Any]:
    pool = {"name": "gpu", "gpus": 2, "taints": [taint]}
    return _stack(_work("train", gpu=1), pool=pool, gpu={"mode": "gpu-operator"})


def test_the_gpu_toleration_does_not_tolerate_another_keys_taint() -> None:
    """components.podspec renders {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule} and no other."""
    assert _status(_tainted({"key": "dedicated", "value": "ml", "effect": "NoSchedule"}), "train") == "Pending"


def test_the_gpu_toleration_does_not_tolerate_the_gpu_key_with_another_effect() -> None:
    assert _status(_tainted({"key": "nvidia.com/gpu", "value": "true", "effect": "NoExecute"}), "train") == "Pending"


def test_a_preemptible_pod_may_use_a_queues_cpu_above_its_quota_up_to_its_limit() -> None:
    queues = [{"name": "q", "resources": {"cpu": {"quota": "1", "limit": "2"}}}]
    raw = _stack(_work("over-quota", cpu="1500m"), _work("over-limit", cpu="1"), queues=queues)
    assert (_status(raw, "over-quota"), _status(raw, "over-limit")) == ("Running", "Pending")


def test_every_pod_of_a_host_job_asks_its_ephemeral_storage() -> None:
    pool = {"name": "gpu", "gpus": 2, "cpu": "8", "memory": "32Gi", "ephemeralStorage": "100Gi"}
    raw = _stack(_work("j", kind="Job", replicas=2, ephemeralStorage="60Gi"), pool=pool)
    verdict = next(w for w in _check(raw).workloads if w.name == "j")
    assert [p.status for p in verdict.pods].count("Pending") == 1


def test_a_workload_declared_non_preemptible_stays_within_its_queues_quota() -> None:
    """A Pod's class `train` is preemptible; `preemptible: false` makes it a job that never exceeds the quota."""
    queues = [{"name": "q", "resources": {"gpu": {"quota": 0}}}]
    raw = _stack(_work("p", gpu=1, preemptible=False), queues=queues)
    assert _status(raw, "p") == "Pending"
    raw["workloads"][0].pop("preemptible")
    assert _status(raw, "p") == "Running"


def test_a_host_pytorchjob_declared_non_preemptible_stays_within_its_queues_quota() -> None:
    queues = [{"name": "q", "resources": {"gpu": {"quota": 0}}}]
    work = _work("ddp", kind="PyTorchJob", gpu=1, preemptible=False, pytorch={"master": 1, "workers": 0})
    assert _status(_stack(work, queues=queues), "ddp") == "Pending"


def test_a_host_job_declared_non_preemptible_stays_within_its_queues_quota() -> None:
    queues = [{"name": "q", "resources": {"gpu": {"quota": 0}}}]
    assert _status(_stack(_work("j", kind="Job", gpu=1, preemptible=False), queues=queues), "j") == "Pending"


def test_a_host_jobs_topology_constraint_reaches_its_podgroup() -> None:
    raw = _stack(_work("j", kind="Job", gpu=1, topology={"required": "kaistack.io/rack"}))
    raw["cluster"]["topology"] = {"levels": ["kaistack.io/rack"]}
    raw["cluster"]["nodePools"][0]["labels"] = {"kaistack.io/rack": "r1"}
    (job,) = _jobs(raw, "j")
    assert job.topology is not None
    assert job.topology.required == "kaistack.io/rack"
