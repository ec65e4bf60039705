"""The GPUs of this machine, for a kind cluster that hands them to its nodes (nvkind style).

Read with NVML through nvidia-ml-py (`pynvml`): count, name and memory of each device, the same calls
NVIDIA's GPU feature discovery makes for the labels KAI reads (NVIDIA/k8s-device-plugin@v0.20.0
internal/resource/nvml-device.go: memory = v1 `nvmlDeviceGetMemoryInfo().total` / MiB, floored;
internal/lm/resource.go `sanitise`: the product label is the name with characters outside
`[A-Za-z0-9-_. ]` removed and runs of spaces turned into one `-`). Without a driver (no
libnvidia-ml, or the kernel module not loaded) the declared values are used, and a note says so.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Any

from kaistack.declaration.model import StackConfig

REAL_GPU_MODES = ("device-plugin", "gpu-operator")
MiB = 1024 * 1024


@dataclass(frozen=True)
class LocalGpu:
    name: str
    memory_mib: int

    @property
    def product(self) -> str:
        return gfd_product(self.name)


def gfd_product(name: str) -> str:
    return "-".join(re.sub(r"[^A-Za-z0-9\-_. ]", "", name).split())


def read_local_gpus(nvml: Any = None) -> list[LocalGpu] | str:
    """The machine's GPUs, or why they could not be read (a string)."""
    if nvml is None:
        import pynvml

        nvml = pynvml
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as err:
        return f"NVML: {err}"
    try:
        gpus = []
        for i in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(i)
            name = nvml.nvmlDeviceGetName(handle)
            name = name.decode() if isinstance(name, bytes) else str(name)
            gpus.append(LocalGpu(name, int(nvml.nvmlDeviceGetMemoryInfo(handle).total) // MiB))
        return gpus
    except nvml.NVMLError as err:
        return f"NVML: {err}"
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()


def discover(config: StackConfig, nvml: Any = None) -> tuple[StackConfig, list[str]]:
    """Real-GPU kind pools that hand every local GPU to their nodes take count, model and memory from NVML."""
    if config.cluster.provider != "kind" or config.gpu.mode not in REAL_GPU_MODES:
        return config, []
    pools = [p for p in config.cluster.node_pools if p.gpu_count and p.gpu_devices == "all"]
    if not pools:
        return config, []
    found = read_local_gpus(nvml)
    if isinstance(found, str) or not found:
        why = found or "no GPU found"
        return config, [
            f"local GPUs not read ({why}); using the declared GPU facts of pools {', '.join(p.name for p in pools)}"
        ]
    first = found[0]
    names = {p.name for p in pools}
    updated = [
        p.replace(gpus=len(found), gpu_product=first.product, gpu_memory_mi_b=first.memory_mib)
        if p.name in names
        else p
        for p in config.cluster.node_pools
    ]
    note = f"read {len(found)} local GPUs with NVML: {first.product}, {first.memory_mib} MiB"
    if len({g.name for g in found}) > 1:
        note += f" (mixed models: {', '.join(sorted({g.product for g in found}))}; the first one is used)"
    return config.replace(cluster=config.cluster.replace(node_pools=updated)), [note]
