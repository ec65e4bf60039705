"""Benchmark the placement simulator on large generated clusters.

From a fixed seed it writes a scenario (FORMAT.md JSON) of 1,024 nodes x 8 GPUs, 200 queues in three
levels and 20,000 pending jobs (60% whole-GPU, 30% fraction or gpu-memory, 10% gangs of 2-16 pods),
and the same at 2x and 4x (nodes, queues and jobs scaled), then times loading the file and running
allocate until a cycle changes nothing.

    .venv/bin/python benchmarks/placement_bench.py            # 1x, 2x, 4x
    .venv/bin/python benchmarks/placement_bench.py --scales 1 --profile --repeat 1
    .venv/bin/python benchmarks/placement_bench.py --topology   # racks of 16 nodes in zones of 256

With --topology every node is labelled with a zone (256 nodes) and a rack (16 nodes), the scenario holds
that Topology, and every gang is constrained: odd ones must stay in one rack, even ones must stay in one
zone and prefer one rack. Everything else (the random draws included) is the same cluster and work.

Times are the best of `--repeat` runs (default 3): the simulate time is allocate to a steady state,
i.e. cycles until one changes nothing (the last, idle cycle included).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kaistack.ops.scenarios import load_scenario  # noqa: E402
from placement.simulation import simulate  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
SEED = 20260817
BASE_NODES, BASE_QUEUES, BASE_JOBS = 1024, 200, 20_000


def _resource(quota: float, limit: float, weight: float) -> dict[str, float]:
    return {"quota": quota, "limit": limit, "overQuotaWeight": weight}


def generate(scale: int, seed: int = SEED, topology: bool = False) -> dict:
    """A scenario with `scale` times the base cluster, deterministic for a seed."""
    rng = random.Random(seed + scale)
    unlimited = _resource(-1, -1, 1)
    nodes = []
    for i in range(BASE_NODES * scale):
        memory = 80_000 if i % 2 else 40_000
        nodes.append({"name": f"node-{i:05d}", "gpus": 8, "gpuMemoryMiB": memory, "cpu": "128", "memory": "1Ti"})
        if topology:
            nodes[-1]["labels"] = {"bench/zone": f"zone-{i // 256}", "bench/rack": f"rack-{i // 16}"}
    total_gpus = 8 * len(nodes)
    # Three levels: 5% organisations, 20% departments, 75% leaf teams (200 queues at 1x).
    n_queues = BASE_QUEUES * scale
    n_top, n_mid = n_queues // 20, n_queues // 5
    n_leaf = n_queues - n_top - n_mid
    queues = []
    for i in range(n_top):
        queues.append(
            {"name": f"org-{i}", "gpu": _resource(total_gpus / n_top, -1, 1), "cpu": unlimited, "memory": unlimited}
        )
    for i in range(n_mid):
        gpu = _resource(total_gpus / n_mid * 0.9, -1, rng.choice([1, 2]))
        queues.append(
            {"name": f"dept-{i}", "parent": f"org-{i % n_top}", "gpu": gpu, "cpu": unlimited, "memory": unlimited}
        )
    leaves = []
    for i in range(n_leaf):
        name = f"team-{i}"
        leaves.append(name)
        limit = rng.choice([-1, -1, -1, round(total_gpus / n_leaf * 3)])
        gpu = _resource(round(total_gpus / n_leaf * rng.uniform(0.3, 1.2), 1), limit, rng.choice([0, 1, 1, 2]))
        queues.append(
            {
                "name": name,
                "parent": f"dept-{i % n_mid}",
                "priority": rng.choice([100, 100, 100, 101]),
                "gpu": gpu,
                "cpu": unlimited,
                "memory": unlimited,
            }
        )
    jobs = []
    for i in range(BASE_JOBS * scale):
        kind = rng.random()
        job: dict = {"name": f"job-{i:06d}", "queue": rng.choice(leaves), "priority": rng.choice([50, 50, 50, 75, 100])}
        job["cpu"], job["memory"] = "1", "4G"
        if kind < 0.6:
            job["gpu"] = rng.choice([1, 1, 1, 2, 2, 4, 8])
            job["tasks"] = 1
        elif kind < 0.9:
            if rng.random() < 0.5:
                job["gpuFraction"] = rng.choice([0.1, 0.2, 0.25, 0.3, 0.5, 0.7])
            else:
                job["gpuMemoryMiB"] = rng.choice([4000, 8000, 10_000, 20_000])
            job["tasks"] = 1
        else:
            job["gpu"] = rng.choice([1, 2])
            job["tasks"] = rng.randint(2, 16)
            if topology:
                job["topologyConstraint"] = (
                    {"topology": "bench", "requiredTopologyLevel": "bench/rack"}
                    if i % 2
                    else {
                        "topology": "bench",
                        "requiredTopologyLevel": "bench/zone",
                        "preferredTopologyLevel": "bench/rack",
                    }
                )
        jobs.append(job)
    extra = {"topologies": [{"name": "bench", "levels": [{"nodeLabel": "bench/zone"}, {"nodeLabel": "bench/rack"}]}]}
    return {
        **(extra if topology else {}),
        "name": f"bench-{scale}x",
        "actions": ["allocate"],
        "rounds": 1,
        "placement": {"node": "binpack", "gpu": "pack"},
        "nodes": nodes,
        "queues": queues,
        "jobs": jobs,
    }


def run(scale: int, profile: bool, repeat: int, topology: bool = False) -> tuple[float, float, int, int]:
    """Best-of-`repeat` load and simulate times (the machine is shared; the minimum is the least noisy)."""
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"bench-{scale}x{'-topology' if topology else ''}.json"
    path.write_text(json.dumps(generate(scale, topology=topology)))
    best_load = best_sim = float("inf")
    cycles = placed = 0
    for attempt in range(repeat):
        start = time.perf_counter()
        scenario = load_scenario(path)
        loaded = time.perf_counter()
        profiler = cProfile.Profile() if profile and attempt == 0 else None
        if profiler:
            profiler.enable()
        result = simulate(scenario.snapshot, actions=["allocate"], rounds=None, placement=scenario.placement)
        done = time.perf_counter()
        if profiler:
            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
        best_load, best_sim = min(best_load, loaded - start), min(best_sim, done - loaded)
        placed = sum(1 for t in result.tasks.values() if t.status != "Pending")
        cycles = result.cycles
        del scenario, result
    return best_load, best_sim, cycles, placed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scales", default="1,2,4", help="comma-separated scale factors (default 1,2,4)")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of each scale's first simulate call")
    parser.add_argument("--repeat", type=int, default=3, help="runs per scale; the best time is reported (default 3)")
    parser.add_argument("--topology", action="store_true", help="zones and racks, every gang constrained to them")
    args = parser.parse_args()
    base = None
    header = ("scale", "nodes", "jobs", "load s", "simulate s", "cycles", "placed pods")
    print("  ".join(f"{h:>{w}}" for h, w in zip(header, (5, 6, 7, 7, 10, 6, 11), strict=True)))
    for scale in (int(s) for s in args.scales.split(",")):
        load_s, sim_s, cycles, placed = run(scale, args.profile, max(1, args.repeat), args.topology)
        base = base or sim_s
        ratio = f"  ({sim_s / base:.1f}x the 1x time)" if scale != 1 else ""
        print(
            f"{scale:>4}x  {BASE_NODES * scale:>6}  {BASE_JOBS * scale:>7}  {load_s:>7.2f}  {sim_s:>10.2f}"
            f"  {cycles:>6}  {placed:>11}{ratio}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
