"""`kaistack diagnose` reads pods' queues from the label KAI is configured to read.

KAI's Config (kai.scheduler/v1, cluster-scoped, `kai-config` as the chart renders it) carries
spec.global.queueLabelKey, default kai.scheduler/queue, which the operator hands to the scheduler, the pod-grouper
and admission as --queue-label-key (kai-scheduler/KAI-Scheduler@v0.17.0 pkg/apis/kai/v1/global.go:68-70,124;
pkg/operator/operands/scheduler/resources_for_shard.go:363, pod_grouper/resources.go:72; chart
deployments/kai-scheduler/templates/_helpers.tpl:45-49,108-110). kaistack sets it from `kai.queueLabelKey`
(components/kai.py), so a diagnosis reading kai.scheduler/queue there would find every pod's queue missing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kaistack.cli import main

DUMPS = Path(__file__).resolve().parents[1] / "data" / "dumps"
KEY = "team.example.com/queue"


def _kai_config(key: str | None, api_version: str = "kai.scheduler/v1", name: str = "kai-config") -> dict[str, Any]:
    spec: dict[str, Any] = {"namespace": "kai-scheduler", "global": {}}
    if key is not None:
        spec["global"]["queueLabelKey"] = key
    return {"apiVersion": api_version, "kind": "Config", "metadata": {"name": name}, "spec": spec}


def _pending(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "labels": labels},
        "spec": {
            "schedulerName": "kai-scheduler",
            "containers": [{"name": "main", "image": "busybox:1.37.0", "resources": {"requests": {"cpu": "100m"}}}],
        },
        "status": {"phase": "Pending"},
    }


def _diagnose(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *objects: dict[str, Any], flags: tuple[str, ...] = ()
) -> tuple[int, dict[str, Any]]:
    dump = yaml.safe_load((DUMPS / "healthy.yaml").read_text())
    dump["items"].extend(objects)
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump(dump))
    code = main(["diagnose", "--from-dump", str(path), "--json", *flags])
    return code, json.loads(capsys.readouterr().out)


def _unknown_queues(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in report["mistakes"] if m["code"] == "unknown-queue"]


def test_the_key_kais_config_names_is_the_one_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, report = _diagnose(tmp_path, capsys, _kai_config(KEY), _pending("p", {KEY: "nope"}))
    [mistake] = _unknown_queues(report)
    assert mistake["problem"] == f"label {KEY}: nope, which names no Queue; KAI leaves the pod Pending"
    assert f"queues are read from the pods' {KEY} label (KAI's Config kai-config)" in report["notes"]


def test_the_default_key_is_ignored_where_kai_reads_another(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, report = _diagnose(tmp_path, capsys, _kai_config(KEY), _pending("p", {"kai.scheduler/queue": "nope"}))
    assert _unknown_queues(report) == []


def test_a_config_without_the_key_leaves_kais_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, report = _diagnose(tmp_path, capsys, _kai_config(None), _pending("p", {"kai.scheduler/queue": "nope"}))
    [mistake] = _unknown_queues(report)
    assert mistake["problem"].startswith("label kai.scheduler/queue: nope")
    assert not any("queues are read from" in n for n in report["notes"])


@pytest.mark.parametrize(
    "config",
    [_kai_config(KEY, api_version="imageregistry.operator.openshift.io/v1"), _kai_config(KEY, name="other")],
    ids=["another operator's Config kind", "a Config not named kai-config"],
)
def test_only_kais_own_config_counts(
    config: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, report = _diagnose(tmp_path, capsys, config, _pending("p", {"kai.scheduler/queue": "nope"}))
    [mistake] = _unknown_queues(report)
    assert mistake["problem"].startswith("label kai.scheduler/queue: nope")


def test_the_flag_overrides_the_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = "ops.example.com/queue"
    flags = ("--queue-label-key", other)
    _, report = _diagnose(tmp_path, capsys, _kai_config(KEY), _pending("p", {other: "nope"}), flags=flags)
    [mistake] = _unknown_queues(report)
    assert mistake["problem"].startswith(f"label {other}: nope")
    assert f"queues are read from the pods' {other} label (--queue-label-key)" in report["notes"]


def test_the_pending_pods_queue_comes_from_the_configured_label(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The scheduling cycle groups the pod into the queue its configured label names (live_snapshot.build)."""
    _, report = _diagnose(tmp_path, capsys, _kai_config(KEY), _pending("p", {KEY: "test"}))
    [pending] = [p for p in report["pending"] if p["pod"] == "ml/p"]
    assert pending["queue"] == "test"


