"""The pack's resource and stack rules (kaistack.guardrails.rules, stack_rules): behaviour a mutation run of the two
modules found unasserted."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from policy_builders import FACTS, KAI, container, deployment, pod, pod_template, queue, release, res

from kaistack.guardrails.facts import StackFacts, TenantFacts
from kaistack.guardrails.podspec import Res
from kaistack.guardrails.rules import (
    gpu_memory_utilization_within_fraction,
    kai_gpu_sharing_annotations,
    kai_no_bypass,
    kai_queue_label,
    kai_scheduler_name,
)
from kaistack.guardrails.settings import Settings, settings
from kaistack.guardrails.stack_rules import kai_gpu_sharing_enabled, kai_queue_tree, tenant_queue_binding
from kaistack.ops.lint import lint_paths

NO_FACTS = StackFacts()
TENANT_PROVIDER = (
    "urn:pulumi:dev::kaistack::kaistack:index:Tenant$pulumi:providers:kubernetes::kaistack-alpha-provider::id1"
)
OWNER = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "o", "uid": "u"}]


def _vllm(annotations: dict[str, str], **c: Any) -> Res:
    props = deployment(annotations=annotations, containers=[container(name="vllm", image="vllm/vllm-openai", **c)])
    return res("Deployment", props)


# --- kai-scheduler-name --------------------------------------------------------------------------


def test_the_queue_label_key_setting_makes_a_pod_labelled_with_it_a_kai_pod() -> None:
    props = pod(scheduler=None, queue=None, labels={"acme/queue": "team-a"}, containers=[container()])
    found = kai_scheduler_name(res("Pod", props), settings({"queueLabelKey": "acme/queue"}), NO_FACTS)
    assert len(found) == 1
    assert "the pod is labelled for a KAI queue (acme/queue)" in found[0]


def test_the_scheduler_finding_gives_the_reason_then_the_fix() -> None:
    found = kai_scheduler_name(res("Pod", pod(scheduler=None)), Settings(), NO_FACTS)
    assert len(found) == 1
    assert f"but the pod requests GPUs: set schedulerName: {KAI} " in found[0]


# --- kai-queue-label -----------------------------------------------------------------------------


def test_a_pod_without_a_queue_label_is_told_to_label_itself() -> None:
    found = kai_queue_label(res("Pod", pod(queue=None)), Settings(), NO_FACTS)
    assert len(found) == 1
    assert "no kai.scheduler/queue label in metadata.labels: KAI puts the pod in default-queue" in found[0]


def test_a_deployment_through_a_tenants_vcluster_provider_needs_the_label_on_its_pods() -> None:
    """The provider alone (no kaistack.io/tenant label) says the Deployment goes through the vCluster, whose host
    sees bare pods (setOwner: false): the Deployment's own label never reaches KAI."""
    props = deployment(queue=None, top_labels={"kai.scheduler/queue": "team-a"})
    found = kai_queue_label(res("Deployment", props, provider=TENANT_PROVIDER), Settings(), FACTS)
    assert len(found) == 1
    assert "inside tenant alpha's vCluster the host sees bare pods" in found[0]
    assert found[0].endswith("add it to spec.template.metadata.labels")


# --- kai-gpu-sharing-annotations -----------------------------------------------------------------


@pytest.mark.parametrize(
    "fraction", ["1.5", "0.001"], ids=["a fraction KAI refuses", "a fraction under kaistack's quota unit"]
)
def test_a_deployments_share_annotation_problem_names_its_pod_templates_annotations(fraction: str) -> None:
    props = deployment(annotations={"gpu-fraction": fraction}, containers=[container()])
    found = kai_gpu_sharing_annotations(res("Deployment", props), Settings(), NO_FACTS)
    assert len(found) == 1
    assert found[0].startswith(f"spec.template.metadata.annotations gpu-fraction: {fraction!r} ")


def test_a_share_annotation_also_on_the_pod_template_is_not_misplaced() -> None:
    props = deployment(annotations={"gpu-fraction": "0.5"}, containers=[container()])
    props["metadata"]["annotations"] = {"gpu-fraction": "0.5"}
    assert kai_gpu_sharing_annotations(res("Deployment", props), Settings(), NO_FACTS) == []


def test_an_annotation_keyed_by_a_yaml_integer_in_a_searched_template_is_linted_without_error(tmp_path: Path) -> None:
    """YAML reads `1: x` as an integer key. `kaistack lint` makes it text only in the templates of kinds it knows the
    shape of (kaistack.ops.lint_shapes); a JobSet's templates reach the rules as found, and an integer key is no
    NvFractions annotation."""
    template = pod_template(annotations={"gpu-fraction": "0.5", 1: "x"}, containers=[container()])  # type: ignore[dict-item]
    manifest = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "ml"},
        "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": template}}}]},
    }
    path = tmp_path / "jobset.yaml"
    path.write_text(yaml.safe_dump(manifest))
    result = lint_paths([str(path)], NO_FACTS)
    assert result.errors == []
    assert result.violations == []


# --- gpu-memory-utilization-within-fraction ------------------------------------------------------


