"""kai-capacity: the adapter rebuilds the stack's declaration from its resources; the checker judges it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from policy_builders import container, deployment, engine, queue, res

from kaistack.declaration.marks import TENANT_LABEL
from kaistack.declaration.parse import parse_config
from kaistack.guardrails.capacity_adapter import declaration
from kaistack.guardrails.facts import StackFacts, facts_from_stack
from kaistack.guardrails.podspec import Res
from kaistack.guardrails.settings import Settings
from kaistack.guardrails.stack_model import CheckerUnavailable
from kaistack.guardrails.stack_rules import kai_capacity, stack_facts
from kaistack.ops.mocks import RecordedResource
from kaistack.ops.render import render_stack
from kaistack.stack.load import load_stack
from placement.quantity import cpu_millis, memory_bytes

ROOT = Path(__file__).resolve().parents[2]
DELETE = object()


@pytest.fixture(scope="module")
def dev_recorded() -> list[RecordedResource]:
    return render_stack(ROOT, "dev").resources


def _resources(recorded: list[RecordedResource], change: dict[str, Any] | None = None) -> list[Res]:
    """Engine-proxied resources; `change` maps a name suffix to {dotted.path: value}."""
    out = []
    for r in recorded:
        inputs = copy.deepcopy(r.inputs)
        for suffix, edits in (change or {}).items():
            if r.name.endswith(suffix):
                for path, value in edits.items():
                    *parents, last = path.split(".")
                    node = inputs
                    for key in parents:
                        node = node[key]
                    if value is DELETE:
                        del node[last]
                    else:
                        node[last] = value
        out.append(Res(r.type, r.name, engine(inputs), r.urn, r.parent, r.provider))
    return out


def _facts(resources: list[Res]) -> StackFacts:
    return stack_facts(resources, facts_from_stack(load_stack(ROOT, "dev").config))


def test_declaration_rebuilt_from_the_dev_stack_matches_its_config(dev_recorded: list[RecordedResource]) -> None:
    resources = _resources(dev_recorded)
    rebuilt = parse_config(declaration(resources, Settings(), _facts(resources)).raw)
    declared = load_stack(ROOT, "dev").config

    def summary(w: Any) -> tuple[Any, ...]:
        requests = (w.gpu, w.gpu_fraction, w.gpu_memory_mi_b, cpu_millis(w.cpu), memory_bytes(w.memory))
        return (w.name, w.kind, w.queue, w.tenant, w.pod_count, *requests)

    assert sorted(map(summary, rebuilt.workloads)) == sorted(map(summary, declared.workloads))
    assert sorted((q.name, q.parent, q.resources) for q in rebuilt.all_queues()) == sorted(
        (q.name, q.parent, q.resources) for q in declared.all_queues()
    )
    assert [p.gpus for p in rebuilt.cluster.node_pools] == [p.gpus for p in declared.cluster.node_pools]


def test_dev_stack_fits(dev_recorded: list[RecordedResource]) -> None:
    resources = _resources(dev_recorded)
    assert kai_capacity(resources, Settings(), _facts(resources)) == []


def test_pending_workloads_are_reported_against_their_resources(dev_recorded: list[RecordedResource]) -> None:
    resources = _resources(dev_recorded, {"vllm-test-07": {"spec.replicas": 10}})
    found = kai_capacity(resources, Settings(), _facts(resources))
    subjects = [f.subject.name for f in found if f.subject is not None]
    assert "kaistack-workloads-vllm-test-07" in subjects
    message = next(f.message for f in found if f.subject and f.subject.name.endswith("vllm-test-07"))
    assert message.startswith("Deployment vllm-test-07 (host, queue test) would stay Partial: fraction 0.7 fits no")


def test_omitted_queue_fields_count_as_zero_like_kai(dev_recorded: list[RecordedResource]) -> None:
    """KAI reads an omitted limit as 0 (kai.md §3): test's workloads can no longer get any memory."""
    resources = _resources(dev_recorded, {"queues-test": {"spec.resources.memory.limit": DELETE}})
    found = kai_capacity(resources, Settings(), _facts(resources))
    assert found
    assert all("queue test" in f.message for f in found)


