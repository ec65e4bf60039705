"""What a change to a stack does to capacity: two checker verdicts compared, workload by workload.

Both declarations go through the same checker (kaistack.capacity.check), so the difference is the
change's and not the tool's. A workload with pods that ran before and do not after (all of them, or some
of a Partial one), or that was whole before and is not after, is:
- `newly-pending` when its own declaration changed (it asks for more, moved queue, ...);
- `displaced` when it did not change and another workload gained pods: on the live cluster KAI would
  reclaim or preempt its pods to make room for the change (what takes its place is listed next to it);
- `no-longer-fits` when it did not change and nothing took its place: the cluster or the queues shrank
  (fewer nodes, a lower quota or limit), and there is no room for it any more.
A workload scaled to zero pods (`Empty`) is not Pending. `moved` is reported only for a changed
declaration with as many pods: both sides are simulated from an empty cluster, and on the live one an
unchanged workload stays where it runs.
Queues report the change in GPU allocation and fair share. A side whose simulation stopped at its time limit
(`kaistack diff --max-seconds`) makes the diff partial: its rows are the decisions made until then, so the diff
is never called harmless.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kaistack.capacity.check import PLACED, CapacityReport, WorkloadVerdict
from kaistack.markdown import cell, code


@dataclass(frozen=True)
class WorkloadChange:
    name: str
    change: str  # newly-pending | displaced | no-longer-fits | newly-placed | moved | added | removed | not-compared
    before: str | None  # status before (None: not declared)
    after: str | None
    reason: str = ""
    detail: str = ""


@dataclass(frozen=True)
class QueueChange:
    name: str
    allocated_before: float
    allocated_after: float
    fair_share_before: float
    fair_share_after: float


@dataclass(frozen=True)
class Hazard:
    """What `pulumi up` of the change would delete, replace or fail on (kaistack.ops.update_hazards)."""

    kind: str  # tenant-deleted | tenant-moved | tenant-port-moved | cluster-replaced | kai-replaced | ...
    subject: str
    message: str


@dataclass(frozen=True)
class CapacityDiff:
    stack: str
    base: str  # where the base came from: "HEAD~1", "Pulumi.dev.yaml@main", a file
    workloads: tuple[WorkloadChange, ...]
    queues: tuple[QueueChange, ...]
    fits_before: bool
    fits_after: bool
    changes: tuple[str, ...] = field(default=())
    hazards: tuple[Hazard, ...] = ()
    # The verdict's summary when KAI never settles on that side (CapacityReport.unsettled), else "".
    unsettled_before: str = ""
    unsettled_after: str = ""
    # The verdict's summary when that side's simulation stopped at its time limit (CapacityReport.partial),
    # else "": its rows compare decisions made so far, which a full run may change.
    partial_before: str = ""
    partial_after: str = ""

    @property
    def partial(self) -> bool:
        """A side stopped at its time limit: the diff cannot say the change is harmless (exit 1 too)."""
        return bool(self.partial_before or self.partial_after)

    @property
    def harmful(self) -> bool:
        """Anything newly Pending or evicted, a new loop KAI never leaves, or a hazard of applying it: exit 1."""
        return (
            bool(self.hazards)
            or bool(self.unsettled_after and not self.unsettled_before)
            or any(w.change in ("newly-pending", "displaced", "no-longer-fits") for w in self.workloads)
        )

    def of(self, change: str) -> list[WorkloadChange]:
        return [w for w in self.workloads if w.change == change]


def diff_reports(
    before: CapacityReport,
    after: CapacityReport,
    *,
    declared_before: Mapping[str, Any],
    declared_after: Mapping[str, Any],
    base: str,
) -> CapacityDiff:
    """Compare two verdicts; `declared_*` are the workloads' declarations by name (to tell changed from not)."""
    old = {w.name: w for w in before.workloads}
    new = {w.name: w for w in after.workloads}
    changes: list[WorkloadChange] = []
    takers = [
        w.name
        for w in after.workloads
        if _running(w) > (_running(old[w.name]) if w.name in old else 0)
        and not (w.not_reached or (w.name in old and old[w.name].not_reached))
    ]
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if b is None:
            changes.append(WorkloadChange(name, "removed", a.status if a else None, None))
            continue
        stopped = [side for side, w in (("before", a), ("after", b)) if w is not None and w.not_reached]
        if stopped:
            # A stopped simulation never got to it: its status is the clock's, and comparing it would blame it.
            detail = (
                "the simulations before and after the change stopped at their time limits before they got to it"
                if len(stopped) == 2
                else f"the simulation {stopped[0]} the change stopped at its time limit before it got to it"
            )
            changes.append(WorkloadChange(name, "not-compared", a.status if a else None, b.status, "", detail))
            continue
        if a is None:
            change = "added" if not b.pending else "newly-pending"
            changes.append(WorkloadChange(name, change, None, b.status, _reason(b)))
            continue
        same = declared_before.get(name) == declared_after.get(name)
        ran, runs = _running(a), _running(b)
        if b.pending and (runs < ran or not a.pending):
            # Pods that ran before and do not now (a Partial that lost pods counts too). With the same
            # declaration only the change around it can have taken them: KAI would evict them.
            counts = f"{runs} of {len(b.pods)} pods placed, was {ran}" if runs else ""
            if same and takers:
                detail = "; ".join(x for x in (counts, f"room taken by: {', '.join(takers)}") if x)
                changes.append(WorkloadChange(name, "displaced", a.status, b.status, _reason(b), detail))
            elif same:
                changes.append(WorkloadChange(name, "no-longer-fits", a.status, b.status, _reason(b), counts))
            else:
                changes.append(WorkloadChange(name, "newly-pending", a.status, b.status, _reason(b), counts))
        elif a.pending and (runs > ran or (not b.pending and b.status != "Empty")):
            detail = f"{runs} of {len(b.pods)} pods placed, was {ran}" if b.pending else ""
            changes.append(WorkloadChange(name, "newly-placed", a.status, b.status, "", detail))
        elif same or a.pending or b.pending or len(a.pods) != len(b.pods) or not a.pods:
            # Every cycle here is simulated from an empty cluster: an unchanged workload that lands elsewhere
            # would stay where it runs on the live one, and a rescaled one adds or drops pods, not moves.
            continue
        elif a.domains != b.domains:
            # Across topology domains (another rack, zone): the change that matters for a constrained job.
            before_, after_ = ", ".join(a.domains) or "-", ", ".join(b.domains) or "-"
            changes.append(WorkloadChange(name, "moved", a.status, b.status, "", f"domain {before_} -> {after_}"))
        elif _where(a) != _where(b):
            changes.append(WorkloadChange(name, "moved", a.status, b.status, "", f"{_where(a)} -> {_where(b)}"))
    queues = []
    old_q = {q.name: q for q in before.queues}
    for q in after.queues:
        p = old_q.get(q.name)
        if p is None:
            continue
        pair = (p.allocated.get("gpu", 0.0), q.allocated.get("gpu", 0.0))
        share = (p.fair_share.get("gpu", 0.0), q.fair_share.get("gpu", 0.0))
        if pair[0] != pair[1] or share[0] != share[1]:
            queues.append(QueueChange(q.name, pair[0], pair[1], share[0], share[1]))
    return CapacityDiff(
        after.stack,
        base,
        tuple(changes),
        tuple(queues),
        before.ok,
        after.ok,
        unsettled_before=before.summary() if before.unsettled else "",
        unsettled_after=after.summary() if after.unsettled else "",
        partial_before=before.summary() if before.partial else "",
        partial_after=after.summary() if after.partial else "",
    )


