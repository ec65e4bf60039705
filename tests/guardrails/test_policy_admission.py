"""TenantAdmission: the ValidatingAdmissionPolicy CEL agrees with the CrossGuard rules, pod by pod.

Each host pod below is what vCluster syncs for tenant team-a of the dev stack. The CEL strings of the
policy are evaluated with cel-python (an error counts as a denial: failurePolicy Fail), the CrossGuard
rules run on the same pod through engine proxies, and both must give the expected verdict.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import celpy
import kubernetes_validate
import pulumi
import pytest
from policy_builders import engine

from components.admission import (
    MANAGED_BY,
    TenantAdmission,
    admission_manifests,
    tenant_binding,
    tenant_policy,
)
from kaistack.declaration.model import StackConfig
from kaistack.guardrails.facts import facts_from_stack
from kaistack.guardrails.podspec import Res
from kaistack.guardrails.rules import kai_gpu_sharing_annotations, kai_queue_label, kai_scheduler_name
from kaistack.guardrails.settings import settings
from kaistack.guardrails.stack_rules import tenant_queue_binding
from kaistack.ops.mocks import MockSession
from kaistack.stack.load import load_stack

ROOT = Path(__file__).resolve().parents[2]
HOST_NAMESPACE = "vcluster-team-a"


@pytest.fixture(scope="module")
def dev() -> StackConfig:
    return load_stack(ROOT, "dev").config


def host_pod(
    *,
    scheduler: str | None = "kai-scheduler",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    gpu_limit: bool = False,
) -> dict[str, Any]:
    """A pod as the host sees it after vCluster's sync (renamed, managed-by label added)."""
    meta_labels = {MANAGED_BY: "team-a", "vcluster.loft.sh/namespace": "default"}
    meta_labels.update({"kai.scheduler/queue": "team-a"} if labels is None else labels)
    container: dict[str, Any] = {"name": "main", "image": "ubuntu", "resources": {"requests": {"cpu": "100m"}}}
    if gpu_limit:
        container["resources"]["limits"] = {"nvidia.com/gpu": "1"}
    spec: dict[str, Any] = {"containers": [container]}
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    meta: dict[str, Any] = {"name": "p-x-default-x-team-a", "namespace": HOST_NAMESPACE, "labels": meta_labels}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _with(base: dict[str, Any], **labels: str) -> dict[str, str]:
    return {**base, **labels}


QUEUE = {"kai.scheduler/queue": "team-a"}
PODS: dict[str, tuple[dict[str, Any], bool]] = {
    "kai pod on the tenant's queue": (host_pod(), True),
    "whole-GPU pod": (host_pod(gpu_limit=True), True),
    "fractional pod": (host_pod(annotations={"gpu-fraction": "0.5"}), True),
    "fraction written .25": (host_pod(annotations={"gpu-fraction": ".25"}), True),
    "gpu-memory pod": (host_pod(annotations={"gpu-memory": "2000"}), True),
    "fraction on two devices": (host_pod(annotations={"gpu-fraction": "0.5", "gpu-fraction-num-devices": "2"}), True),
    "unrelated annotations": (host_pod(annotations={"team": "x"}), True),
    "default scheduler": (host_pod(scheduler="default-scheduler"), False),
    "no scheduler name": (host_pod(scheduler=None), False),
    "no queue label": (host_pod(labels={}), False),
    "legacy runai/queue label": (host_pod(labels={"runai/queue": "team-a"}), False),
    "host queue": (host_pod(labels={"kai.scheduler/queue": "test"}), False),
    "undeclared queue": (host_pod(labels={"kai.scheduler/queue": "nope"}), False),
    "queue as annotation": (host_pod(labels={}, annotations={"kai.scheduler/queue": "team-a"}), False),
    "fraction of one": (host_pod(annotations={"gpu-fraction": "1"}), False),
    "fraction zero": (host_pod(annotations={"gpu-fraction": "0"}), False),
    "fraction not a number": (host_pod(annotations={"gpu-fraction": "half"}), False),
    "fraction as milli-quantity": (host_pod(annotations={"gpu-fraction": "500m"}), False),
    "negative fraction": (host_pod(annotations={"gpu-fraction": "-0.5"}), False),
    "gpu-memory zero": (host_pod(annotations={"gpu-memory": "0"}), False),
    "gpu-memory with unit": (host_pod(annotations={"gpu-memory": "2Gi"}), False),
    "fraction and memory": (host_pod(annotations={"gpu-fraction": "0.2", "gpu-memory": "2000"}), False),
    "fraction and a GPU limit": (host_pod(annotations={"gpu-fraction": "0.5"}, gpu_limit=True), False),
    "memory and a GPU limit": (host_pod(annotations={"gpu-memory": "2000"}, gpu_limit=True), False),
    "devices without a share": (host_pod(annotations={"gpu-fraction-num-devices": "2"}), False),
    "zero devices": (host_pod(annotations={"gpu-fraction": "0.5", "gpu-fraction-num-devices": "0"}), False),
}


