"""The placement checker's verdict as text, JSON and Markdown (a PR comment). HTML is in capacity_html."""

from __future__ import annotations

import html
import math
from typing import Any

from kaistack.capacity.check import (
    MOVING,
    CapacityReport,
    NodeVerdict,
    QueueVerdict,
    TopologyVerdict,
    WorkloadVerdict,
    domain_path,
)
from kaistack.markdown import cell, code


def to_json(report: CapacityReport) -> dict[str, Any]:
    return {
        "stack": report.stack,
        "fits": report.ok,
        "partial": report.partial,
        "summary": report.summary(),
        "totals": report.totals,
        "workloads": [_workload_json(w) for w in report.workloads],
        "queues": [_queue_json(q) for q in report.queues],
        "nodes": [_node_json(n) for n in report.nodes],
        "topology": _topology_json(report.topology) if report.topology else None,
        "kaiVersion": report.kai_version,
        "simulatedRules": report.rules,
        "notes": list(report.notes),
        # Only when KAI never settled, so a settled stack's report is unchanged.
        **({"unsettled": {"cycles": report.cycles, "loop": report.loop}} if report.unsettled else {}),
    }


def _topology_json(t: TopologyVerdict) -> dict[str, Any]:
    return {
        "name": t.name,
        "levels": list(t.levels),
        "domains": [
            {
                "domain": dict(zip(t.levels, d.domain, strict=True)),
                "path": d.path,
                "nodes": list(d.nodes),
                "gpus": d.gpus,
                "gpusUsed": d.gpus_used,
                "workloads": list(d.workloads),
            }
            for d in t.domains
        ],
    }


def _workload_json(w: WorkloadVerdict) -> dict[str, Any]:
    return {
        "name": w.name,
        "kind": w.kind,
        "where": w.where,
        "queue": w.queue,
        "priorityClass": w.priority_class,
        "status": w.status,
        "reason": "; ".join(w.reasons) if w.reasons else None,
        "topology": w.topology,
        **({"moving": True} if w.moving else {}),
        "domains": list(w.domains),
        "pods": [
            {
                "name": p.name,
                "status": p.status,
                "node": p.node,
                "gpuGroups": list(p.gpu_groups),
                "gpus": p.gpus,
                "domain": domain_path(p.domain) if p.node and p.domain else None,
                "subGroup": p.sub_group,
            }
            for p in w.pods
        ],
    }


def _queue_json(q: QueueVerdict) -> dict[str, Any]:
    return {
        "name": q.name,
        "parent": q.parent,
        "quota": q.quota,
        "limit": q.limit,
        "fairShare": q.fair_share,
        "allocated": q.allocated,
    }


def _node_json(n: NodeVerdict) -> dict[str, Any]:
    return {
        "name": n.name,
        "pool": n.pool,
        "domain": domain_path(n.domain) if n.domain else None,
        "gpuMemoryMiB": n.gpu_memory_mib,
        "pods": list(n.pods),
        "gpus": [
            {"id": g.id, "used": g.used, "shared": g.shared, "pods": list(g.pods), "fractions": list(g.fractions)}
            for g in n.gpus
        ],
    }


# --- text -------------------------------------------------------------------------------------------


def _placement(w: WorkloadVerdict) -> str:
    if w.status == "Empty":
        return "no pods (0 replicas)"
    spots = []
    for pod in w.pods:
        if pod.node is None:
            spots.append(f"{pod.name}: {pod.status}")
            continue
        gpu = f"/{','.join(pod.gpu_groups)}" if pod.gpu_groups else ""
        share = f" ({pod.gpus:g} GPU)" if pod.gpus else ""
        spots.append(f"{pod.name} -> {pod.node}{gpu}{share}")
    return ", ".join(spots)


def _amount(value: float) -> str:
    return "unlimited" if value == -1 else f"{value:g}"


def constraint_text(w: WorkloadVerdict) -> str:
    """`required kaistack.io/rack, preferred kubernetes.io/hostname`, or "" without a constraint."""
    return ", ".join(f"{k} {v}" for k, v in (w.topology or {}).items())


def topology_line(w: WorkloadVerdict) -> str:
    """Where a workload's pods landed among the topology's domains, and what it asked for."""
    parts = [constraint_text(w)]
    if w.domains:
        parts.append(f"in {', '.join(w.domains)}")
    if len(w.domains) > 1 and any(p.sub_group for p in w.pods):
        # Spread over domains: say which subgroup (segment) went where.
        by_group: dict[str, dict[str, None]] = {}
        for pod in w.pods:
            if pod.sub_group and pod.node and pod.domain:
                by_group.setdefault(pod.sub_group, {}).setdefault(domain_path(pod.domain), None)
        parts.append(", ".join(f"{g} in {'+'.join(d)}" for g, d in by_group.items()))
    return "; ".join(p for p in parts if p)


def domain_lines(t: TopologyVerdict) -> list[str]:
    head = f"topology {t.name} ({' > '.join(t.levels)}):"
    lines = [head]
    for d in t.domains:
        count = f"{len(d.nodes)} node{'s' * (len(d.nodes) != 1)}"
        lines.append(f"  {d.path}: {count}, {d.gpus_used:g} of {d.gpus} GPUs used: {', '.join(d.workloads) or '-'}")
    return lines


