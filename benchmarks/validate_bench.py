"""Time `kaistack validate` on the dev stack and on a generated large stack (100 tenants, 1,000 queues).

    .venv/bin/python benchmarks/validate_bench.py                 # both, 3 runs each, table
    .venv/bin/python benchmarks/validate_bench.py --tenants 20 --queues 200 --runs 1 --json

Each run is the CLI in a fresh interpreter (`python -m kaistack validate --stack S --json`), so
interpreter start, imports, rendering, the policy pack subprocess and the checker all count. Goals:
dev within 3 s, the large stack within 20 s (2-core machine). The generated project lives in a
temporary directory: Pulumi.yaml and __main__.py link to this repository's; Pulumi.bench.yaml is
generated (a kind cluster whose GPU pools fit one small workload per tenant).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
GOALS_S = {"dev": 3.0, "bench": 20.0}


def bench_stack(tenants: int, queues: int) -> dict[str, Any]:
    """`kaistack:` config: 10 departments, leaf queues under them, each tenant owning its share of leaves."""
    departments = [f"dept-{d:02d}" for d in range(10)]
    leaves = [f"q-{i:04d}" for i in range(queues - len(departments))]
    queue_list: list[dict[str, Any]] = [{"name": d, "resources": {"gpu": {"quota": -1}}} for d in departments]
    # Leaves keep the model's defaults (quota/limit -1, weight 1): the config stays small enough to
    # reach the policy pack in PULUMI_CONFIG (one environment string, at most 128 KiB on Linux).
    queue_list += [{"name": leaf, "parent": departments[i % len(departments)]} for i, leaf in enumerate(leaves)]
    per_tenant = max(1, len(leaves) // tenants)
    tenant_list = [
        {"name": f"team-{t:03d}", "queues": leaves[t * per_tenant : (t + 1) * per_tenant] or [leaves[-1]]}
        for t in range(tenants)
    ]
    workloads = [
        {
            "name": f"infer-{t:03d}",
            "kind": "Deployment",
            "tenant": tenant["name"],
            "queue": tenant["queues"][0],
            "image": "ghcr.io/acme/infer:1.4.2",
            "replicas": 1,
            "gpuFraction": 0.25,
        }
        for t, tenant in enumerate(tenant_list)
    ]
    gpus_needed = -(-tenants // 4)  # four 0.25 shares per GPU
    return {
        "cluster": {
            "provider": "kind",
            "name": "kaistack-bench",
            "kind": {"tenantPorts": max(10, tenants)},  # one host port per tenant vCluster
            "nodePools": [
                {
                    "name": "gpu",
                    "count": -(-gpus_needed // 8),
                    "gpus": 8,
                    "gpuMemoryMiB": 11441,
                    "cpu": "64",
                    "memory": "256Gi",
                }
            ],
        },
        "gpu": {"mode": "fake"},
        "kai": {"sharing": "fractions"},
        "queues": queue_list,
        "tenants": tenant_list,
        "workloads": workloads,
    }


def write_project(directory: Path, tenants: int, queues: int) -> Path:
    (directory / "Pulumi.yaml").symlink_to(ROOT / "Pulumi.yaml")
    (directory / "__main__.py").symlink_to(ROOT / "__main__.py")
    (directory / "policies").symlink_to(ROOT / "policies", target_is_directory=True)
    config = {f"kaistack:{k}": v for k, v in bench_stack(tenants, queues).items()}
    (directory / "Pulumi.bench.yaml").write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    return directory


def run_validate(project: Path, stack: str) -> dict[str, Any]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "kaistack", "validate", "--stack", stack, "--project", str(project), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={"KAISTACK_PROGRESS": "0", **_env()},
    )
    wall = time.perf_counter() - started
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"validate --stack {stack} printed no JSON (exit {done.returncode}):\n{done.stderr}") from None
    return {"wall": wall, "exit": done.returncode, "report": report}


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="kaistack-bench-") as tmp:
        bench = write_project(Path(tmp), args.tenants, args.queues)
        for stack, project in (("dev", ROOT), ("bench", bench)):
            runs = [run_validate(project, stack) for _ in range(args.runs)]
            last = runs[-1]["report"]
            walls = [r["wall"] for r in runs]
            results[stack] = {
                "resources": last.get("resources"),
                "queues": sum(v for k, v in (last.get("resourcesByType") or {}).items() if k.endswith(":Queue")),
                "exit": runs[-1]["exit"],
                "ok": last.get("ok"),
                "wall_s": {"min": min(walls), "median": statistics.median(walls), "max": max(walls)},
                "steps_s": last.get("timings", {}),
                "goal_s": GOALS_S[stack],
            }
    # A run that did not validate measured a refusal, not the work: the figures would mean nothing.
    failed = [stack for stack, r in results.items() if r["exit"] != 0]
    if args.json:
        print(json.dumps(results, indent=2))
        return 1 if failed else 0
    print(
        f"kaistack validate, {args.runs} run(s) each, fresh interpreter per run ({args.tenants} tenants, "
        f"{args.queues} queues in 'bench')"
    )
    for stack, r in results.items():
        wall = r["wall_s"]
        verdict = "within" if wall["median"] <= r["goal_s"] else "OVER"
        if r["exit"] != 0:
            verdict = "NOT MEASURED (validate failed:"
        print(
            f"\n{stack}: {r['resources']} resources, exit {r['exit']}; wall median {wall['median']:.2f} s "
            f"(min {wall['min']:.2f}, max {wall['max']:.2f}) -- {verdict} the {r['goal_s']:.0f} s goal"
            + (")" if r["exit"] != 0 else "")
        )
        for step, seconds in r["steps_s"].items():
            print(f"  {seconds:7.2f} s  {step}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
