"""What compiling the simulator with mypyc would buy: the same scenarios, interpreted and compiled, side by side.

    .venv/bin/python benchmarks/mypyc_trial.py /tmp/busy-256.json /tmp/busy-512.json
    .venv/bin/python benchmarks/mypyc_trial.py F --keep /tmp/compiled     # keep the compiled tree

`placement/` is copied from this checkout into a scratch tree (with `kaistack/`, which stays interpreted),
compiled there with mypyc (it comes with mypy; it needs gcc and the Python headers), and each scenario runs
as `kaistack simulate F --json` in a fresh process under /usr/bin/time against this checkout and against the
compiled tree. The two outputs must be byte-identical; a difference is reported and the exit code is 1.
Scenarios come from `cycle_gen.py` (for example `--custom 512 100 10000`).

This is a trial, not how kaistack ships: tests patch the simulator's module globals (the reference orders),
which compiled modules do not see, so the test suite runs on the interpreted package.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNNER = "import sys; sys.path.insert(0, sys.argv[1]); from kaistack.cli import main; sys.exit(main(sys.argv[2:]))"
# mypyc's build reads [tool.mypy] from the tree it compiles; the project's own pyproject has packaging keys
# the setuptools it drives does not accept.
MYPY_CONFIG = '[tool.mypy]\npython_version = "3.11"\nignore_missing_imports = true\n'


def compile_tree(tree: Path) -> None:
    for package in ("placement", "kaistack"):
        shutil.copytree(ROOT / package, tree / package, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    (tree / "pyproject.toml").write_text(MYPY_CONFIG)
    print(f"compiling placement/ with mypyc in {tree} (about a minute)", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "mypyc", "placement"], cwd=tree, check=True, stdout=subprocess.DEVNULL)


def timed(checkout: Path, scenario: Path, out: Path) -> dict[str, float]:
    command = ["/usr/bin/time", "-f", "%e %M", sys.executable, "-c", RUNNER, str(checkout), "simulate"]
    with out.open("w") as handle:
        proc = subprocess.run(
            [*command, str(scenario), "--json"], stdout=handle, stderr=subprocess.PIPE, text=True, check=False
        )
    seconds, rss = proc.stderr.strip().splitlines()[-1].split()
    return {"seconds": float(seconds), "rssMB": round(int(rss) / 1024), "exit": proc.returncode}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenarios", nargs="+", type=Path)
    parser.add_argument("--keep", type=Path, help="compile into this (new) folder and leave it there")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="kaistack-mypyc-"))
    tree = args.keep or scratch / "tree"
    tree.mkdir(parents=True)
    failed = False
    try:
        compile_tree(tree)
        for scenario in args.scenarios:
            interpreted = timed(ROOT, scenario, scratch / "interpreted.json")
            compiled = timed(tree, scenario, scratch / "compiled.json")
            same = filecmp.cmp(scratch / "interpreted.json", scratch / "compiled.json", shallow=False)
            failed = failed or not same
            row = {"scenario": str(scenario), "interpreted": interpreted, "compiled": compiled, "identical": same}
            print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
