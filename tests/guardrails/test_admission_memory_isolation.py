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


# --- variables that lift HAMi-core's cap -------------------------------------------------------------------------
# Project-HAMi/HAMi-core src/multiprocess/multiprocess_memory_limit.c (do_init_device_memory_limits): a per-device
# CUDA_DEVICE_MEMORY_LIMIT_<n> wins over CUDA_DEVICE_MEMORY_LIMIT; src/libvgpu.c (dlsym): CUDA_REDIRECT names the
# library the hooks are loaded from. KAI@v0.17.0 admission gives the fraction container its limit as a ConfigMap key
# reference (hamicore.go:53-64) and one envFrom, `<runai/shared-gpu-configmap>-<n>-evar` (gpu_sharing.go:50-74,
# pkg/binder/common/env_vars.go:11-26, gpusharingconfigmap/config_map.go:149-168): what the policy sees, since a
# ValidatingAdmissionPolicy runs after the mutating webhooks.

PREFIX = "p-abc1234-shared-gpu"


def _kai_admitted(env: list[dict[str, Any]] | None = None, env_from: list[dict[str, Any]] | None = None):
    """A synced GPU-sharing pod after KAI's admission, with the tenant's own `env` and `env_from` before KAI's."""
    pod = synced_pod(annotations={**SHARE, "runai/shared-gpu-configmap": PREFIX})
    container = pod["spec"]["containers"][0]
    kais = {"configMapKeyRef": {"name": f"{PREFIX}-0", "key": "CUDA_DEVICE_MEMORY_LIMIT", "optional": True}}
    container["env"] = [*(env or []), {"name": "CUDA_DEVICE_MEMORY_LIMIT", "valueFrom": kais}]
    container["envFrom"] = [*(env_from or []), {"configMapRef": {"name": f"{PREFIX}-0-evar", "optional": False}}]
    return pod


def _lifted(denials: list[str]) -> bool:
    return any("which lift HAMi-core's cap" in d for d in denials)


def test_what_kais_admission_gives_a_shared_pod_passes():
    assert cel_denials(_policy(), Case(_kai_admitted(env=[{"name": "MODEL", "value": "llama"}]), True)) == []


@pytest.mark.parametrize(
    "variable",
    [
        {"name": "CUDA_DEVICE_MEMORY_LIMIT_0", "value": "80g"},
        {"name": "CUDA_DEVICE_MEMORY_LIMIT_1", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        {"name": "CUDA_REDIRECT", "value": "/usr/lib/x86_64-linux-gnu/libcuda.so.1"},
    ],
    ids=["per-device-limit", "per-device-limit-from-a-secret", "redirect"],
)
def test_a_variable_that_lifts_the_cap_is_refused(variable):
    assert _lifted(cel_denials(_policy(), Case(_kai_admitted(env=[variable]), False)))


def test_a_limit_in_another_container_that_is_not_kais_is_refused():
    pod = _kai_admitted()
    pod["spec"]["containers"].append(
        {"name": "side", "image": "ubuntu", "env": [{"name": "CUDA_DEVICE_MEMORY_LIMIT", "value": "80g"}]}
    )
    assert _lifted(cel_denials(_policy(), Case(pod, False)))


@pytest.mark.parametrize(
    "source",
    [
        {"configMapRef": {"name": "settings-x-default-x-team-a"}},
        {"secretRef": {"name": "tokens-x-default-x-team-a"}},
        {"configMapRef": {"name": f"{PREFIX}-0-evar"}, "prefix": "CUDA_DEVICE_MEMORY_LIMIT_"},
    ],
    ids=["configmap", "secret", "kais-with-a-prefix"],
)
def test_an_env_from_but_kais_is_refused(source):
    assert _lifted(cel_denials(_policy(), Case(_kai_admitted(env_from=[source]), False)))


def test_the_variables_are_not_checked_without_a_share_or_isolation_or_on_update():
    """A pod without a GPU share gets no library; pod env cannot change after CREATE."""
    lifting = [{"name": "CUDA_DEVICE_MEMORY_LIMIT_0", "value": "80g"}]
    plain = synced_pod()
    plain["spec"]["containers"][0]["env"] = lifting
    assert not _lifted(cel_denials(_policy(), Case(plain, True)))
    shared = _kai_admitted(env=lifting)
    assert not _lifted(cel_denials(_policy(memory_isolation=False), Case(shared, True)))
    assert not _lifted(cel_denials(_policy(), Case(shared, True, operation="UPDATE", old=copy.deepcopy(shared))))
