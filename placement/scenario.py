"""Load a kai-conformance scenario file (FORMAT.md) into a Snapshot and run settings.

YAML or JSON (by extension). Defaults are exactly FORMAT.md's: node gpuMemoryMiB 100 (null = label
missing), cpu "20000", memory "20G", pods 110, migStrategy none; job priority 50, cpu "1", memory "1G",
gpuDevices 1, tasks 1, minMember = number of tasks. A queue resource key left out is 0, as in the CRD.
Anything malformed raises `ScenarioError` naming the file and the key path of the bad value.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from placement import namespace_selectors, scenario_groups
from placement.depth import MAX_QUEUE_DEPTH, depths
from placement.model import (
    ACTIONS,
    Job,
    Node,
    Placement,
    Queue,
    QueueResource,
    Snapshot,
    Task,
)
from placement.node_constraints import parse_taints
from placement.quantity import cpu_millis, memory_bytes
from placement.scenario_reader import (
    MAX_CONFIG_MAPS,
    MAX_GPU_MEMORY_MIB,
    MAX_GPUS_PER_NODE,
    MAX_JOBS,
    MAX_NAMESPACES,
    MAX_NODES,
    MAX_PODS_PER_NODE,
    MAX_QUEUES,
    MAX_SUBGROUPS_PER_JOB,
    MAX_TASKS,
    MAX_TASKS_PER_JOB,
    MAX_TOPOLOGIES,
    Reader,
    ScenarioError,
    read_actions,
    read_rounds,
    unique,
)
from placement.scenario_requests import REQUEST_KEYS, check_combination, checked, read_request

__all__ = ["Scenario", "ScenarioError", "duration_seconds", "parse_scenario"]


_TOP_KEYS = {"name", "source", "note", "actions", "rounds", "placement", "nodes", "queues", "jobs", "expect"}
_TOP_KEYS |= {"kaiVersion", "stalenessGracePeriod", "topologies"}  # FORMAT v2
_TOP_KEYS |= {"configMaps"}  # kaistack: the ConfigMaps that exist (placement.config_maps)
_TOP_KEYS |= {"namespaceLabels"}  # kaistack: what namespaceSelectors match (placement.namespace_selectors)
_CLUSTER_KEYS = {"nodes", "queues", "jobs"}
_MINIMAL = "a scenario lists its nodes, queues and jobs (an empty list for none)"
# Rule sets the simulator implements (FORMAT v2 kaiVersion): v0.18.0 is KAI main after v0.17.0 (d5bc503).
KAI_VERSIONS = ("v0.17.0", "v0.18.0")
_NODE_KEYS = {"name", "gpus", "gpuMemoryMiB", "cpu", "memory", "pods", "migStrategy", "mig", "labels", "ready"}
_NODE_KEYS |= {"scalarResources", "taints"}
_QUEUE_KEYS = {"name", "parent", "priority", "gpu", "cpu", "memory", "preemptMinRuntime", "reclaimMinRuntime"}
_RESOURCE_KEYS = {"quota", "limit", "overQuotaWeight"}
_JOB_KEYS = {"name", "queue", "priority", "preemptible", "minMember", "tasks", "ageSeconds", "preemptionDelay"}
_JOB_KEYS |= {"staleSeconds", "stalenessGracePeriod", "subGroups", "minSubGroup", "topologyConstraint"}
_JOB_KEYS |= {"startedSeconds"}
_JOB_KEYS |= REQUEST_KEYS
# A Go/metav1 duration: "90s", "10m", "1h30m", "-1s", "0" (time.ParseDuration).
DURATION_PATTERN = r"^[+-]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))+)$"
_DURATION = re.compile(DURATION_PATTERN)
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_TASK_KEYS = {"state", "node", "gpuGroups", "priority", "subGroup"} | REQUEST_KEYS
_STATES = ("Pending", "Running", "Releasing", "StuckInReleasing", "Failed", "Succeeded")

PRIORITY_RANGE = (-(2**31), 2**31 - 1)  # a PriorityClass value is an int32


@dataclass(frozen=True)
class Scenario:
    """A loaded scenario: what to simulate and how, plus the expectations (not interpreted here)."""

    name: str
    snapshot: Snapshot
    actions: tuple[str, ...] = ACTIONS
    rounds: int = 1
    placement: Placement = field(default_factory=Placement)
    expect: Mapping[str, Any] = field(default_factory=dict)


def parse_scenario(document: object, source: str = "<scenario>") -> Scenario:
    """Validate a parsed document into a Scenario."""
    r = Reader(source)
    # An empty file, one of only comments, `null` or `{}` is most often a truncated or wrong file: simulating
    # nothing would pass. An empty cluster is written out (`nodes: []`, `queues: []`, `jobs: []`).
    if document is None:
        raise r.fail("", f"the scenario is empty (no document, or null); {_MINIMAL}")
    doc = r.mapping(document, "", _TOP_KEYS)
    if not _CLUSTER_KEYS & set(doc):
        raise r.fail("", f"the scenario is empty (none of nodes, queues, jobs); {_MINIMAL}")
    actions = read_actions(r, doc.get("actions", list(ACTIONS)), "actions")
    version = doc.get("kaiVersion", "v0.17.0")
    if version not in KAI_VERSIONS:
        raise r.fail("kaiVersion", f"the simulator implements {', '.join(KAI_VERSIONS)}; got {version!r}")
    rounds = read_rounds(r, doc.get("rounds", 1), "rounds")
    placement = dataclasses.replace(_placement(r, doc.get("placement", {})), kai_version=version)
    grace = doc.get("stalenessGracePeriod")
    if grace is not None:
        placement = dataclasses.replace(placement, staleness_grace_seconds=_duration(r, grace, "stalenessGracePeriod"))
    raw_nodes = r.at_most(r.sequence(doc.get("nodes"), "nodes"), "nodes", MAX_NODES)
    raw_queues = r.at_most(r.sequence(doc.get("queues"), "queues"), "queues", MAX_QUEUES)
    nodes = tuple(_node(r, raw, f"nodes[{i}]") for i, raw in enumerate(raw_nodes))
    queues = tuple(_queue(r, raw, f"queues[{i}]") for i, raw in enumerate(raw_queues))
    unique(r, [n.name for n in nodes], "nodes")
    unique(r, [q.name for q in queues], "queues")
    level = depths({q.name: q.parent or None for q in queues})
    deep = next((i for i, q in enumerate(queues) if level[q.name] > MAX_QUEUE_DEPTH), None)
    if deep is not None:
        raise r.fail(
            f"queues[{deep}].parent",
            f"queue {queues[deep].name!r} is {level[queues[deep].name]} levels deep; kaistack simulates at most "
            f"{MAX_QUEUE_DEPTH}",
        )
    node_names = {n.name for n in nodes}
    raw_topologies = r.at_most(r.sequence(doc.get("topologies"), "topologies"), "topologies", MAX_TOPOLOGIES)
    topologies = tuple(scenario_groups.topology(r, raw, f"topologies[{i}]") for i, raw in enumerate(raw_topologies))
    unique(r, [t.name for t in topologies], "topologies")
    raw_jobs = r.at_most(r.sequence(doc.get("jobs"), "jobs"), "jobs", MAX_JOBS)
    minimum = 0 if version != "v0.17.0" else 1  # minMember 0 is legal from #1989 (after v0.17.0)
    jobs = tuple(_job(r, raw, f"jobs[{i}]", node_names, minimum) for i, raw in enumerate(raw_jobs))
    # FORMAT v2: without ageSeconds the k-th of n jobs is (n - k) minutes old (KAI's harness default).
    jobs = tuple(
        j if j.age_seconds is not None else dataclasses.replace(j, age_seconds=(len(jobs) - k) * 60.0)
        for k, j in enumerate(jobs)
    )
    total = sum(len(j.tasks) for j in jobs)
    if total > MAX_TASKS:
        raise r.fail("jobs", f"{total} tasks in all; kaistack simulates at most {MAX_TASKS}")
    unique(r, [j.name for j in jobs], "jobs")
    expect = doc.get("expect") or {}
    if not isinstance(expect, Mapping):
        raise r.fail("expect", "must be a mapping")
    # A file name is bytes the OS decoded with surrogates where it is not UTF-8 (argv's surrogateescape): written
    # as \udcff text, it cannot break the output's encoding.
    name = doc.get("name") or Path(source).stem.encode("utf-8", "backslashreplace").decode("utf-8")
    snapshot = Snapshot(nodes, queues, jobs, topologies, _config_maps(r, doc.get("configMaps")))
    listed = _namespace_labels(r, doc["namespaceLabels"]) if doc.get("namespaceLabels") is not None else {}
    if namespace_selectors.has_selectors(snapshot):
        # Every namespace a pod lives in exists, labelled with its name by the API server, listed or not.
        used = {t.namespace for j in snapshot.jobs for t in j.tasks}
        used |= {p.namespace for n in snapshot.nodes for p in n.outside_pods}
        labels = {ns: {NAMESPACE_NAME_LABEL: ns} for ns in sorted(used)} | listed
        snapshot = namespace_selectors.resolve(snapshot, labels)
    return Scenario(str(name), snapshot, actions, rounds, placement, expect)


NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # NamespaceDefaultLabelName, GA since Kubernetes 1.22


def _namespace_labels(r: Reader, raw: object) -> dict[str, dict[str, str]]:
    """`namespaceLabels`: namespace -> its labels, which inter-pod terms' namespaceSelectors match."""
    doc = r.sized_mapping(raw, "namespaceLabels", MAX_NAMESPACES, "namespaces", "namespaces to their labels")
    out: dict[str, dict[str, str]] = {}
    for namespace, labels in doc.items():
        where = f"namespaceLabels.{namespace}"
        # The API server labels every namespace with its name.
        given = scenario_groups.labels(r, labels, where)
        out[r.string(namespace, where)] = {NAMESPACE_NAME_LABEL: namespace, **given}
    return out


