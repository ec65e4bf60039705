"""vcluster-set-owner-false, and how a Helm release is read: a Pulumi helm.sh Release/Chart or a Flux HelmRelease.

A pure rule like those in kaistack.guardrails.rules (which registers it); kaistack.guardrails.stack_rules reads
KAI's release through the same two helpers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kaistack.guardrails.facts import StackFacts
from kaistack.guardrails.podspec import HELM_TYPES, Res, dig, kind_of, mapping, seq
from kaistack.guardrails.settings import Settings


def chart_name(res: Res) -> str | None:
    """`vcluster`, `loft/vcluster`, `oci://.../vcluster`, `.../vcluster-0.36.1.tgz` -> `vcluster`."""
    props = res.props
    if res.type in HELM_TYPES:
        chart = props.get("chart")
    elif kind_of(res.type) == "HelmRelease":  # Flux (lint of GitOps repos)
        # spec.chart.spec.chart, or spec.chartRef naming an OCIRepository/HelmChart source: its name is all
        # the release shows (a source named otherwise is not recognised).
        chart = dig(props, "spec", "chart", "spec", "chart") or dig(props, "spec", "chartRef", "name")
    else:
        return None
    if not isinstance(chart, str) or not chart:
        return None
    base = chart.rstrip("/").rsplit("/", 1)[-1].removesuffix(".tgz")
    return re.sub(r"-v?\d+\.\d+\.\d+.*$", "", base)


def helm_values(res: Res) -> Mapping[str, Any]:
    if res.type in HELM_TYPES:
        return mapping(res.props.get("values"))
    return mapping(dig(res.props, "spec", "values"))


# Either one runs a kube-scheduler inside the vCluster (vcluster-and-gpu.md §1.4); the first is deprecated.
VIRTUAL_SCHEDULER_KEYS = (
    ("controlPlane", "advanced", "virtualScheduler", "enabled"),
    ("controlPlane", "distro", "k8s", "scheduler", "enabled"),
    # Hybrid scheduling schedules in the vCluster too (loft-sh/vcluster@v0.36.1 pkg/config/config.go:188-191,
    # SchedulingInVirtualClusterEnabled).
    ("sync", "toHost", "pods", "hybridScheduling", "enabled"),
)


def vcluster_set_owner_false(res: Res, s: Settings, facts: StackFacts) -> list[str]:
    if chart_name(res) not in s.vcluster_charts:
        return []
    values = helm_values(res)
    out = []
    set_owner = dig(values, "experimental", "syncSettings", "setOwner")
    elsewhere = _values_elsewhere(res)
    if set_owner is None and elsewhere:
        # Flux merges valuesFrom in order, then spec.values over them (fluxcd.io/flux/components/helm/helmreleases,
        # "Values overrides"): set inline, it holds.
        out.append(
            f"values experimental.syncSettings.setOwner is not set here, and the rest of the values come from "
            f"{elsewhere}, which kaistack cannot read: set it to false in spec.values, which Flux applies over "
            "them, so it holds whatever they say (with owner references to the vCluster Service, kaistack's host "
            "admission refuses every synced pod)"
        )
    elif set_owner is not False:
        shown = "unset (the chart default is true)" if set_owner is None else repr(set_owner)
        out.append(
            f"values experimental.syncSettings.setOwner is {shown}: set it to false. With owner references to "
            "the vCluster Service, kaistack's host admission refuses every synced pod (KAI reads a pod's queue and "
            "priority from its top owner first, which that policy cannot see), and vCluster's KAI guide requires "
            "false"
        )
    for path in VIRTUAL_SCHEDULER_KEYS:
        if dig(values, *path) in (True, "true"):
            out.append(
                f"values {'.'.join(path)} is true: keep the virtual scheduler off so tenant pods reach the host "
                "unscheduled and KAI (on the host) schedules them"
            )
    return out


def _values_elsewhere(res: Res) -> str:
    """A Flux HelmRelease's spec.valuesFrom (ConfigMaps, Secrets kaistack cannot read); "" without them."""
    if res.type in HELM_TYPES:
        return ""
    sources = [mapping(v) for v in seq(dig(res.props, "spec", "valuesFrom"))]
    named = ", ".join(f"{v.get('kind')}/{v.get('name')}" for v in sources)
    return f"spec.valuesFrom ({named})" if sources else ""
