"""A self-contained HTML page of the capacity verdict: every node's GPUs with the fractions packed in.

No scripts, fonts or external assets: the page opens from a CI artifact or a mail attachment as is.
"""

from __future__ import annotations

import hashlib
from html import escape

from kaistack.capacity.check import MOVING, CapacityReport, GpuVerdict, NodeVerdict, WorkloadVerdict, domain_path
from kaistack.capacity.report import constraint_text, topology_line, used_percent

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #1f2328; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; }
.verdict { padding: .6rem 1rem; border-radius: 6px; font-weight: 600; display: inline-block; }
.ok { background: #dafbe1; } .fail { background: #ffebe9; }
.nodes { display: flex; flex-wrap: wrap; gap: 1rem; }
.node { border: 1px solid #d0d7de; border-radius: 8px; padding: .8rem; min-width: 14rem; }
.node h3 { margin: 0 0 .5rem 0; font-size: .95rem; } .node .pool { color: #656d76; font-weight: normal; }
.gpus { display: flex; gap: .8rem; align-items: flex-end; }
.gpu { width: 7.5rem; height: 10rem; border: 2px solid #57606a; border-radius: 4px; display: flex;
       flex-direction: column-reverse; background: repeating-linear-gradient(45deg, #f6f8fa, #f6f8fa 6px, #eaeef2 6px,
       #eaeef2 12px); overflow: hidden; }
.slice { color: #fff; font-size: .7rem; text-align: center; overflow: hidden; border-top: 1px solid #fff;
         display: flex; align-items: center; justify-content: center; line-height: 1.1; }
.gpu-label { width: 7.5rem; text-align: center; font-size: .72rem; color: #656d76; }
table { border-collapse: collapse; margin-top: .5rem; } td, th { border: 1px solid #d0d7de; padding: .3rem .6rem; }
th { background: #f6f8fa; text-align: left; } .pending { color: #cf222e; font-weight: 600; }
.cpu-only { color: #656d76; font-size: .8rem; }
"""


def _colour(name: str) -> str:
    """A stable, readable colour per workload, so one workload's pods look alike on every GPU."""
    hue = int(hashlib.sha256(name.encode()).hexdigest()[:4], 16) % 360
    return f"hsl({hue}, 55%, 42%)"


def _workload_of(pod: str, workloads: tuple[WorkloadVerdict, ...]) -> str:
    for w in workloads:
        if any(p.name == pod for p in w.pods):
            return w.name
    return pod


def _gpu(gpu: GpuVerdict, workloads: tuple[WorkloadVerdict, ...]) -> str:
    slices = []
    for pod, fraction in zip(gpu.pods, gpu.fractions, strict=True):
        height = max(0.0, min(fraction, 1.0)) * 100
        colour = _colour(_workload_of(pod, workloads))
        slices.append(
            f'<div class="slice" style="height:{height:.1f}%;background:{colour}" title="{escape(pod)}: '
            f'{fraction:g} GPU">{escape(pod)}<br>{fraction:g}</div>'
        )
    kind = "shared" if gpu.shared else ("whole" if gpu.pods else "idle")
    return (
        f'<div><div class="gpu" title="{escape(gpu.id)}: {used_percent(gpu.used)} used">{"".join(slices)}</div>'
        f'<div class="gpu-label">{escape(gpu.id)} · {kind} · {used_percent(gpu.used)}</div></div>'
    )


def _node(node: NodeVerdict, workloads: tuple[WorkloadVerdict, ...]) -> str:
    memory = f", {node.gpu_memory_mib} MiB/GPU" if node.gpu_memory_mib else ""
    if node.domain:
        memory += f", domain {escape(domain_path(node.domain))}"
    body = (
        f'<div class="gpus">{"".join(_gpu(g, workloads) for g in node.gpus)}</div>'
        if node.gpus
        else f'<div class="cpu-only">no GPUs; pods: {escape(", ".join(node.pods) or "none")}</div>'
    )
    return (
        f'<div class="node"><h3>{escape(node.name)} <span class="pool">pool {escape(node.pool)}{memory}</span></h3>'
        f"{body}</div>"
    )


def _amount(value: float) -> str:
    return "unlimited" if value == -1 else f"{value:g}"


def to_html(report: CapacityReport) -> str:
    verdict = "ok" if report.ok else "fail"
    title = f"kaistack capacity{f' — {report.stack}' if report.stack else ''}"
    rows = []
    for w in report.workloads:
        status = f'<span class="pending">{w.status}</span>' if w.pending else w.status
        where = "; ".join(w.reasons) if w.pending else ", ".join(f"{p.name} → {p.node}" for p in w.pods)
        if w.moving:
            where = f"{where}; {MOVING}"
        if report.topology is not None and (w.topology or w.domains):
            where = f"{where} (topology: {topology_line(w)})"
        rows.append(
            f"<tr><td>{escape(w.name)}</td><td>{w.kind}</td><td>{escape(w.where)}</td><td>{escape(w.queue)}</td>"
            f"<td>{w.priority_class}</td><td>{status}</td><td>{escape(where)}</td></tr>"
        )
    queue_rows = [
        f"<tr><td>{escape(q.name)}</td><td>{escape(q.parent or '—')}</td><td>{_amount(q.quota['gpu'])}</td>"
        f"<td>{_amount(q.limit['gpu'])}</td><td>{q.fair_share['gpu']:g}</td><td>{q.allocated['gpu']:g}</td></tr>"
        for q in report.queues
    ]
    topology = ""
    if report.topology is not None:
        t = report.topology
        domain_rows = [
            f"<tr><td>{escape(d.path)}</td><td>{escape(', '.join(d.nodes))}</td><td>{d.gpus_used:g} of {d.gpus}</td>"
            f"<td>{escape(', '.join(d.workloads) or '—')}</td></tr>"
            for d in t.domains
        ]
        asked = [
            f"<tr><td>{escape(w.name)}</td><td>{escape(constraint_text(w))}</td>"
            f"<td>{escape(', '.join(w.domains) or ('Pending' if w.pending else '—'))}</td></tr>"
            for w in report.workloads
            if w.topology
        ]
        topology = (
            f"<h2>Topology {escape(t.name)} ({escape(' > '.join(t.levels))})</h2>\n"
            "<table><tr><th>Domain</th><th>Nodes</th><th>GPUs used</th><th>Workloads</th></tr>"
            f"{''.join(domain_rows)}</table>\n"
            + (
                "<table><tr><th>Workload</th><th>Constraint</th><th>Placed in</th></tr>" + "".join(asked) + "</table>\n"
                if asked
                else ""
            )
        )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title><style>{_STYLE}</style></head>
<body>
<h1>{escape(title)}</h1>
<div class="verdict {verdict}">{escape(report.summary())}</div>
{"".join(f"<p class='note'>note: {escape(note)}</p>" for note in report.notes)}
<h2>GPUs</h2>
<div class="nodes">{"".join(_node(n, report.workloads) for n in report.nodes)}</div>
<h2>Workloads</h2>
<table><tr><th>Workload</th><th>Kind</th><th>Where</th><th>Queue</th><th>Class</th><th>Status</th>
<th>Placement / why Pending</th></tr>{"".join(rows)}</table>
{topology}<h2>Queues (GPUs)</h2>
<table><tr><th>Queue</th><th>Parent</th><th>Quota</th><th>Limit</th><th>Fair share</th><th>Allocated</th></tr>
{"".join(queue_rows)}</table>
</body></html>
"""
