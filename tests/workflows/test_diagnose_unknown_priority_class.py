"""`kaistack diagnose`'s `unknown-priority-class`: a priorityClassName label naming no PriorityClass.

KAI's pod-grouper takes an owner's `priorityClassName` label, else the pod's, else spec.priorityClassName, and drops
a name that is no PriorityClass whole, going on to its default class for the workload's kind
(kai-scheduler/KAI-Scheduler@v0.17.0 pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go:187-223,
calcPriorityClassWithDefaults; 322-331, calcPodGroupPriorityClass; 333-346, validatePriorityClassExists). So a label
with a typo hides the pod's own spec.priorityClassName too, and nothing reports it. The API server refuses a pod
whose spec.priorityClassName names no class, so only the label can.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dump_testlib import healthy_dump_mistakes, pod, pod_group, priority_class

DUMPS = Path(__file__).resolve().parents[1] / "data" / "dumps"
CLASSES = [priority_class("train", 50), priority_class("inference", 125)]


def _pod(
    name: str, label: str | None, scheduler: str = "kai-scheduler", spec_class: str = "inference"
) -> dict[str, Any]:
    labels = {"kai.scheduler/queue": "test", **({"priorityClassName": label} if label is not None else {})}
    extra = {"priorityClassName": spec_class} if spec_class else {}
    return pod(name, f"pg-{name}", requests={"cpu": "100m"}, labels=labels, schedulerName=scheduler, **extra)


def _pod_group(name: str, klass: str) -> dict[str, Any]:
    return pod_group(f"pg-{name}", 0, klass=klass, queue="test")


def _mistakes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *objects: dict[str, Any], classes: bool = True
) -> list[dict[str, Any]]:
    return healthy_dump_mistakes("unknown-priority-class", tmp_path, capsys, *(CLASSES if classes else []), *objects)


def test_a_label_with_a_typo_hides_the_pods_own_class(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [mistake] = _mistakes(tmp_path, capsys, _pod("serve", "infrence"), _pod_group("serve", "train"))
    assert mistake["object"] == "Pod ml/serve"
    assert mistake["problem"] == (
        "its priorityClassName label names 'infrence', which is no PriorityClass: KAI's pod-grouper reads neither it, "
        "nor spec.priorityClassName 'inference'; unless an owner names a class (its own priorityClassName label, or a "
        "Ray or Grove owner's), it takes its default for the workload's kind (its PodGroup has 'train')"
    )
    assert mistake["fix"].startswith("name an existing PriorityClass in the priorityClassName label")


def test_an_empty_label_is_dropped_the_same_way(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [mistake] = _mistakes(tmp_path, capsys, _pod("serve", ""))
    assert mistake["problem"].startswith("its priorityClassName label names '', which is no PriorityClass")
    assert "its PodGroup has" not in mistake["problem"]  # none was created yet


def test_a_label_naming_an_existing_class_is_fine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _mistakes(tmp_path, capsys, _pod("serve", "inference")) == []


def test_a_pod_without_the_label_is_fine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _mistakes(tmp_path, capsys, _pod("serve", None)) == []


def test_a_dump_without_priority_classes_says_nothing_of_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the PriorityClass list the classes that exist are unknown: no finding rather than a guess."""
    assert _mistakes(tmp_path, capsys, _pod("serve", "infrence"), classes=False) == []


def test_a_pod_kai_does_not_schedule_is_not_judged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _mistakes(tmp_path, capsys, _pod("web", "infrence", scheduler="default-scheduler")) == []


def test_without_a_spec_class_only_the_label_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    [mistake] = _mistakes(tmp_path, capsys, _pod("serve", "infrence", spec_class=""))
    assert mistake["problem"].startswith(
        "its priorityClassName label names 'infrence', which is no PriorityClass: KAI's pod-grouper reads neither it; "
        "unless an owner names a class"
    )