def test_without_node_pools_the_check_cannot_run() -> None:
    platform = res("Platform", {"kai": {}})
    with pytest.raises(CheckerUnavailable, match="no node pools"):
        kai_capacity([platform], Settings(), StackFacts())


def test_stacks_without_a_platform_are_not_checked() -> None:
    assert kai_capacity([res("Deployment", deployment())], Settings(), StackFacts()) == []


def _platform_facts() -> StackFacts:
    return StackFacts(
        leaf_queues=frozenset({"team-a"}),
        node_pools=({"name": "gpu", "count": 1, "gpus": 1, "gpuMemoryMiB": 16000, "cpu": "8", "memory": "32Gi"},),
    )


def test_statefulsets_are_planned_like_jobs() -> None:
    """KAI groups a StatefulSet as one PodGroup per owner, minMember 1, class train — as a Job."""
    sts = deployment(name="db")
    sts["kind"] = "StatefulSet"
    sts["spec"]["replicas"] = 3
    resources = [res("StatefulSet", sts), res("Queue", queue("team-a"))]
    decl = declaration(resources, Settings(), _platform_facts())
    [work] = decl.raw["workloads"]
    assert (work["kind"], work["replicas"], work["gpu"]) == ("Job", 3, 1)


def test_a_custom_job_kind_is_not_planned_as_a_batch_job() -> None:
    """A Volcano Job keeps its pods in spec.tasks[]; read as batch/v1 it was planned as one 1-GPU replica."""
    t = deployment(name="v", containers=[container(gpus=8)])["spec"]["template"]
    volcano = {"metadata": {"name": "v", "namespace": "default"}, "spec": {"tasks": [{"name": "a", "template": t}]}}
    custom = Res(type="kubernetes:batch.volcano.sh/v1alpha1:Job", name="v", props=engine(volcano), urn="u")
    decl = declaration([custom, res("Queue", queue("team-a"))], Settings(), _platform_facts())
    assert decl.raw["workloads"] == []


def test_a_gpu_limit_that_is_no_quantity_counts_as_none() -> None:
    """`1e400` overflowed int() and stopped the whole check; lint and the API server name it."""
    d = deployment(name="bad", containers=[container(gpus=1)])
    d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1e400"
    decl = declaration([res("Deployment", d), res("Queue", queue("team-a"))], Settings(), _platform_facts())
    [work] = decl.raw["workloads"]
    assert "gpu" not in work


def test_pool_taints_are_left_to_kaistack_check_and_named() -> None:
    """The rebuild has no EKS system node group and no toleration but the GPU one: a tainted pool would keep
    pods off nodes they really reach."""
    taint = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    facts = _platform_facts()
    facts = StackFacts(leaf_queues=facts.leaf_queues, node_pools=({**facts.node_pools[0], "taints": [taint]},))
    decl = declaration([res("Queue", queue("team-a"))], Settings(), facts)
    assert "taints" not in decl.raw["cluster"]["nodePools"][0]
    assert decl.left_out == ["the taints of node pool gpu (checked by kaistack check and the gate)"]


def test_workloads_the_model_cannot_express_are_left_out_and_named() -> None:
    both = deployment(name="both", annotations={"gpu-fraction": "0.5"}, containers=[container(gpus=1)])
    resources = [res("Deployment", both), res("Queue", queue("team-a"))]
    decl = declaration(resources, Settings(), _platform_facts())
    assert decl.raw["workloads"] == []
    assert len(decl.left_out) == 1
    assert decl.left_out[0].startswith("Deployment/both (")


def _owner_labelled(top_labels: dict[str, str]) -> dict[str, Any]:
    labels = {"priorityClassName": "inference", "kai.scheduler/preemptibility": "non-preemptible", **top_labels}
    return deployment(name="web", top_labels=labels)


