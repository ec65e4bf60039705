"""Real-GPU kind on a real GPU: NVML's answers recorded on an NVIDIA H100 and replayed.

tests/data/nvml/h100.json was written by tests/data/nvml/probe.py on a lent H100 machine (driver
580.159.04, nvidia-ml-py 13.615.71) on 2026-11-27; the image's own nvidia-ml-py 13.610.43 answered the same
(h100-image-pynvml.json). It holds what pynvml returned there, nvidia-smi's view of the same GPU, and what
kaistack read and checked on that machine with the real library. Replaying the answers checks that the stand-in
in test_local_gpus.py has the real library's shape, and pins the H100's facts the EKS and kind paths rely on.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kaistack.capacity.check import check
from kaistack.stack.load import LoadOptions, load_stack
from kaistack.stack.local_gpus import LocalGpu, read_local_gpus

ROOT = Path(__file__).resolve().parents[2]
RECORDED = json.loads((ROOT / "tests/data/nvml/h100.json").read_text())
MiB = 1024 * 1024


class ReplayNvml:
    """pynvml as it answered on the recorded machine: the same types (the name came back a str, as the
    stand-in in test_local_gpus.py assumes), the same numbers."""

    class NVMLError(Exception):
        pass

    nvmlMemory_v2 = object()

    def __init__(self, record: dict[str, Any]) -> None:
        self.devices = record["devices"]

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, handle: int) -> str | bytes:
        device = self.devices[handle]
        return device["name"] if device["nameType"] == "str" else device["name"].encode()

    def nvmlDeviceGetMemoryInfo(self, handle: int, version: object = None) -> Any:
        device = self.devices[handle]
        if version is self.nvmlMemory_v2:
            v2 = device["memoryV2"]
            return SimpleNamespace(total=v2["totalBytes"], reserved=v2["reservedBytes"], free=0, used=0)
        return SimpleNamespace(total=device["memoryTotalBytes"], free=0, used=0)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "Pulumi.nvml.yaml").write_text(RECORDED["stack"])
    return tmp_path


def test_replayed_answers_read_as_they_read_on_the_h100() -> None:
    found = read_local_gpus(ReplayNvml(RECORDED))
    assert isinstance(found, list)
    read_there = [LocalGpu(g["name"], g["memoryMiB"]) for g in RECORDED["readLocalGpus"]]
    assert found == read_there


def test_the_h100_is_labelled_as_gfd_labels_it() -> None:
    # GFD's product label for this GPU (NVIDIA/k8s-device-plugin@v0.20.0 internal/lm/resource.go sanitises
    # the NVML name), and its memory label is what nvidia-smi shows as memory.total in MiB.
    [gpu] = read_local_gpus(ReplayNvml(RECORDED))  # type: ignore[misc]
    smi_name, smi_mib = RECORDED["nvidiaSmi"][0].split(", ")
    assert gpu.product == "NVIDIA-H100-80GB-HBM3"
    assert (gpu.name, gpu.memory_mib) == (smi_name, int(smi_mib))


def test_memory_is_nvmls_v1_total_not_less_the_drivers_reservation() -> None:
    # The driver holds back 480 MiB on the H100 (v2 `reserved`); GFD's label counts the whole v1 total, so the
    # node's memory KAI divides gpu-memory requests by is 81559 MiB, not 81079.
    [device] = RECORDED["devices"]
    [gpu] = read_local_gpus(ReplayNvml(RECORDED))  # type: ignore[misc]
    assert gpu.memory_mib == device["memoryTotalBytes"] // MiB == 81559
    assert gpu.memory_mib != (device["memoryV2"]["totalBytes"] - device["memoryV2"]["reservedBytes"]) // MiB


def test_the_load_path_takes_the_h100s_facts_over_the_declared_ones(project: Path) -> None:
    loaded = load_stack(project, "nvml", LoadOptions(nvml=ReplayNvml(RECORDED)))
    [pool] = loaded.config.cluster.node_pools
    assert (pool.gpus, pool.gpu_product, pool.gpu_memory_mi_b) == (1, "NVIDIA-H100-80GB-HBM3", 81559)
    assert [f"note: {n}" for n in loaded.notes] == RECORDED["check"]["stderr"]


def test_check_on_the_replayed_h100_gives_the_verdict_it_gave_there(project: Path) -> None:
    report = check(load_stack(project, "nvml", LoadOptions(nvml=ReplayNvml(RECORDED))).config, "nvml")
    there = RECORDED["check"]
    assert (report.ok, 0 if report.ok else 1) == (there["fits"], there["exitCode"]) == (True, 0)
    assert {w.name: w.status for w in report.workloads} == there["workloads"]
    assert [{"name": n.name, "gpuMemoryMiB": n.gpu_memory_mib} for n in report.nodes] == there["nodes"]


def test_the_same_stack_with_only_its_declared_gpu_does_not_fit(project: Path) -> None:
    # The recorded verdict depends on NVML: the declared 30000 MiB GPU takes neither 40000 MiB pod.
    report = check(load_stack(project, "nvml", LoadOptions(discover=False)).config, "nvml")
    assert not report.ok
    assert {w.status for w in report.workloads} == {"Pending"}
