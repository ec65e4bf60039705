"""`kaistack validate`: everything a PR can check without an engine, a cluster or cloud credentials.

1. the stack file parses into the model (`kaistack.declaration.parse`; a bad config is exit 2, not a finding);
2. the program is rendered under Pulumi mocks (`kaistack.ops.render.render_stack`);
3. the policy pack (`policies/__main__.py`) runs as the engine runs it: a subprocess serving the
   Analyzer gRPC protocol, every policy configured MANDATORY, one `Analyze` per rendered resource
   and one `AnalyzeStack` with all of them (`kaistack.ops.analyzer_client`). Like the engine, the pack
   process gets the stack's config in `PULUMI_CONFIG`. The pack starts while the program renders;
4. the placement checker (`kaistack.capacity.check`) says whether the declared workloads fit.

The report counts resources by type, lists violations and the capacity verdict, and renders as
text, JSON, or Markdown for a sticky PR comment. It passes only when there is no violation (at any
level) and capacity fits.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from kaistack.capacity import gate as capacity_gate
from kaistack.declaration import limits
from kaistack.declaration.model import StackConfig
from kaistack.declaration.parse import NAMESPACE
from kaistack.declaration.yaml_load import YamlInputError, load_file
from kaistack.markdown import cell, code
from kaistack.ops.analyzer_client import AnalyzedResource, Finding, PolicyPackClient, PolicyPackError
from kaistack.progress import Progress
from kaistack.stack.files import project_name
from kaistack.stack.load import ResolvedStack, load_stack

# What the stack policies but kai-capacity's simulation may take, on top of --max-seconds (seconds).
STACK_POLICIES_MARGIN_S = 60.0
_DAY = 86_400.0


@dataclass
class CapacityVerdict:
    ok: bool
    summary: str
    details: list[str] = field(default_factory=list)
    totals: dict[str, int] = field(default_factory=dict)  # nodes, gpus, workloads, pending (as check reports)
    warned: bool = False  # not a fit, passed under kai.capacityCheck: warn

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "summary": self.summary, "details": self.details, "totals": self.totals}


@dataclass
class ValidationReport:
    stack: str
    resource_counts: dict[str, int] = field(default_factory=dict)
    pack: str = ""
    policies: dict[str, str] = field(default_factory=dict)  # name -> "resource" | "stack"
    findings: list[Finding] = field(default_factory=list)
    capacity: CapacityVerdict | None = None
    errors: list[str] = field(default_factory=list)  # steps that could not run (render, pack)
    analyzed: bool = False  # the pack answered for every resource and the stack
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def resources(self) -> int:
        return sum(self.resource_counts.values())

    @property
    def ok(self) -> bool:
        return not self.errors and not self.findings and self.capacity is not None and self.capacity.ok

    def summary_line(self) -> str:
        violations = len(self.findings)
        capacity = "capacity not checked" if self.capacity is None else f"capacity {self.capacity.summary}"
        return (
            f"{self.resources} resources, {len(self.policies)} policies, "
            f"{violations} violation{'s' * (violations != 1)}, {capacity}"
        )

    def problem_lines(self) -> list[str]:
        lines = [f"error: {e}" for e in self.errors]
        lines += [f"policy {f.policy} ({f.level}) on {_subject(f)}: {_message(f)}" for f in self.findings]
        if self.capacity is not None and not self.capacity.ok:
            lines += [f"capacity: {self.capacity.summary}", *(f"capacity: {d}" for d in self.capacity.details)]
        return lines

    def as_dict(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "ok": self.ok,
            "resources": self.resources,
            "resourcesByType": dict(sorted(self.resource_counts.items())),
            "policyPack": self.pack,
            "policies": self.policies,
            "violations": [f.as_dict() for f in self.findings],
            "capacity": self.capacity.as_dict() if self.capacity else None,
            "errors": self.errors,
            "analyzed": self.analyzed,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
        }

    # -- renderings ---------------------------------------------------------------------------------

    def to_text(self) -> str:
        lines = [f"kaistack validate --stack {self.stack}: {'PASS' if self.ok else 'FAIL'}"]
        lines.append(f"  resources: {self.resources} ({len(self.resource_counts)} types)")
        for type_, count in sorted(self.resource_counts.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"    {count:>5}  {type_}")
        lines.append(f"  policies: {len(self.policies)} from {self.pack or 'the policy pack'}, all MANDATORY")
        if not self.analyzed:
            lines.append("  violations: not analyzed (see errors)")
        elif self.findings:
            lines.append(f"  violations: {len(self.findings)}")
            lines += [f"    {f.policy} on {_subject(f)}: {_message(f)}" for f in self.findings]
        else:
            lines.append("  violations: none")
        if self.capacity is not None:
            lines.append(f"  capacity: {'ok' if self.capacity.ok else 'FAIL'}: {self.capacity.summary}")
            lines += [f"    {d}" for d in self.capacity.details]
        lines += [f"  error: {e}" for e in self.errors]
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """A section for a sticky PR comment; starts with a per-stack marker so updates replace it."""
        icon = "✅" if self.ok else "❌"
        out = [
            f"<!-- kaistack-validate:{self.stack} -->",
            f"### {icon} `{self.stack}`: {'passes' if self.ok else 'fails'} validation",
            "",
            "| Check | Result |",
            "|---|---|",
            f"| Resources | {self.resources} rendered ({len(self.resource_counts)} types) |",
            f"| Policies | {_policy_cell(self)} |",
            f"| Capacity | {_capacity_cell(self.capacity)} |",
        ]
        if self.errors:
            out += ["", "**Could not validate:**", *(f"- {cell(e)}" for e in self.errors)]
        if self.findings:
            out += ["", "| Policy | Resource | Message |", "|---|---|---|"]
            out += [f"| {code(f.policy)} | {code(_subject(f))} | {cell(_message(f))} |" for f in self.findings]
        if self.capacity is not None and self.capacity.details:
            out += ["", "<details><summary>Capacity details</summary>", ""]
            out += [f"- {cell(d)}" for d in self.capacity.details]
            out += ["", "</details>"]
        out += ["", "<details><summary>Resources by type</summary>", "", "| Type | Count |", "|---|---:|"]
        out += [f"| {code(t)} | {c} |" for t, c in sorted(self.resource_counts.items(), key=lambda kv: (-kv[1], kv[0]))]
        out += ["", "</details>", ""]
        return "\n".join(out)


# --- the pipeline ------------------------------------------------------------------------------------


def validate_stack(
    project_dir: Path,
    stack: str,
    *,
    progress: Progress | None = None,
    pack_dir: Path | None = None,
    max_seconds: float | None = None,
) -> ValidationReport:
    """Render, analyze and check one stack. Raises ConfigError when the stack file is invalid.

    `max_seconds` bounds the capacity simulation (the program's gate, whose report is the verdict): it stops
    partial, which does not fit. It bounds the policy pack's own `kai-capacity` simulation too (its maxSeconds)."""
    progress = progress or Progress.quiet()
    project_dir = Path(project_dir).resolve()
    started = time.perf_counter()
    loaded = load_stack(project_dir, stack)  # ConfigError: the caller's exit 2
    report = ValidationReport(stack=stack)
    pack_dir = pack_dir or default_pack_dir(project_dir)
    env = {
        # Compact, as the engine's json.Marshal writes it.
        "PULUMI_CONFIG": json.dumps(engine_config(loaded.raw), separators=(",", ":")),
        "PULUMI_PROJECT": project_name(project_dir),
        "PULUMI_STACK": stack,
    }
    with ThreadPoolExecutor(max_workers=1) as pool:
        # The pack's interpreter start and imports overlap with rendering.
        # --max-seconds bounds the pack's own simulation too, through kai-capacity's maxSeconds knob.
        pack_limit = _pack_limit(max_seconds)
        knobs = {"kai-capacity": {"maxSeconds": pack_limit}} if pack_limit is not None else None
        pack_future: Future[PolicyPackClient] = pool.submit(PolicyPackClient.start, pack_dir, env=env, config=knobs)
        try:
            with capacity_gate.limit(max_seconds):
                resources = _render(project_dir, loaded, report, progress)
            with progress.step("starting policy pack"):
                pack = _pack(pack_future, report)
            if pack is not None:
                with pack, progress.step(f"analyzing {len(resources)} resources"):
                    report.pack = f"{pack.info.name}@{_pack_version(pack_dir, pack.info.version)}"
                    report.policies = dict(pack.info.policies)
                    report.findings = _analyze(pack, resources, report, max_seconds)
                    report.analyzed = bool(resources) and not report.errors
        finally:
            _close_if_started(pack_future)
    with progress.step("checking capacity"):
        report.capacity = check_capacity(loaded.config, stack, max_seconds)
    report.timings.update(progress.timings)
    report.timings["total"] = time.perf_counter() - started
    return report


def _render(
    project_dir: Path, loaded: ResolvedStack, report: ValidationReport, progress: Progress
) -> list[AnalyzedResource]:
    # pulumi and the components are heavy: imported when a stack is rendered, not with the CLI.
    from kaistack.ops.render import RenderError, render_loaded

    with progress.step(f"rendering stack {loaded.name}"):
        try:
            rendered = render_loaded(project_dir, loaded)
        except RenderError as err:
            report.errors.append(f"the program stopped while rendering: {err}")
            return []
    report.resource_counts = dict(Counter(r.type for r in rendered.resources))
    return [
        AnalyzedResource(
            type=r.type,
            name=r.name,
            urn=r.urn,
            properties=r.masked_inputs,
            parent=r.parent,
            provider=r.provider or "",
            dependencies=tuple(r.dependencies),
        )
        for r in rendered.resources
    ]


def _pack(future: Future[PolicyPackClient], report: ValidationReport) -> PolicyPackClient | None:
    try:
        return future.result()
    except PolicyPackError as err:
        report.errors.append(str(err))
        return None


def _pack_limit(max_seconds: float | None) -> float | None:
    """validate's limit as the pack gets it (maxSeconds, and the RPC's deadline): past a day none, as gRPC's
    deadline overflows around 9e9 s and fails the call at once."""
    return max_seconds if max_seconds is not None and max_seconds <= _DAY else None


def _analyze(
    pack: PolicyPackClient, resources: list[AnalyzedResource], report: ValidationReport, max_seconds: float | None
) -> list[Finding]:
    findings: list[Finding] = []
    # kai-capacity stops near its maxSeconds knob; the rest of the stack policies take seconds.
    pack_limit = _pack_limit(max_seconds)
    stack_timeout = pack_limit + STACK_POLICIES_MARGIN_S if pack_limit is not None else None
    for step in (pack.analyze, partial(pack.analyze_stack, timeout=stack_timeout)):
        try:
            findings += step(resources)
        except PolicyPackError as err:
            report.errors.append(str(err))
    return findings


def _pack_version(pack_dir: Path, reported: str) -> str:
    """PulumiPolicy.yaml's version: the CLI uses it; the Python SDK always reports 0.0.1."""
    try:
        meta = load_file(pack_dir / "PulumiPolicy.yaml", max_bytes=limits.MAX_SMALL_FILE_BYTES) or {}
    except YamlInputError:
        return reported
    return str(meta.get("version") or reported) if isinstance(meta, dict) else reported


def _close_if_started(future: Future[PolicyPackClient]) -> None:
    """Stop the pack process if it started but was never used (e.g. rendering raised)."""
    try:
        client = future.result()
    except BaseException:  # the start error was already reported (or rendering raised)
        return
    client.close()  # idempotent: closing a used client again is harmless


def default_pack_dir(project_dir: Path) -> Path:
    """`<project>/policies`, else the installed `policies` package's directory."""
    local = project_dir / "policies"
    if (local / "__main__.py").is_file():
        return local
    import policies

    return Path(policies.__file__).resolve().parent


def engine_config(raw: Mapping[str, Any]) -> dict[str, str]:
    """The stack's `kaistack:` config as the engine passes it in PULUMI_CONFIG: structured values as JSON text."""
    return {
        f"{NAMESPACE}:{k}": v if isinstance(v, str) else json.dumps(v, separators=(",", ":")) for k, v in raw.items()
    }


# --- capacity ------------------------------------------------------------------------------------------


def check_capacity(config: StackConfig, stack: str = "", max_seconds: float | None = None) -> CapacityVerdict:
    """The placement checker's verdict on the declared workloads (kaistack.capacity.check): the report of the
    program's gate when it ran on this declaration in this process (validate renders first), else a simulation."""
    setting = config.kai.capacity_check
    if setting == "off":
        return CapacityVerdict(True, "not checked (kai.capacityCheck: off)")
    report = capacity_gate.last_report(config, stack, max_seconds)
    if report is None:
        report = capacity_gate.bounded_check(config, stack, max_seconds)[0]
    # A stopped check's summary names the limit; its workloads' lines would only say that each was not reached.
    # Notes too: a `fits` can hide what the pods will not live with (kaistack.capacity.oversized).
    details = [] if report.partial else [*report.reasons, *(f"note: {note}" for note in report.notes)]
    if not report.ok and setting == "warn":
        # What the program does under `pulumi up`: a warning, and the stack deploys.
        summary = f"{report.summary()} (kai.capacityCheck: warn: deploys anyway)"
        return CapacityVerdict(True, summary, details, dict(report.totals), warned=True)
    return CapacityVerdict(report.ok, report.summary(), details, dict(report.totals))


# --- formatting helpers ----------------------------------------------------------------------------------


def _subject(finding: Finding) -> str:
    if finding.resource_name:
        return f"{finding.resource_type}::{finding.resource_name}"
    return finding.urn or "stack"


def _message(finding: Finding) -> str:
    """The diagnostic's reported text (the engine prefixes the policy description and a newline)."""
    return finding.message.split("\n", 1)[-1].strip() or finding.message


def _policy_cell(report: ValidationReport) -> str:
    if not report.analyzed:
        return "❌ not run"
    count = len(report.findings)
    icon = "✅" if not count else "❌"
    return f"{icon} {count} violation{'s' * (count != 1)} ({len(report.policies)} policies, {code(report.pack)})"


def _capacity_cell(capacity: CapacityVerdict | None) -> str:
    if capacity is None:
        return "❌ not checked"
    return f"{'❌' if not capacity.ok else '⚠️' if capacity.warned else '✅'} {cell(capacity.summary)}"