def _running(w: WorkloadVerdict) -> int:
    return sum(1 for p in w.pods if p.status in PLACED)


def _reason(w: WorkloadVerdict) -> str:
    return "; ".join(w.why)


def _where(w: WorkloadVerdict) -> str:
    return ", ".join(f"{p.name}@{p.node}" + (f"/{'+'.join(p.gpu_groups)}" if p.gpu_groups else "") for p in w.pods)


# --- output -----------------------------------------------------------------------------------------------

LABELS = {
    "newly-pending": "newly Pending",
    "displaced": "would be reclaimed or preempted",
    "no-longer-fits": "no longer fits",
    "newly-placed": "newly placed",
    "moved": "moved",
    "added": "added and placed",
    "removed": "removed",
    "not-compared": "not compared (a simulation stopped first)",
}


def to_json(diff: CapacityDiff) -> dict[str, Any]:
    return {
        "stack": diff.stack,
        "base": diff.base,
        "fitsBefore": diff.fits_before,
        "fitsAfter": diff.fits_after,
        "harmful": diff.harmful,
        "partial": diff.partial,
        "workloads": [
            {
                "name": w.name,
                "change": w.change,
                "before": w.before,
                "after": w.after,
                "reason": w.reason,
                "detail": w.detail,
            }
            for w in diff.workloads
        ],
        "queues": [
            {
                "name": q.name,
                "gpuAllocated": [q.allocated_before, q.allocated_after],
                "gpuFairShare": [round(q.fair_share_before, 6), round(q.fair_share_after, 6)],
            }
            for q in diff.queues
        ],
        "updateHazards": [{"kind": h.kind, "subject": h.subject, "message": h.message} for h in diff.hazards],
        **({"unsettledBefore": diff.unsettled_before} if diff.unsettled_before else {}),
        **({"unsettledAfter": diff.unsettled_after} if diff.unsettled_after else {}),
        **({"partialBefore": diff.partial_before} if diff.partial_before else {}),
        **({"partialAfter": diff.partial_after} if diff.partial_after else {}),
    }