def test_a_host_workloads_priority_and_preemptibility_come_from_its_top_owner() -> None:
    """KAI@v0.17.0 pkg/podgrouper: the top owner's labels first (default_grouper.go)."""
    decl = declaration(
        [res("Deployment", _owner_labelled({})), res("Queue", queue("team-a"))], Settings(), _platform_facts()
    )
    [work] = decl.raw["workloads"]
    assert (work["priorityClass"], work["preemptible"]) == ("inference", False)


def test_a_pod_synced_from_a_vcluster_takes_neither_from_an_owner_the_host_never_sees() -> None:
    """setOwner: false: the host pod has no owner and is its own top owner, so only its labels count."""
    synced = _owner_labelled({TENANT_LABEL: "team-a"})
    decl = declaration([res("Deployment", synced), res("Queue", queue("team-a"))], Settings(), _platform_facts())
    [work] = decl.raw["workloads"]
    assert "priorityClass" not in work
    assert "preemptible" not in work


def test_a_containers_ephemeral_storage_request_reaches_the_rebuilt_declaration() -> None:
    """So the pack's kai-capacity rule checks it where the pools' allocatable is known, as `kaistack check` does."""
    c = container(gpus=1)
    c["resources"]["requests"]["ephemeral-storage"] = "150Gi"
    decl = declaration([res("Deployment", deployment(containers=[c])), res("Queue", queue("team-a"))], Settings(),
                       _platform_facts())  # fmt: skip
    [work] = decl.raw["workloads"]
    assert work["ephemeralStorage"] == str(150 * 2**30)


def test_the_platform_summary_gives_the_pack_each_eks_pools_ephemeral_storage() -> None:
    """Derived from the root volume (kaistack.capacity.ephemeral), which the pack cannot see otherwise."""
    from components.platform import platform_summary

    config = load_stack(ROOT, "staging").config
    [l4] = platform_summary(config)["nodePools"]
    assert l4["ephemeralStorage"] == str(200 * 2**30 * 9 // 10 - 2**30)


def test_a_tenant_labelled_workload_on_the_hosts_provider_is_not_read_as_synced() -> None:
    """Only a tenant's vCluster strips owners (setOwner: false); on the host the pod-grouper reads the top
    owner's labels first, so its priority class there counts, tenant label or not."""
    from kaistack.declaration.marks import TENANT_LABEL as LABEL

    host = (
        "urn:pulumi:dev::kaistack::kaistack:index:Platform$kaistack:index:KindCluster$pulumi:providers:kubernetes"
        "::kaistack-cluster-provider::04da6b54-80e4-46f7-96ec-b56ff0331ba9"
    )
    props = _owner_labelled({LABEL: "team-a"})
    decl = declaration(
        [res("Deployment", props, provider=host), res("Queue", queue("team-a"))], Settings(), _platform_facts()
    )
    [work] = decl.raw["workloads"]
    assert (work["priorityClass"], work["preemptible"]) == ("inference", False)


def test_a_tenant_labelled_workload_on_some_other_provider_is_still_read_by_its_label() -> None:
    """The engine gives every resource a provider (a default one too): only kaistack's own is known to be the
    host's, so a team's own provider into a vCluster keeps the label's meaning."""
    from kaistack.declaration.marks import TENANT_LABEL as LABEL

    default = "urn:pulumi:dev::kaistack::pulumi:providers:kubernetes::default_4_23_0::abc"
    props = _owner_labelled({LABEL: "team-a"})
    decl = declaration(
        [res("Deployment", props, provider=default), res("Queue", queue("team-a"))], Settings(), _platform_facts()
    )
    [work] = decl.raw["workloads"]
    assert "priorityClass" not in work


def test_a_workload_without_a_queue_label_is_simulated_in_its_project_labels_queue() -> None:
    """KAI@v0.17.0 default_grouper.go:134-166: no queue label, then the `project` label names the queue."""
    d = deployment(queue=None, top_labels={"project": "team-a"})
    decl = declaration([res("Deployment", d), res("Queue", queue("team-a"))], Settings(), _platform_facts())
    [work] = decl.raw["workloads"]
    assert work["queue"] == "team-a"
