"""KAI's full default cycle (allocate, consolidation, reclaim, preempt) at XS, S and L, whole process.

    .venv/bin/python benchmarks/cycle_bench.py                          # this checkout
    git worktree add /tmp/kaistack-before <rev>
    .venv/bin/python benchmarks/cycle_bench.py --before /tmp/kaistack-before --sizes XS S --timeout 300

Each run is `kaistack simulate <scenario> --json > /dev/null` in a fresh process under /usr/bin/time
(wall seconds and peak RSS), on the scenarios cycle_gen.py writes to benchmarks/out/busy-<size>.json
(written again whenever the generator's output differs). With --before, the same runs use that
checkout's placement and kaistack packages, one size after the other, so both versions see the same
machine load. A run past --timeout is reported as such, not as a figure.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "out"
RUNNER = "import sys; sys.path.insert(0, sys.argv[1]); from kaistack.cli import main; sys.exit(main(sys.argv[2:]))"


def scenario(size: str) -> Path:
    """benchmarks/out/busy-<size>.json as this checkout's generator writes it now.

    The generator is deterministic and takes about a second, so it always runs: a file kept from an older
    generator once made the L figures those of a scenario without scheduling signatures.
    """
    path = OUT / f"busy-{size}.json"
    generated = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "cycle_gen.py"), "--size", size],
        stdout=subprocess.PIPE,
        check=True,
    ).stdout
    if not path.exists() or path.read_bytes() != generated:
        if path.exists():
            print(f"{path.name}: older than benchmarks/cycle_gen.py, written again", file=sys.stderr)
        OUT.mkdir(parents=True, exist_ok=True)
        path.write_bytes(generated)
    return path


def compatible(path: Path) -> Path:
    """The scenario without keys an older checkout does not know (it then runs KAI's test-harness defaults)."""
    document = json.loads(path.read_text())
    document.get("placement", {}).pop("maxConsolidationPreemptees", None)
    document.get("placement", {}).pop("useSchedulingSignatures", None)
    older = path.with_name(path.stem + "-compat.json")
    older.write_text(json.dumps(document))
    return older


def run(checkout: Path, path: Path, timeout: float) -> dict[str, object]:
    command = [
        "/usr/bin/time",
        "-f",
        "%e %M",
        sys.executable,
        "-c",
        RUNNER,
        str(checkout),
        "simulate",
        str(path),
        "--json",
    ]
    # Its own process group: on timeout the simulator under /usr/bin/time goes too, not only `time`
    # (an orphaned run would load the machine for every figure taken after it).
    proc = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"seconds": None, "rssMB": None, "note": f"did not finish in {timeout:g} s"}
    last = stderr.strip().splitlines()[-1].split()
    return {"seconds": float(last[0]), "rssMB": round(int(last[1]) / 1024), "exit": proc.returncode}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["XS", "S", "L"], choices=["XS", "S", "M", "L"])
    parser.add_argument("--before", type=Path, help="another checkout to time side by side")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    results: dict[str, dict[str, object]] = {}
    for size in args.sizes:
        path = scenario(size)
        results[size] = {"after": run(ROOT, path, args.timeout)}
        if args.before is not None:
            results[size]["before"] = run(args.before, compatible(path), args.timeout)
        print(size, json.dumps(results[size]), flush=True)
    (OUT / "cycle-bench.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
