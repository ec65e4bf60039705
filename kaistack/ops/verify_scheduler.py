"""`scheduler` (kaistack verify): KAI's scheduler runs with the settings `kaistack check` assumed for the stack.

`check` simulates the scheduler the stack deploys (kaistack.capacity.plan.scheduler_placement): the chart's default
SchedulingShard with `kai.placementStrategy`, KAI's flag defaults and its four actions in their default order. A
shard edited on the cluster (another strategy, consolidation off or capped, signatures off, min runtimes, another
action order) makes `check`'s verdict about another scheduler; the live settings are read as `kaistack diagnose`
reads them (kaistack.ops.live_shard) and each difference is named.
"""

from __future__ import annotations

from kaistack.capacity.plan import scheduler_placement
from kaistack.declaration import kai_api
from kaistack.declaration.model import StackConfig
from kaistack.kube import resources as k8s
from kaistack.kube.client import KubeAPIError, KubeClient
from kaistack.ops.live_shard import SchedulerSettings, scheduler_settings
from kaistack.ops.verify_common import CheckResult
from placement.model import ACTIONS, Placement

CHECK = "scheduler"


def check_scheduler(config: StackConfig, client: KubeClient) -> tuple[list[CheckResult], list[str]]:
    """One result for the shard of the unpartitioned nodes, and the notes of what kaistack does not compare."""
    try:
        shards = client.list(k8s.SchedulingShard)
    except KubeAPIError as err:
        if err.status == 403:
            # Shards are cluster-scoped: a namespaced role verifies the rest, as node-ready does (verify_health).
            plural = f"{kai_api.SCHEDULING_SHARD.plural}.{kai_api.SCHEDULING_SHARD.group}"
            return [], [f"{CHECK}: not checked: {err}; grant `list` on {plural} to compare KAI's scheduler settings"]
        if err.status != 404:
            raise
        api = f"{kai_api.SCHEDULING_SHARD.group}/{kai_api.SCHEDULING_SHARD.version}"
        detail = f"the SchedulingShard API ({api}) is not installed: KAI's operator runs no scheduler"
        return [CheckResult(CHECK, "*", False, detail)], []
    if not shards:
        detail = "no SchedulingShard: KAI's operator runs no scheduler (the chart's defaultShard.enabled is off?)"
        return [CheckResult(CHECK, "*", False, detail)], []
    live = scheduler_settings(shards)
    subject = live.shard
    if live.stopped:
        return [CheckResult(CHECK, subject, False, live.stopped)], list(live.notes)
    drift = settings_drift(live, scheduler_placement(config))
    detail = (
        "; ".join(drift) + ": `kaistack check` simulated another scheduler" if drift else "as `kaistack check` assumes"
    )
    return [CheckResult(CHECK, subject, not drift, detail)], list(live.notes)


def settings_drift(live: SchedulerSettings, assumed: Placement) -> list[str]:
    """Each way the live scheduler differs from the one `check` simulates, as 'X is live (check assumes Y)'."""
    drift = []
    placement = live.placement
    if (placement.node, placement.gpu) != (assumed.node, assumed.gpu):
        drift.append(f"placement is {_strategy(placement)} (check assumes {_strategy(assumed)}, kai.placementStrategy)")
    # KAI's view: the action enabled and some victim allowed, whatever the strategy (a shard may turn it on under
    # spread, schedulingshard_types.go:312-325); check's: as the simulator runs it.
    consolidating = "consolidation" in live.actions and placement.max_consolidation_preemptees != 0
    if consolidating != assumed.consolidates:
        drift.append(
            f"consolidation is {'on' if consolidating else 'off'} (check assumes it {'off' if consolidating else 'on'})"
        )
    elif consolidating and placement.max_consolidation_preemptees != assumed.max_consolidation_preemptees:
        drift.append(
            f"max-consolidation-preemptees is {placement.max_consolidation_preemptees} "
            f"(check assumes {assumed.max_consolidation_preemptees})"
        )
    if placement.use_scheduling_signatures != assumed.use_scheduling_signatures:
        drift.append("scheduling signatures are off (check assumes them on)")
    # Consolidation on or off is said above; here the order of what runs in both.
    both = consolidating and assumed.consolidates
    order = [a for a in live.actions if a in ACTIONS and (a != "consolidation" or both)]
    expected = [a for a in ACTIONS if a != "consolidation" or both]
    if order != expected:
        drift.append(f"the actions run {', '.join(order) or 'none'} (check runs {', '.join(expected)})")
    runtimes = (placement.default_preempt_min_runtime, placement.default_reclaim_min_runtime)
    if placement.minruntime_plugin and any(runtimes):
        drift.append(
            f"default min runtimes are {runtimes[0]:g} s to preempt, {runtimes[1]:g} s to reclaim (check assumes none)"
        )
    if not placement.minruntime_plugin:
        drift.append("the minruntime plugin is off: the queues' min runtimes protect nothing (check applies them)")
    elif placement.reclaim_resolve_method != assumed.reclaim_resolve_method:
        # Which queue's reclaim min runtime protects a victim (minruntime.go:56-60).
        method, assumed_method = placement.reclaim_resolve_method, assumed.reclaim_resolve_method
        drift.append(f"reclaimResolveMethod is {method} (check assumes {assumed_method})")
    return drift


def _strategy(placement: Placement) -> str:
    return f"{placement.node} nodes, {placement.gpu} shared GPUs"
