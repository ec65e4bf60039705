"""KAI's victim-invariant pre-predicates that depend on more than a pod's request: VolumeBinding and ConfigMap.

Both are PreFilters that fail UnschedulableAndUnresolvable (KAI@v0.17.0 plugins/predicates/predicates.go:53-57):
the pod is refused before any node is ordered (actions/common/allocate.go:157-165), and reclaim, preempt and
consolidation skip its job (actions/common/action_eligibility.go), as no eviction creates a ConfigMap or binds a
claim. The verdict depends only on objects no cycle changes, so it is taken once per pod when a session opens.
The third candidate, MaxNodePoolResources, is Session.victim_invariant_failure's size test.
"""

from __future__ import annotations

from placement.config_maps import missing
from placement.model import Task

__all__ = ["MISSING_CONFIG_MAPS", "VOLUME_BINDING", "failure"]

# Reason codes (placement.reasons).
VOLUME_BINDING = "volume-binding"
MISSING_CONFIG_MAPS = "missing-config-maps"


def failure(task: Task, config_maps: frozenset[tuple[str, str]] | None) -> tuple[str, str] | None:
    """(reason code, message) of the first pre-predicate the pod fails, in KAI's candidate order; None: none."""
    if task.volume_error is not None:
        message = (
            f"its volumes keep it off every node: {task.volume_error} (KAI's VolumeBinding predicate; no eviction "
            "helps)"
        )
        return VOLUME_BINDING, message
    if config_maps is not None and task.config_maps:
        absent = missing(task.namespace, task.config_maps, config_maps)
        if absent:
            listed = ", ".join(absent)
            what = f"ConfigMap {listed}, which does" if len(absent) == 1 else f"ConfigMaps {listed}, which do"
            fix = (
                "create it, or mark the reference optional"
                if len(absent) == 1
                else "create them, or mark the references optional"
            )
            message = (
                f"a pod needs {what} not exist in namespace {task.namespace}: KAI's ConfigMap predicate keeps it "
                f"off every node, and no eviction helps ({fix})"
            )
            return MISSING_CONFIG_MAPS, message
    return None