def _config_maps(r: Reader, raw: object) -> frozenset[tuple[str, str]] | None:
    """`configMaps`: namespace -> the names of the ConfigMaps it has. Left out: not known, not checked."""
    if raw is None:
        return None
    doc = r.sized_mapping(raw, "configMaps", MAX_CONFIG_MAPS, "namespaces", "namespaces to ConfigMap names")
    found: set[tuple[str, str]] = set()
    for namespace, names in doc.items():
        where = f"configMaps.{namespace}"
        r.string(namespace, where)
        found.update((namespace, name) for name in r.names(names, where, MAX_CONFIG_MAPS))
        if len(found) > MAX_CONFIG_MAPS:
            raise r.fail("configMaps", f"more than {MAX_CONFIG_MAPS} ConfigMaps; kaistack reads at most that many")
    return frozenset(found)


_PLACEMENT_KEYS = {"node", "gpu", "maxConsolidationPreemptees", "useSchedulingSignatures"}
_PLACEMENT_KEYS |= {"defaultPreemptMinRuntime", "defaultReclaimMinRuntime", "reclaimResolveMethod"}


def _placement(r: Reader, raw: object) -> Placement:
    doc = r.mapping(raw or {}, "placement", _PLACEMENT_KEYS)
    node, gpu = doc.get("node", "binpack"), doc.get("gpu", "pack")
    if node not in ("binpack", "spread"):
        raise r.fail("placement.node", f"must be binpack or spread, got {node!r}")
    if gpu not in ("pack", "spread"):
        raise r.fail("placement.gpu", f"must be pack or spread, got {gpu!r}")
    preemptees = r.integer(
        doc.get("maxConsolidationPreemptees", -1), "placement.maxConsolidationPreemptees", minimum=-1, maximum=MAX_JOBS
    )
    signatures = r.boolean(doc.get("useSchedulingSignatures", False), "placement.useSchedulingSignatures")
    resolve = doc.get("reclaimResolveMethod", "lca")
    if resolve not in ("lca", "queue"):
        raise r.fail("placement.reclaimResolveMethod", f"must be lca or queue, got {resolve!r}")

    def min_runtime(key: str) -> float:
        # parseMinRuntime (minruntime.go:36-48): a negative duration counts as 0.
        value = doc.get(key)
        return max(0.0, _duration(r, value, f"placement.{key}")) if value is not None else 0.0

    return Placement(
        node=node,
        gpu=gpu,
        max_consolidation_preemptees=preemptees,
        use_scheduling_signatures=signatures,
        default_preempt_min_runtime=min_runtime("defaultPreemptMinRuntime"),
        default_reclaim_min_runtime=min_runtime("defaultReclaimMinRuntime"),
        reclaim_resolve_method=resolve,
        harness=True,  # scenarios are sessions as KAI's test harness builds them
    )


