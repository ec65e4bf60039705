"""The pack's stack rules (kaistack.guardrails.stack_rules): behaviour a mutation run of the module found unasserted.

They pin that kai-gpu-sharing-enabled reports a workload once however many of its pod templates ask for a share,
that kai-queue-tree's findings name only the queues that matter and name them in a stable order, and that
tenant-queue-binding judges only the pod templates KAI schedules.
"""

from __future__ import annotations

from typing import Any

from policy_builders import FACTS, container, deployment, pod, queue, release, res

from kaistack.guardrails.facts import StackFacts
from kaistack.guardrails.podspec import Res
from kaistack.guardrails.settings import Settings
from kaistack.guardrails.stack_rules import kai_gpu_sharing_enabled, kai_queue_tree, tenant_queue_binding

NO_FACTS = StackFacts()
KAI_CHART = "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler"


def _tree(*queues: dict[str, Any]) -> list[str]:
    return [f.message for f in kai_queue_tree([res("Queue", q) for q in queues], Settings(), NO_FACTS)]


# --- kai-gpu-sharing-enabled ---------------------------------------------------------------------


def _sharing_pytorch_job() -> Res:
    """A PyTorchJob whose Master and Worker templates both ask for half a GPU."""
    share = {"gpu-fraction": "0.5"}
    props = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": deployment(annotations=share)["spec"]["template"]},
                "Worker": {"replicas": 2, "template": deployment(annotations=share)["spec"]["template"]},
            }
        },
    }
    return res("PyTorchJob", props)


def test_a_workload_asking_for_shares_in_several_pod_templates_is_reported_once() -> None:
    """The fix (turn GPU sharing on) is one per workload: a PyTorchJob whose Master and Worker both share a GPU
    gets one finding, not one per template."""
    kai = res("Release", release("kai-scheduler", KAI_CHART, {"global": {"gpuSharing": False}}), name="kai")
    found = [f.message for f in kai_gpu_sharing_enabled([kai, _sharing_pytorch_job()], Settings(), NO_FACTS)]
    assert found == [
        "PyTorchJob/train asks for a GPU share (gpu-fraction: 0.5) but the KAI release kai does not set values "
        "global.gpuSharing: true: KAI's admission webhook rejects shared-GPU pods; turn GPU sharing on "
        "(kaistack:kai.sharing: fractions)"
    ]


# --- kai-queue-tree ------------------------------------------------------------------------------


def test_a_missing_parent_finding_lists_the_known_queues_in_name_order() -> None:
    """The list is built from a set: sorted, the same stack gives the same message on every run (and in every
    `pulumi preview`), and a reader finds the queue they meant to name."""
    names = ["kilo", "alpha", "juliet", "delta", "hotel", "bravo", "golf", "echo"]
    found = _tree(*(queue(n) for n in names), queue("orphan", "ghost"))
    assert found == [
        "queue orphan: parentQueue ghost does not exist; KAI drops a queue with a missing parent, and its children "
        f"(queues: {', '.join(sorted([*names, 'orphan']))})"
    ]


def test_the_excess_finding_names_only_the_children_that_hold_a_quota() -> None:
    """A child with quota 0 takes nothing, and one without a quota is flagged on its own: the parent's finding
    lists the children whose quotas make up the sum, and the rule still reports both problems."""
    no_quota = queue("c", "org", gpu=(1, 2, 1))
    del no_quota["spec"]["resources"]["gpu"]["quota"]
    found = _tree(
        queue("org", gpu=(2, 2, 1)),
        queue("a", "org", gpu=(2, 2, 1)),
        queue("b", "org", gpu=(1, 2, 1)),
        no_quota,
        queue("d", "org", gpu=(0, 0, 0)),
    )
    assert len(found) == 2
    assert found[0].startswith("queue c: spec.resources.gpu.quota is missing")
    assert found[1] == "queue org: its children's gpu quotas (a 2, b 1; sum 3) exceed its own gpu quota 2"


# --- tenant-queue-binding ------------------------------------------------------------------------


def test_a_tenant_pod_that_kai_does_not_schedule_is_not_bound_to_a_queue() -> None:
    """KAI reads the queue label only of the pods it schedules: a tenant's CPU pod on the default scheduler
    needs no queue, and is not told it would land in default-queue."""
    props = pod(
        name="p",
        queue=None,
        scheduler="default-scheduler",
        labels={"kaistack.io/tenant": "alpha"},
        containers=[container()],
    )
    assert tenant_queue_binding([res("Pod", props)], Settings(), FACTS) == []
