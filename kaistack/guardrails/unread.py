"""What KAI never reads of a pod spec, though Kubernetes' default scheduler does: a pod placed as if it were unset.

KAI v0.17.0's scheduler creates Kubernetes' NodePorts, TaintToleration, NodeAffinity, InterPodAffinity and
VolumeBinding plugins (pkg/scheduler/k8s_internal/plugins/plugins.go:26-37), so no PodTopologySpread; it filters
with them and scores with InterPodAffinity's alone (k8s_internal/predicates/predicates.go:169-184), so no preferred
node affinity; and nothing under its pkg/ reads a pod's preemptionPolicy (one test fixture names it). Its
pod-grouper takes a kai.scheduler/preemptibility label only as `preemptible` or `non-preemptible` (empty: the
default), logs any other value and goes on as if it were absent (KAI@v0.17.0 pkg/podgrouper/podgrouper/plugins/
defaultgrouper/default_grouper.go calcPodGroupPreemptibilityWithDefaults, pkg/apis/scheduling/v2alpha2/
podgroup_types.go ParsePreemptibility). The policy kai-unread-constraints and `kaistack diagnose` report the same
pairs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kaistack.declaration import kai_api
from kaistack.guardrails.podspec import PodTemplate, dig, seq

PREFERRED_NODE_AFFINITY = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"


def unread_preemptibility(labels: Mapping[str, Any], where: str) -> list[tuple[str, str]]:
    """A kai.scheduler/preemptibility label KAI's pod-grouper ignores, in the labels at `where`."""
    value = labels.get(kai_api.PREEMPTIBILITY_LABEL)
    if not isinstance(value, str) or value in kai_api.PREEMPTIBILITY_VALUES:
        return []
    return [
        (
            f"{where} {kai_api.PREEMPTIBILITY_LABEL}: {value!r}: KAI's pod-grouper takes only 'preemptible' or "
            "'non-preemptible' and ignores any other value, so the job's priority class decides instead (below 100 "
            "preemptible, 100 and above not)",
            "set it to preemptible or non-preemptible (lower case), or remove it",
        )
    ]


def unread_constraints(t: PodTemplate) -> list[tuple[str, str]]:
    """(what KAI ignores, the fix) for a pod template KAI schedules; `kaistack diagnose` reports the same."""
    out = []
    if seq(t.spec.get("topologySpreadConstraints")):
        out.append(
            (
                f"{t.at('spec.topologySpreadConstraints')} on a pod KAI schedules: KAI does not read them (it runs no "
                "PodTopologySpread), so the pod is placed as if it had none and bin-packing puts such pods together",
                "spread with pod anti-affinity on the same topologyKey (required, or preferred, which KAI scores)",
            )
        )
    if seq(dig(t.spec, "affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution")):
        out.append(
            (
                f"{t.at(PREFERRED_NODE_AFFINITY)} on a pod KAI schedules: KAI scores no node preference (of "
                "Kubernetes' scoring plugins it runs InterPodAffinity's alone), so the pod goes to any node its "
                "required terms allow",
                "where the node matters, require it (requiredDuringSchedulingIgnoredDuringExecution or a nodeSelector)",
            )
        )
    out += unread_preemptibility(t.labels, t.at("metadata.labels"))
    if t.spec.get("preemptionPolicy") == "Never":
        out.append(
            (
                f"{t.at('spec.preemptionPolicy')} is Never on a pod KAI schedules: KAI does not read it (it decides "
                "by the PodGroup's priority and preemptibility), so the pod's job still preempts lower-priority "
                "jobs of its queue and reclaims from queues over their fair share",
                "KAI has no per-pod opt-out: a priority class no higher than the jobs it must not displace keeps it "
                "from preempting them",
            )
        )
    return out