def _node(r: Reader, raw: object, path: str) -> Node:
    doc = r.mapping(raw, path, _NODE_KEYS)
    name = r.string(doc.get("name"), f"{path}.name")
    memory_mib = doc.get("gpuMemoryMiB", 100)
    if memory_mib is not None:
        memory_mib = r.integer(memory_mib, f"{path}.gpuMemoryMiB", minimum=0, maximum=MAX_GPU_MEMORY_MIB)
    strategy = doc.get("migStrategy", "none")
    if strategy not in ("none", "single", "mixed"):
        raise r.fail(f"{path}.migStrategy", f"must be none, single or mixed, got {strategy!r}")
    return Node(
        name=name,
        gpus=r.integer(doc.get("gpus", 0), f"{path}.gpus", minimum=0, maximum=MAX_GPUS_PER_NODE),
        gpu_memory_mib=memory_mib,
        cpu_millis=r.quantity(doc.get("cpu", "20000"), f"{path}.cpu", cpu_millis),
        memory_bytes=r.quantity(doc.get("memory", "20G"), f"{path}.memory", memory_bytes),
        pods=r.integer(doc.get("pods", 110), f"{path}.pods", minimum=0, maximum=MAX_PODS_PER_NODE),
        mig_strategy=strategy,
        mig=r.mig(doc.get("mig", {}), f"{path}.mig"),
        labels=scenario_groups.labels(r, doc.get("labels", {}), f"{path}.labels"),
        ready=r.boolean(doc.get("ready", True), f"{path}.ready"),
        scalar=r.scalar(doc.get("scalarResources", {}), f"{path}.scalarResources"),
        taints=checked(r, path, lambda: parse_taints(doc.get("taints"))),
    )


