"""The generated kind config and scripts (pure functions of the model)."""

from __future__ import annotations

import pytest
from kind_stubs import run_create
from platform_testlib import base_raw

from components.cluster_kind import create_script, delete_script, kind_config, uses_nvkind
from kaistack.declaration.parse import ConfigError, parse_config


def config_with(pools: list[dict], mode: str = "device-plugin", **extra):
    raw = base_raw()
    raw["cluster"]["nodePools"] = pools
    raw["gpu"] = {"mode": mode}
    raw.update(extra)
    return parse_config(raw)


def mounts(config) -> list[list[str]]:
    workers = [n for n in kind_config(config)["nodes"] if n["role"] == "worker"]
    return [[m["containerPath"].rsplit("/", 1)[1] for m in w.get("extraMounts", [])] for w in workers]


def test_all_gpus_are_visible_to_every_worker_by_default():
    """gpuDevices "all" -> one mount to .../all per worker (nvkind's default template)."""
    assert mounts(config_with([{"name": "g", "count": 2, "gpus": 4}])) == [["all"], ["all"]]


def test_a_device_list_of_count_times_gpus_is_split_between_workers():
    """Each worker gets its own slice, so no GPU is advertised twice."""
    config = config_with([{"name": "g", "count": 2, "gpus": 2, "gpuDevices": [0, 1, 2, 3]}])
    assert mounts(config) == [["0", "1"], ["2", "3"]]


def test_any_other_device_list_goes_to_every_worker():
    """A list that does not divide evenly is given as is (the user's explicit choice)."""
    config = config_with([{"name": "g", "count": 2, "gpus": 1, "gpuDevices": [3]}])
    assert mounts(config) == [["3"], ["3"]]


def test_cpu_pools_get_no_gpu_mounts_or_labels():
    """Only pools with GPUs are wired to host GPUs."""
    config = config_with([{"name": "g", "gpus": 1}, {"name": "c", "count": 1}])
    workers = [n for n in kind_config(config)["nodes"] if n["role"] == "worker"]
    assert workers[1] == {
        "role": "worker",
        "image": config.cluster.kind.node_image,
        "labels": {"kaistack.io/node-pool": "c"},
    }


def test_under_the_gpu_operator_cpu_workers_opt_out_of_its_operands():
    """NFD marks every kind node as holding the host's NVIDIA PCI device, which the GPU Operator takes for a GPU
    node (NVIDIA/gpu-operator@v26.7.0 controllers/state_manager.go:170-174, nodelabeling_controller.go:237-243):
    its operands, all with runtimeClassName nvidia (controllers/object_controls.go), would be scheduled on CPU
    workers, where nvkind set up no such runtime. nvidia.com/gpu.deploy.operands=false drops every operand's
    deploy label (state_manager.go:372-379, 455-460)."""
    config = config_with([{"name": "g", "gpus": 1}, {"name": "c", "count": 1}], mode="gpu-operator")
    gpu_worker, cpu_worker = (n for n in kind_config(config)["nodes"] if n["role"] == "worker")
    assert cpu_worker["labels"] == {"kaistack.io/node-pool": "c", "nvidia.com/gpu.deploy.operands": "false"}
    assert "nvidia.com/gpu.deploy.operands" not in gpu_worker["labels"]


def test_pool_labels_are_kept_next_to_the_generated_ones():
    """Declared pool labels reach the kind node."""
    config = config_with([{"name": "g", "gpus": 1, "labels": {"team": "ml"}}], mode="fake")
    worker = kind_config(config)["nodes"][1]
    assert worker["labels"]["team"] == "ml"
    assert worker["labels"]["run.ai/simulated-gpu-node-pool"] == "g"


def test_no_pools_is_a_single_control_plane_node():
    """Without node pools kind runs one schedulable control-plane node."""
    config = config_with([], mode="none")
    assert [n["role"] for n in kind_config(config)["nodes"]] == ["control-plane"]
    assert not uses_nvkind(config)


@pytest.mark.parametrize(
    ("mode", "nvkind"), [("fake", False), ("none", False), ("device-plugin", True), ("gpu-operator", True)]
)
def test_nvkind_is_used_only_for_real_gpus(mode, nvkind):
    """Real GPUs on kind need nvkind's in-node toolkit setup; fake or no GPUs use plain kind."""
    config = config_with([{"name": "g", "gpus": 1}], mode=mode)
    assert uses_nvkind(config) is nvkind
    assert ("nvkind cluster create" in create_script(config)) is nvkind


