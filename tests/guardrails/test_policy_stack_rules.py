"""kai-queue-tree, kai-gpu-sharing-enabled and tenant-queue-binding over whole stacks."""

from __future__ import annotations

from typing import Any

import pytest
from policy_builders import FACTS, UNKNOWN, container, deployment, pod, queue, release, res
from pulumi_policy.proxy import UnknownValueError

from kaistack.guardrails.facts import StackFacts, TenantFacts
from kaistack.guardrails.podspec import Res
from kaistack.guardrails.rules import kai_no_bypass
from kaistack.guardrails.settings import Settings, settings
from kaistack.guardrails.stack_rules import (
    Finding,
    kai_gpu_sharing_enabled,
    kai_queue_tree,
    stack_facts,
    tenant_queue_binding,
)

NO_FACTS = StackFacts()


def _queues(*queues: dict[str, Any]) -> list[Res]:
    return [res("Queue", q) for q in queues]


def _messages(findings: list[Finding]) -> list[str]:
    return [f.message for f in findings]


# --- kai-queue-tree ------------------------------------------------------------------------------


def test_a_well_formed_queue_tree_passes() -> None:
    tree = _queues(queue("org", gpu=(4, 4, 1)), queue("a", "org", gpu=(2, 4, 1)), queue("b", "org", gpu=(2, 2, 1)))
    assert kai_queue_tree(tree, Settings(), NO_FACTS) == []


def test_a_queue_with_no_outputs_yet_is_not_judged() -> None:
    """In the preview of a first `pulumi up` on kind or EKS the cluster's kubeconfig is unknown, and the engine gives
    each Kubernetes object empty outputs (pulumi/pulumi provider_plugin.go Create of an unconfigured provider),
    which AnalyzeStack receives. A Queue without its own `kind` is such an object, not one missing its blocks."""
    empty = Res(type="kubernetes:scheduling.run.ai/v2:Queue", name="kaistack-queues-team", props={}, urn="urn:q")
    assert kai_queue_tree([empty], Settings(), NO_FACTS) == []


def test_missing_parent_is_flagged_against_the_child() -> None:
    found = kai_queue_tree(_queues(queue("a", "ghost")), Settings(), NO_FACTS)
    assert len(found) == 1
    assert "parentQueue ghost does not exist" in found[0].message
    assert found[0].subject is not None
    assert found[0].subject.name == "a"


def test_parent_created_by_the_kai_chart_exists() -> None:
    kai = res("Release", release("kai", "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler", {}))
    assert kai_queue_tree([kai, *_queues(queue("a", "default-parent-queue"))], Settings(), NO_FACTS) == []


def test_parents_outside_the_stack_are_configurable() -> None:
    found = kai_queue_tree(_queues(queue("a", "org")), settings({"externalQueues": ["org"]}), NO_FACTS)
    assert found == []


def test_parent_cycle_is_flagged_once() -> None:
    found = _messages(kai_queue_tree(_queues(queue("a", "b"), queue("b", "a")), Settings(), NO_FACTS))
    assert found == ["queues form a parentQueue cycle: a -> b -> a"]


def test_each_cycle_is_flagged_once_at_the_end_of_a_long_chain() -> None:
    """3,000 chained queues ending in a loop, and a separate loop: two findings (the search is linear)."""
    chain = [queue(f"q{i}", f"q{i + 1}") for i in range(3000)]
    chain.append(queue("q3000", "q2998"))
    found = _messages(kai_queue_tree(_queues(*chain, queue("x", "y"), queue("y", "x")), Settings(), NO_FACTS))
    cycles = [m for m in found if "cycle" in m]
    assert cycles == [
        "queues form a parentQueue cycle: q2998 -> q2999 -> q3000 -> q2998",
        "queues form a parentQueue cycle: x -> y -> x",
    ]


def test_missing_resource_block_is_flagged() -> None:
    q = queue("a")
    del q["spec"]["resources"]["memory"]
    found = _messages(kai_queue_tree(_queues(q), Settings(), NO_FACTS))
    assert found == [
        "queue a: spec.resources.memory is missing; write quota, limit and overQuotaWeight (KAI reads an omitted "
        "limit as 0: no resources allowed; -1 means unlimited)"
    ]


