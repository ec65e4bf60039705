"""kai-scheduler-name and kai-queue-label: KAI's workload contract (kai.md §4)."""

from __future__ import annotations

from typing import Any

import pytest
from policy_builders import FACTS, KAI, UNKNOWN, container, deployment, pod, pod_template, res
from pulumi_policy.proxy import UnknownValueError

from kaistack.guardrails.facts import StackFacts
from kaistack.guardrails.podspec import Res
from kaistack.guardrails.rules import kai_no_bypass, kai_queue_label, kai_scheduler_name
from kaistack.guardrails.settings import Settings, settings

NO_FACTS = StackFacts()


def _owner(kind: str, **template: Any) -> dict[str, Any]:
    t = pod_template(**template)
    spec = {
        "Deployment": {"template": t},
        "StatefulSet": {"template": t},
        "ReplicaSet": {"template": t},
        "DaemonSet": {"template": t},
        "Job": {"template": t},
        "CronJob": {"jobTemplate": {"spec": {"template": t}}},
        "PyTorchJob": {"pytorchReplicaSpecs": {"Master": {"template": t}, "Worker": {"template": t}}},
    }[kind]
    return {"metadata": {"name": "w", "namespace": "ml"}, "spec": spec}


# --- kai-scheduler-name --------------------------------------------------------------------------


def test_gpu_pod_without_scheduler_name_is_flagged() -> None:
    found = kai_scheduler_name(res("Pod", pod(scheduler=None)), Settings(), NO_FACTS)
    assert len(found) == 1
    assert "spec.schedulerName is unset (default-scheduler) but the pod requests GPUs" in found[0]


def test_gpu_pod_with_kai_scheduler_passes() -> None:
    assert kai_scheduler_name(res("Pod", pod()), Settings(), NO_FACTS) == []


def test_gpu_pod_with_another_scheduler_is_flagged_with_its_name() -> None:
    found = kai_scheduler_name(res("Pod", pod(scheduler="volcano")), Settings(), NO_FACTS)
    assert found
    assert "is 'volcano'" in found[0]


def test_shared_gpu_pod_without_scheduler_name_is_flagged() -> None:
    """A gpu-fraction pod requests no nvidia.com/gpu; the annotation alone makes it a GPU pod."""
    props = pod(scheduler=None, annotations={"gpu-fraction": "0.5"}, containers=[container()])
    assert kai_scheduler_name(res("Pod", props), Settings(), NO_FACTS)


def test_mig_pod_without_scheduler_name_is_flagged() -> None:
    c = container()
    c["resources"]["limits"] = {"nvidia.com/mig-1g.10gb": "1"}
    assert kai_scheduler_name(res("Pod", pod(scheduler=None, containers=[c])), Settings(), NO_FACTS)


@pytest.mark.parametrize("resource", ["nvidia.com/gpu.shared", "amd.com/gpu"])
def test_renamed_time_slices_and_amd_gpus_are_gpu_requests(resource: str) -> None:
    """The device plugin's renamed time slices and AMD GPUs (KAI@v0.17.0 resource_requirment.go:17-18) are GPUs
    a pod reaches; the default scheduler would hand them out outside every queue."""
    c = container()
    c["resources"]["limits"] = {resource: "1"}
    assert kai_scheduler_name(res("Pod", pod(scheduler=None, containers=[c])), Settings(), NO_FACTS)


@pytest.mark.parametrize("restart", [None, "Always"], ids=["init container", "sidecar"])
def test_gpu_in_an_init_container_alone_is_flagged(restart: str | None) -> None:
    """The scheduler reserves an init container's GPUs as it does a container's (component-helpers
    resource/helpers.go, PodRequests): a GPU there on the default scheduler bypasses KAI."""
    init = container(gpus=1, name="warmup")
    if restart:
        init["restartPolicy"] = restart
    props = pod(scheduler=None, queue=None, containers=[container()])
    props["spec"]["initContainers"] = [init]
    found = kai_scheduler_name(res("Pod", props), Settings(), NO_FACTS)
    assert found
    assert "but the pod requests GPUs" in found[0]


