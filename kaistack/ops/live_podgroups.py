"""What KAI's cache reads from PodGroups (subgroups, topology constraints, times), Topologies, BindRequests,
PriorityClasses and node conditions.

KAI@v0.17.0: pkg/scheduler/api/podgroup_info/job_info.go (SetPodGroup: the stale, last-start and last-eviction
annotations, 230-262; PreemptionDelayEnd, 204-221), cache/cluster_info/cluster_info.go (priority from the
PodGroup's class, 601-635; the queue, 447-451, 476-482), api/bindrequest_info/binrequest_info.go (a failed
request past its backoff is ignored, 16-27, 85-97), scheduler_util/scheduler_utils.go (node conditions, 12-45).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from kaistack.declaration import kai_api
from kaistack.guardrails.podspec import dig, mapping, seq
from kaistack.ops.live_pods import annotations_of, go_int64, parse_time
from placement.depth import MAX_SUBGROUP_DEPTH, depths
from placement.model import SubGroup, Topology, TopologyConstraint, TopologyLevel
from placement.scenario import duration_seconds
from placement.scenario_reader import MAX_TOPOLOGY_LEVELS

STALE_TIMESTAMP = "kai.scheduler/stale-podgroup-timestamp"
LAST_START_TIMESTAMP = "kai.scheduler/last-start-timestamp"
LAST_EVICTION_TIMESTAMP = "kai.scheduler/last-eviction-timestamp"
DEFAULT_PRIORITY = 50  # constants.DefaultPodGroupPriority, without a globalDefault PriorityClass


def seconds_since(value: Any, now: datetime) -> float | None:
    """Seconds from an RFC 3339 time to `now` (0 for a time in the future); None when unreadable."""
    then = parse_time(value)
    return max(0.0, (now - then).total_seconds()) if then is not None else None


def job_times(pg: Mapping[str, Any], now: datetime) -> dict[str, float | None]:
    """The Job fields a PodGroup's times give: its preemption delay and how far into it the job is (counted from
    its creation or its last eviction, whichever is later), how long it has been stale and its own grace
    period, and how long ago it last started (minruntime)."""
    annotations = annotations_of(pg)
    created = parse_time(dig(pg, "metadata", "creationTimestamp"))
    evicted = parse_time(annotations.get(LAST_EVICTION_TIMESTAMP))
    anchor = max((t for t in (created, evicted) if t is not None), default=None)
    return {
        "age_seconds": max(0.0, (now - anchor).total_seconds()) if anchor is not None else None,
        "preemption_delay_seconds": duration_seconds(dig(pg, "spec", "preemptionDelay")),
        "stale_seconds": seconds_since(annotations.get(STALE_TIMESTAMP), now),
        "staleness_grace_seconds": duration_seconds(dig(pg, "spec", "stalenessGracePeriod")),
        "started_seconds_ago": seconds_since(annotations.get(LAST_START_TIMESTAMP), now),
    }


def priority_classes(objects: Iterable[Mapping[str, Any]] | None) -> tuple[dict[str, int], int]:
    """PriorityClass values by name and the default priority (the globalDefault class's value, else 50).
    `objects` None: none were read, and kaistack's four classes stand in for them."""
    if objects is None:
        return dict(kai_api.PRIORITY_CLASSES), DEFAULT_PRIORITY
    values: dict[str, int] = {}
    default = DEFAULT_PRIORITY
    for obj in objects:
        name, value = dig(obj, "metadata", "name"), obj.get("value")
        if not isinstance(name, str) or isinstance(value, bool) or not isinstance(value, int):
            continue
        if -(2**31) <= value < 2**31:  # int32
            values[name] = value
            if obj.get("globalDefault") is True:
                default = value
    return values, default


def bind_request_failed(request: Mapping[str, Any]) -> bool:
    """IsFailed: phase Failed with no backoff limit, or with its attempts used up; KAI then ignores it."""
    if dig(request, "status", "phase") != "Failed":
        return False
    limit = dig(request, "spec", "backoffLimit")
    if isinstance(limit, bool) or not isinstance(limit, int):
        return True
    # A plain int32 with omitempty (bindrequest_types.go:90): absent is 0, which the binder leaves so when it fails
    # a request whose backoffLimit is 0 (bindrequest_controller.go:235-239), failed at once.
    attempts = dig(request, "status", "failedAttempts")
    attempts = 0 if attempts is None else attempts
    return isinstance(attempts, int) and not isinstance(attempts, bool) and attempts >= limit


NODE_POOL_LABEL = "kai.scheduler/node-pool"  # constants.DefaultNodePoolLabelKey


def in_scheduling_backoff(pg: Mapping[str, Any]) -> bool:
    """isPodGroupUpForScheduler (cluster_info.go:669-686), negated: with spec.schedulingBackoff set (not -1) and
    a last scheduling condition (highest transitionID) for the PodGroup's own node pool, KAI leaves the PodGroup
    out of its snapshot until that condition is cleared."""
    backoff = dig(pg, "spec", "schedulingBackoff")
    if backoff is None or backoff == -1:
        return False
    last: Mapping[str, Any] | None = None
    for condition in seq(dig(pg, "status", "schedulingConditions")):
        condition = mapping(condition)
        if last is None or _transition(condition) > _transition(last):
            last = condition
    if last is None:
        return False
    pool = mapping(dig(pg, "metadata", "labels")).get(NODE_POOL_LABEL) or "default"
    return last.get("nodePool") == pool


def _transition(condition: Mapping[str, Any]) -> int:
    """strconv.Atoi of the transitionID, -1 when it is not a decimal integer within int64."""
    value = condition.get("transitionID")
    number = go_int64(value)
    return -1 if number is None else number


def node_not_ready(node: Mapping[str, Any]) -> list[str]:
    """CheckNodeConditionPredicate's reasons: cordoned, NotReady, or a pressure / network condition not False."""
    reasons = ["cordoned"] if dig(node, "spec", "unschedulable") else []
    for condition in seq(dig(node, "status", "conditions")):
        kind, status = mapping(condition).get("type"), mapping(condition).get("status")
        if kind == "Ready" and status != "True":
            reasons.append("NotReady")
        elif kind in ("MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable") and status != "False":
            reasons.append(str(kind))
    return reasons


def topology_of(obj: Mapping[str, Any]) -> Topology | None:
    """A Topology object's levels; None without any, or with more than the CRD allows (spec.levels MaxItems 16),
    which the API server would not have stored."""
    if len(seq(dig(obj, "spec", "levels"))) > MAX_TOPOLOGY_LEVELS:
        return None
    levels = []
    for raw in seq(dig(obj, "spec", "levels")):
        label = mapping(raw).get("nodeLabel")
        alias = mapping(raw).get("alias")
        if isinstance(label, str) and label:
            levels.append(TopologyLevel(label, alias if isinstance(alias, str) and alias else None))
    return Topology(str(dig(obj, "metadata", "name") or ""), tuple(levels)) if levels else None


def constraint_of(raw: Any, root: bool = False) -> TopologyConstraint | None:
    """A topologyConstraint; the PodGroup's own counts only when it names a topology (FromPodGroup)."""
    if not isinstance(raw, Mapping):
        return None
    topology = raw.get("topology")
    if root and not (isinstance(topology, str) and topology):
        return None

    def level(key: str) -> str | None:
        value = raw.get(key)
        return value if isinstance(value, str) and value else None

    return TopologyConstraint(
        topology if isinstance(topology, str) else "",
        level("requiredTopologyLevel"),
        level("preferredTopologyLevel"),
    )


def sub_groups_of(pg: Mapping[str, Any] | None) -> tuple[SubGroup, ...]:
    """spec.subGroups; entries without a name, repeated names and parents that name no entry are dropped,
    as a PodGroup KAI could not build a tree from."""
    if not pg:
        return ()
    raw = [mapping(g) for g in seq(dig(pg, "spec", "subGroups"))]
    names = [g.get("name") for g in raw]
    if any(not isinstance(n, str) or not n for n in names) or len(set(names)) != len(names):
        return ()
    known = set(names)
    groups = []
    for g in raw:
        parent = g.get("parent")
        if parent is not None and parent not in known:
            return ()
        groups.append(
            SubGroup(
                str(g["name"]),
                str(parent) if parent is not None else None,
                optional_int(g.get("minMember")),
                optional_int(g.get("minSubGroup")),
                constraint_of(g.get("topologyConstraint")),
            )
        )
    return tuple(groups)


def missing_sub_group(pg: Mapping[str, Any], labels: Mapping[str, Any]) -> str | None:
    """The pod set a pod names (its subgroup label, else "default") when its PodGroup has none of that name, else
    None. KAI's pod sets are the leaf subgroups, or the one "default" set without subGroups or with a tree it cannot
    build (job_info.go:104, 274-291); a pod naming another is an invalid-subgroup task, never scheduled, with the
    fit error "Pod references subgroup ..." (job_info.go:313-322, 664-673)."""
    name = str(labels.get(kai_api.SUBGROUP_LABEL) or "") or "default"
    groups = sub_groups_of(pg)
    leaves = {g.name for g in groups} - {g.parent for g in groups} or {"default"}
    return None if name in leaves else name


def simulated_sub_groups(pg: Mapping[str, Any] | None, group: str, notes: list[str]) -> tuple[SubGroup, ...]:
    """The PodGroup's subgroups, or none (one gang of minMember) when they nest deeper than the simulator goes
    (placement.depth), which a note says."""
    groups = sub_groups_of(pg)
    deepest = max(depths({g.name: g.parent for g in groups}).values(), default=0)
    if deepest <= MAX_SUBGROUP_DEPTH:
        return groups
    notes.append(
        f"PodGroup {group}: its subGroups nest {deepest} levels deep, more than the {MAX_SUBGROUP_DEPTH} kaistack "
        "simulates; it is simulated as one gang of minMember pods"
    )
    return ()


def optional_int(value: Any) -> int | None:
    number = int_or(value, -1)
    return number if number >= 0 else None


def int_or(value: Any, default: int) -> int:
    # math.isfinite of an int beyond a double's range (minMember: 1e400 written out) raises OverflowError.
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (isinstance(value, float) and not math.isfinite(value))
    ):
        return default
    return int(value) if -(2**31) <= value < 2**31 else default
