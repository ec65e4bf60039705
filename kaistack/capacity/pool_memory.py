"""What KAI reads as a node pool's GPU memory (the `nvidia.com/gpu.memory` label), as far as kaistack knows it.

The label exists when something sets it: the fake operator's exporter, GFD (device plugin / GPU Operator) or an
EKS pool's discovered labels (kaistack writes the declared memory as a node label itself there). kaistack can only
use a value it knows, so an undeclared memory is treated as a missing label, on which KAI refuses gpu-memory pods
(kai-scheduler/KAI-Scheduler@v0.17.0 pkg/scheduler/plugins/predicates/predicates.go:333).
"""

from __future__ import annotations

from kaistack.declaration import kai_api
from kaistack.declaration.model import NodePool, StackConfig

__all__ = ["pool_gpu_memory"]


def _no_label_writer(config: StackConfig) -> bool:
    """Nothing writes nvidia.com/gpu.memory: the device plugin without GFD, off EKS."""
    return config.gpu.mode == "device-plugin" and not config.gpu.device_plugin.gfd and config.cluster.provider != "eks"


def pool_gpu_memory(config: StackConfig, pool: NodePool) -> int | None:
    """The label's MiB on the pool's nodes, or None where kaistack does not know it to be there."""
    label = pool.labels.get(kai_api.GPU_MEMORY_LABEL)
    labelled = int(label) if label and label.isdigit() else None
    if _no_label_writer(config):
        # Only a label the pool declares reaches the node; a declared gpuMemoryMiB alone writes none.
        return labelled
    memory = pool.gpu_memory_mi_b or labelled
    if config.gpu.mode == "fake" and pool.gpu_count and memory is None:
        return config.gpu.fake.gpu_memory_mi_b
    return memory