def _queue(r: Reader, raw: object, path: str) -> Queue:
    doc = r.mapping(raw, path, _QUEUE_KEYS)
    parent = doc.get("parent")
    return Queue(
        name=r.string(doc.get("name"), f"{path}.name"),
        parent=r.string(parent, f"{path}.parent") if parent is not None else None,
        priority=r.integer(doc.get("priority", 100), f"{path}.priority", *PRIORITY_RANGE),
        gpu=_resource(r, doc.get("gpu", {}), f"{path}.gpu"),
        cpu=_resource(r, doc.get("cpu", {}), f"{path}.cpu"),
        memory=_resource(r, doc.get("memory", {}), f"{path}.memory"),
        preempt_min_runtime=_optional_duration(r, doc.get("preemptMinRuntime"), f"{path}.preemptMinRuntime"),
        reclaim_min_runtime=_optional_duration(r, doc.get("reclaimMinRuntime"), f"{path}.reclaimMinRuntime"),
    )


def _harness_start(tasks: list[Task]) -> float | None:
    """KAI's harness: a job with a running pod started a minute ago (jobs_fake/jobs.go:182-185)."""
    return 60.0 if any(t.state == "Running" for t in tasks) else None


def _optional_duration(r: Reader, value: object, path: str) -> float | None:
    return _duration(r, value, path) if value is not None else None


def _resource(r: Reader, raw: object, path: str) -> QueueResource:
    doc = r.mapping(raw or {}, path, _RESOURCE_KEYS)
    return QueueResource(
        quota=r.number(doc.get("quota", 0), f"{path}.quota"),
        limit=r.number(doc.get("limit", 0), f"{path}.limit"),
        over_quota_weight=r.number(doc.get("overQuotaWeight", 0), f"{path}.overQuotaWeight"),
    )