@pytest.mark.parametrize("field", ["quota", "limit", "overQuotaWeight"])
def test_missing_resource_field_is_flagged(field: str) -> None:
    q = queue("a")
    del q["spec"]["resources"]["gpu"][field]
    found = _messages(kai_queue_tree(_queues(q), Settings(), NO_FACTS))
    assert len(found) == 1
    assert f"spec.resources.gpu.{field} is missing (KAI reads an omitted field as 0" in found[0]


def test_limit_below_quota_is_flagged() -> None:
    found = _messages(kai_queue_tree(_queues(queue("a", gpu=(4, 2, 1))), Settings(), NO_FACTS))
    assert found == ["queue a: gpu limit (2) is below its quota (4); use limit >= quota"]


def test_negative_values_other_than_unlimited_are_flagged() -> None:
    found = _messages(kai_queue_tree(_queues(queue("a", gpu=(-2, -1, 1))), Settings(), NO_FACTS))
    assert found == ["queue a: spec.resources.gpu.quota is -2; use -1 (unlimited) or >= 0"]


def test_children_quotas_above_the_parent_quota_are_flagged() -> None:
    tree = _queues(queue("org", gpu=(2, -1, 1)), queue("a", "org", gpu=(2, -1, 1)), queue("b", "org", gpu=(1, -1, 1)))
    found = kai_queue_tree(tree, Settings(), NO_FACTS)
    assert _messages(found) == ["queue org: its children's gpu quotas (a 2, b 1; sum 3) exceed its own gpu quota 2"]
    assert found[0].subject is not None
    assert found[0].subject.name == "org"


def test_unlimited_child_quota_under_a_finite_parent_is_flagged() -> None:
    tree = _queues(queue("org", gpu=(2, -1, 1)), queue("a", "org"))
    found = _messages(kai_queue_tree(tree, Settings(), NO_FACTS))
    assert found == [
        "queue org: child queue(s) a have unlimited gpu quota (-1) under the parent's gpu quota 2; give them "
        "quotas that sum to at most 2"
    ]


def test_children_of_an_unlimited_parent_are_not_summed() -> None:
    tree = _queues(queue("org"), queue("a", "org", gpu=(8, 8, 1)), queue("b", "org", gpu=(8, 8, 1)))
    assert kai_queue_tree(tree, Settings(), NO_FACTS) == []


@pytest.mark.parametrize(
    ("gpu", "expected"),
    [
        # A limit of 0 is a limit (nothing allowed), not "unset": below a positive quota it is flagged.
        ((1, 0, 1), ["queue a: gpu limit (0) is below its quota (1); use limit >= quota"]),
        ((0.5, 0.25, 1), ["queue a: gpu limit (0.25) is below its quota (0.5); use limit >= quota"]),
        ((0, 0, 0), []),  # all zero: a queue that may use nothing, and says so
        ((0.5, -1, 1), []),
        ((-0.5, -1, 1), ["queue a: spec.resources.gpu.quota is -0.5; use -1 (unlimited) or >= 0"]),
        ((-1, -1, -1), ["queue a: spec.resources.gpu.overQuotaWeight is -1; use >= 0"]),
    ],
)
def test_quota_limit_and_weight_at_their_boundaries(gpu: tuple[float, float, float], expected: list[str]) -> None:
    assert _messages(kai_queue_tree(_queues(queue("a", gpu=gpu)), Settings(), NO_FACTS)) == expected


@pytest.mark.parametrize("field", ["quota", "limit"])
def test_a_missing_field_under_a_finite_parent_is_flagged_once_not_summed(field: str) -> None:
    child = queue("a", "org", gpu=(1, 2, 1))
    del child["spec"]["resources"]["gpu"][field]
    found = _messages(kai_queue_tree(_queues(queue("org", gpu=(2, 2, 1)), child), Settings(), NO_FACTS))
    assert len(found) == 1
    assert f"spec.resources.gpu.{field} is missing" in found[0]


def test_a_parent_missing_its_quota_is_flagged_once_with_its_children() -> None:
    parent = queue("org", gpu=(2, 2, 1))
    del parent["spec"]["resources"]["gpu"]["quota"]
    found = _messages(kai_queue_tree(_queues(parent, queue("a", "org", gpu=(1, 1, 1))), Settings(), NO_FACTS))
    assert len(found) == 1
    assert "queue org: spec.resources.gpu.quota is missing" in found[0]