@pytest.mark.parametrize("key", ["", "a b", "-bad/", "x" * 64])
def test_a_flag_that_is_no_label_key_is_refused(key: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["diagnose", "--from-dump", str(DUMPS / "healthy.yaml"), f"--queue-label-key={key}"])
    assert code == 2
    assert "--queue-label-key: " in capsys.readouterr().err


CONFIG_PATH = "/apis/kai.scheduler/v1/configs"  # KAI@v0.17.0 crds/kai.scheduler_configs.yaml: Cluster scope


def test_live_kai_config_is_picked_from_the_list(
    fake_kube: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Listed as every other kind is (credentials need `list` alone); only the one named kai-config counts."""
    items = [_kai_config("other.example.com/queue", name="kai-config-old"), _kai_config(KEY)]
    fake_kube.responses[CONFIG_PATH] = {"kind": "ConfigList", "apiVersion": "kai.scheduler/v1", "metadata": {},
                                        "items": items}  # fmt: skip
    main(["diagnose", "--kubeconfig", str(fake_kube.kubeconfig(tmp_path)), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert f"queues are read from the pods' {KEY} label (KAI's Config kai-config)" in report["notes"]


def test_live_a_config_that_may_not_be_read_leaves_the_default_and_says_so(
    fake_kube: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_kube.forbidden.add(CONFIG_PATH)
    main(["diagnose", "--kubeconfig", str(fake_kube.kubeconfig(tmp_path)), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert (
        "could not read KAI's Config kai-config (403): queues are read from the pods' kai.scheduler/queue label "
        "(--queue-label-key names another)"
    ) in report["notes"]


def test_live_with_the_flag_the_config_is_not_read(
    fake_kube: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_kube.forbidden.add(CONFIG_PATH)
    main(["diagnose", "--kubeconfig", str(fake_kube.kubeconfig(tmp_path)), "--json", "--queue-label-key", KEY])
    report = json.loads(capsys.readouterr().out)
    assert not any("KAI's Config" in n for n in report["notes"] if "could not read" in n)


def test_a_config_key_that_is_not_a_string_is_ignored_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, report = _diagnose(tmp_path, capsys, _kai_config(5), _pending("p", {"kai.scheduler/queue": "nope"}))
    [mistake] = _unknown_queues(report)
    assert mistake["problem"].startswith("label kai.scheduler/queue: nope")
    assert any(
        n.startswith("KAI's Config kai-config sets spec.global.queueLabelKey to '5', not a string")
        for n in report["notes"]
    )


def test_a_config_key_that_is_no_label_key_is_read_as_kai_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The operator passes the key on unchanged (KAI@v0.17.0 pod_grouper/resources.go:72), so the default label is
    not read either: the pod's own kai.scheduler/queue label names nothing KAI looks at."""
    _, report = _diagnose(tmp_path, capsys, _kai_config("not a key!"), _pending("p", {"kai.scheduler/queue": "nope"}))
    assert _unknown_queues(report) == []
    assert any(
        n.endswith("which is no label key: KAI reads it as it is, so no pod carries it") for n in report["notes"]
    )


def test_a_pod_bound_but_not_started_is_reported_in_its_configured_queue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pod the kubelet has not started yet (diagnose's _in_kubelet) takes its queue from the same label."""
    pod = _pending("bound", {KEY: "test"})
    pod["spec"]["nodeName"] = "gpu-0"
    _, report = _diagnose(tmp_path, capsys, _kai_config(KEY), pod)
    [pending] = [p for p in report["pending"] if p["pod"] == "ml/bound"]
    assert pending["queue"] == "test"
