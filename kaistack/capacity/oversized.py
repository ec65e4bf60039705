"""gpu-memory requests KAI places on one GPU that has less memory than they ask: a note for the report.

KAI counts a GPU's memory as the node's `nvidia.com/gpu.memory` label floored to a multiple of 100 MiB
(kai-scheduler/KAI-Scheduler@v0.17.0 pkg/scheduler/api/node_info/node_info.go getNodeGpuMemory) and turns a
gpu-memory request into a portion of it (gpu_sharing_node_info.go getGpuMemoryFractionalOnNode). A portion
above 1 is refused unless it is a whole number (node_info.go isValidGpuPortion): 2 x 81500 MiB passes as a
share of 2. The share then goes to one GPU per requested device (gpu_sharing/gpuSharing.go
GetNodePreferableGpuForSharing), the queue is charged the portion times the devices (node_info.go
setAcceptedResources, gpu_resource_requirment.go getExtendedResourceGpus), and the pod runs with one GPU's
memory: it `fits`, and fails later. The simulator does what KAI does; this says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kaistack.capacity.plan import WorkloadPlan
from placement.nodes import gpu_memory_fraction, kai_gpu_memory

__all__ = ["oversized_gpu_memory", "oversized_share"]


def oversized_share(asked_mib: int, label_mib: int | None) -> tuple[int, float] | None:
    """(MiB per GPU as KAI counts it, the share of a GPU KAI makes of the request) where the request is more than
    one GPU's memory on a node with this `nvidia.com/gpu.memory` label; None where it is not, or where the node has
    no label (KAI refuses gpu-memory pods there: predicates.go, so none is ever placed)."""
    if label_mib is None:
        return None
    each = kai_gpu_memory(label_mib)
    if not 0 < each < asked_mib:  # under 100 MiB KAI counts 0 and the share is infinite: never placed either
        return None
    return each, gpu_memory_fraction(asked_mib, each)


def oversized_gpu_memory(
    placed: Iterable[tuple[WorkloadPlan, Iterable[str]]],
    node_gpu_memory: Mapping[str, int | None],
) -> list[str]:
    """One note per workload and GPU size where its gpu-memory pods are placed on nodes whose GPUs hold less than
    they ask, naming those nodes (replicas spread over pools of different GPUs get a note per size, since the share
    KAI makes of the request differs).

    `placed` pairs each workload plan with the nodes its placed pods run on."""
    notes = []
    for wp, nodes in placed:
        asked = wp.workload.gpu_memory_mi_b
        if not asked:
            continue
        by_size: dict[tuple[int, float], list[str]] = {}
        for node in dict.fromkeys(nodes):
            found = oversized_share(asked, node_gpu_memory.get(node))
            if found is not None:
                by_size.setdefault(found, []).append(node)
        for (each, share), on in by_size.items():
            charged = share * (wp.workload.gpu_devices or 1)
            notes.append(
                f"{wp.workload.name}: KAI counts gpuMemoryMiB {asked} as {share:g} GPUs of {_nodes(on)} ({each} MiB "
                f"each) and, since that is a whole number, places it on one GPU per device as a share of {share:g}, "
                f"charging queue {wp.queue} for {charged:g}: the pod gets one GPU's memory, not {asked} MiB. Ask for "
                f"whole GPUs (gpu), or at most {each} MiB"
            )
    return notes


_NAMED = 3


def _nodes(names: list[str]) -> str:
    """`a's`, `a's and b's`, `a's, b's and c's`, `a's, b's, c's and 4 more nodes'`."""
    owned = [f"{n}'s" for n in names[:_NAMED]]
    if len(names) > _NAMED:
        more = len(names) - _NAMED
        return f"{', '.join(owned)} and {more} more node{'s' if more > 1 else ''}'{'' if more > 1 else 's'}"
    if len(owned) == 1:
        return owned[0]
    return f"{', '.join(owned[:-1])} and {owned[-1]}"