def test_a_custom_default_parent_queue_of_the_kai_release_exists() -> None:
    """The chart's defaultQueue.parentName names the parent it creates; a Queue under it has a parent."""
    values = {"defaultQueue": {"parentName": "root", "childName": "fallback"}}
    kai = res("Release", release("kai", "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler", values))
    assert kai_queue_tree([kai, *_queues(queue("a", "root"))], Settings(), NO_FACTS) == []


def test_unknown_quota_is_raised_for_the_sdk() -> None:
    with pytest.raises(UnknownValueError) as err:
        kai_queue_tree(_queues(queue("a", gpu=(UNKNOWN, -1, 1))), Settings(), NO_FACTS)  # type: ignore[arg-type]
    assert "quota" in err.value.message


# --- kai-gpu-sharing-enabled ---------------------------------------------------------------------

KAI_CHART = "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler"


def _sharing_pod() -> Res:
    return res("Pod", pod(name="share", annotations={"gpu-fraction": "0.5"}, containers=[container()]))


def test_sharing_pod_with_gpu_sharing_off_in_the_kai_release_is_flagged() -> None:
    kai = res("Release", release("kai-scheduler", KAI_CHART, {"global": {"gpuSharing": False}}), name="kai")
    found = kai_gpu_sharing_enabled([kai, _sharing_pod()], Settings(), NO_FACTS)
    assert _messages(found) == [
        "Pod/share asks for a GPU share (gpu-fraction: 0.5) but the KAI release kai does not set values "
        "global.gpuSharing: true: KAI's admission webhook rejects shared-GPU pods; turn GPU sharing on "
        "(kaistack:kai.sharing: fractions)"
    ]
    assert found[0].subject is not None
    assert found[0].subject.name == "share"


def test_a_gpu_memory_pod_is_a_sharing_pod_too() -> None:
    kai = res("Release", release("kai-scheduler", KAI_CHART, {"global": {"gpuSharing": False}}), name="kai")
    memory = res("Pod", pod(name="share", annotations={"gpu-memory": "2000"}, containers=[container()]))
    found = _messages(kai_gpu_sharing_enabled([kai, memory], Settings(), NO_FACTS))
    assert len(found) == 1
    assert "asks for a GPU share (gpu-memory: 2000)" in found[0]


def test_sharing_pod_with_gpu_sharing_on_passes() -> None:
    kai = res("Release", release("kai-scheduler", KAI_CHART, {"global": {"gpuSharing": True}}))
    assert kai_gpu_sharing_enabled([kai, _sharing_pod()], Settings(), NO_FACTS) == []


@pytest.mark.parametrize("value", ["True", "yes", "on", "Y", " true ", "true # on for the fractions"])
def test_a_string_the_chart_prints_as_a_yaml_true_turns_sharing_on(value: str) -> None:
    """The chart prints the value into the Config's YAML (KAI-Scheduler@v0.17.0
    deployments/kai-scheduler/templates/_helpers.tpl:246), which go-yaml v2 reads as YAML 1.1: these are true."""
    kai = res("Release", release("kai-scheduler", KAI_CHART, {"global": {"gpuSharing": value}}))
    assert kai_gpu_sharing_enabled([kai, _sharing_pod()], Settings(), NO_FACTS) == []


@pytest.mark.parametrize("value", ["false", "no", "", "1", '"true"', 1, None, {"on": True}])
def test_a_value_the_chart_does_not_read_as_true_leaves_sharing_off(value: object) -> None:
    """`| default false` turns Go's empty values false; "1" prints a number and '"true"' a quoted string, which
    the Config CRD's boolean field refuses."""
    kai = res("Release", release("kai-scheduler", KAI_CHART, {"global": {"gpuSharing": value}}))
    assert kai_gpu_sharing_enabled([kai, _sharing_pod()], Settings(), NO_FACTS)


def test_kai_release_without_the_value_keeps_the_chart_default_off() -> None:
    kai = res("Release", release("kai-scheduler", KAI_CHART, {}))
    assert kai_gpu_sharing_enabled([kai, _sharing_pod()], Settings(), NO_FACTS)


def test_stack_config_with_gpu_sharing_off_is_used_without_a_kai_release() -> None:
    facts = StackFacts(gpu_sharing=False, source="stack dev")
    found = _messages(kai_gpu_sharing_enabled([_sharing_pod()], Settings(), facts))
    assert len(found) == 1
    assert "kaistack:kai.sharing is off (stack dev)" in found[0]


def test_nothing_is_claimed_when_kai_is_not_in_the_stack() -> None:
    assert kai_gpu_sharing_enabled([_sharing_pod()], Settings(), NO_FACTS) == []


