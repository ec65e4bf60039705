"""With `kai.sharing: isolated`, a tenant may not opt its pods out of HAMi's GPU memory isolation.

HAMi's isolator skips a pod annotated `kai-resource-isolator.io/inject: "false"`, in any case
(Project-HAMi/KAI-resource-isolator cmd/webhook/main.go, handleMutate: strings.EqualFold), and what carries the label
`kai-resource-isolator.io/webhook: ignore` (KAI-Scheduler@98fd1f72 docs/gpu-sharing/hami/README.md, "Opt-out"; the
chart puts it on its own webhook's pods, chart/kai-resource-isolator/templates/webhook-deployment.yaml). vCluster
copies a tenant pod's labels and annotations to the host pod (../shared/reference/vcluster-and-gpu.md §1.3,
loft-sh/vcluster@v0.36.1 translate.go HostAnnotations, labels.go HostLabelsMap), so only the host's policy can refuse
them. The policy is evaluated as test_policy_admission.py evaluates it (cel-python, an error denies).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_policy_admission import QUEUE, Case, cel_denials, synced_pod

from components.admission import tenant_policy
from kaistack.declaration.model import StackConfig
from kaistack.declaration.parse import parse_config
from kaistack.guardrails import admission

ROOT = Path(__file__).resolve().parents[2]

INJECT = "kai-resource-isolator.io/inject"
WEBHOOK = "kai-resource-isolator.io/webhook"
SHARE = {"gpu-fraction": "0.5"}


def _policy(memory_isolation: bool = True) -> dict[str, Any]:
    return admission.tenant_policy("team-a", ["team-a"], QUEUE, memory_isolation=memory_isolation)


def _opted_out(denials: list[str]) -> bool:
    return any("opt a pod out of HAMi's GPU memory isolation" in d for d in denials)


@pytest.mark.parametrize("value", ["false", "FALSE", "true", ""])
def test_the_isolators_opt_out_annotation_is_refused_whatever_its_value(value):
    """Any value: the isolator compares without case, and a tenant has no use for the key."""
    pod = synced_pod(annotations={**SHARE, INJECT: value})
    denials = cel_denials(_policy(), Case(pod, False))
    assert _opted_out(denials)
    assert denials[-1].startswith(f"tenant team-a: the {INJECT} annotation and the {WEBHOOK} label")


def test_the_isolators_webhook_label_is_refused():
    pod = synced_pod(labels={QUEUE: "team-a", WEBHOOK: "ignore"}, annotations=SHARE)
    assert _opted_out(cel_denials(_policy(), Case(pod, False)))


def test_a_pod_without_either_passes():
    assert cel_denials(_policy(), Case(synced_pod(annotations=SHARE), True)) == []


def test_without_isolation_the_opt_outs_are_not_the_policys_business():
    pod = synced_pod(labels={QUEUE: "team-a", WEBHOOK: "ignore"}, annotations={**SHARE, INJECT: "false"})
    assert not _opted_out(cel_denials(_policy(memory_isolation=False), Case(pod, True)))


def test_an_unchanged_opt_out_does_not_block_the_syncers_updates():
    """A pod admitted before isolation was turned on keeps syncing; the isolator only acts when a pod is created."""
    pod = synced_pod(labels={QUEUE: "team-a", WEBHOOK: "ignore"}, annotations={**SHARE, INJECT: "false"})
    assert cel_denials(_policy(), Case(pod, True, operation="UPDATE", old=copy.deepcopy(pod))) == []


@pytest.mark.parametrize("where", ["annotation", "label"])
def test_an_opt_out_added_by_an_update_is_refused(where):
    old = synced_pod(annotations=SHARE)
    pod = copy.deepcopy(old)
    if where == "annotation":
        pod["metadata"]["annotations"][INJECT] = "false"
    else:
        pod["metadata"]["labels"][WEBHOOK] = "ignore"
    assert _opted_out(cel_denials(_policy(), Case(pod, False, operation="UPDATE", old=old)))


def _dev(**kai: str) -> StackConfig:
    """The repository's dev stack on real GPUs (`isolated` needs them), with `kai` settings laid over its own."""
    raw = {
        k.removeprefix("kaistack:"): v
        for k, v in yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"].items()
        if k.startswith("kaistack:")
    }
    raw["gpu"] = {"mode": "device-plugin"}
    raw["kai"] = {**raw.get("kai", {}), **kai}
    return parse_config(raw)


def test_the_stacks_policy_refuses_the_opt_outs_only_when_the_stack_isolates():
    pod = synced_pod(annotations={**SHARE, INJECT: "false"})
    isolated, fractions = _dev(sharing="isolated"), _dev(sharing="fractions")
    assert _opted_out(cel_denials(tenant_policy(isolated, isolated.tenant("team-a")), Case(pod, False)))
    assert not _opted_out(cel_denials(tenant_policy(fractions, fractions.tenant("team-a")), Case(pod, True)))