def test_cpu_pod_without_queue_label_or_scheduler_passes_by_default() -> None:
    props = pod(scheduler=None, queue=None, containers=[container()])
    assert kai_scheduler_name(res("Pod", props), Settings(), NO_FACTS) == []


def test_queue_labelled_pod_without_scheduler_name_is_flagged() -> None:
    """Labelled for a KAI queue but owned by another scheduler: KAI never sees it."""
    props = pod(scheduler=None, containers=[container()])
    found = kai_scheduler_name(res("Pod", props), Settings(), NO_FACTS)
    assert found
    assert "labelled for a KAI queue" in found[0]


def test_tenant_cpu_workload_is_flagged_when_required_in_tenant_namespaces() -> None:
    props = pod(scheduler=None, queue=None, containers=[container()], labels={"kaistack.io/tenant": "alpha"})
    s = settings({"requireInTenantNamespaces": True})
    found = kai_scheduler_name(res("Pod", props), s, NO_FACTS)
    assert found
    assert "tenant workload (requireInTenantNamespaces)" in found[0]


def test_cpu_workload_in_a_configured_tenant_namespace_is_flagged_when_required() -> None:
    props = pod(namespace="team-ns", scheduler=None, queue=None, containers=[container()])
    s = settings({"requireInTenantNamespaces": True, "tenantNamespaces": ["team-ns"]})
    assert kai_scheduler_name(res("Pod", props), s, NO_FACTS)


def test_tenant_cpu_workload_passes_when_not_required() -> None:
    props = pod(scheduler=None, queue=None, containers=[container()], labels={"kaistack.io/tenant": "alpha"})
    assert kai_scheduler_name(res("Pod", props), Settings(), NO_FACTS) == []


@pytest.mark.parametrize("namespace", ["kube-system", "gpu-operator", "kai-resource-reservation"])
def test_platform_namespaces_are_exempt_by_default(namespace: str) -> None:
    props = pod(namespace=namespace, scheduler=None)
    assert kai_scheduler_name(res("Pod", props), Settings(), NO_FACTS) == []


@pytest.mark.parametrize("namespace", ["kube-system", "gpu-operator"])
def test_a_tenant_labelled_workload_in_a_platform_namespace_is_not_exempt(namespace: str) -> None:
    """Inside a tenant's vCluster `kube-system` is the tenant's own namespace (review: a GPU pod there passed)."""
    props = pod(namespace=namespace, scheduler=None, labels={"kaistack.io/tenant": "alpha"})
    found = kai_scheduler_name(res("Pod", props), Settings(), NO_FACTS)
    assert len(found) == 1
    assert "but the pod requests GPUs" in found[0]


def test_a_workload_created_through_a_tenants_vcluster_into_kube_system_is_not_exempt() -> None:
    provider = (
        "urn:pulumi:dev::kaistack::kaistack:index:Tenant$pulumi:providers:kubernetes::kaistack-alpha-provider::id"
    )
    props = pod(namespace="kube-system", scheduler=None)
    assert kai_scheduler_name(res("Pod", props, provider=provider), Settings(), FACTS)
    assert kai_scheduler_name(res("Pod", props), Settings(), FACTS) == []


def test_exempt_namespaces_are_configurable() -> None:
    props = pod(namespace="vendor", scheduler=None)
    assert kai_scheduler_name(res("Pod", props), settings({"exemptNamespaces": ["vendor"]}), NO_FACTS) == []
    system_pod = res("Pod", pod(namespace="kube-system", scheduler=None))
    assert kai_scheduler_name(system_pod, settings({"exemptNamespaces": []}), NO_FACTS)


def test_a_helm_charts_children_are_checked_like_any_workload() -> None:
    """kaistack installs its own charts as Releases: a Chart's GPU Deployment is a team's workload, and was let
    through by a blanket exemption (review)."""
    urn = "urn:pulumi:dev::kaistack::kubernetes:helm.sh/v4:Chart$kubernetes:apps/v1:Deployment::my-llm-app"
    parent = "urn:pulumi:dev::kaistack::kubernetes:helm.sh/v4:Chart::my-llm-app"
    props = _owner("Deployment", scheduler=None)
    found = kai_scheduler_name(res("Deployment", props, urn=urn, parent=parent), Settings(), NO_FACTS)
    assert found