def test_stacks_without_shared_gpus_need_no_sharing() -> None:
    kai = res("Release", release("kai-scheduler", KAI_CHART, {}))
    assert kai_gpu_sharing_enabled([kai, res("Pod", pod())], Settings(), NO_FACTS) == []


# --- tenant-queue-binding ------------------------------------------------------------------------

TENANT_PROVIDER = (
    "urn:pulumi:dev::kaistack::kaistack:index:Tenant$pulumi:providers:kubernetes::kaistack-alpha-provider::id1"
)


def test_tenant_workload_on_its_own_queue_passes() -> None:
    r = res("Pod", pod(queue="team-a", labels={"kaistack.io/tenant": "alpha"}))
    assert tenant_queue_binding([r], Settings(), FACTS) == []


def test_tenant_workload_on_another_tenants_queue_is_flagged() -> None:
    r = res("Pod", pod(name="p", queue="team-b", labels={"kaistack.io/tenant": "alpha"}))
    assert _messages(tenant_queue_binding([r], Settings(), FACTS)) == [
        "Pod/p of tenant alpha (label kaistack.io/tenant) uses queue team-b (metadata.labels) (it belongs to tenant "
        "beta); tenant alpha may only use its own queues: team-a"
    ]


def test_a_tenant_pod_reaching_another_tenants_queue_through_a_project_label_is_flagged() -> None:
    """Without a queue label KAI takes the queue from the `project` label (KAI@v0.17.0 default_grouper.go:134-166)."""
    r = res("Pod", pod(name="p", queue=None, labels={"kaistack.io/tenant": "alpha", "project": "team-b"}))
    assert _messages(tenant_queue_binding([r], Settings(), FACTS)) == [
        "Pod/p of tenant alpha (label kaistack.io/tenant) uses queue team-b (metadata.labels project) (it belongs to "
        "tenant beta); tenant alpha may only use its own queues: team-a"
    ]


def _tenant_patch(labels: dict[str, str]) -> Res:
    token = "kubernetes:apps/v1:DeploymentPatch"
    props = {
        "metadata": {"name": "d", "namespace": "default", "labels": {"kaistack.io/tenant": "alpha", **labels}},
        "spec": {"template": {"metadata": {"labels": labels}, "spec": {"containers": [container()]}}},
    }
    return Res(type=token, name="d", props=props, urn=f"urn:pulumi:dev::kaistack::{token}::d")


def test_a_tenant_patch_setting_another_tenants_queue_is_flagged() -> None:
    found = _messages(tenant_queue_binding([_tenant_patch({"kai.scheduler/queue": "team-b"})], Settings(), FACTS))
    assert len(found) == 1
    assert "uses queue team-b" in found[0]
    assert "(it belongs to tenant beta)" in found[0]


def test_a_tenant_patch_that_leaves_the_queue_alone_passes() -> None:
    assert tenant_queue_binding([_tenant_patch({})], Settings(), FACTS) == []


def test_the_queue_label_key_setting_is_the_key_tenant_queue_binding_reads() -> None:
    r = res("Pod", pod(queue=None, labels={"kaistack.io/tenant": "alpha", "acme/queue": "team-b"}))
    found = _messages(tenant_queue_binding([r], settings({"queueLabelKey": "acme/queue"}), FACTS))
    assert len(found) == 1
    assert "uses queue team-b" in found[0]


def test_tenant_is_known_from_the_vcluster_provider() -> None:
    r = res("Pod", pod(name="p", queue="team-b"), provider=TENANT_PROVIDER)
    found = _messages(tenant_queue_binding([r], Settings(), FACTS))
    assert len(found) == 1
    assert "of tenant alpha (provider kaistack-alpha-provider)" in found[0]


def test_the_longest_tenant_name_in_a_provider_name_is_its_tenant() -> None:
    """Tenant `ml-prod`'s provider is `kaistack-ml-prod-provider`, which holds `ml` too; declared first, `ml` had
    taken its workloads, and the mandatory policy refused a correct stack."""
    facts = StackFacts(
        leaf_queues=frozenset({"ml", "ml-prod"}),
        tenants=(TenantFacts("ml", "vcluster-ml", ("ml",)), TenantFacts("ml-prod", "vcluster-ml-prod", ("ml-prod",))),
    )
    provider = TENANT_PROVIDER.replace("kaistack-alpha-provider", "kaistack-ml-prod-provider")
    r = res("Pod", pod(name="serve", queue="ml-prod"), provider=provider)
    assert tenant_queue_binding([r], Settings(), facts) == []


