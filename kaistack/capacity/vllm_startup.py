"""vLLM servers KAI packs onto one shared GPU that cannot all run there: a note for the report.

vLLM snapshots the device's free memory once its CUDA context and NCCL are up, refuses to start when that is below
utilization x total ("Free memory on device ... is less than desired GPU memory utilization"), and sizes its KV
cache so that what it measures itself allocating after the snapshot fills utilization x total
(vllm-project/vllm@35d5cda vllm/v1/worker/gpu_worker.py, init_device and determine_available_memory; the check is
in vLLM 0.9.1 and later). Its context lies outside that budget, and so, before vLLM 0.21 (PR #38284), do its CUDA
graphs. So servers whose utilizations sum to 1 or more on one GPU cannot all run: one started while the others
hold theirs finds less free than it asks for, and servers started together (as `pulumi up` starts them) may run
out of memory or get smaller caches. Before 0.9.1 vLLM counted the other processes' memory against each server's
budget (the 0012cf6 version of the same file: `total - free` in the peak), where sums below 1 fail too, by start
order; this note does not judge those.

KAI's fractions may fill a GPU (two `gpuFraction: 0.5` pods), and the per-pod policy (utilization at most the
pod's share) passes each of them, so only the placement shows it. With memory isolation (`sharing: isolated`)
each container sees its share as the whole GPU, and utilizations are of the share: no note.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kaistack.capacity.plan import Plan
from kaistack.declaration import model_servers
from kaistack.declaration.model import Workload
from placement import Result

__all__ = ["FIX", "WHY", "crowded_vllm_gpus", "vllm_servers", "vllm_utilization"]

WHY = (
    "They cannot all run: each server's CUDA context comes on top of its utilization, and vLLM starts only when "
    'its utilization of the GPU is free, so one started while the others hold theirs fails ("Free memory on device '
    "... is less than desired GPU memory utilization\", vLLM 0.9.1 and later; earlier versions count the others' "
    "memory against its own budget), and servers started together may run out of memory or get smaller caches "
    "than asked"
)
FIX = (
    "lower the utilizations to sum to less than 1, leaving each server room for its CUDA context (and, before "
    "vLLM 0.21, its CUDA graphs: 1 to 2 GiB a server), or give the pods shares that do not fill a GPU"
)

# Utilizations are decimals a person typed (0.3 + 0.7 is 0.9999999999999999 in floats).
_EPSILON = 1e-9
_NAMED = 3


def vllm_utilization(workload: Workload) -> float | None:
    """The share of a GPU's memory the workload's container tells vLLM to take (model_servers.vllm_utilization);
    None when it does not run vLLM, or sets it to something not known here (a Secret, a shell variable)."""
    container = {
        "image": workload.image,
        "command": list(workload.command),
        "args": list(workload.args),
        "env": [
            *({"name": name, "value": value} for name, value in workload.env.items()),
            *({"name": name, "valueFrom": {"secretKeyRef": {}}} for name in workload.secret_env),
        ],
    }
    found = model_servers.vllm_utilization(container)
    return found.value if found is not None else None


def crowded_vllm_gpus(gpus: Iterable[tuple[str, Sequence[tuple[str, str, float]]]]) -> list[str]:
    """One note per mix of vLLM servers that share a GPU with utilizations summing to 1 or more.

    `gpus`: each shared GPU's name (`node/gpuN`) and its vLLM pods as (pod, workload, utilization)."""
    crowded: dict[tuple[tuple[str, float], ...], list[tuple[str, Sequence[tuple[str, str, float]]]]] = {}
    for gpu, servers in gpus:
        if len(servers) > 1 and sum(u for _, _, u in servers) > 1 - _EPSILON:
            mix = tuple(sorted((workload, u) for _, workload, u in servers))
            crowded.setdefault(mix, []).append((gpu, servers))
    notes = []
    for mix, found in crowded.items():
        gpu, servers = found[0]
        alike = [g for g, _ in found[1:]]
        more = f" (and the same mix onto {len(alike)} more: {_listed(alike)})" if alike else ""
        told = ", ".join(f"{pod} {u:g}" for pod, _, u in servers)
        notes.append(
            f"{_listed([w for w, _ in mix])}: KAI packs {_listed([p for p, _, _ in servers])} onto {gpu}{more}, "
            f"whose vLLM servers are told --gpu-memory-utilization {told}: {sum(u for _, u in mix):g} of the GPU in "
            f"all. {WHY}. {FIX[0].upper()}{FIX[1:]}"
        )
    return notes


def _listed(names: Sequence[str]) -> str:
    """`a`, `a and b`, `a, b and c`, `a, b, c and 4 more`."""
    names = list(dict.fromkeys(names))
    if len(names) > _NAMED:
        return f"{', '.join(names[:_NAMED])} and {len(names) - _NAMED} more"
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def vllm_servers(
    the_plan: Plan, result: Result, gpu_ids: Mapping[tuple[str, str], str], pod_name: Mapping[str, str]
) -> list[tuple[str, list[tuple[str, str, float]]]]:
    """Each shared GPU KAI placed pods on (`node/gpuN`, as the report numbers them) with its vLLM pods:
    (pod, workload, utilization)."""
    workload_of = {f"{ref.job}-{ref.task_index}": wp.workload for wp in the_plan.workloads for ref in wp.pods}
    utilization: dict[int, float | None] = {}  # by workload object: names repeat across tenants
    out = []
    for name, computed in result.nodes.items():
        for device in computed.devices:
            if not device.shared:
                continue
            servers = []
            for task in device.tasks:
                workload = workload_of.get(task)
                # A pod spread over several GPUs (gpuDevices) may run one server on one of them (tensor parallel 1)
                # or on all; which, the pod does not say.
                if workload is None or len(result.tasks[task].gpu_groups) > 1:
                    continue
                if id(workload) not in utilization:
                    utilization[id(workload)] = vllm_utilization(workload)
                u = utilization[id(workload)]
                if u is not None:
                    servers.append((pod_name.get(task, task), workload.name, u))
            out.append((f"{name}/{gpu_ids.get((name, device.id), device.id)}", servers))
    return out
