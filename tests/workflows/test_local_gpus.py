"""Real-GPU kind (nvkind style): the machine's GPUs read with NVML, the declared values without a driver.

NVML is replaced by a stand-in module with pynvml's names and behaviour (nvidia-ml-py 13.615.71:
`nvmlDeviceGetName` returns str, `nvmlDeviceGetMemoryInfo(h).total` is bytes, errors derive from
`NVMLError`). CI has no GPU, so here the real library runs only on the no-driver path
(`NVMLError_LibraryNotFound` on a machine without libnvidia-ml); its answers on a real H100 are recorded and
replayed in test_local_gpus_recorded.py.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kaistack.stack.load import LoadOptions, load_stack
from kaistack.stack.local_gpus import gfd_product, read_local_gpus

ROOT = Path(__file__).resolve().parents[2]
STACK = """\
config:
  kaistack:cluster:
    provider: kind
    nodePools:
      - {name: gpu, count: 1, gpus: 1, gpuProduct: declared, gpuMemoryMiB: 1000, cpu: "16", memory: 64Gi}
  kaistack:gpu:
    mode: device-plugin
  kaistack:queues:
    - name: q
"""


class FakeNvml:
    class NVMLError(Exception):
        pass

    def __init__(self, devices: list[tuple[str, int]], fail: bool = False) -> None:
        self.devices = devices
        self.fail = fail
        self.shut = False

    def nvmlInit(self) -> None:
        if self.fail:
            raise self.NVMLError("NVML Shared Library Not Found")

    def nvmlDeviceGetCount(self) -> int:
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, handle: int) -> str:
        return self.devices[handle][0]

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> Any:
        return SimpleNamespace(total=self.devices[handle][1], free=0, used=0)

    def nvmlShutdown(self) -> None:
        self.shut = True


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "Pulumi.gpu.yaml").write_text(STACK)
    return tmp_path


@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("NVIDIA H100 80GB HBM3", "NVIDIA-H100-80GB-HBM3"),
        ("Tesla T4", "Tesla-T4"),
        ("NVIDIA  A100(SXM4)", "NVIDIA-A100SXM4"),
    ],
)
def test_product_label_is_gfds_sanitised_name(name: str, label: str) -> None:
    assert gfd_product(name) == label


def test_local_gpus_set_count_model_and_memory(project: Path) -> None:
    nvml = FakeNvml([("NVIDIA L40S", 48 * 1024**3 - 5), ("NVIDIA L40S", 48 * 1024**3 - 5)])
    loaded = load_stack(project, "gpu", LoadOptions(nvml=nvml))
    [pool] = loaded.config.cluster.node_pools
    assert (pool.gpus, pool.gpu_product, pool.gpu_memory_mi_b) == (2, "NVIDIA-L40S", 49151)
    assert loaded.notes == ("read 2 local GPUs with NVML: NVIDIA-L40S, 49151 MiB",)
    assert nvml.shut


def test_without_a_driver_the_declared_values_stay_and_a_note_says_so(project: Path) -> None:
    loaded = load_stack(project, "gpu", LoadOptions(nvml=FakeNvml([], fail=True)))
    [pool] = loaded.config.cluster.node_pools
    assert (pool.gpus, pool.gpu_product) == (1, "declared")
    assert loaded.notes == (
        "local GPUs not read (NVML: NVML Shared Library Not Found); using the declared GPU facts of pools gpu",
    )


def test_the_real_library_on_a_machine_without_a_driver_reports_why() -> None:
    found = read_local_gpus()
    if isinstance(found, list):  # a machine with NVIDIA's driver: real devices, each named and sized
        assert all(g.name and g.memory_mib > 0 for g in found)
    else:
        assert found.startswith("NVML: ")