def _summary(diff: CapacityDiff) -> str:
    if diff.partial:
        return "partial, a simulation stopped at its time limit; so far: " + _changes(diff)
    return _changes(diff)


def _changes(diff: CapacityDiff) -> str:
    if not diff.workloads and not diff.queues:
        hazards = len(diff.hazards)
        return "no capacity change" + (f"; {hazards} update hazard{'s' * (hazards != 1)}" if hazards else "")
    counts = {c: len(diff.of(c)) for c in LABELS if diff.of(c)}
    return ", ".join(f"{n} {LABELS[c]}" for c, n in counts.items()) or "queue shares change only"


def _settling(diff: CapacityDiff) -> list[str]:
    """A side stopped by its time limit, or KAI never settling on either side: what the rows cannot say."""
    lines = [
        f"{side}: {summary}; the rows compare the decisions made until then, which a run to the end may change"
        for side, summary in (("before the change", diff.partial_before), ("after the change", diff.partial_after))
        if summary
    ]
    if diff.unsettled_after:
        return [
            *lines,
            f"after the change: {diff.unsettled_after}" + (" (as before it)" if diff.unsettled_before else ""),
        ]
    if diff.unsettled_before:
        return [*lines, f"before the change: {diff.unsettled_before}; after it KAI settles"]
    return lines


def to_text(diff: CapacityDiff) -> str:
    lines = [f"capacity diff for stack {diff.stack} against {diff.base}: {_summary(diff)}"]
    lines += [f"  {line}" for line in _settling(diff)]
    for w in diff.workloads:
        line = f"  {LABELS[w.change]:<32} {w.name} ({w.before or '-'} -> {w.after or '-'})"
        extra = "; ".join(x for x in (w.reason, w.detail) if x)
        lines.append(line + (f": {extra}" if extra else ""))
    if diff.hazards:
        lines.append("pulumi up would:")
        lines += [f"  {h.kind:<26} {h.subject}: {h.message}" for h in diff.hazards]
    if diff.queues:
        lines.append("queues (GPUs allocated, fair share):")
        for q in diff.queues:
            lines.append(
                f"  {q.name}: {q.allocated_before:g} -> {q.allocated_after:g}, "
                f"{_share(q.fair_share_before)} -> {_share(q.fair_share_after)}"
            )
    return "\n".join(lines)


def to_markdown(diff: CapacityDiff) -> str:
    icon = "⚠️" if diff.harmful or diff.partial else "✅"
    lines = [f"### {icon} kaistack capacity diff: {code(diff.stack)} against {code(diff.base)}", "", _summary(diff), ""]
    settling = _settling(diff)
    if settling:
        lines += [*(f"**{cell(line)}**" for line in settling), ""]
    if diff.workloads:
        lines += ["| Workload | Change | Before | After | Why |", "|---|---|---|---|---|"]
        for w in diff.workloads:
            why = cell("; ".join(x for x in (w.reason, w.detail) if x))
            before, after = cell(w.before or "-"), cell(w.after or "-")
            lines.append(f"| {code(w.name)} | {LABELS[w.change]} | {before} | {after} | {why} |")
        lines.append("")
    if diff.hazards:
        lines += ["What `pulumi up` would do:", "", "| Hazard | Of | What happens |", "|---|---|---|"]
        lines += [f"| {h.kind} | {code(h.subject)} | {cell(h.message)} |" for h in diff.hazards]
        lines.append("")
    if diff.queues:
        lines += ["| Queue | GPUs allocated | GPU fair share |", "|---|---|---|"]
        for q in diff.queues:
            lines.append(
                f"| {code(q.name)} | {q.allocated_before:g} → {q.allocated_after:g} | "
                f"{_share(q.fair_share_before)} → {_share(q.fair_share_after)} |"
            )
    return "\n".join(lines) + "\n"


def _share(value: float) -> str:
    """A fair share as the allocated column prints GPUs: 1008, not 1.01e+03; four decimals, so a change shows."""
    return f"{round(value, 4):g}"