@pytest.mark.parametrize("other", ["provider", "kaistack"])
def test_a_tenant_named_like_a_word_of_the_platform_or_provider_name_is_not_taken_for_another(other: str) -> None:
    facts = StackFacts(
        leaf_queues=frozenset({"ml", "o"}),
        tenants=(TenantFacts(other, f"vcluster-{other}", ("o",)), TenantFacts("ml", "vcluster-ml", ("ml",))),
    )
    provider = TENANT_PROVIDER.replace("kaistack-alpha-provider", "kaistack-ml-provider")
    r = res("Pod", pod(name="serve", queue="ml"), provider=provider)
    assert tenant_queue_binding([r], Settings(), facts) == []


def test_tenant_is_known_from_the_host_namespace() -> None:
    r = res("Pod", pod(name="p", namespace="vcluster-beta", queue="team-a"))
    found = _messages(tenant_queue_binding([r], Settings(), FACTS))
    assert len(found) == 1
    assert "of tenant beta (host namespace vcluster-beta)" in found[0]


def test_a_host_deployment_in_a_tenants_namespace_is_judged_by_its_own_queue_label() -> None:
    """Written straight into the host namespace it keeps its owners, and KAI's pod-grouper takes the top
    owner's queue label before the pod's (KAI@v0.17.0 pkg/podgrouper/podgrouper/plugins/defaultgrouper/
    default_grouper.go:134-147): the pods run in queue test, whatever their template says."""
    props = deployment(name="d", namespace="vcluster-beta", queue="team-b", top_labels={"kai.scheduler/queue": "test"})
    found = _messages(tenant_queue_binding([res("Deployment", props)], Settings(), FACTS))
    assert len(found) == 1
    assert "of tenant beta (host namespace vcluster-beta) uses queue test (metadata.labels)" in found[0]


def test_a_tenant_label_does_not_make_a_host_namespace_deployment_a_synced_one() -> None:
    """The kaistack.io/tenant label names the tenant; where the Deployment runs decides what KAI reads."""
    labels = {"kai.scheduler/queue": "test", "kaistack.io/tenant": "beta"}
    props = deployment(name="d", namespace="vcluster-beta", queue="team-b", top_labels=labels)
    found = _messages(tenant_queue_binding([res("Deployment", props)], Settings(), FACTS))
    assert len(found) == 1
    assert "uses queue test (metadata.labels)" in found[0]


def test_a_host_deployment_in_a_tenants_namespace_is_refused_as_its_admission_would() -> None:
    """The tenant's admission policy refuses pods with owners there (kaistack.guardrails.admission)."""
    props = deployment(name="d", namespace="vcluster-beta", queue="team-b")
    found = kai_no_bypass(res("Deployment", props), Settings(), FACTS)
    assert found == [
        "Deployment d runs pods in tenant beta's host namespace vcluster-beta, where the admission policy refuses "
        "pods with owners (KAI would take their queue and priority from the owner, which it cannot see): create it "
        "inside the tenant's vCluster (tenant: beta) or in another namespace"
    ]


def test_a_bare_pod_in_a_tenants_host_namespace_has_no_owner_to_refuse() -> None:
    assert kai_no_bypass(res("Pod", pod(namespace="vcluster-beta", queue="team-b")), Settings(), FACTS) == []


def test_the_vclusters_own_statefulset_in_its_host_namespace_is_not_refused() -> None:
    """The admission policy lets the StatefulSet controller's pods of this set through (admission.match_conditions)."""
    sts = deployment(name="beta", namespace="vcluster-beta", queue="team-b")
    sts["kind"] = "StatefulSet"
    assert kai_no_bypass(res("StatefulSet", sts), Settings(), FACTS) == []


def test_another_statefulset_in_a_tenants_host_namespace_is_refused() -> None:
    """The admission policy skips only the vCluster's own StatefulSet's pods (named after the release, which kaistack
    names after the tenant): another set's pods have an owner and are refused there."""
    sts = deployment(name="db", namespace="vcluster-beta", queue="team-b")
    sts["kind"] = "StatefulSet"
    assert kai_no_bypass(res("StatefulSet", sts), Settings(), FACTS) == [
        "StatefulSet db runs pods in tenant beta's host namespace vcluster-beta, where the admission policy refuses "
        "pods with owners (KAI would take their queue and priority from the owner, which it cannot see): create it "
        "inside the tenant's vCluster (tenant: beta) or in another namespace"
    ]