def cel_allows(policy: dict[str, Any], pod: dict[str, Any]) -> bool:
    """matchConditions then validations, as the API server evaluates them; an error denies (Fail)."""
    env = celpy.Environment()
    activation = {"object": celpy.json_to_cel(pod)}
    for condition in policy["spec"]["matchConditions"]:
        if not _evaluate(env, condition["expression"], activation):
            return True  # the policy does not apply
    return all(_evaluate(env, v["expression"], activation) for v in policy["spec"]["validations"])


def _evaluate(env: celpy.Environment, expression: str, activation: dict[str, Any]) -> bool:
    result = env.program(env.compile(expression)).evaluate(activation)
    return isinstance(result, celpy.celtypes.BoolType) and bool(result)


def crossguard_allows(config: StackConfig, pod: dict[str, Any]) -> bool:
    """The pack's rules on the same pod, with tenant workloads required to use kai-scheduler."""
    res = Res("kubernetes:core/v1:Pod", pod["metadata"]["name"], engine(pod))
    s = settings({"requireInTenantNamespaces": True})
    facts = facts_from_stack(config)
    found = [
        *kai_scheduler_name(res, s, facts),
        *kai_queue_label(res, s, facts),
        *kai_gpu_sharing_annotations(res, s, facts),
        *(f.message for f in tenant_queue_binding([res], s, facts)),
    ]
    return not found


@pytest.mark.parametrize("case", list(PODS))
def test_admission_cel_and_crossguard_agree(dev: StackConfig, case: str) -> None:
    pod, allowed = PODS[case]
    policy = tenant_policy(dev, dev.tenant("team-a"))
    assert cel_allows(policy, pod) is allowed, f"CEL: {case}"
    assert crossguard_allows(dev, pod) is allowed, f"CrossGuard: {case}"


def test_vcluster_coredns_is_let_through(dev: StackConfig) -> None:
    dns = host_pod(
        scheduler="default-scheduler", labels={"vcluster.loft.sh/namespace": "kube-system", "k8s-app": "kube-dns"}
    )
    assert cel_allows(tenant_policy(dev, dev.tenant("team-a")), dns)


def test_pods_labelled_like_coredns_elsewhere_are_still_checked(dev: StackConfig) -> None:
    fake_dns = host_pod(scheduler="default-scheduler", labels={"k8s-app": "kube-dns"})
    assert not cel_allows(tenant_policy(dev, dev.tenant("team-a")), fake_dns)


def test_binding_selects_the_tenant_namespace_and_its_synced_pods(dev: StackConfig) -> None:
    spec = tenant_binding(dev, dev.tenant("team-a"))["spec"]
    assert spec["validationActions"] == ["Deny"]
    assert spec["policyName"] == "kaistack-tenant-team-a"
    assert spec["matchResources"] == {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": HOST_NAMESPACE}},
        "objectSelector": {"matchLabels": {MANAGED_BY: "team-a"}},
    }


def test_policy_matches_pod_creates_and_updates(dev: StackConfig) -> None:
    rules = tenant_policy(dev, dev.tenant("team-a"))["spec"]["matchConstraints"]["resourceRules"]
    assert rules == [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}
    ]


def test_tenant_without_queues_may_use_any_leaf_queue(dev: StackConfig) -> None:
    open_tenant = dev.tenant("team-a").replace(queues=[])
    queue_rule = tenant_policy(dev, open_tenant)["spec"]["validations"][1]["expression"]
    assert "['default-queue', 'team-a', 'test']" in queue_rule


@pytest.mark.parametrize("index", [0, 1])
def test_manifests_validate_against_kubernetes_1_33_strictly(dev: StackConfig, index: int) -> None:
    manifest = admission_manifests(dev)[index]
    assert kubernetes_validate.validate(copy.deepcopy(manifest), "1.33", strict=True) == "1.33"


def test_a_misspelt_field_fails_the_strict_schema(dev: StackConfig) -> None:
    """Guards the test above: strict mode really rejects unknown keys."""
    manifest = copy.deepcopy(admission_manifests(dev)[1])
    manifest["spec"]["validationAction"] = ["Deny"]
    with pytest.raises(kubernetes_validate.ValidationError, match="validationAction"):
        kubernetes_validate.validate(manifest, "1.33", strict=True)


# --- the component under Pulumi mocks ------------------------------------------------------------


@pulumi.runtime.test
def test_component_registers_a_policy_and_binding_per_tenant(mocks: MockSession, dev: StackConfig) -> Any:
    admission = TenantAdmission("kaistack-admission", dev)

    def check(_: Any) -> None:
        by_type = {r.type: r for r in mocks.monitor.records}
        assert by_type["kaistack:index:TenantAdmission"].custom is False
        policy = by_type["kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"]
        binding = by_type["kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"]
        expected_policy, expected_binding = admission_manifests(dev)
        assert policy.inputs["spec"] == expected_policy["spec"]
        assert binding.inputs["spec"] == expected_binding["spec"]
        assert policy.inputs["metadata"]["name"] == "kaistack-tenant-team-a"

    return pulumi.Output.all(*(b.urn for b in admission.bindings.values())).apply(check)
