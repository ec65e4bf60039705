"""A busy GPU cluster as a kai-conformance scenario (FORMAT.md, JSON), deterministic for a seed.

Used by `cycle_bench.py` for KAI's full default cycle (allocate, consolidation, reclaim, preempt). The
cluster looks like a real shared platform on a busy day:

- nodes of 8 GPUs, half with 40 GB and half with 80 GB GPUs;
- a queue tree of organisations → departments → project teams (5% / 20% / 75%), with GPU quotas around
  the cluster size, some limits, over-quota weights 0-2 and a few higher-priority teams;
- about 90% of the GPUs already running work: whole-GPU jobs (1-8 GPUs), shared GPUs holding 2-4
  fraction or gpu-memory pods, and gangs of 2-16 pods spread over several nodes; train (50), build
  (100) and inference (125) priorities, so queues are over and under their shares;
- a pending backlog larger than the free capacity (whole GPUs, fractions, gpu-memory, gangs), so
  allocate fills what is free and reclaim, preempt and consolidation have work.

    python benchmarks/cycle_gen.py --size S > s.json     # 1,024 nodes x 8 GPUs, 200 queues, 20,000 jobs
    python benchmarks/cycle_gen.py --size L > l.json     # 4,096 nodes x 8 GPUs, 800 queues, 140,000 pods
    python benchmarks/cycle_gen.py --size XS > xs.json   # 16 nodes, 346 pods
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass
from typing import Any

SEED = 20261124


@dataclass(frozen=True)
class Size:
    nodes: int
    queues: int
    jobs: int = 0  # the backlog grows until there are this many jobs (PodGroups) ...
    pods: int = 0  # ... or this many pods, running and pending together


SIZES = {
    "XS": Size(nodes=16, queues=10, pods=343),
    "S": Size(nodes=1024, queues=200, jobs=20_000),
    "M": Size(nodes=2048, queues=400, pods=70_000),
    "L": Size(nodes=4096, queues=800, pods=140_000),
}

GPU_MEMORY = (40_000, 80_000)
FRACTIONS = (0.1, 0.2, 0.25, 0.3, 0.5)
GPU_MEMORIES = (4_000, 8_000, 10_000)
TRAIN, BUILD, INFERENCE = 50, 100, 125


def _resource(quota: float, limit: float, weight: float) -> dict[str, float]:
    return {"quota": quota, "limit": limit, "overQuotaWeight": weight}


def _queues(rng: random.Random, n_queues: int, total_gpus: int) -> tuple[list[dict[str, Any]], list[str]]:
    unlimited = _resource(-1, -1, 1)
    n_top, n_mid = max(1, n_queues // 20), max(1, n_queues // 5)
    n_leaf = max(1, n_queues - n_top - n_mid)
    queues: list[dict[str, Any]] = []
    for i in range(n_top):
        gpu = _resource(round(total_gpus / n_top, 1), -1, 1)
        queues.append({"name": f"org-{i}", "gpu": gpu, "cpu": unlimited, "memory": unlimited})
    for i in range(n_mid):
        gpu = _resource(round(total_gpus / n_mid * 0.9, 1), -1, rng.choice([1, 2]))
        queues.append({"name": f"dept-{i}", "parent": f"org-{i % n_top}", "gpu": gpu, "cpu": unlimited,
                       "memory": unlimited})  # fmt: skip
    leaves = []
    for i in range(n_leaf):
        name = f"team-{i}"
        leaves.append(name)
        share = total_gpus / n_leaf
        limit = rng.choice([-1, -1, -1, round(share * 3)])
        gpu = _resource(round(share * rng.uniform(0.3, 1.2), 1), limit, rng.choice([0, 1, 1, 2]))
        queues.append({"name": name, "parent": f"dept-{i % n_mid}", "priority": rng.choice([100, 100, 100, 101]),
                       "gpu": gpu, "cpu": unlimited, "memory": unlimited})  # fmt: skip
    return queues, leaves


def _priority(rng: random.Random, shared: bool) -> int:
    if shared:
        return rng.choice([TRAIN, INFERENCE, INFERENCE])
    return rng.choice([TRAIN, TRAIN, TRAIN, BUILD, INFERENCE])


def generate(size: Size, seed: int = SEED) -> dict[str, Any]:
    rng = random.Random(seed + size.nodes)
    nodes = [
        {"name": f"node-{i:05d}", "gpus": 8, "gpuMemoryMiB": GPU_MEMORY[i % 2], "cpu": "128", "memory": "1Ti"}
        for i in range(size.nodes)
    ]
    queues, leaves = _queues(rng, size.queues, 8 * size.nodes)
    jobs: list[dict[str, Any]] = []
    pods = 0

    def job(tasks: Any, **fields: Any) -> None:
        nonlocal pods
        name = f"job-{len(jobs):06d}"
        jobs.append({"name": name, "queue": rng.choice(leaves), "cpu": "1", "memory": "4G", "tasks": tasks, **fields})
        pods += tasks if isinstance(tasks, int) else len(tasks)

    # Running work: fill each node to ~90% of its GPUs (a gang may take GPUs of the next nodes too).
    free = [8] * len(nodes)
    keep = [1 if rng.random() < 0.8 else 2 for _ in nodes]  # GPUs left idle per node
    for i, node in enumerate(nodes):
        group = 0
        while free[i] > keep[i]:
            kind = rng.random()
            if kind < 0.5:
                gpus = min(free[i] - keep[i], rng.choice([1, 1, 2, 2, 4, 8]))
                job([{"state": "Running", "node": node["name"]}], gpu=gpus, priority=_priority(rng, False))
                free[i] -= gpus
            elif kind < 0.8:
                # A shared GPU with 2-4 pods, each its own PodGroup (like Deployment pods).
                used = 0.0
                for _ in range(rng.randint(2, 4)):
                    fraction = rng.choice(FRACTIONS)
                    if used + fraction > 1:
                        break
                    used += fraction
                    task = {"state": "Running", "node": node["name"], "gpuGroups": [f"g{group}"]}
                    job([task], gpuFraction=fraction, priority=_priority(rng, True))
                group += 1
                free[i] -= 1
            else:
                # A gang of 1-GPU pods on this node and the next ones.
                want, tasks, j = rng.randint(2, 16), [], i
                while len(tasks) < want and j < len(nodes):
                    take = min(want - len(tasks), max(0, free[j] - keep[j]), 8 if j == i else 2)
                    tasks += [{"state": "Running", "node": nodes[j]["name"]} for _ in range(take)]
                    free[j] -= take
                    j += 1
                if tasks:
                    job(tasks, gpu=1, priority=TRAIN)
                else:
                    break

    # The pending backlog, bigger than what is free.
    while (size.jobs and len(jobs) < size.jobs) or (size.pods and pods < size.pods):
        kind = rng.random()
        if kind < 0.5:
            job(1, gpu=rng.choice([1, 1, 1, 2, 2, 4, 8]), priority=_priority(rng, False))
        elif kind < 0.75:
            job(1, gpuFraction=rng.choice(FRACTIONS), priority=_priority(rng, True))
        elif kind < 0.9:
            job(1, gpuMemoryMiB=rng.choice(GPU_MEMORIES), priority=_priority(rng, True))
        else:
            job(rng.randint(2, 16), gpu=rng.choice([1, 2]), priority=rng.choice([TRAIN, TRAIN, BUILD]))
    return {
        "name": f"busy-{size.nodes}",
        "actions": ["allocate", "consolidation", "reclaim", "preempt"],
        "rounds": 1,
        # KAI's scheduler defaults, as `kaistack check` uses them (16 consolidation preemptees, signatures).
        "placement": {
            "node": "binpack",
            "gpu": "pack",
            "maxConsolidationPreemptees": 16,
            "useSchedulingSignatures": True,
        },
        "nodes": nodes,
        "queues": queues,
        "jobs": jobs,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=sorted(SIZES), default="S")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument(
        "--custom",
        nargs=3,
        type=int,
        metavar=("NODES", "QUEUES", "JOBS"),
        help="a cut of the same mix instead of --size, e.g. --custom 512 100 10000",
    )
    args = parser.parse_args()
    size = Size(nodes=args.custom[0], queues=args.custom[1], jobs=args.custom[2]) if args.custom else SIZES[args.size]
    json.dump(generate(size, args.seed), sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
