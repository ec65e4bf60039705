"""Hostile-input fuzzing of every entry point, each run isolated in its own process.

    .venv/bin/python benchmarks/fuzz.py                          # long profile: 1,000 inputs per target
    .venv/bin/python benchmarks/fuzz.py --count 50 --target simulate --jobs 2
    .venv/bin/python benchmarks/fuzz.py --json > fuzz.json       # the summary for machines

Targets and what one input is:
- stack: a mutated copy of Pulumi.{dev,staging,prod}.yaml, run through `check`, `validate` or
  `render --json` (in turn) in a throw-away project;
- lint: a mutated manifest from tests/data/manifests, linted beside an intact one (`lint A B --json`);
- simulate: a mutated scenario, public or using kaistack's extension keys (`simulate FILE --json --max-seconds
  <0.6 x timeout>`);
- diagnose: a mutated kubectl dump from tests/data/dumps (`diagnose --from-dump FILE --at T --json
  --max-seconds <0.6 x timeout>`);
- promote: `promote dev staging --yes --json` with a mutated source and a failing file system (a
  read-only target, or ENOSPC/EROFS/EIO/EACCES injected at one step of the write).
Mutations replace a random value with a hostile one (overflowing, non-finite and malformed numbers,
wrong types, control characters, 10^9 counts), delete keys, multiply lists (10,000 workloads, 5,000
queues, a 3,000-deep parent chain), and damage the text (alias bombs, self-referencing anchors,
50,000-deep nesting, flipped bytes, truncation).

Each run is a forked child (the parent has kaistack imported, so a run costs what the command costs).
A run fails when it: prints a traceback or exits 70 (internal error); exits with a code outside the
documented table (0 1 2 3); is killed by a signal (a crash); runs longer than --timeout (a hang);
peaks above --max-rss-mb; prints something that is not strict JSON under --json; or, for promote,
changes the target when it should not or leaves a temporary file behind. Failing inputs are written
to benchmarks/out/fuzz-failures/ for replay. Exit code: 0 when nothing failed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import errno
import faulthandler
import json
import os
import random
import resource
import selectors
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "out" / "fuzz-failures"
TARGETS = ("stack", "lint", "simulate", "diagnose", "promote")
EXIT_CODES = {0, 1, 2, 3}
STACK_COMMANDS = (("check", "--json"), ("validate", "--json"), ("render", "--json"))
FAULTS = ("none", "read-only target", "ENOSPC at fsync", "EROFS at replace", "EIO at write", "EACCES at mkstemp")
RAW = "__raw__"  # values written into YAML text verbatim (not representable through safe_dump)


# --- hostile values and mutations ---------------------------------------------------------------


def _deep(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


HOSTILE: tuple[Any, ...] = (
    None, True, False, -1, 0, 10**9, 2**63, 2**64 + 1, 10**400, 1.5, -0.0,
    f"{RAW}1e309", f"{RAW}-1e309", f"{RAW}1e999999999", f"{RAW}.nan", f"{RAW}.inf", f"{RAW}-.inf",
    "1..5", "500u", "1e999999999", "NaN", "Infinity", "0x10", "1_000", "", " ", "x" * 5000, "\x07\x1b[31m",
    "é🚀", "a" * 300, "-", "a/b", "../../etc/passwd", [], {}, [1, 2, 3], {"a": {"b": {"c": 1}}}, _deep(300),
)  # fmt: skip


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path into a parsed document (iterative, so hostile seeds cannot recurse it away)."""
    stack = [(node, prefix)]
    while stack:
        value, path = stack.pop()
        if path:
            yield path
        if len(path) > 12:
            continue
        if isinstance(value, dict):
            stack.extend((v, (*path, k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(value[:50]))


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _dump(doc: Any) -> str:
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=10**6)
    # Put the raw tokens back as YAML plain scalars: 1e309 overflows, .nan is NaN, and so on.
    for token in {h for h in HOSTILE if isinstance(h, str) and h.startswith(RAW)}:
        text = text.replace(f"'{token}'", token[len(RAW) :]).replace(token, token[len(RAW) :])
    return text


GROWN_NODES = 1_000_000


def _size(node: Any, cap: int) -> int:
    """Values in a parsed document, counted up to `cap`."""
    count, stack = 0, [node]
    while stack and count < cap:
        value = stack.pop()
        count += 1
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return count


def mutate_document(rng: random.Random, doc: Any) -> Any:
    doc = copy.deepcopy(doc)
    paths = list(_paths(doc))
    if not paths:
        return rng.choice(HOSTILE)
    path = rng.choice(paths)
    kind = rng.random()
    if kind < 0.55:
        _set(doc, path, copy.deepcopy(rng.choice(HOSTILE)))
    elif kind < 0.7:
        parent = _get(doc, path[:-1]) if len(path) > 1 else doc
        with contextlib.suppress(KeyError, IndexError, TypeError):
            del parent[path[-1]]
    else:
        lists = [p for p in paths if isinstance(_get(doc, p), list) and _get(doc, p)]
        if lists:
            target = rng.choice(lists)
            items = _get(doc, target)
            factor = rng.choice((10, 100, 1000, 5000, 10000))
            # Growth compounds over a case's rounds (10,000 copies of a list that holds one grown before): past
            # GROWN_NODES the generator itself would take the machine's memory (and the worker with it).
            room = GROWN_NODES - _size(doc, GROWN_NODES)
            factor = max(1, min(factor, room // max(_size(item, GROWN_NODES) for item in items)))
            grown = [copy.deepcopy(items[i % len(items)]) for i in range(factor)]
            for i, item in enumerate(grown):  # distinct names, so the sizes (not duplicates) are tested
                if isinstance(item, dict) and isinstance(item.get("name"), str):
                    item["name"] = f"{item['name'][:40]}-{i}"
                    if "parent" in item and rng.random() < 0.5:
                        item["parent"] = f"{item['name'][:40]}-{i - 1}" if i else item["parent"]
            _set(doc, target, grown)
        else:
            _set(doc, path, copy.deepcopy(rng.choice(HOSTILE)))
    return doc


TEXT_INSERTS = ("\x00", "\x07", "\ufeff", "\t", "\r", "\x85", ":", "- ", "{", "&a", "*a", "!!python/object:os.system")


def mutate_text(rng: random.Random, text: str) -> str:
    kind = rng.randrange(8)
    if kind == 0:
        return text[: rng.randrange(len(text) + 1)]
    if kind == 1:
        i = rng.randrange(len(text) + 1)
        return text[:i] + rng.choice(TEXT_INSERTS) + text[i:]
    if kind == 2:
        bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
            for i in range(12)
        )
        return bomb + text
    if kind == 3:
        depth = rng.choice((500, 5000, 50000))
        return "[" * depth + "]" * depth + "\n" + text
    if kind == 4:
        return "self: &s\n  loop: *s\n" + text
    if kind == 5:
        return text + "\n---\n" + text  # a second document
    if kind == 6:
        return text.replace(": ", ":  " * rng.randrange(1, 3), rng.randrange(1, 5))
    data = bytearray(text.encode("utf-8"))
    for _ in range(rng.randrange(1, 8)):
        if data:
            data[rng.randrange(len(data))] = rng.randrange(256)
    return data.decode("utf-8", errors="replace")


def mutate(rng: random.Random, text: str) -> str:
    if rng.random() < 0.25:
        return mutate_text(rng, text)
    doc = yaml.safe_load(text)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        doc = mutate_document(rng, doc)
    return _dump(doc)


# --- one isolated run ------------------------------------------------------------------------------


@dataclass
class Run:
    target: str
    case: int
    command: str
    verdict: str = "ok"
    exit: int | None = None
    seconds: float = 0.0
    rss_mb: float = 0.0
    detail: str = ""
    files: dict[str, str] = field(default_factory=dict)


def _strict_json(text: str) -> str | None:
    def refuse(token: str) -> None:
        raise ValueError(f"non-JSON constant {token}")

    try:
        json.loads(text, parse_constant=refuse)
    except ValueError as err:
        return str(err)[:200]
    return None


def _child(argv: list[str], out: Path, err: Path, setup: Callable[[], None] | None, max_rss_mb: int) -> None:
    """In the forked child: stdout/stderr to files, a memory ceiling, run the CLI, exit with its code."""
    os.setsid()
    with open(out, "wb") as o, open(err, "wb") as e:
        os.dup2(o.fileno(), 1)
        os.dup2(e.fileno(), 2)
    # Whatever sys.stdout was in the parent (a pytest capture, say), the command writes to the files.
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    if faulthandler.is_enabled():  # a crash dump belongs in this run's stderr, not the parent's (pytest's)
        faulthandler.enable(file=sys.stderr)
    # A runaway allocation fails here (and shows as a failure) instead of taking the machine down.
    limit = (max_rss_mb + 1024) * 2**20
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    code = 99
    try:
        if setup is not None:
            setup()
        from kaistack.cli import main

        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 2
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 98
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def run_isolated(
    run: Run, argv: list[str], work: Path, timeout: float, max_rss_mb: int, setup: Callable[[], None] | None = None
) -> Run:
    out, err = work / "stdout", work / "stderr"
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(argv, out, err, setup, max_rss_mb)
    status, usage = 0, None
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - start > timeout:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            run.verdict = "hang"
            break
        time.sleep(0.01)
    run.seconds = round(time.monotonic() - start, 3)
    run.rss_mb = round(usage.ru_maxrss / 1024, 1) if usage else 0.0
    stdout = out.read_text(errors="replace") if out.exists() else ""
    stderr = err.read_text(errors="replace") if err.exists() else ""
    if run.verdict == "hang":
        run.detail = f"killed after {timeout:g} s"
        return run
    if os.WIFSIGNALED(status):
        run.verdict, run.detail = "crash", f"signal {os.WTERMSIG(status)}"
        return run
    run.exit = os.WEXITSTATUS(status)
    if "Traceback (most recent call last)" in stderr or run.exit in (70, 98):
        run.verdict, run.detail = "traceback", stderr.strip()[-400:]
    elif run.exit not in EXIT_CODES:
        run.verdict, run.detail = "bad-exit", stderr.strip()[-200:]
    elif run.rss_mb > max_rss_mb:
        run.verdict, run.detail = "memory", f"{run.rss_mb} MB"
    elif "--json" in argv and stdout.strip() and (problem := _strict_json(stdout)):
        run.verdict, run.detail = "bad-json", problem
    return run


# --- the five targets ------------------------------------------------------------------------------


def _project(work: Path, files: dict[str, str]) -> Path:
    """A throw-away project: the repository's program and packages, with these stack files."""
    project = work / "project"
    project.mkdir()
    for entry in ("Pulumi.yaml", "__main__.py", "components", "kaistack", "placement", "policies", "schema"):
        if (ROOT / entry).exists():
            (project / entry).symlink_to(ROOT / entry, target_is_directory=(ROOT / entry).is_dir())
    for name, text in files.items():
        (project / name).write_text(text, encoding="utf-8", errors="surrogateescape")
    return project


def _stack_seeds() -> list[str]:
    return [(ROOT / f"Pulumi.{s}.yaml").read_text() for s in ("dev", "staging", "prod")]


def case_stack(rng: random.Random, case: int, work: Path, args: argparse.Namespace) -> Run:
    text = mutate(rng, rng.choice(_stack_seeds()))
    command = STACK_COMMANDS[case % len(STACK_COMMANDS)]
    project = _project(work, {"Pulumi.fuzz.yaml": text})
    run = Run("stack", case, " ".join(command), files={"Pulumi.fuzz.yaml": text})
    argv = [command[0], "--stack", "fuzz", "--project", str(project), *command[1:]]
    if command[0] == "check":  # the bound a user sets on a long check (10,000 workloads on 3 nodes)
        argv += ["--max-seconds", str(args.timeout * 0.6)]
    return run_isolated(run, argv, work, args.timeout, args.max_rss_mb)


def case_lint(rng: random.Random, case: int, work: Path, args: argparse.Namespace) -> Run:
    seeds = sorted((ROOT / "tests" / "data" / "manifests").glob("*.yaml"))
    seed = rng.choice(seeds).read_text()
    try:
        text = mutate(rng, seed) if rng.random() < 0.8 else mutate_text(rng, seed)
    except yaml.YAMLError:
        text = mutate_text(rng, seed)  # a seed that is broken on purpose
    if rng.random() < 0.02:  # now and then a large file: thousands of chained Queue objects
        text = "".join(
            f"---\napiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {{name: q{i}}}\n"
            f"spec: {{parentQueue: q{(i + 1) % 3000}}}\n"
            for i in range(3000)
        )
    (work / "fuzzed.yaml").write_text(text, encoding="utf-8", errors="surrogateescape")
    intact = work / "intact.yaml"
    shutil.copy(ROOT / "tests" / "data" / "manifests" / "001-gpu-pod.yaml", intact)
    run = Run("lint", case, "lint --json", files={"fuzzed.yaml": text})
    return run_isolated(
        run, ["lint", str(work / "fuzzed.yaml"), str(intact), "--json"], work, args.timeout, args.max_rss_mb
    )


def case_simulate(rng: random.Random, case: int, work: Path, args: argparse.Namespace) -> Run:
    data = ROOT / "tests" / "data"
    # The public scenarios, and the ones using kaistack's extension keys (scalar resources, taints, affinities).
    seeds = sorted((data / "kai-conformance").glob("*.yaml")) + sorted((data / "kai-derived").glob("*.yaml"))
    seeds += sorted((data / "kai-extra").glob("nc*.yaml")) + sorted((data / "kai-extra").glob("ipa*.yaml"))
    text = mutate(rng, rng.choice(seeds).read_text())
    roll = rng.random()
    if roll < 0.03:
        text += "\nrounds: 100000000\n"
    elif roll < 0.06:
        doc = yaml.safe_load(rng.choice(seeds).read_text())
        for job in doc.get("jobs") or []:
            job["tasks"] = 1_000_000
        text = _dump(doc)
    path = work / "scenario.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    run = Run("simulate", case, "simulate --json", files={"scenario.yaml": text})
    # The bound a user sets on a long simulation: what matters is that it stops cleanly (exit 1, "partial").
    argv = ["simulate", str(path), "--json", "--max-seconds", str(args.timeout * 0.6)]
    return run_isolated(run, argv, work, args.timeout, args.max_rss_mb)


def case_diagnose(rng: random.Random, case: int, work: Path, args: argparse.Namespace) -> Run:
    seeds = sorted((ROOT / "tests" / "data" / "dumps").glob("*.yaml"))
    text = mutate(rng, rng.choice(seeds).read_text())
    path = work / "dump.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    run = Run("diagnose", case, "diagnose --from-dump --json", files={"dump.yaml": text})
    at = "2026-11-25T12:00:00Z"
    argv = ["diagnose", "--from-dump", str(path), "--at", at, "--json", "--max-seconds", str(args.timeout * 0.6)]
    return run_isolated(run, argv, work, args.timeout, args.max_rss_mb)


def _inject(fault: str) -> Callable[[], None]:
    """In the child: make one step of the promotion's write fail the way a real file system does."""

    def fail(code: int) -> Callable[..., Any]:
        def raiser(*_: Any, **__: Any) -> Any:
            raise OSError(code, os.strerror(code))

        return raiser

    def setup() -> None:
        if fault == "ENOSPC at fsync":
            os.fsync = fail(errno.ENOSPC)
        elif fault == "EROFS at replace":
            os.replace = fail(errno.EROFS)
        elif fault == "EACCES at mkstemp":
            tempfile.mkstemp = fail(errno.EACCES)
        elif fault == "EIO at write":
            real = os.fdopen

            class Failing:
                def __init__(self, handle: Any) -> None:
                    self.handle = handle

                def __enter__(self) -> Failing:
                    return self

                def __exit__(self, *exc: object) -> None:
                    self.handle.close()

                def write(self, _: bytes) -> int:
                    raise OSError(errno.EIO, os.strerror(errno.EIO))

            os.fdopen = lambda fd, *a, **k: Failing(real(fd, *a, **k))  # type: ignore[assignment]

    return setup


def case_promote(rng: random.Random, case: int, work: Path, args: argparse.Namespace) -> Run:
    source = (ROOT / "tests" / "workflows" / "fixtures" / "project" / "Pulumi.dev.yaml").read_text()
    target = (ROOT / "tests" / "workflows" / "fixtures" / "project" / "Pulumi.staging.yaml").read_text()
    if rng.random() < 0.5:
        source = mutate(rng, source)
    fault = FAULTS[case % len(FAULTS)]
    project = _project(work, {"Pulumi.dev.yaml": source, "Pulumi.staging.yaml": target})
    staging = project / "Pulumi.staging.yaml"
    before = staging.read_bytes()
    if fault == "read-only target":
        staging.chmod(0o444)
    run = Run("promote", case, f"promote ({fault})", files={"Pulumi.dev.yaml": source})
    argv = ["promote", "dev", "staging", "--project", str(project), "--yes", "--json"]
    run = run_isolated(run, argv, work, args.timeout, args.max_rss_mb, setup=_inject(fault))
    leftovers = list(project.glob(".Pulumi.staging.yaml.*.tmp"))
    if run.verdict == "ok" and fault != "none" and staging.read_bytes() != before:
        run.verdict, run.detail = "clobbered", f"{fault}: the target changed"
    elif run.verdict == "ok" and fault != "none" and run.exit == 0 and staging.read_bytes() == before:
        pass  # nothing to promote, or validation refused: also fine
    elif run.verdict == "ok" and leftovers:
        run.verdict, run.detail = "clobbered", f"temporary file left: {leftovers[0].name}"
    return run


CASES: dict[str, Callable[[random.Random, int, Path, argparse.Namespace], Run]] = {
    "stack": case_stack,
    "lint": case_lint,
    "simulate": case_simulate,
    "diagnose": case_diagnose,
    "promote": case_promote,
}


# --- driver ------------------------------------------------------------------------------------------


def fuzz(targets: list[str], count: int, seed: int, args: argparse.Namespace, progress: bool = False) -> list[Run]:
    """`count` inputs per target; `args.jobs` children at a time; results in case order."""
    # Imported once here, so each forked child starts warm and a run costs what the command costs.
    import placement.simulation  # noqa: F401

    work_root = Path(tempfile.mkdtemp(prefix="kaistack-fuzz-"))
    runs: list[Run] = []
    try:
        plan = [(t, i) for t in targets for i in range(count)]
        pending: list[tuple[str, int]] = list(plan)
        # Children run one at a time per job slot; a slot is a forked worker that runs its cases in order.
        slots = max(1, args.jobs)
        chunks = [pending[i::slots] for i in range(slots)]
        readers = []
        for chunk in chunks:
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read)
                with os.fdopen(write, "w") as pipe:
                    for target, case in chunk:
                        rng = random.Random(f"{seed}-{target}-{case}")
                        work = work_root / f"{target}-{case}"
                        work.mkdir()
                        result = CASES[target](rng, case, work, args)
                        if result.verdict == "ok":
                            result.files = {}
                        pipe.write(json.dumps(asdict(result)) + "\n")
                        pipe.flush()
                        shutil.rmtree(work, ignore_errors=True)
                os._exit(0)
            os.close(write)
            readers.append((pid, os.fdopen(read)))
        # Read every worker's pipe as lines arrive: a worker blocked on a full pipe would stall its chunk.
        selector = selectors.DefaultSelector()
        for pid, reader in readers:
            selector.register(reader, selectors.EVENT_READ, pid)
        done = 0
        while selector.get_map():
            for key, _ in selector.select():
                line = key.fileobj.readline()  # type: ignore[union-attr]
                if not line:
                    selector.unregister(key.fileobj)
                    os.waitpid(key.data, 0)
                    continue
                runs.append(Run(**json.loads(line)))
                done += 1
                if progress:
                    print(f"\r{done}/{len(plan)} runs", end="", file=sys.stderr, flush=True)
        if progress:
            print(file=sys.stderr)
    finally:
        shutil.rmtree(work_root, ignore_errors=True)
    # A worker that died (the OOM killer, a bug in the generator) takes its remaining cases with it: they are
    # failures, not cases that were never planned.
    seen = {(r.target, r.case) for r in runs}
    for target, case in plan:
        if (target, case) not in seen:
            runs.append(Run(target, case, "(not run)", verdict="lost", detail="the fuzz worker died before this case"))
    return sorted(runs, key=lambda r: (TARGETS.index(r.target), r.case))


def summary(runs: list[Run]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for target in TARGETS:
        mine = [r for r in runs if r.target == target]
        if not mine:
            continue
        verdicts = Counter(r.verdict for r in mine)
        out[target] = {
            "runs": len(mine),
            "verdicts": dict(verdicts),
            "exitCodes": dict(Counter(str(r.exit) for r in mine)),
            "maxSeconds": max(r.seconds for r in mine),
            "maxRssMB": max(r.rss_mb for r in mine),
            "failures": [{k: v for k, v in asdict(r).items() if k != "files"} for r in mine if r.verdict != "ok"][:20],
        }
    return out


def save_failures(runs: list[Run]) -> None:
    for r in runs:
        if r.verdict == "ok":
            continue
        folder = OUT / f"{r.target}-{r.case}"
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in r.files.items():
            (folder / name).write_text(text, encoding="utf-8", errors="surrogateescape")
        (folder / "run.json").write_text(json.dumps({k: v for k, v in asdict(r).items() if k != "files"}, indent=2))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", action="append", choices=TARGETS, help="repeatable; default: all five")
    parser.add_argument("--count", type=int, default=1000, help="inputs per target (default 1000)")
    parser.add_argument("--seed", type=int, default=20261124)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds before a run counts as a hang")
    parser.add_argument("--max-rss-mb", type=int, default=2048)
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args(argv)
    started = time.monotonic()
    runs = fuzz(args.target or list(TARGETS), args.count, args.seed, args, progress=sys.stderr.isatty())
    report = summary(runs)
    save_failures(runs)
    if args.json:
        print(json.dumps({"seconds": round(time.monotonic() - started, 1), "targets": report}, indent=2))
    else:
        for target, data in report.items():
            print(
                f"{target:9} {data['runs']:5} runs  verdicts {data['verdicts']}  exits {data['exitCodes']}  "
                f"max {data['maxSeconds']:.1f} s  max RSS {data['maxRssMB']:.0f} MB"
            )
            for failure in data["failures"]:
                what = f"{failure['command']} case {failure['case']}: {failure['verdict']}"
                print(f"  FAIL {what} {failure['detail'][:300]}")
        print(f"{time.monotonic() - started:.0f} s in all")
    return 0 if all(r.verdict == "ok" for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