def test_vllms_default_utilization_equal_to_the_share_passes() -> None:
    share = Settings().vllm_default_utilization
    r = _vllm({"gpu-fraction": f"{share:g}"}, args=["--model", "m"])
    assert gpu_memory_utilization_within_fraction(r, Settings(), NO_FACTS) == []


def test_a_gpu_memory_share_is_judged_against_the_largest_of_the_stacks_gpu_pools() -> None:
    """vLLM takes its utilization of whichever GPU the pod lands on: 8000 MiB is 0.7 of the small GPU, and vLLM at
    0.5 of the large one would take 40960 MiB."""
    facts = dataclasses.replace(FACTS, gpu_memory_mib=(11441, 81920))
    found = gpu_memory_utilization_within_fraction(
        _vllm({"gpu-memory": "8000"}, args=["--gpu-memory-utilization=0.5"]), Settings(), facts
    )
    assert len(found) == 1
    assert "gpu-memory 8000 MiB of a 81920 MiB GPU" in found[0]


def test_the_suggested_utilization_is_the_share_rounded_down_to_a_thousandth() -> None:
    memory, gpu = 10169, 11441  # a share of 0.88882..., whose thousandths end in .8
    facts = dataclasses.replace(FACTS, gpu_memory_mib=(gpu,))
    found = gpu_memory_utilization_within_fraction(
        _vllm({"gpu-memory": str(memory)}, args=["--gpu-memory-utilization=0.95"]), Settings(), facts
    )
    assert len(found) == 1
    suggested = re.search(r"use at most ([0-9.]+)$", found[0])
    assert suggested is not None
    assert memory / gpu - 0.001 < float(suggested.group(1)) <= memory / gpu


# --- kai-no-bypass -------------------------------------------------------------------------------


def _tenant_pod(namespace: str = "vcluster-beta", **template: Any) -> dict[str, Any]:
    return pod(namespace=namespace, queue="team-b", **template)


@pytest.mark.parametrize(
    ("s", "facts"),
    [
        (settings({"queueLabelKey": "acme/queue"}), FACTS),
        (Settings(), dataclasses.replace(FACTS, queue_label_key="acme/queue")),
    ],
    ids=["from the policy settings", "from the stack"],
)
def test_the_pod_group_finding_names_the_queue_label_key_in_use(s: Settings, facts: StackFacts) -> None:
    props = _tenant_pod(annotations={"pod-group-name": "pg-x"})
    found = kai_no_bypass(res("Pod", props), s, facts)
    assert len(found) == 1
    assert "use the acme/queue label for the queue" in found[0]


def test_the_tenant_a_pod_was_created_through_outranks_a_configured_tenant_namespace() -> None:
    """Created through alpha's vCluster provider, the pod is alpha's whatever its virtual namespace is called."""
    props = _tenant_pod("team-ns", annotations={"pod-group-name": "pg-x"})
    found = kai_no_bypass(
        res("Pod", props, provider=TENANT_PROVIDER), settings({"tenantNamespaces": ["team-ns"]}), FACTS
    )
    assert len(found) == 1
    assert "'pg-x' on a pod of tenant alpha:" in found[0]


def test_a_statefulset_with_owners_in_a_tenants_host_namespace_is_not_refused() -> None:
    """The admission policy refuses pods with owners, and lets the StatefulSet controller's pods through
    (admission.match_conditions): a StatefulSet's own ownerReferences are not a pod's."""
    sts = deployment(name="beta", namespace="vcluster-beta", queue="team-b")
    sts["kind"] = "StatefulSet"
    sts["metadata"]["ownerReferences"] = OWNER
    assert kai_no_bypass(res("StatefulSet", sts), Settings(), FACTS) == []


def test_a_pod_template_object_in_a_tenants_host_namespace_runs_no_pods() -> None:
    token = "kubernetes:core/v1:PodTemplate"
    props = {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "t", "namespace": "vcluster-beta"},
        "template": pod_template(queue="team-b"),
    }
    template = Res(type=token, name="t", props=props, urn=f"urn:pulumi:dev::kaistack::{token}::t")
    assert kai_no_bypass(template, Settings(), FACTS) == []


def test_a_renamed_time_slice_in_a_tenant_pods_requests_alone_is_flagged() -> None:
    """The host's admission reads requests as well as limits (kaistack.guardrails.admission_cel.RENAMED_GPU)."""
    c = container()
    c["resources"]["requests"]["nvidia.com/gpu.shared"] = "1"
    found = kai_no_bypass(res("Pod", _tenant_pod(containers=[c])), Settings(), FACTS)
    assert len(found) == 1
    assert found[0].startswith("nvidia.com/gpu.shared on a pod of tenant beta: renamed time slices")


# --- kai-queue-tree ------------------------------------------------------------------------------

KAI_CHART = "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler"


def _tree(*queues: dict[str, Any], values: dict[str, Any] | None = None) -> list[str]:
    kai = [res("Release", release("kai", KAI_CHART, values))] if values is not None else []
    return [f.message for f in kai_queue_tree([*kai, *(res("Queue", q) for q in queues)], Settings(), NO_FACTS)]


