"""A workload's `priorityClassName` and `kai.scheduler/preemptibility` labels are what KAI reads first.

KAI's pod-grouper takes the class from an owner's `priorityClassName` label, else the pod's, else
spec.priorityClassName, and drops a name that is no PriorityClass (kai-scheduler/KAI-Scheduler@v0.17.0
pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go:187-226, 322-346); it takes the preemptibility
label before any default (calcPodGroupPreemptibilityWithDefaults). kaistack writes a workload's labels on its owner
and pods (components/podspec.py object_labels), so a label given without its field decides in KAI: the capacity
check, a tenant gang's PodGroup and the pod spec must read the same.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kaistack.capacity.plan import plan
from kaistack.declaration import kai_api, tenant_gangs
from kaistack.declaration.parse import ConfigError, parse_config
from placement.model import Job

IMAGE = "busybox:1.37.0"


def _raw(**work: Any) -> dict[str, Any]:
    workload = {"name": "w", "kind": "Job", "image": IMAGE, "queue": "q", **work}
    return {
        "cluster": {"provider": "kind", "nodePools": [{"name": "gpu", "gpus": 2, "cpu": "8", "memory": "32Gi"}]},
        "gpu": {"mode": "fake"},
        "queues": [{"name": "q"}],
        "tenants": [{"name": "t", "queues": ["q"]}],
        "workloads": [workload],
    }


def _job(**work: Any) -> Job:
    snapshot = plan(parse_config(copy.deepcopy(_raw(**work)), source="test")).snapshot
    [job] = [j for j in snapshot.jobs if j.name == "w" or j.name.startswith("w#")][:1]
    return job


def test_a_priority_class_label_alone_is_the_class_the_check_simulates() -> None:
    job = _job(labels={kai_api.PRIORITY_CLASS_LABEL: "inference"})
    assert job.priority == kai_api.PRIORITY_CLASSES["inference"]


def test_without_the_label_a_job_keeps_its_kinds_default_class() -> None:
    assert _job().priority == kai_api.PRIORITY_CLASSES["train"]


def test_a_non_preemptible_label_alone_makes_the_simulated_job_non_preemptible() -> None:
    job = _job(labels={kai_api.PREEMPTIBILITY_LABEL: "non-preemptible"})
    assert job.preemptible is False


def test_a_preemptible_label_alone_makes_an_inference_deployment_preemptible() -> None:
    job = _job(kind="Deployment", labels={kai_api.PREEMPTIBILITY_LABEL: "preemptible"})
    assert job.preemptible is True


def test_a_tenant_gangs_pod_group_carries_what_the_labels_say() -> None:
    """A gang's pods name their PodGroup, and KAI then reads class and preemptibility from it alone."""
    labels = {kai_api.PRIORITY_CLASS_LABEL: "build", kai_api.PREEMPTIBILITY_LABEL: "preemptible"}
    config = parse_config(_raw(kind="PyTorchJob", tenant="t", labels=labels), source="test")
    [work] = config.workloads
    from kaistack.capacity.plan import priority_class

    group = tenant_gangs.pod_group(config, work, priority_class(work))
    assert group["spec"]["priorityClassName"] == "build"
    assert group["spec"]["preemptibility"] == "preemptible"


def test_a_label_naming_a_class_kaistack_does_not_declare_is_refused() -> None:
    with pytest.raises(
        ConfigError, match=r"labels.priorityClassName: 'high' is not one of kaistack's priority classes"
    ):
        parse_config(_raw(labels={kai_api.PRIORITY_CLASS_LABEL: "high"}), source="test")


def test_a_label_and_a_field_that_disagree_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"'inference' and priorityClass 'train' disagree: keep priorityClass"):
        parse_config(_raw(labels={kai_api.PRIORITY_CLASS_LABEL: "inference"}, priorityClass="train"), source="test")


def test_a_label_and_a_field_that_agree_are_accepted() -> None:
    config = parse_config(
        _raw(
            labels={kai_api.PRIORITY_CLASS_LABEL: "build", kai_api.PREEMPTIBILITY_LABEL: "non-preemptible"},
            priorityClass="build",
            preemptible=False,
        ),
        source="test",
    )
    [work] = config.workloads
    assert (work.priority_class, work.preemptible) == ("build", False)


def test_an_explicit_null_field_is_no_value_and_the_label_stands_for_it() -> None:
    """YAML's `priorityClass:` with nothing after it is null: the field's default, as if it were left out."""
    job = _job(
        labels={kai_api.PRIORITY_CLASS_LABEL: "inference", kai_api.PREEMPTIBILITY_LABEL: "preemptible"},
        priorityClass=None,
        preemptible=None,
    )
    assert (job.priority, job.preemptible) == (kai_api.PRIORITY_CLASSES["inference"], True)


def test_a_snake_case_field_disagreeing_with_its_label_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"'build' and priorityClass 'train' disagree"):
        parse_config(_raw(labels={kai_api.PRIORITY_CLASS_LABEL: "build"}, priority_class="train"), source="test")


def test_a_deployments_train_label_overrides_its_inference_default() -> None:
    job = _job(kind="Deployment", labels={kai_api.PRIORITY_CLASS_LABEL: "train"})
    assert job.priority == kai_api.PRIORITY_CLASSES["train"]


def test_the_pod_spec_names_the_class_the_label_gives() -> None:
    """components/podspec.py writes spec.priorityClassName from the field, so a tenant's synced pod keeps it."""
    from components.podspec import pod_spec

    [work] = parse_config(_raw(labels={kai_api.PRIORITY_CLASS_LABEL: "build"}), source="test").workloads
    assert pod_spec(work)["priorityClassName"] == "build"


def test_a_label_padded_with_spaces_reads_as_the_model_strips_it() -> None:
    job = _job(labels={kai_api.PRIORITY_CLASS_LABEL: " inference ", kai_api.PREEMPTIBILITY_LABEL: " preemptible"})
    assert (job.priority, job.preemptible) == (kai_api.PRIORITY_CLASSES["inference"], True)
