"""What KAI's cache reads from a PodGroup, a BindRequest, a PriorityClass and a Node besides their shapes: times,
priority, readiness.

KAI@v0.17.0: pkg/scheduler/api/podgroup_info/job_info.go (SetPodGroup: the stale, last-start and last-eviction
annotations, 230-262; PreemptionDelayEnd, 204-221), cache/cluster_info/cluster_info.go (priority from the
PodGroup's class, 601-635; the queue, 447-451, 476-482), api/bindrequest_info/binrequest_info.go (a failed
request past its backoff is ignored, 16-27, 85-97), scheduler_util/scheduler_utils.go (node conditions, 12-45).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from kaistack.declaration import kai_api
from kaistack.guardrails.podspec import dig, mapping, seq
from kaistack.ops.live_pods import annotations_of, parse_time
from placement.scenario import duration_seconds

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


def priority_classes(objects: Iterable[Mapping[str, Any]]) -> tuple[dict[str, int], int]:
    """PriorityClass values by name, with kaistack's four where the objects were not read, and the default
    priority (the globalDefault class's value, else 50)."""
    values = dict(kai_api.PRIORITY_CLASSES)
    default = DEFAULT_PRIORITY
    for obj in objects:
        name, value = dig(obj, "metadata", "name"), obj.get("value")
        if not isinstance(name, str) or isinstance(value, bool) or not isinstance(value, int):
            continue
        if abs(value) < 2**31:
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
    attempts = dig(request, "status", "failedAttempts")
    return isinstance(attempts, int) and not isinstance(attempts, bool) and attempts >= limit


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