def _job(r: Reader, raw: object, path: str, node_names: set[str], min_member_floor: int = 1) -> Job:
    doc = r.mapping(raw, path, _JOB_KEYS)
    name = r.string(doc.get("name"), f"{path}.name")
    queue = r.string(doc.get("queue"), f"{path}.queue")
    priority = r.integer(doc.get("priority", 50), f"{path}.priority", *PRIORITY_RANGE)
    preemptible = doc.get("preemptible")
    if preemptible is not None:
        preemptible = r.boolean(preemptible, f"{path}.preemptible")
    base = read_request(r, doc, {}, path)
    age = doc.get("ageSeconds")
    age = r.number(age, f"{path}.ageSeconds") if age is not None else None
    if age is not None and age < 0:
        raise r.fail(f"{path}.ageSeconds", f"must be >= 0, got {age:g}")
    delay = doc.get("preemptionDelay")
    delay = _duration(r, delay, f"{path}.preemptionDelay") if delay is not None else None
    stale = doc.get("staleSeconds")
    stale = r.number(stale, f"{path}.staleSeconds") if stale is not None else None
    grace = doc.get("stalenessGracePeriod")
    grace = _duration(r, grace, f"{path}.stalenessGracePeriod") if grace is not None else None
    started = doc.get("startedSeconds")
    started = r.number(started, f"{path}.startedSeconds") if started is not None else None
    if started is not None and started < 0:
        raise r.fail(f"{path}.startedSeconds", f"must be >= 0, got {started:g}")
    raw_tasks = doc.get("tasks", 1)
    tasks: list[Task] = []
    if isinstance(raw_tasks, int) and not isinstance(raw_tasks, bool):
        if not 1 <= raw_tasks <= MAX_TASKS_PER_JOB:
            raise r.fail(f"{path}.tasks", f"must be 1 to {MAX_TASKS_PER_JOB}, got {raw_tasks}")
        check_combination(r, base, path)
        tasks = [Task(**base)] * raw_tasks
    elif isinstance(raw_tasks, list) and raw_tasks:
        r.at_most(raw_tasks, f"{path}.tasks", MAX_TASKS_PER_JOB)
        for i, raw_task in enumerate(raw_tasks):
            tasks.append(_task(r, raw_task, f"{path}.tasks[{i}]", base, node_names))
    else:
        raise r.fail(f"{path}.tasks", f"must be a positive count or a non-empty list, got {raw_tasks!r}")
    min_member = doc.get("minMember")
    if min_member is not None:
        min_member = r.integer(min_member, f"{path}.minMember", minimum=min_member_floor, maximum=MAX_TASKS_PER_JOB)
    sub_groups = scenario_groups.sub_groups(r, doc.get("subGroups"), f"{path}.subGroups")
    leaves = {g.name for g in sub_groups} - {g.parent for g in sub_groups if g.parent is not None}
    for i, task in enumerate(tasks):
        if sub_groups and task.sub_group not in leaves:
            raise r.fail(
                f"{path}.tasks[{i}].subGroup",
                f"must name a leaf subgroup of this job ({', '.join(sorted(leaves))}), got {task.sub_group!r}",
            )
        if not sub_groups and task.sub_group is not None:
            raise r.fail(f"{path}.tasks[{i}].subGroup", "the job has no subGroups")
    min_sub = doc.get("minSubGroup")
    if min_sub is not None:
        min_sub = r.integer(min_sub, f"{path}.minSubGroup", minimum=min_member_floor, maximum=MAX_SUBGROUPS_PER_JOB)
    constraint = doc.get("topologyConstraint")
    topology = (
        scenario_groups.topology_constraint(r, constraint, f"{path}.topologyConstraint")
        if constraint is not None
        else None
    )
    return Job(
        name,
        queue,
        tuple(tasks),
        priority,
        min_member,
        preemptible,
        age,
        delay,
        stale,
        grace,
        sub_groups=sub_groups,
        min_sub_group=min_sub,
        topology=topology,
        started_seconds_ago=started if started is not None else _harness_start(tasks),
    )


def _duration(r: Reader, value: object, path: str) -> float:
    seconds = duration_seconds(value)
    if seconds is None:
        raise r.fail(path, f"must be a duration like '90s', '10m' or '1h30m', got {value!r}")
    return seconds


def duration_seconds(value: object) -> float | None:
    """Seconds of a Go duration string ("10m", "90s", "-1s", "1h0m0s" as metav1.Duration writes it); None if
    it is not one."""
    if not isinstance(value, str) or len(value) > 64 or not _DURATION.fullmatch(value):
        return None
    sign = -1.0 if value.startswith("-") else 1.0
    return sign * sum(float(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(value))


def _task(r: Reader, raw: object, path: str, base: dict[str, Any], node_names: set[str]) -> Task:
    doc = r.mapping(raw if raw is not None else {}, path, _TASK_KEYS)
    request = read_request(r, doc, base, path)
    check_combination(r, request, path)
    state = doc.get("state", "Pending")
    if state not in _STATES:
        raise r.fail(f"{path}.state", f"must be one of {', '.join(_STATES)}, got {state!r}")
    node = doc.get("node")
    if state in ("Running", "Releasing", "StuckInReleasing") or node is not None:
        # A Pending task may carry a node (FORMAT v2: the pod's spec.nodeName, not a constraint).
        node = r.string(node, f"{path}.node")
        if node not in node_names:
            raise r.fail(f"{path}.node", f"unknown node {node!r}")
    groups = [str(g) for g in r.sequence(doc.get("gpuGroups"), f"{path}.gpuGroups")]
    priority = doc.get("priority")
    if priority is not None:
        priority = r.integer(priority, f"{path}.priority", *PRIORITY_RANGE)
    sub_group = doc.get("subGroup")
    sub_group = r.string(sub_group, f"{path}.subGroup") if sub_group is not None else None
    return Task(state=state, node=node, gpu_groups=tuple(groups), priority=priority, sub_group=sub_group, **request)