def test_a_queue_declared_twice_is_flagged() -> None:
    assert _tree(queue("a"), queue("a")) == ["queue a is declared twice"]


def test_a_queue_without_a_cpu_block_is_flagged() -> None:
    q = queue("a")
    del q["spec"]["resources"]["cpu"]
    found = _tree(q)
    assert len(found) == 1
    assert found[0].startswith("queue a: spec.resources.cpu is missing")


@pytest.mark.parametrize("quota", [True, "4"], ids=["a bool", "a string"])
def test_a_quota_that_is_not_a_number_is_flagged_as_such(quota: Any) -> None:
    found = _tree(queue("a", gpu=(quota, -1, 1)))
    assert len(found) == 1
    assert found[0].startswith("queue a: spec.resources.gpu.quota is not a number (")


def test_a_queue_leading_into_a_cycle_already_found_does_not_report_it_again() -> None:
    assert _tree(queue("c", "d"), queue("d", "c"), queue("x", "c")) == ["queues form a parentQueue cycle: c -> d -> c"]


def test_a_cycle_is_reported_against_the_queue_it_is_written_from() -> None:
    found = kai_queue_tree([res("Queue", queue("a", "b")), res("Queue", queue("b", "a"))], Settings(), NO_FACTS)
    assert len(found) == 1
    assert found[0].message.startswith("queues form a parentQueue cycle: a -> ")
    assert found[0].subject is not None
    assert found[0].subject.name == "a"


def test_a_queue_that_is_its_own_parent_is_a_cycle_and_not_its_own_child() -> None:
    found = _tree(queue("q", "q", gpu=(2, 2, 1)), queue("c", "q", gpu=(1, 1, 1)))
    assert found == ["queues form a parentQueue cycle: q -> q"]


def test_a_negative_child_quota_does_not_offset_its_siblings_excess() -> None:
    found = _tree(
        queue("org", gpu=(4, 4, 1)), queue("a", "org", gpu=(4.5, 4.5, 1)), queue("b", "org", gpu=(-0.5, -1, 1))
    )
    assert any("exceed its own gpu quota 4" in m for m in found)


@pytest.mark.parametrize(
    ("values", "parent"),
    [({}, "default-queue"), ({"defaultQueue": {"childName": "fallback"}}, "fallback")],
    ids=["the chart's default name", "a configured childName"],
)
def test_the_default_queue_the_kai_chart_creates_exists_as_a_parent(values: dict[str, Any], parent: str) -> None:
    """KAI@v0.17.0 deployments/kai-scheduler/values.yaml:317-319 (createDefaultQueue: true, childName:
    default-queue); templates/default-queue.yaml:30 names the child queue after childName."""
    assert _tree(queue("a", parent), values=values) == []


@pytest.mark.parametrize("create", [False, 0, None])
def test_a_kai_release_that_creates_no_default_queues_is_no_parent(create: Any) -> None:
    """KAI@v0.17.0 deployments/kai-scheduler/templates/default-queue.yaml:4 creates them only if createDefaultQueue
    is true to a Go template: false, 0, nil and empty values are not (Go's text/template, `{{if pipeline}}`)."""
    found = _tree(queue("a", "default-parent-queue"), values={"defaultQueue": {"createDefaultQueue": create}})
    assert len(found) == 1
    assert found[0].startswith("queue a: parentQueue default-parent-queue does not exist")


def test_a_kai_release_whose_create_default_queue_is_the_string_false_still_creates_them() -> None:
    """A non-empty string is true to `{{- if ...}}`: the chart creates the default queues for "false" (a quoted
    value), so a queue under default-parent-queue has its parent."""
    assert _tree(queue("a", "default-parent-queue"), values={"defaultQueue": {"createDefaultQueue": "false"}}) == []


# --- kai-gpu-sharing-enabled ---------------------------------------------------------------------


def test_gpu_sharing_set_as_the_string_true_passes() -> None:
    """`helm --set global.gpuSharing=true` through a values string: the chart's `default false` takes any truthy
    value (KAI@v0.17.0 deployments/kai-scheduler/templates/_helpers.tpl:246)."""
    kai = res("Release", release("kai-scheduler", KAI_CHART, {"global": {"gpuSharing": "true"}}))
    share = res("Pod", pod(name="share", annotations={"gpu-fraction": "0.5"}, containers=[container()]))
    assert kai_gpu_sharing_enabled([kai, share], Settings(), NO_FACTS) == []


# --- tenant-queue-binding ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("queues", "allowed"),
    [(("team-a", "team-c"), "team-a, team-c"), ((), "none (no queues are declared for it)")],
    ids=["two queues", "no queues"],
)
def test_a_tenant_on_anothers_queue_is_told_its_own_queues(queues: tuple[str, ...], allowed: str) -> None:
    facts = StackFacts(tenants=(TenantFacts("alpha", "vcluster-alpha", queues),))
    r = res("Pod", pod(name="p", queue="team-b", labels={"kaistack.io/tenant": "alpha"}))
    found = [f.message for f in tenant_queue_binding([r], Settings(), facts)]
    assert len(found) == 1
    assert found[0].endswith(f"tenant alpha may only use its own queues: {allowed}")