def test_a_pod_patch_in_a_tenants_host_namespace_creates_no_owned_pods() -> None:
    token = "kubernetes:core/v1:PodPatch"
    props = {"metadata": {"name": "p", "namespace": "vcluster-beta"}, "spec": {"containers": [{"name": "m"}]}}
    patch = Res(type=token, name="p", props=props, urn=f"urn:pulumi:dev::kaistack::{token}::p")
    assert kai_no_bypass(patch, Settings(), FACTS) == []


def test_the_tenant_provider_decides_the_tenant_over_a_namespace_named_like_another_tenants() -> None:
    """Created through alpha's vCluster, its pods land in vcluster-alpha whatever its virtual namespace."""
    props = deployment(name="d", namespace="vcluster-beta", queue="team-a")
    r = res("Deployment", props, provider=TENANT_PROVIDER)
    assert tenant_queue_binding([r], Settings(), FACTS) == []
    assert kai_no_bypass(r, Settings(), FACTS) == []


def test_a_tenant_deployment_through_its_vcluster_is_judged_by_its_pods_label() -> None:
    """Through the vCluster (setOwner: false) the host sees bare pods: the Deployment's label never reaches KAI."""
    props = deployment(name="d", queue="team-a", top_labels={"kai.scheduler/queue": "team-b"})
    assert tenant_queue_binding([res("Deployment", props, provider=TENANT_PROVIDER)], Settings(), FACTS) == []


def test_tenant_workload_without_a_queue_is_flagged() -> None:
    r = res("Pod", pod(name="p", queue=None, labels={"kaistack.io/tenant": "alpha"}))
    found = _messages(tenant_queue_binding([r], Settings(), FACTS))
    assert len(found) == 1
    assert "names no queue, so KAI would use default-queue" in found[0]


def test_undeclared_tenant_is_flagged() -> None:
    r = res("Pod", pod(name="p", labels={"kaistack.io/tenant": "gamma"}))
    found = _messages(tenant_queue_binding([r], Settings(), FACTS))
    assert found == ["Pod/p: tenant gamma (label kaistack.io/tenant) is not a declared tenant (alpha, beta)"]


def test_host_workloads_are_not_bound() -> None:
    assert tenant_queue_binding([res("Pod", pod(queue="team-b"))], Settings(), FACTS) == []


def test_tenants_come_from_the_platform_component() -> None:
    platform = res("Platform", {"tenants": [{"name": "alpha", "namespace": "vc-alpha", "queues": ["q-alpha"]}]})
    workload = res("Pod", pod(name="p", queue="team-a", labels={"kaistack.io/tenant": "alpha"}))
    resources = [platform, workload]
    found = _messages(tenant_queue_binding(resources, Settings(), stack_facts(resources, NO_FACTS)))
    assert len(found) == 1
    assert "may only use its own queues: q-alpha" in found[0]


def test_configured_tenants_override_the_stack() -> None:
    s = settings({"tenants": [{"name": "alpha", "queues": ["team-b"]}]})
    r = res("Pod", pod(queue="team-b", labels={"kaistack.io/tenant": "alpha"}))
    assert tenant_queue_binding([r], s, FACTS) == []


def test_host_provider_named_like_a_tenant_does_not_make_host_workloads_tenant_workloads() -> None:
    """Only a provider created by a Tenant component binds: `kaistack-cluster-provider` is not tenant `cluster`."""
    facts = StackFacts(tenants=(TenantFacts("cluster", "vcluster-cluster", ("q",)),))
    kind = "kaistack:index:KindCluster$pulumi:providers:kubernetes"
    host = f"urn:pulumi:dev::kaistack::{kind}::kaistack-cluster-provider::id"
    r = res("Pod", pod(queue="test"), provider=host)
    assert tenant_queue_binding([r], Settings(), facts) == []


def test_workloads_parented_to_a_tenant_component_belong_to_it() -> None:
    parent = "urn:pulumi:dev::kaistack::kaistack:index:Platform$kaistack:index:Tenant::kaistack-beta"
    r = res("Pod", pod(name="p", queue="team-a"), parent=parent)
    found = _messages(tenant_queue_binding([r], Settings(), FACTS))
    assert len(found) == 1
    assert "of tenant beta (parent kaistack-beta)" in found[0]