def test_a_vendor_charts_children_in_its_namespace_stay_exempt() -> None:
    urn = "urn:pulumi:dev::kaistack::kubernetes:helm.sh/v4:Chart$kubernetes:apps/v1:DaemonSet::device-plugin"
    props = _owner("DaemonSet", scheduler=None)
    props["metadata"]["namespace"] = "gpu-operator"
    assert kai_scheduler_name(res("DaemonSet", props, urn=urn), Settings(), NO_FACTS) == []


@pytest.mark.parametrize(
    "kind", ["Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Job", "CronJob", "PyTorchJob"]
)
def test_every_workload_kind_is_checked(kind: str) -> None:
    found = kai_scheduler_name(res(kind, _owner(kind, scheduler=None)), Settings(), NO_FACTS)
    assert found
    assert all("but the pod requests GPUs" in m for m in found)


def _custom(type_token: str, spec: dict[str, Any]) -> Res:
    props = {"metadata": {"name": "w", "namespace": "ml"}, "spec": spec}
    return Res(type=type_token, name="w", props=props, urn=f"urn:pulumi:dev::kaistack::{type_token}::w")


@pytest.mark.parametrize(
    ("type_token", "spec"),
    [
        # A Knative Service is a workload, unlike a core Service of the same kind name.
        ("kubernetes:serving.knative.dev/v1:Service", {"template": pod_template(scheduler=None)}),
        # A Volcano Job keeps its pods in spec.tasks[].template, unlike a batch/v1 Job.
        (
            "kubernetes:batch.volcano.sh/v1alpha1:Job",
            {"tasks": [{"name": "t", "template": pod_template(scheduler=None)}]},
        ),
    ],
    ids=["knative-service", "volcano-job"],
)
def test_custom_kinds_named_like_built_in_ones_are_searched(type_token: str, spec: dict[str, Any]) -> None:
    found = kai_scheduler_name(_custom(type_token, spec), Settings(), NO_FACTS)
    assert found
    assert "but the pod requests GPUs" in found[0]


def _patch(spec: dict[str, Any]) -> Res:
    """A pulumi-kubernetes server-side apply patch: only what it sets."""
    token = "kubernetes:apps/v1:DeploymentPatch"
    props = {"metadata": {"name": "serve", "namespace": "ml"}, "spec": spec}
    return Res(type=token, name="serve", props=props, urn=f"urn:pulumi:dev::kaistack::{token}::serve")


def test_a_patch_that_leaves_the_scheduler_alone_is_not_judged_as_missing_it() -> None:
    """Raising replicas or a GPU count says nothing about the schedulerName the Deployment already has."""
    template = {"spec": {"containers": [{"name": "m", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}}
    assert kai_scheduler_name(_patch({"replicas": 4, "template": template}), Settings(), NO_FACTS) == []


def test_a_patch_that_leaves_the_queue_label_alone_is_not_judged_as_missing_it() -> None:
    patch = _patch({"template": {"spec": {"schedulerName": "kai-scheduler"}}})
    assert kai_queue_label(patch, Settings(), NO_FACTS) == []


def test_a_queue_label_a_patch_sets_is_judged() -> None:
    """Without schedulerName in the patch, the Deployment it patches may be a KAI one: its label counts."""
    patch = _patch({"template": {"metadata": {"labels": {"kai.scheduler/queue": "nope"}}, "spec": {}}})
    found = kai_queue_label(patch, Settings(), FACTS)
    assert len(found) == 1
    assert "nope is not a declared leaf queue" in found[0]


def test_a_queue_label_a_patch_sets_on_the_template_metadata_alone_is_judged() -> None:
    """A patch that sets only the template's labels applies them all the same: the template needs no spec."""
    patch = _patch({"template": {"metadata": {"labels": {"kai.scheduler/queue": "nope"}}}})
    found = kai_queue_label(patch, Settings(), FACTS)
    assert len(found) == 1
    assert "nope is not a declared leaf queue" in found[0]


def test_a_patch_in_a_tenant_that_leaves_the_pod_label_alone_is_not_told_to_add_it() -> None:
    """Inside a tenant the host sees bare pods, so a Deployment with the queue label on its own metadata only is told
    to put it on its pods; a patch cannot be: the Deployment it patches may well carry it on its template."""
    token = "kubernetes:apps/v1:DeploymentPatch"
    labels = {"kaistack.io/tenant": "vision", "kai.scheduler/queue": "vision"}
    template = {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "now"}}}
    props = {"metadata": {"name": "serve", "namespace": "ml", "labels": labels}, "spec": {"template": template}}
    patch = Res(type=token, name="serve", props=props, urn=f"urn:pulumi:dev::kaistack::{token}::serve")
    assert kai_queue_label(patch, Settings(), NO_FACTS) == []


