"""Stack rules: pure functions `(resources, Settings, StackFacts) -> [Finding]` over every resource.

They need more than one resource at a time: the KAI release's values next to the workloads, the
whole queue tree, the tenants' queues next to their workloads, and the capacity of the node pools.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kaistack.declaration import kai_api
from kaistack.declaration.go_yaml import go_yaml_v2
from kaistack.guardrails.capacity_rule import check_capacity
from kaistack.guardrails.facts import StackFacts, facts_from_platform, platform_props, through_vcluster, workload_tenant
from kaistack.guardrails.helm_rules import chart_name, helm_values
from kaistack.guardrails.podspec import (
    FRACTION,
    MEMORY,
    Res,
    Workload,
    dig,
    mapping,
    queue_label,
    shares_gpu,
)
from kaistack.guardrails.rules import EPSILON, may_be_kais, subject
from kaistack.guardrails.settings import Settings
from kaistack.guardrails.stack_model import Finding, QueueDecl, queue_decls

KAI_CHART = kai_api.RELEASE_NAME
QUEUE_RESOURCES = ("gpu", "cpu", "memory")
QUEUE_FIELDS = ("quota", "limit", "overQuotaWeight")


StackRule = Callable[[Sequence[Res], Settings, StackFacts], list[Finding]]


def stack_facts(resources: Sequence[Res], base: StackFacts) -> StackFacts:
    props = platform_props(resources)
    return facts_from_platform(props, base) if props is not None else base


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


# --- kai-gpu-sharing-enabled ---------------------------------------------------------------------


def kai_releases(resources: Sequence[Res]) -> list[Res]:
    return [r for r in resources if chart_name(r) == KAI_CHART]


def chart_gpu_sharing(value: object) -> bool:
    """What the KAI chart makes of values global.gpuSharing: `gpuSharing: {{ .Values.global.gpuSharing | default
    false }}` (KAI-Scheduler@v0.17.0 deployments/kai-scheduler/templates/_helpers.tpl:246, the same line in v0.15
    and v0.16): Go's empty values give false, anything else is printed into the Config's YAML and read back as
    go-yaml v2 reads it, so "True", "yes" and "on" are true there too (and "1" a number the CRD refuses)."""
    if isinstance(value, bool):
        return value
    if not isinstance(value, str):
        return False
    printed = re.split(r"\s#", value, maxsplit=1)[0].strip()  # a YAML comment ends the printed scalar
    return bool(printed) and go_yaml_v2(printed) is True


def kai_gpu_sharing_enabled(resources: Sequence[Res], s: Settings, facts: StackFacts) -> list[Finding]:
    sharing: list[tuple[Workload, str]] = []
    for res in resources:
        wl = subject(res, s, facts)
        for t in wl.templates if wl else ():
            if shares_gpu(t):
                key = FRACTION if FRACTION in t.annotations else MEMORY
                sharing.append((wl, f"{key}: {t.annotations.get(key)}"))  # type: ignore[arg-type]
                break
    if not sharing:
        return []
    releases = kai_releases(resources)
    if releases:
        if any(chart_gpu_sharing(dig(helm_values(r), "global", "gpuSharing")) for r in releases):
            return []
        why = f"the KAI release {releases[0].name} does not set values global.gpuSharing: true"
    elif facts.gpu_sharing is False:
        why = f"kaistack:kai.sharing is off ({facts.source})"
    else:
        return []  # KAI is not part of this stack and nothing says how it is configured
    return [
        Finding(
            f"{wl.kind}/{wl.name} asks for a GPU share ({ask}) but {why}: KAI's admission webhook rejects "
            "shared-GPU pods; turn GPU sharing on (kaistack:kai.sharing: fractions)",
            wl.res,
        )
        for wl, ask in sharing
    ]


# --- kai-queue-tree ------------------------------------------------------------------------------


def chart_default_queues(resources: Sequence[Res]) -> set[str]:
    """The KAI chart creates default-parent-queue -> default-queue itself unless told not to."""
    names: set[str] = set()
    for release in kai_releases(resources):
        dq = mapping(helm_values(release).get("defaultQueue"))
        # `{{- if and .Values.defaultQueue.createDefaultQueue ...}}` (templates/default-queue.yaml:4): Go templates'
        # truth, which Python's matches for YAML's values (false, 0, null and empty are false; the string "false"
        # is not).
        if dq.get("createDefaultQueue", True):
            names |= {str(dq.get("parentName") or "default-parent-queue"), str(dq.get("childName") or "default-queue")}
    return names


def _cycles(parents: Mapping[str, str | None]) -> list[list[str]]:
    """Every parentQueue cycle, each once; linear (every queue is walked once, whatever the input)."""
    cycles: list[list[str]] = []
    done: set[str] = set()
    for start in parents:
        if start in done:
            continue
        path: list[str] = []
        on_path: dict[str, int] = {}
        node: str | None = start
        while node is not None and node in parents and node not in done and node not in on_path:
            on_path[node] = len(path)
            path.append(node)
            node = parents[node]
        if node is not None and node in on_path:
            cycle = path[on_path[node] :]
            cycles.append([*cycle, node])
        done.update(path)
    return cycles


def _block_findings(q: QueueDecl) -> list[Finding]:
    out = []
    for rname in QUEUE_RESOURCES:
        block = q.resources.get(rname)
        if not isinstance(block, Mapping):
            out.append(
                Finding(
                    f"queue {q.name}: spec.resources.{rname} is missing; write quota, limit and overQuotaWeight "
                    "(KAI reads an omitted limit as 0: no resources allowed; -1 means unlimited)",
                    q.res,
                )
            )
            continue
        values = {f: _number(block.get(f)) for f in QUEUE_FIELDS}
        for field, value in values.items():
            if value is None:
                state = "missing" if field not in block else "not a number"
                out.append(
                    Finding(
                        f"queue {q.name}: spec.resources.{rname}.{field} is {state}"
                        " (KAI reads an omitted field as 0, not unlimited; write -1 for unlimited)",
                        q.res,
                    )
                )
            elif value < 0 and (field == "overQuotaWeight" or value != -1):
                allowed = ">= 0" if field == "overQuotaWeight" else "-1 (unlimited) or >= 0"
                out.append(
                    Finding(f"queue {q.name}: spec.resources.{rname}.{field} is {value:g}; use {allowed}", q.res)
                )
        quota, limit = values["quota"], values["limit"]
        if quota is not None and limit is not None and quota >= 0 and limit >= 0 and limit < quota:
            out.append(
                Finding(
                    f"queue {q.name}: {rname} limit ({limit:g}) is below its quota ({quota:g}); use limit >= quota",
                    q.res,
                )
            )
    return out


def _quota(q: QueueDecl, rname: str) -> float | None:
    return _number(mapping(q.resources.get(rname)).get("quota"))


def kai_queue_tree(resources: Sequence[Res], s: Settings, facts: StackFacts) -> list[Finding]:
    queues = queue_decls(resources)
    if not queues:
        return []
    out: list[Finding] = []
    by_name: dict[str, QueueDecl] = {}
    for q in queues:
        if q.name in by_name:
            out.append(Finding(f"queue {q.name} is declared twice", q.res))
        by_name.setdefault(q.name, q)
    known = set(by_name) | s.external_queues | chart_default_queues(resources)
    for q in queues:
        if q.parent is not None and q.parent not in known:
            out.append(
                Finding(
                    f"queue {q.name}: parentQueue {q.parent} does not exist; KAI drops a queue with a missing parent, "
                    f"and its children (queues: {', '.join(sorted(known))})",
                    q.res,
                )
            )
    for cycle in _cycles({q.name: q.parent for q in by_name.values()}):
        out.append(Finding(f"queues form a parentQueue cycle: {' -> '.join(cycle)}", by_name[cycle[0]].res))
    for q in queues:
        out += _block_findings(q)
    for parent in by_name.values():
        children = [c for c in by_name.values() if c.parent == parent.name and c is not parent]
        for rname in QUEUE_RESOURCES if children else ():
            cap = _quota(parent, rname)
            if cap is None or cap == -1:
                continue
            quotas = {c.name: _quota(c, rname) for c in children}
            unlimited = [n for n, v in quotas.items() if v == -1]
            total = sum(v for v in quotas.values() if v is not None and v > 0)
            if unlimited:
                out.append(
                    Finding(
                        f"queue {parent.name}: child queue(s) {', '.join(unlimited)} have unlimited {rname} quota (-1) "
                        f"under the parent's {rname} quota {cap:g}; give them quotas that sum to at most {cap:g}",
                        parent.res,
                    )
                )
            elif total > cap + EPSILON:
                parts = ", ".join(f"{n} {v:g}" for n, v in quotas.items() if v)
                out.append(
                    Finding(
                        f"queue {parent.name}: its children's {rname} quotas ({parts}; sum {total:g}) exceed its own "
                        f"{rname} quota {cap:g}",
                        parent.res,
                    )
                )
    return out


# --- tenant-queue-binding ------------------------------------------------------------------------


def tenant_queue_binding(resources: Sequence[Res], s: Settings, facts: StackFacts) -> list[Finding]:
    tenants = s.tenants if s.tenants is not None else facts.tenants
    if not tenants:
        return []
    key = s.queue_label_key or facts.queue_label_key
    owner = {q: t.name for t in tenants for q in t.queues}
    out = []
    for res in resources:
        wl = subject(res, s, facts)
        if wl is None:
            continue
        name, how = workload_tenant(wl, tenants)
        if name is None:
            continue
        tenant = next((t for t in tenants if t.name == name), None)
        if tenant is None:
            declared = ", ".join(t.name for t in tenants)
            out.append(Finding(f"{wl.describe()}: tenant {name} ({how}) is not a declared tenant ({declared})", res))
            continue
        # A tenant with no queues (a hand-written policy config) may use none, never all of them.
        allowed = ", ".join(tenant.queues) or "none (no queues are declared for it)"
        for t in wl.templates:
            if not may_be_kais(wl, t, s):
                continue
            # Inside a vCluster only the pod's labels reach the host (bare pods, setOwner: false); written
            # straight into the host namespace, the top owner's label comes first.
            queue, where = queue_label(wl, t, key, top_owner=not through_vcluster(wl, tenants), project=True)
            if queue is None and wl.partial:
                continue  # a patch that leaves the label alone
            if queue is None:
                out.append(
                    Finding(
                        f"{wl.describe()} of tenant {name} ({how}) names no queue, so KAI would use default-queue; "
                        f"use one of {name}'s queues: {allowed}",
                        res,
                    )
                )
            elif queue not in tenant.queues:
                other = f" (it belongs to tenant {owner[queue]})" if queue in owner else ""
                out.append(
                    Finding(
                        f"{wl.describe()} of tenant {name} ({how}) uses queue {queue} ({where}){other}; "
                        f"tenant {name} may only use its own queues: {allowed}",
                        res,
                    )
                )
    return list({f.message: f for f in out}.values())


# --- kai-capacity --------------------------------------------------------------------------------


def kai_capacity(resources: Sequence[Res], s: Settings, facts: StackFacts) -> list[Finding]:
    """The placement checker (kaistack.capacity.check) over what the stack declares; its reasons are the findings."""
    return check_capacity(resources, s, facts)


STACK_RULES: dict[str, StackRule] = {
    "kai-gpu-sharing-enabled": kai_gpu_sharing_enabled,
    "kai-queue-tree": kai_queue_tree,
    "kai-capacity": kai_capacity,
    "tenant-queue-binding": tenant_queue_binding,
}

STACK_DESCRIPTIONS: dict[str, str] = {
    "kai-gpu-sharing-enabled": "GPU fractions and GPU memory requests need KAI's global.gpuSharing: true.",
    "kai-queue-tree": "KAI queues form a tree: parents exist, no cycles, every resource block explicit, limit >= "
    "quota, children's quotas within the parent's.",
    "kai-capacity": "The declared workloads fit the declared node pools and queues (KAI placement checker).",
    "tenant-queue-binding": "Workloads of a tenant's vCluster use only that tenant's queues.",
}