def to_text(report: CapacityReport) -> str:
    lines = [f"capacity check{f' for stack {report.stack}' if report.stack else ''}: {report.summary()}"]
    if report.rules and report.rules != report.kai_version:
        lines.append(
            f"note: KAI {report.kai_version} is simulated with KAI {report.rules}'s rules (the nearest the checker has)"
        )
    lines.extend(f"note: {note}" for note in report.notes)
    lines.append("")
    lines.append("workloads:")
    for w in report.workloads:
        mark = "ok  " if not w.pending and not w.moving else "FAIL"
        lines.append(f"  {mark} {w.name} [{w.kind}, {w.where}, queue {w.queue}, {w.priority_class}] {w.status}")
        lines.append(f"       {_placement(w)}")
        if report.topology is not None and (w.topology or w.domains):
            lines.append(f"       topology: {topology_line(w)}")
        lines.extend(f"       why: {reason}" for reason in w.why)
    lines += ["", "queues (gpu: quota / limit / fair share / allocated):"]
    for q in report.queues:
        parent = f" (in {q.parent})" if q.parent else ""
        lines.append(
            f"  {q.name}{parent}: {_amount(q.quota['gpu'])} / {_amount(q.limit['gpu'])} / "
            f"{q.fair_share['gpu']:g} / {q.allocated['gpu']:g}"
        )
    lines += ["", "GPUs:"]
    for n in report.nodes:
        if not n.gpus:
            lines.append(f"  {n.name} [{n.pool}] no GPUs; pods: {', '.join(n.pods) or '-'}")
            continue
        for g in n.gpus:
            content = ", ".join(f"{p} {f:g}" for p, f in zip(g.pods, g.fractions, strict=True)) or "idle"
            lines.append(f"  {n.name}/{g.id} [{n.pool}] {used_percent(g.used)} used: {content}")
    if report.topology is not None:
        lines += ["", *domain_lines(report.topology)]
    return "\n".join(lines)


# --- markdown ---------------------------------------------------------------------------------------


def to_markdown(report: CapacityReport) -> str:
    icon = "✅" if report.ok else "❌"
    title = f"### {icon} Capacity{f' — stack `{report.stack}`' if report.stack else ''}: {report.summary()}"
    lines = [title, ""]
    if report.notes:
        lines += [*(f"> note: {cell(note)}" for note in report.notes), ""]
    lines += [
        "| Workload | Where | Queue | Class | Status | Placement / why Pending |",
        "|---|---|---|---|---|---|",
    ]
    for w in report.workloads:
        status = f"**{w.status}**" if w.pending else w.status
        detail = "; ".join(w.reasons) if w.pending else _placement(w)
        if w.moving:
            detail = f"{detail}; {MOVING}"
        if report.topology is not None and (w.topology or w.domains):
            detail = f"{detail} (topology: {topology_line(w)})"
        lines.append(
            f"| {code(w.name)} ({w.kind}) | {cell(w.where)} | {code(w.queue)} | {cell(w.priority_class)} | {status} | "
            f"{cell(detail)} |"
        )
    lines += [
        "",
        "<details><summary>Queues (GPUs)</summary>",
        "",
        "| Queue | Parent | Quota | Limit | Fair share | Allocated |",
        "|---|---|---|---|---|---|",
    ]
    for q in report.queues:
        lines.append(
            f"| {code(q.name)} | {cell(q.parent or '—')} | {_amount(q.quota['gpu'])} | {_amount(q.limit['gpu'])} | "
            f"{q.fair_share['gpu']:g} | {q.allocated['gpu']:g} |"
        )
    lines += [
        "",
        "</details>",
        "",
        "<details><summary>GPUs</summary>",
        "",
        "| Node | GPU | Used | Pods |",
        "|---|---|---|---|",
    ]
    for n in report.nodes:
        for g in n.gpus:
            content = ", ".join(f"{code(p)} {f:g}" for p, f in zip(g.pods, g.fractions, strict=True)) or "idle"
            shared = " (shared)" if g.shared else ""
            lines.append(
                f"| {cell(n.name)} ({cell(n.pool)}) | {cell(g.id)}{shared} | {used_percent(g.used)} | {content} |"
            )
    lines += ["", "</details>"]
    if report.topology is not None:
        t = report.topology
        lines += [
            "",
            # An HTML block: entities, not Markdown's backslashes, keep the names text there.
            f"<details><summary>Topology {html.escape(t.name)} ({html.escape(' > '.join(t.levels))})</summary>",
            "",
            "| Domain | Nodes | GPUs used | Workloads |",
            "|---|---|---|---|",
        ]
        for d in t.domains:
            lines.append(
                f"| {cell(d.path)} | {cell(', '.join(d.nodes))} | {d.gpus_used:g} of {d.gpus} | "
                f"{', '.join(code(w) for w in d.workloads) or '—'} |"
            )
        lines += ["", "</details>"]
    return "\n".join(lines)


def used_percent(used: float) -> str:
    """A GPU's used share in whole percent, rounded up: 0.5001 of a GPU leaves less than half free, which "50%"
    would hide beside a pod of 0.5 that does not fit."""
    return f"{math.ceil(used * 100 - 1e-9)}%"