def test_a_rollout_restart_patch_is_no_finding() -> None:
    """`kubectl rollout restart` as a patch: one template annotation, nothing any rule reads."""
    patch = _patch({"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "now"}}}})
    assert kai_queue_label(patch, Settings(), FACTS) == []
    assert kai_scheduler_name(patch, Settings(), FACTS) == []


def test_a_patch_moving_pods_off_kai_is_not_judged_on_their_queue() -> None:
    """kai-scheduler-name reports the move; the label no longer reaches KAI."""
    template = {"metadata": {"labels": {"kai.scheduler/queue": "nope"}}, "spec": {"schedulerName": "default-scheduler"}}
    assert kai_queue_label(_patch({"template": template}), Settings(), FACTS) == []


def test_a_patch_that_moves_pods_off_kai_is_flagged() -> None:
    found = kai_scheduler_name(
        _patch({"template": {"spec": {"schedulerName": "default-scheduler"}}}), Settings(), NO_FACTS
    )
    assert found == [
        "spec.template.spec.schedulerName is set to 'default-scheduler' by DeploymentPatch serve: the patched pods "
        "would leave KAI (no queue, no GPU accounting); patch in schedulerName: kai-scheduler, or leave it out"
    ]


def test_unknown_scheduler_name_is_not_reported_but_raised_for_the_sdk() -> None:
    """Preview: the SDK turns the error into an advisory "can't run policy", never a violation."""
    props = pod(scheduler=UNKNOWN)
    with pytest.raises(UnknownValueError) as err:
        kai_scheduler_name(res("Pod", props), Settings(), NO_FACTS)
    assert "spec.schedulerName" in err.value.message


def test_unknown_values_elsewhere_do_not_stop_the_check() -> None:
    props = pod(scheduler=None, containers=[container(gpus=1, image=UNKNOWN)])
    found = kai_scheduler_name(res("Pod", props), Settings(), NO_FACTS)
    assert len(found) == 1
    assert "spec.schedulerName is unset (default-scheduler) but the pod requests GPUs" in found[0]


# --- kai-queue-label -----------------------------------------------------------------------------


def test_kai_pod_without_queue_label_is_flagged() -> None:
    found = kai_queue_label(res("Pod", pod(queue=None)), Settings(), NO_FACTS)
    assert len(found) == 1
    assert "no kai.scheduler/queue label in metadata.labels" in found[0]


def test_deployment_without_queue_label_names_both_places() -> None:
    found = kai_queue_label(res("Deployment", deployment(queue=None)), Settings(), NO_FACTS)
    assert found
    assert "on the Deployment (metadata.labels) or its pod template (spec.template.metadata.labels)" in found[0]


KNATIVE = "kubernetes:serving.knative.dev/v1:Service"


def _knative(service_labels: dict[str, str], template_queue: str | None) -> Res:
    r = _custom(KNATIVE, {"template": pod_template(queue=template_queue)})
    r.props["metadata"]["labels"] = service_labels
    return r


def test_a_knative_services_own_queue_label_is_not_the_one_kai_reads() -> None:
    """KAI's Knative grouper takes the queue from the pod's Revision, then the pod (KAI@v0.17.0
    pkg/podgrouper/podgrouper/plugins/knative/knative.go:56-118); Knative makes the Revision's metadata from
    spec.template's (knative/serving pkg/reconciler/configuration/resources/revision.go, MakeRevision)."""
    found = kai_queue_label(_knative({"kai.scheduler/queue": "team-a"}, None), Settings(), FACTS)
    assert found == [
        "kai.scheduler/queue is on the Service's own metadata.labels, which KAI's pod-grouper does not read (it "
        "reads spec.template.metadata.labels): move it to spec.template.metadata.labels"
    ]


def test_a_knative_services_template_queue_label_is_the_revisions_and_wins() -> None:
    r = _knative({"kai.scheduler/queue": "nosuch"}, "team-a")
    assert kai_queue_label(r, Settings(), FACTS) == []


def test_a_knative_service_without_a_queue_names_the_one_place_kai_reads() -> None:
    [found] = kai_queue_label(_knative({}, None), Settings(), FACTS)
    assert found.startswith(
        "no kai.scheduler/queue label on the Service's pod template (spec.template.metadata.labels)"
    )


def test_a_cronjobs_own_queue_label_is_not_the_one_kai_reads() -> None:
    """KAI's CronJob grouper takes the Job as the top owner: it carries jobTemplate's metadata."""
    props = _owner("CronJob", queue=None)
    props["metadata"]["labels"] = {"kai.scheduler/queue": "team-a"}
    found = kai_queue_label(res("CronJob", props), Settings(), FACTS)
    assert found == [
        "kai.scheduler/queue is on the CronJob's own metadata.labels, which KAI's pod-grouper does not read (it "
        "reads spec.jobTemplate.metadata.labels, then spec.jobTemplate.spec.template.metadata.labels): move it to "
        "spec.jobTemplate.metadata.labels"
    ]


def test_without_a_queue_label_the_project_label_names_the_queue_kai_takes() -> None:
    """KAI@v0.17.0 pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go:134-166: no queue label, then
    the top owner's or the pod's `project` label is the queue (review: the message said default-queue)."""
    [found] = kai_queue_label(res("Pod", pod(queue=None, labels={"project": "team-a"})), Settings(), FACTS)
    assert found == (
        "no kai.scheduler/queue label: KAI takes the queue from metadata.labels project instead, queue team-a; say "
        "which queue with kai.scheduler/queue (a project label is no queue label to the tenants' admission)"
    )


def test_a_pods_node_pool_label_suffixes_the_project_queue() -> None:
    labels = {"project": "team-a", "kai.scheduler/node-pool": "h100"}
    [found] = kai_queue_label(res("Pod", pod(queue=None, labels=labels)), Settings(), FACTS)
    assert "queue team-a-h100 (not a declared leaf queue)" in found


def test_an_empty_project_label_leaves_the_pod_in_the_default_queue() -> None:
    [found] = kai_queue_label(res("Pod", pod(queue=None, labels={"project": ""})), Settings(), FACTS)
    assert "KAI puts the pod in default-queue" in found


def test_a_project_label_counts_only_for_pods_kai_schedules() -> None:
    """`project` is a common label: it does not make a pod KAI's."""
    props = pod(scheduler=None, queue=None, containers=[container()], labels={"project": "team-a"})
    assert kai_scheduler_name(res("Pod", props), Settings(), NO_FACTS) == []


def test_an_empty_queue_label_is_flagged_without_a_stack() -> None:
    """KAI@v0.17.0 default_grouper.go:134-146: the first queue label found wins, even when empty."""
    found = kai_queue_label(res("Pod", pod(queue="")), Settings(), NO_FACTS)
    assert found == [
        "metadata.labels kai.scheduler/queue is empty: KAI takes it as the queue's name and no queue has it: add "
        "kai.scheduler/queue: <leaf queue>"
    ]


def test_queue_label_on_the_top_owner_suffices() -> None:
    props = deployment(queue=None, top_labels={"kai.scheduler/queue": "team-a"})
    assert kai_queue_label(res("Deployment", props), Settings(), FACTS) == []


def test_queue_label_on_the_pod_template_suffices() -> None:
    assert kai_queue_label(res("Deployment", deployment(queue="team-a")), Settings(), FACTS) == []


def test_top_owner_label_wins_over_the_pod_label() -> None:
    """KAI reads the top owner first: a wrong top-level queue is wrong even if the pod's is right."""
    props = deployment(queue="team-a", top_labels={"kai.scheduler/queue": "nope"})
    found = kai_queue_label(res("Deployment", props), Settings(), FACTS)
    assert found
    assert "metadata.labels kai.scheduler/queue: nope is not a declared leaf queue" in found[0]


def _cronjob(cronjob_labels: dict[str, str], job_labels: dict[str, str]) -> dict[str, Any]:
    props = _owner("CronJob", queue=None)
    props["metadata"]["labels"] = cronjob_labels
    props["spec"]["jobTemplate"]["metadata"] = {"labels": job_labels}
    return props


def test_a_cronjobs_queue_is_read_from_its_job_template() -> None:
    """KAI's CronJob grouper takes the pod's Job as top owner (kai-scheduler/KAI-Scheduler@v0.17.0
    pkg/podgrouper/podgrouper/plugins/cronjobs/crobjob-grouper.go), and the Job carries jobTemplate's labels:
    a wrong queue there is wrong whatever the CronJob's own labels say."""
    props = _cronjob({"kai.scheduler/queue": "team-a"}, {"kai.scheduler/queue": "nope"})
    found = kai_queue_label(res("CronJob", props), Settings(), FACTS)
    assert found
    assert "spec.jobTemplate.metadata.labels kai.scheduler/queue: nope is not a declared leaf queue" in found[0]


def test_a_queue_on_the_job_template_alone_suffices() -> None:
    props = _cronjob({}, {"kai.scheduler/queue": "team-a"})
    assert kai_queue_label(res("CronJob", props), Settings(), FACTS) == []


def test_legacy_runai_queue_label_gets_the_new_key_as_hint() -> None:
    props = pod(queue=None, labels={"runai/queue": "test"})
    found = kai_queue_label(res("Pod", props), Settings(), NO_FACTS)
    assert found == [
        "metadata.labels has the legacy label runai/queue: test, which KAI stopped reading in v0.6.0: "
        "use kai.scheduler/queue instead (kai.scheduler/queue: test)"
    ]


def test_queue_given_as_annotation_is_flagged() -> None:
    props = pod(queue=None, annotations={"kai.scheduler/queue": "team-a"})
    found = kai_queue_label(res("Pod", props), Settings(), NO_FACTS)
    assert found
    assert "KAI reads only labels" in found[0]


def test_undeclared_queue_is_flagged_when_the_stack_is_known() -> None:
    found = kai_queue_label(res("Pod", pod(queue="nope")), Settings(), FACTS)
    assert found
    assert "nope is not a declared leaf queue" in found[0]
    assert "declared leaf queues: default-queue, team-a, team-b" in found[0]


def test_parent_queue_is_not_a_leaf() -> None:
    facts = StackFacts(leaf_queues=frozenset({"team-a"}))
    assert kai_queue_label(res("Pod", pod(queue="org")), Settings(), facts)


def test_any_queue_name_passes_without_stack_facts() -> None:
    assert kai_queue_label(res("Pod", pod(queue="whatever")), Settings(), NO_FACTS) == []


def test_configured_queues_override_the_stack() -> None:
    s = settings({"queues": ["only-this"]})
    assert kai_queue_label(res("Pod", pod(queue="team-a")), s, FACTS)
    assert kai_queue_label(res("Pod", pod(queue="only-this")), s, FACTS) == []


def test_queue_label_key_comes_from_the_stack() -> None:
    facts = StackFacts(queue_label_key="example.com/queue")
    props = pod(queue=None, labels={"example.com/queue": "x"})
    assert kai_queue_label(res("Pod", props), Settings(), facts) == []


def test_pods_of_other_schedulers_need_no_queue() -> None:
    props = pod(queue=None, scheduler="default-scheduler")
    assert kai_queue_label(res("Pod", props), Settings(), NO_FACTS) == []


def test_unknown_queue_label_is_raised_for_the_sdk() -> None:
    with pytest.raises(UnknownValueError) as err:
        kai_queue_label(res("Pod", pod(queue=UNKNOWN)), Settings(), FACTS)
    assert "kai.scheduler/queue" in err.value.message


def test_every_template_of_a_training_job_is_checked() -> None:
    props = _owner("PyTorchJob", queue=None)
    found = kai_queue_label(res("PyTorchJob", props), Settings(), NO_FACTS)
    assert len(found) == 2
    assert "Master" in found[0]
    assert "Worker" in found[1]


def test_kai_scheduler_constant_matches_the_contract() -> None:
    assert KAI == Settings().scheduler_name == "kai-scheduler"


def test_tenant_deployment_needs_the_queue_on_its_pod_template() -> None:
    """Inside a vCluster the host sees bare pods (setOwner: false): the Deployment's own labels never reach KAI."""
    props = deployment(queue=None, top_labels={"kai.scheduler/queue": "team-a", "kaistack.io/tenant": "alpha"})
    found = kai_queue_label(res("Deployment", props), Settings(), FACTS)
    assert len(found) == 1
    assert "inside tenant alpha's vCluster the host sees bare pods (setOwner: false)" in found[0]
    assert "add it to spec.template.metadata.labels" in found[0]


def test_host_deployment_may_carry_the_queue_on_itself_only() -> None:
    props = deployment(queue=None, top_labels={"kai.scheduler/queue": "team-a"})
    assert kai_queue_label(res("Deployment", props), Settings(), FACTS) == []


def test_workload_created_through_a_tenants_vcluster_provider_is_a_tenant_workload() -> None:
    provider = (
        "urn:pulumi:dev::kaistack::kaistack:index:Tenant$pulumi:providers:kubernetes::kaistack-alpha-provider::id"
    )
    props = pod(scheduler=None, queue=None, containers=[container()])
    s = settings({"requireInTenantNamespaces": True})
    assert kai_scheduler_name(res("Pod", props, provider=provider), s, FACTS)


@pytest.mark.parametrize("zero", ["0", "0m", 0])
def test_a_gpu_resource_of_zero_asks_for_no_gpu(zero: Any) -> None:
    """Charts render `nvidia.com/gpu: 0` by default: such a pod needs no KAI scheduler."""
    c = container()
    c["resources"]["limits"] = {"nvidia.com/gpu": zero}
    props = pod(scheduler=None, queue=None, containers=[c])
    assert kai_scheduler_name(res("Pod", props), Settings(), NO_FACTS) == []


def test_a_gpu_resource_that_is_no_quantity_still_counts_as_asking() -> None:
    c = container()
    c["resources"]["limits"] = {"nvidia.com/gpu": "one"}
    assert kai_scheduler_name(res("Pod", pod(scheduler=None, queue=None, containers=[c])), Settings(), NO_FACTS)


def test_a_gpu_count_unknown_at_preview_still_counts_as_asking() -> None:
    """At preview the engine sends an unknown for a value not computed yet; reading it raised, and pulumi_policy
    then skipped the whole policy for the resource."""
    c = container()
    c["resources"]["limits"] = {"nvidia.com/gpu": UNKNOWN}
    found = kai_scheduler_name(res("Pod", pod(scheduler=None, queue=None, containers=[c])), Settings(), NO_FACTS)
    assert found


def test_a_cronjobs_own_tenant_label_still_names_its_tenant() -> None:
    """Tenant identity is the object's own label (the Job KAI reads only decides queue and priority)."""
    from kaistack.guardrails.podspec import tenant_label, workload

    props = _cronjob({"kaistack.io/tenant": "beta"}, {"kai.scheduler/queue": "team-a"})
    wl = workload(res("CronJob", props))
    assert wl is not None
    assert tenant_label(wl) == "beta"


# --- what makes a GPU pod, and settings the rules read (mutation tests found these unasserted) -------------


def test_a_gpu_memory_annotation_alone_makes_a_gpu_pod() -> None:
    props = pod(scheduler=None, annotations={"gpu-memory": "2000"}, containers=[container()])
    assert kai_scheduler_name(res("Pod", props), Settings(), NO_FACTS)


def test_a_mig_request_alone_makes_a_gpu_pod() -> None:
    c = container()
    c["resources"]["requests"]["nvidia.com/mig-1g.10gb"] = "1"
    assert kai_scheduler_name(res("Pod", pod(scheduler=None, containers=[c])), Settings(), NO_FACTS)


def test_a_cpu_workload_outside_every_tenant_passes_even_when_tenants_must_use_kai() -> None:
    props = pod(scheduler=None, queue=None, containers=[container()])
    s = settings({"requireInTenantNamespaces": True, "tenantNamespaces": ["team-ns"]})
    assert kai_scheduler_name(res("Pod", props), s, NO_FACTS) == []


def test_the_queue_label_key_setting_is_the_key_read() -> None:
    props = pod(queue=None, labels={"acme/queue": "team-a"})
    assert kai_queue_label(res("Pod", props), settings({"queueLabelKey": "acme/queue"}), FACTS) == []
    assert kai_queue_label(res("Pod", props), Settings(), FACTS)


def test_a_tenant_deployment_with_the_queue_on_both_levels_passes() -> None:
    labels = {"kai.scheduler/queue": "team-a", "kaistack.io/tenant": "alpha"}
    props = deployment(queue="team-a", top_labels=labels)
    assert kai_queue_label(res("Deployment", props), Settings(), FACTS) == []


def test_a_tenant_deployment_with_no_queue_anywhere_is_told_to_add_one() -> None:
    props = deployment(queue=None, top_labels={"kaistack.io/tenant": "alpha"})
    found = kai_queue_label(res("Deployment", props), Settings(), FACTS)
    assert len(found) == 1
    assert found[0].startswith("no kai.scheduler/queue label on the Deployment")


@pytest.mark.parametrize("on", ["owner", "template"])
def test_the_queue_as_an_annotation_on_one_level_is_named_as_such(on: str) -> None:
    props = deployment(queue=None)
    target = props["metadata"] if on == "owner" else props["spec"]["template"]["metadata"]
    target["annotations"] = {"kai.scheduler/queue": "team-a"}
    found = kai_queue_label(res("Deployment", props), Settings(), FACTS)
    assert found == ["kai.scheduler/queue is set as an annotation; KAI reads only labels: move it to metadata.labels"]


# --- which resources are workloads, and where they run ---------------------------------------------------


def test_an_object_without_a_namespace_runs_in_its_providers() -> None:
    """The engine sends the provider's `namespace` input with each resource: a pod with none goes there, and
    kai-scheduler (an exempt platform namespace) is judged as such."""
    props = pod(scheduler=None)
    del props["metadata"]["namespace"]
    r = res("Pod", props, provider_namespace="kai-scheduler")
    assert kai_scheduler_name(r, Settings(), NO_FACTS) == []
    assert kai_scheduler_name(res("Pod", props), Settings(), NO_FACTS)


def test_a_patch_that_only_scales_is_no_workload_to_judge() -> None:
    assert kai_scheduler_name(_patch({"replicas": 4}), Settings(), NO_FACTS) == []
    assert kai_queue_label(_patch({"replicas": 4}), Settings(), FACTS) == []


def test_a_component_of_another_provider_nesting_a_pod_template_is_not_a_kubernetes_workload() -> None:
    """Only kubernetes:* resources become pods; another package's component passes its inputs on to them."""
    props = {"spec": {"template": pod_template(scheduler=None)}}
    r = Res(type="acme:index:Service", name="s", props=props, urn="urn:pulumi:dev::kaistack::acme:index:Service::s")
    assert kai_scheduler_name(r, Settings(), NO_FACTS) == []


@pytest.mark.parametrize("app", ["kai-resource-reservation", "scaling-pod"])
def test_a_kai_pod_labelled_as_one_of_kais_utility_pods_is_flagged(app: str) -> None:
    """KAI charges a resource-reservation pod's node no GPUs (KAI@v0.17.0 node_info.go:470-473; the values are
    conf/global_config.go:25-26): a host pod labelled so would hold GPUs KAI sees as free."""
    [found] = kai_no_bypass(res("Pod", pod(labels={"app": app})), Settings(), NO_FACTS)
    assert found.startswith(f"metadata.labels app: {app!r} is how KAI tells its own utility pods")


def test_another_app_label_is_no_utility_pods() -> None:
    assert kai_no_bypass(res("Pod", pod(labels={"app": "vllm"})), Settings(), NO_FACTS) == []