def test_cluster_name_is_shell_quoted_in_the_scripts():
    """Names come from config; the scripts quote them (a DNS label needs no quotes, so none appear)."""
    config = config_with([{"name": "g", "gpus": 1}], mode="fake")
    assert delete_script(config) == "kind delete cluster --name unit"
    assert create_script(config).startswith("set -eu\n")


# --- the nvkind create script, run against stub tools ------------------------------------------------------


def _run_nvkind_script(
    tmp_path, *, existing=False, nvkind_rc=0, kubectl_rc=0, tools=("kind", "nvkind", "kubectl"), kind_get_fails=False
):
    config = config_with([{"name": "g", "gpus": 1}], mode="device-plugin")
    return run_create(
        tmp_path,
        config,
        existing="unit\n" if existing else "",
        nvkind_rc=nvkind_rc,
        kubectl_rc=kubectl_rc,
        tools=tools,
        kind_get_fails=kind_get_fails,
    )


def test_a_new_nvkind_cluster_prints_its_kubeconfig(tmp_path):
    done, calls = _run_nvkind_script(tmp_path)
    assert done.returncode == 0
    assert done.stdout == "apiVersion: v1 # kubeconfig of unit\n"
    assert any(c.startswith("nvkind cluster create --name unit") for c in calls)


def test_a_failed_nvkind_setup_deletes_the_half_built_cluster(tmp_path):
    """Otherwise the next run finds the cluster and adopts it without toolkit or RuntimeClass."""
    done, calls = _run_nvkind_script(tmp_path, nvkind_rc=1)
    assert done.returncode == 1
    assert "kind delete cluster --name unit" in calls
    assert (tmp_path / "clusters").read_text() == ""
    assert "deleting the half-built cluster unit" in done.stderr
    assert done.stdout == ""


def test_an_existing_cluster_without_the_nvidia_runtime_class_is_refused(tmp_path):
    done, calls = _run_nvkind_script(tmp_path, existing=True, kubectl_rc=1)
    assert done.returncode == 1
    assert "kubectl --context kind-unit get runtimeclass nvidia" in calls
    assert "has no RuntimeClass nvidia" in done.stderr
    assert done.stdout == ""


def test_an_existing_cluster_with_the_runtime_class_is_used(tmp_path):
    done, calls = _run_nvkind_script(tmp_path, existing=True)
    assert done.returncode == 0
    assert not any(c.startswith("nvkind") for c in calls)


def test_a_missing_kubectl_is_named_before_anything_is_created(tmp_path):
    done, calls = _run_nvkind_script(tmp_path, tools=("kind", "nvkind"))
    assert done.returncode == 1
    assert "kubectl is not installed" in done.stderr
    assert calls == []


def test_more_than_nine_mixed_real_gpu_workers_are_refused():
    """nvkind sorts kind's node names as text (NVIDIA/nvkind pkg/nvkind/cluster.go GetNodes) and pairs them
    with the config's workers by index; kind names them worker, worker2 ... worker10
    (kubernetes-sigs/kind@v0.31.0 pkg/cluster/internal/providers/common/namer.go), so worker10 would get the
    second worker's GPU settings."""
    with pytest.raises(ConfigError, match=r"cluster\.nodePools: 10 kind workers with real GPUs"):
        config_with([{"name": "g", "gpus": 1, "count": 2}, {"name": "cpu", "count": 8}])


def test_ten_identical_workers_are_fine():
    assert config_with([{"name": "g", "gpus": 1, "count": 10}]).cluster.node_pools[0].count == 10


def test_a_failing_kind_get_clusters_stops_before_anything_is_created_or_deleted(tmp_path):
    """Read as "no cluster", nvkind would fail on the existing one and the script would then delete it."""
    done, calls = _run_nvkind_script(tmp_path, existing=True, nvkind_rc=1, kind_get_fails=True)
    assert done.returncode != 0
    assert not any(c.startswith(("nvkind", "kind delete")) for c in calls)
    assert (tmp_path / "clusters").read_text() == "unit\n"