def test_a_tenant_component_as_parent_is_the_tenant_its_whole_name_ends_with() -> None:
    """`kaistack-team-a` is Tenant team-a itself (no child word to drop): not tenant `team`."""
    facts = StackFacts(
        leaf_queues=frozenset({"qt", "qa"}),
        tenants=(TenantFacts("team", "vcluster-team", ("qt",)), TenantFacts("team-a", "vcluster-team-a", ("qa",))),
    )
    parent = "urn:pulumi:dev::kaistack::kaistack:index:Platform$kaistack:index:Tenant::kaistack-team-a"
    r = res("Pod", pod(name="serve", queue="qa"), parent=parent)
    assert tenant_queue_binding([r], Settings(), facts) == []


# --- kai-no-bypass: which pods it judges and what it lets through (mutation tests found these unasserted) ----


def _pod(namespace: str = "default", spec: dict[str, Any] | None = None, **template: Any) -> dict[str, Any]:
    props = pod(namespace=namespace, **template)
    props["spec"].update(spec or {})
    return props


def test_a_tenant_pod_off_kai_without_gpus_is_still_judged_for_a_system_priority() -> None:
    props = _pod(
        "vcluster-beta", {"priorityClassName": "system-node-critical"}, scheduler=None, containers=[container()]
    )
    found = kai_no_bypass(res("Pod", props), Settings(), FACTS)
    assert len(found) == 1
    assert "'system-node-critical' on a pod of tenant beta: system-* classes are for the host's own pods" in found[0]


def test_a_host_kai_pod_without_gpus_on_a_preset_node_is_flagged() -> None:
    props = _pod(spec={"nodeName": "n1"}, containers=[container()])
    found = kai_no_bypass(res("Pod", props), Settings(), FACTS)
    assert len(found) == 1
    assert "spec.nodeName is 'n1': a pod with a preset node is run by the kubelet without any scheduler" in found[0]


def test_a_host_gpu_pod_off_kai_on_a_preset_node_is_flagged() -> None:
    props = _pod(spec={"nodeName": "n1"}, scheduler="default-scheduler")
    assert len(kai_no_bypass(res("Pod", props), Settings(), FACTS)) == 1


def test_a_host_cpu_pod_off_kai_is_not_this_policys() -> None:
    props = _pod(spec={"nodeName": "n1"}, scheduler="default-scheduler", containers=[container()])
    assert kai_no_bypass(res("Pod", props), Settings(), FACTS) == []


def test_a_host_pod_naming_a_podgroup_is_no_tenants_bypass() -> None:
    props = _pod(annotations={"pod-group-name": "pg-x"})
    assert kai_no_bypass(res("Pod", props), Settings(), FACTS) == []


def test_a_pod_in_a_configured_tenant_namespace_is_that_tenants() -> None:
    props = _pod("team-ns", annotations={"pod-group-name": "pg-x"})
    found = kai_no_bypass(res("Pod", props), settings({"tenantNamespaces": ["team-ns"]}), FACTS)
    assert len(found) == 1
    assert "'pg-x' on a pod of tenant team-ns" in found[0]


def test_a_tenant_pod_may_name_its_own_gangs_podgroup_and_no_other() -> None:
    gang = "kaistack-beta-default-train"
    facts = StackFacts(tenants=(TenantFacts("beta", "vcluster-beta", ("team-b",), (gang,)),))
    own = _pod("vcluster-beta", queue="team-b", annotations={"pod-group-name": gang})
    other = _pod("vcluster-beta", queue="team-b", annotations={"pod-group-name": "kaistack-alpha-default-train"})
    assert kai_no_bypass(res("Pod", own), Settings(), facts) == []
    assert len(kai_no_bypass(res("Pod", other), Settings(), facts)) == 1


def test_a_tenant_pods_own_priority_class_passes() -> None:
    props = _pod("vcluster-beta", {"priorityClassName": "train"}, queue="team-b")
    assert kai_no_bypass(res("Pod", props), Settings(), FACTS) == []


def test_a_pod_with_owners_outside_every_tenants_host_namespace_is_not_refused() -> None:
    """A `kubectl get` dump's pods carry owners; only a tenant's host namespace refuses them."""
    props = _pod()
    props["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "u"}]
    assert kai_no_bypass(res("Pod", props), Settings(), FACTS) == []
