"""`kaistack diagnose`: Pending pods explained and the field's mistakes found, on `kubectl get -o yaml` dumps.

tests/data/dumps/healthy.yaml is a fake-GPU cluster where every pod runs; mistakes.yaml is the same
cluster plus one object per mistake and pods Pending for different reasons. Each mistake must be
found on the dump that has it and not on the one without.
"""

from __future__ import annotations

import codecs
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from kaistack.cli import main
from kaistack.ops.live_snapshot import build
from placement import simulate

DUMPS = Path(__file__).resolve().parents[1] / "data" / "dumps"
MISTAKES = [
    ("queue-limit-omitted", "Queue no-limit"),
    ("unknown-queue", "Pod ml/ghost-0"),
    ("no-kai-scheduler", "Pod default/plain-gpu"),
    ("vcluster-owner-reference", "Pod vcluster-team-b/synced-x-default-x-team-b"),
    ("deployment-without-quota", "Pod serving/chat-7d9f-abcde"),
    ("reservation-pod-without-runtime", "Pod kai-resource-reservation/gpu-reservation-gpu-1-x1"),
    ("vllm-memory-above-share", "Pod ai/vllm-greedy"),
    # KAI@v0.17.0 pkg/scheduler/k8s_internal/plugins/plugins.go:26-37: the Kubernetes plugins it runs, none of
    # them PodTopologySpread; the constraints reach only its scheduling signature.
    ("kai-unread-constraints", "Pod ml/small"),
    # KAI@v0.17.0 pkg/scheduler/cache/cluster_info/cluster_info.go:442-470: PodGroups keyed by name alone.
    ("duplicate-podgroup-name", "PodGroup ai/eval, ml/eval"),
]
README = Path(__file__).resolve().parents[2] / "README.md"


def _allocated(dump: str) -> dict[str, str | None]:
    """Where allocate alone binds each pod of a dump: job -> node."""
    items = yaml.safe_load((DUMPS / dump).read_text())["items"]
    result = simulate(build(items).snapshot, actions=["allocate"])
    return {name.rsplit("-", 1)[0]: t.node for name, t in result.tasks.items() if t.status == "Binding"}


def _diagnose(dump: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any]]:
    code = main(["diagnose", "--from-dump", str(DUMPS / dump), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("code", "subject"), MISTAKES, ids=[m[0] for m in MISTAKES])
def test_each_mistake_is_found_where_it_is(code: str, subject: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, report = _diagnose("mistakes.yaml", capsys)
    assert (code, subject) in {(m["code"], m["object"]) for m in report["mistakes"]}


def test_the_mistakes_dump_has_each_mistake_once(capsys: pytest.CaptureFixture[str]) -> None:
    """One object per mistake: the table above is every mistake the dump shows, and the README's sample with it."""
    _, report = _diagnose("mistakes.yaml", capsys)
    assert sorted((m["code"], m["object"]) for m in report["mistakes"]) == sorted(MISTAKES)


def test_the_readme_shows_what_diagnose_prints_on_the_mistakes_dump(capsys: pytest.CaptureFixture[str]) -> None:
    command = "$ kaistack diagnose --from-dump tests/data/dumps/mistakes.yaml --at 2026-11-25T12:00:00Z"
    sample = README.read_text().split(command + "\n", 1)[1].split("```", 1)[0]
    main(["diagnose", "--from-dump", str(DUMPS / "mistakes.yaml"), "--at", "2026-11-25T12:00:00Z"])
    assert capsys.readouterr().out == sample


def test_the_healthy_cluster_has_no_mistake_and_nothing_pending(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _diagnose("healthy.yaml", capsys)
    assert code == 0
    assert report["mistakes"] == []
    assert report["pending"] == []
    assert report["objects"] == {"Node": 3, "Pod": 3, "PodGroup": 3, "Queue": 3, "Topology": 0, "ConfigMap": 0}


def test_every_pending_pod_gets_kais_reason(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _diagnose("mistakes.yaml", capsys)
    assert code == 1
    reasons = {p["pod"]: p for p in report["pending"]}
    assert reasons["ml/more-0"]["reason"] == "queue team-a is over its gpu limit (limit 2, allocated 2, requested 1)"
    assert reasons["ml/ghost-0"]["reason"] == "queue ghost does not exist"
    assert reasons["ml/small"]["wouldPlace"] is True
    assert "look outside the scheduling decision" in reasons["ml/small"]["reason"]


def test_running_pods_keep_their_node_and_gpu_group(capsys: pytest.CaptureFixture[str]) -> None:
    """share-a and share-b share gpu-1's group g-1, so a pending 0.5 fraction finds no room there."""
    dump = yaml.safe_load((DUMPS / "healthy.yaml").read_text())
    from kaistack.ops.live_snapshot import build

    live = build([dump])
    tasks = {pods[0]: job.tasks[0] for job in live.snapshot.jobs for pods in [live.pods_of_job[job.name]]}
    assert tasks["ai/share-a"].node == "gpu-1"
    assert tasks["ai/share-a"].gpu_groups == ("g-1",)
    assert tasks["ai/share-a"].gpu_fraction == 0.5
    assert tasks["ml/train-0"].gpu == 2


def test_live_read_skips_what_the_credentials_may_not_read(
    fake_kube: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real client on loopback: nodes, queues and pods read; PodGroups forbidden (403) and said so."""
    dump = yaml.safe_load((DUMPS / "healthy.yaml").read_text())
    items = dump["items"]
    for kind, path in (("Node", "/api/v1/nodes"), ("Queue", "/apis/scheduling.run.ai/v2/queues"),
                       ("Pod", "/api/v1/pods")):  # fmt: skip
        fake_kube.responses[path] = {"kind": f"{kind}List", "apiVersion": "v1", "metadata": {},
                                     "items": [i for i in items if i["kind"] == kind]}  # fmt: skip
    fake_kube.forbidden.add("/apis/scheduling.run.ai/v2alpha2/podgroups")
    code = main(["diagnose", "--kubeconfig", str(fake_kube.kubeconfig(tmp_path)), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["objects"]["Node"] == 3
    assert any("could not read PodGroups (403)" in n for n in report["notes"])


@pytest.mark.parametrize(
    ("path", "plural"),
    [
        # KAI@v0.17.0 deployments/kai-scheduler/crds/scheduling.run.ai_bindrequests.yaml
        ("/apis/scheduling.run.ai/v1alpha2/bindrequests", "BindRequests"),
        # scheduling.k8s.io/v1: the PodGroup's class value (cluster_info.go:601-635)
        ("/apis/scheduling.k8s.io/v1/priorityclasses", "PriorityClasses"),
        # core/v1 and storage.k8s.io/v1: what the ConfigMap, VolumeBinding and InterPodAffinity predicates read
        ("/api/v1/configmaps", "ConfigMaps"),
        ("/api/v1/persistentvolumeclaims", "PersistentVolumeClaims"),
        ("/api/v1/persistentvolumes", "PersistentVolumes"),
        ("/apis/storage.k8s.io/v1/storageclasses", "StorageClasses"),
        ("/api/v1/namespaces", "Namespaces"),
        ("/apis/kai.scheduler/v1alpha1/topologies", "Topologies"),
        # KAI@v0.17.0 deployments/kai-scheduler/crds/kai.scheduler_schedulingshards.yaml: the scheduler's settings
        ("/apis/kai.scheduler/v1/schedulingshards", "SchedulingShards"),
    ],
)
def test_live_read_lists_each_kind_at_its_api_path_and_says_what_it_may_not_read(
    path: str, plural: str, fake_kube: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_kube.forbidden.add(path)
    main(["diagnose", "--kubeconfig", str(fake_kube.kubeconfig(tmp_path)), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert any(f"could not read {plural} (403)" in n for n in report["notes"])


def test_rejected_credentials_are_an_environment_problem_not_an_empty_cluster(
    fake_kube: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """401 on every list: nothing was read, so "0 pending pods, 0 mistakes" would be a false all-clear."""
    fake_kube.token = "right"
    code = main(["diagnose", "--kubeconfig", str(fake_kube.kubeconfig(tmp_path, token="wrong")), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 3
    assert report["ok"] is False
    assert "rejected the credentials (401)" in report["error"]


@pytest.mark.parametrize(
    ("path", "plural"),
    [("/api/v1/pods", "Pods"), ("/api/v1/nodes", "Nodes"), ("/apis/scheduling.run.ai/v2/queues", "Queues")],
)
def test_pods_nodes_and_queues_that_may_not_be_read_stop_the_diagnosis(
    path: str, plural: str, fake_kube: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_kube.forbidden.add(path)
    code = main(["diagnose", "--kubeconfig", str(fake_kube.kubeconfig(tmp_path)), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 3
    assert f"could not read {plural} (403): diagnose needs to list Nodes and Queues" in report["error"]


def test_a_slow_api_server_is_said_to_be_slow_within_the_timeout_given(
    fake_kube: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was reached (the Nodes were read): "cannot reach the API server" sent the user after the network."""
    fake_kube.slow["/api/v1/pods"] = 1.0
    kubeconfig = str(fake_kube.kubeconfig(tmp_path))
    code = main(["diagnose", "--kubeconfig", kubeconfig, "--timeout", "0.3", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 3
    assert report["error"].endswith("did not answer within 0.3 s (--timeout)")


def test_a_cluster_without_kais_queue_api_is_said_to_have_no_kai(
    fake_kube: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Read without Queues, every KAI pod was "queue ... does not exist", beside a note that none could be read."""
    del fake_kube.responses["/apis/scheduling.run.ai/v2/queues"]
    code = main(["diagnose", "--kubeconfig", str(fake_kube.kubeconfig(tmp_path)), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 3
    assert report["error"].startswith("kaistack diagnose: KAI is not installed here")


def test_a_json_dump_is_read_like_the_yaml_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    as_json = tmp_path / "dump.json"
    as_json.write_text(json.dumps(yaml.safe_load((DUMPS / "mistakes.yaml").read_text())))
    at = ("--at", "2026-11-25T12:00:00Z")  # the two files' modification times differ
    _, from_yaml = _diagnose("mistakes.yaml", capsys, *at)
    main(["diagnose", "--from-dump", str(as_json), "--json", *at])
    assert json.loads(capsys.readouterr().out) == from_yaml


def test_a_json_dump_with_a_utf8_byte_order_mark_is_read_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mark hid the "{": the dump was read as YAML, under YAML's limits (here 100 bytes)."""
    from kaistack.declaration import limits

    monkeypatch.setattr(limits, "MAX_MANIFEST_FILE_BYTES", 100)
    as_json = tmp_path / "dump.json"
    as_json.write_bytes(codecs.BOM_UTF8 + json.dumps(yaml.safe_load((DUMPS / "healthy.yaml").read_text())).encode())
    assert main(["diagnose", "--from-dump", str(as_json), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["objects"]["Node"] == 3


@pytest.mark.parametrize(
    ("bom", "encoding"), [(codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")], ids=["le", "be"]
)
def test_a_utf16_dump_is_told_to_be_saved_as_utf8(
    bom: bytes, encoding: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What Windows PowerShell 5's `kubectl get ... > dump.yaml` writes; it was "not UTF-8 text (byte 0)"."""
    dump = tmp_path / "dump.yaml"
    dump.write_bytes(bom + (DUMPS / "healthy.yaml").read_text().encode(encoding))
    assert main(["diagnose", "--from-dump", str(dump)]) == 2
    assert f"{dump}: dump is UTF-16 text, not UTF-8; re-save it as UTF-8" in capsys.readouterr().err


def test_the_markdown_diagnosis_carries_the_notes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The notes say what was not read or not checked; --markdown dropped every one."""
    dump = yaml.safe_load((DUMPS / "healthy.yaml").read_text())
    dump["items"].append({"kind": "Pod", "metadata": {"name": ["a"], "namespace": "ml"}})
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(dump))
    main(["diagnose", "--from-dump", str(path), "--markdown"])
    assert "\n- left out 1 Pod object without a metadata.name (a string)\n" in capsys.readouterr().out


def test_an_unreadable_json_dump_exits_2_naming_where(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "dump.json"
    bad.write_text('{"items": [')
    assert main(["diagnose", "--from-dump", str(bad)]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_at_must_be_a_time_with_a_zone(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["diagnose", "--from-dump", str(DUMPS / "mistakes.yaml"), "--at", "2026-11-25 12:00"])
    assert code == 2
    assert "--at: must be an RFC 3339 time with a zone" in capsys.readouterr().err


def test_a_yaml_dump_past_the_value_limit_says_to_dump_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kaistack.declaration import limits

    monkeypatch.setattr(limits, "MAX_YAML_VALUES", 50)
    assert main(["diagnose", "--from-dump", str(DUMPS / "mistakes.yaml")]) == 2
    err = capsys.readouterr().err
    assert "more than 50 values in the input" in err
    assert "dump it with `kubectl get ... -o json` (up to 5,000,000 values)" in err


def test_a_yaml_dump_over_the_manifest_limit_is_told_json_is_read_further(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kaistack.declaration import limits

    monkeypatch.setattr(limits, "MAX_MANIFEST_FILE_BYTES", 100)
    as_json = tmp_path / "dump.json"
    as_json.write_text(json.dumps(yaml.safe_load((DUMPS / "mistakes.yaml").read_text())))
    assert main(["diagnose", "--from-dump", str(DUMPS / "mistakes.yaml")]) == 2
    assert "kaistack reads YAML dumps up to 100 bytes and JSON ones (`kubectl get ... -o json`) up to" in (
        capsys.readouterr().err
    )
    assert main(["diagnose", "--from-dump", str(as_json)]) == 1


@pytest.mark.parametrize("option", [["--context", "prod"], ["--timeout", "3"]])
def test_a_live_clusters_options_with_a_dump_are_refused_not_ignored(
    option: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A --context beside --from-dump read as if it chose the dump's cluster; --kubeconfig was already refused."""
    assert main(["diagnose", "--from-dump", str(DUMPS / "healthy.yaml"), *option]) == 2
    assert f"{option[0]}: not allowed with --from-dump" in capsys.readouterr().err


def test_an_unreadable_dump_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "dump.yaml"
    bad.write_text("items: [\n")
    assert main(["diagnose", "--from-dump", str(bad)]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_a_gang_no_rack_can_hold_is_pending_for_its_topology(capsys: pytest.CaptureFixture[str]) -> None:
    """The dump's Topology, node labels and PodGroup topologyConstraint reach the simulated cycle."""
    code, report = _diagnose("topology.yaml", capsys)
    assert code == 1
    assert report["objects"]["Topology"] == 1
    reasons = {p["pod"]: p["reason"] for p in report["pending"]}
    assert reasons["ml/pretrain-0"] == (
        "topology dc, requirement example.com/rack couldn't be satisfied: "
        "needs 4 pods (8 GPUs) inside one rack; the best rack, z1.r1, has room for 3"
    )


def test_subgroups_and_their_constraints_are_read_from_the_podgroup() -> None:
    dump = yaml.safe_load((DUMPS / "topology.yaml").read_text())
    from kaistack.ops.live_snapshot import build

    live = build([dump])
    jobs = {job.name: job for job in live.snapshot.jobs}
    ddp = jobs["pg-ddp"]
    assert [(g.name, g.min_member) for g in ddp.sub_groups] == [("master", 1), ("worker", 2)]
    assert ddp.sub_groups[1].topology is not None
    assert ddp.sub_groups[1].topology.required == "example.com/rack"
    assert [t.sub_group for t in ddp.tasks] == ["master", "worker", "worker"]
    assert jobs["pg-pretrain"].topology is not None
    assert jobs["pg-pretrain"].topology.required == "rack"  # the level's alias; the simulator resolves it
    assert live.snapshot.nodes[0].labels == {"topology.kubernetes.io/zone": "z1", "example.com/rack": "r1"}


def test_a_topology_with_more_levels_than_the_crd_allows_is_not_read() -> None:
    # The Topology CRD's spec.levels has MaxItems 16; such an object could not have come from the API server, and
    # a thousand levels made the domain tree recurse past Python's limit (found by benchmarks/fuzz.py diagnose).
    dump = yaml.safe_load((DUMPS / "topology.yaml").read_text())
    from kaistack.ops.live_snapshot import build

    for item in dump["items"]:
        if item["kind"] == "Topology":
            item["spec"]["levels"] = item["spec"]["levels"] * 9
    assert build([dump]).snapshot.topologies == ()


def test_a_cycle_stopped_by_max_seconds_makes_a_partial_diagnosis(capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _diagnose("mistakes.yaml", capsys, "--max-seconds", "0.000001")
    assert code == 1
    assert report["partial"] is True
    reasons = {p["pod"]: p for p in report["pending"]}
    # The cycle stopped before allocate reached it: neither "would place" nor a reason it never got.
    assert reasons["ml/small"]["wouldPlace"] is False
    assert reasons["ml/small"]["reason"].startswith("not reached: --max-seconds stopped the scheduling cycle")
    # What does not depend on the cycle is still said.
    assert reasons["ml/ghost-0"]["reason"] == "queue ghost does not exist"


def test_a_diagnosis_run_to_the_end_is_not_partial(capsys: pytest.CaptureFixture[str]) -> None:
    _, report = _diagnose("mistakes.yaml", capsys, "--max-seconds", "600")
    assert "partial" not in report


def test_the_partial_diagnosis_says_so_in_text_and_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    dump = str(DUMPS / "mistakes.yaml")
    main(["diagnose", "--from-dump", dump, "--max-seconds", "0.000001"])
    assert "partial: the scheduling cycle was stopped by --max-seconds" in capsys.readouterr().out
    main(["diagnose", "--from-dump", dump, "--max-seconds", "0.000001", "--markdown"])
    assert "**Partial**: the scheduling cycle was stopped" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["0", "-5"])
def test_max_seconds_must_be_a_positive_number(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["diagnose", "--from-dump", str(DUMPS / "mistakes.yaml"), "--max-seconds", value])
    assert code == 2
    assert "--max-seconds: must be a positive number of seconds" in capsys.readouterr().err


def test_the_scheduling_cycle_shows_its_progress_on_stderr_when_asked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KAISTACK_PROGRESS", "1")
    main(["diagnose", "--from-dump", str(DUMPS / "mistakes.yaml"), "--json"])
    captured = capsys.readouterr()
    assert "cycle 1: allocate" in captured.err
    assert json.loads(captured.out)["ok"] is False


def test_taints_host_ports_and_preferred_spreading_are_read_from_a_dump(capsys: pytest.CaptureFixture[str]) -> None:
    """constraints.yaml: tainted GPU nodes, another scheduler's exporter on gpu-0 holding host port 9400, a
    replica of a service that prefers to spread (placement.host_ports, placement.pod_affinity)."""
    _, report = _diagnose("constraints.yaml", capsys)
    pending = {p["pod"]: p for p in report["pending"]}
    assert (pending["ml/serve-1"]["wouldPlace"], pending["ml/metrics"]["wouldPlace"]) == (True, True)
    assert pending["ml/untolerated"]["reason"] == (
        "the nodes with room for it keep it off: node gpu-0 has the taint nvidia.com/gpu=true:NoSchedule, "
        "which it does not tolerate"
    )
    # Binpack alone would put one of them on gpu-0 (one GPU free): the spreading preference and the held port
    # send both to gpu-1.
    assert _allocated("constraints.yaml") == {"pod/ml/serve-1": "gpu-1", "pod/ml/metrics": "gpu-1"}


def test_configmaps_claims_and_namespace_labels_are_read_from_a_dump(capsys: pytest.CaptureFixture[str]) -> None:
    """storage.yaml (also a fuzz seed): a claim bound to a volume on gpu-1, a local claim whose only Available
    volume is there, another scheduler's anti-affinity reaching namespace ml by its labels, a missing ConfigMap,
    an unbound Immediate claim and a missing claim (placement.config_maps, live_volumes, namespace_selectors)."""
    _, report = _diagnose("storage.yaml", capsys)
    reasons = {p["pod"]: p["reason"] for p in report["pending"]}
    assert reasons["ml/needs-config"].startswith("a pod needs ConfigMap missing, which does not exist in namespace ml")
    assert "pod has unbound immediate PersistentVolumeClaims" in reasons["ml/unbound-claim"]
    assert 'persistentvolumeclaim "gone" not found' in reasons["ml/no-claim"]
    assert reasons["ml/spread"] == (
        "inter-pod affinity keeps it off every node with room for it: on gpu-0, the anti-affinity of a pod in that "
        "node's domain selects it"
    )
    # Binpack alone would start on gpu-0: the volumes are on gpu-1.
    assert _allocated("storage.yaml") == {"pod/ml/with-data": "gpu-1", "pod/ml/with-local": "gpu-1"}


@pytest.mark.parametrize("text", ["", "42\n", "- a\n- b\n", '{"kind": "List", "items": 5}', "---\n---\n"])
def test_a_dump_without_kubernetes_objects_is_refused(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What `kubectl get ... > dump.yaml` leaves when kubectl fails is not a healthy cluster."""
    dump = tmp_path / "dump.yaml"
    dump.write_text(text)
    code = main(["diagnose", "--from-dump", str(dump), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 2
    assert "no Kubernetes objects in it" in report["error"]


def test_objects_without_a_name_are_said_to_be_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Pending pod named [a] was dropped without a word and the dump read as healthy."""
    dump = yaml.safe_load((DUMPS / "healthy.yaml").read_text())
    dump["items"].append(
        {"kind": "Pod", "metadata": {"name": ["a"], "namespace": "ml"}, "status": {"phase": "Pending"}}
    )
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(dump))
    main(["diagnose", "--from-dump", str(path), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert "left out 1 Pod object without a metadata.name (a string)" in report["notes"]


def test_a_dump_of_empty_lists_says_kubectl_found_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dump = tmp_path / "dump.yaml"
    dump.write_text("apiVersion: v1\nkind: List\nitems: []\n")
    assert main(["diagnose", "--from-dump", str(dump), "--json"]) == 2
    assert "only empty lists: kubectl found nothing to dump" in json.loads(capsys.readouterr().out)["error"]


def test_a_namespace_diagnosis_still_reads_every_namespaces_pods(
    fake_kube: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Other namespaces' pods hold the node and queue room the namespace's pending pods compete for."""
    main(["diagnose", "--kubeconfig", str(fake_kube.kubeconfig(tmp_path)), "--namespace", "ml", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert "/api/v1/pods" in [path for path, _ in fake_kube.requests]
    assert report["objects"]["Pod"] == 9
    assert all(p["pod"].startswith("ml/") for p in report["pending"])


def test_a_namespace_diagnosis_says_when_only_that_namespace_could_be_read(
    fake_kube: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_kube.forbidden.add("/api/v1/pods")
    code = main(["diagnose", "--kubeconfig", str(fake_kube.kubeconfig(tmp_path)), "--namespace", "ml", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    assert report["objects"]["Pod"] == 3
    assert any(n.startswith("could not list Pods in every namespace (403); read ml only") for n in report["notes"])


def test_the_diagnosis_names_the_kubeconfig_and_context_it_read(
    fake_kube: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = fake_kube.kubeconfig(tmp_path)
    main(["diagnose", "--kubeconfig", str(kubeconfig), "--json"])
    assert (
        json.loads(capsys.readouterr().out)["notes"][0] == f"read from --kubeconfig {kubeconfig}, its current context"
    )


def test_without_a_kubeconfig_diagnose_never_asks_pulumi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """There is no stack to ask for: `pulumi stack output --stack ''` was run before."""
    marker = tmp_path / "pulumi-ran"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pulumi").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (bin_dir / "pulumi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HOME", str(tmp_path))
    code = main(["diagnose", "--json"])
    assert code == 3
    assert "create ~/.kube/config" in json.loads(capsys.readouterr().out)["error"]
    assert not marker.exists()


def test_a_namespace_diagnosis_reads_every_namespaces_config_map_names(
    fake_kube: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Other namespaces' pending pods need their ConfigMaps to be placed, as they take the namespace's room."""
    main(["diagnose", "--kubeconfig", str(fake_kube.kubeconfig(tmp_path)), "--namespace", "ml", "--json"])
    capsys.readouterr()
    assert "/api/v1/configmaps" in [path for path, _ in fake_kube.requests]


def test_without_at_the_dump_files_modification_time_is_taken_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A copy (scp, a ticket's attachment, a checkout) moves the file's time, and with it which deleted pods KAI
    counts as stuck: the report names the time it took and where from."""
    import os

    dump = tmp_path / "dump.yaml"
    dump.write_text((DUMPS / "mistakes.yaml").read_text())
    os.utime(dump, (1_764_072_000, 1_764_072_000))  # 2025-11-25T12:00:00Z
    main(["diagnose", "--from-dump", str(dump), "--json"])
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert (
        "the objects are taken as read at 2025-11-25T12:00:00Z (the dump file's modification time); --at gives the "
        "time kubectl wrote the dump, which decides which deleted pods KAI counts as StuckInReleasing"
    ) in notes


def test_with_at_no_time_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    _, report = _diagnose("mistakes.yaml", capsys, "--at", "2026-11-25T12:00:00Z")
    assert not [n for n in report["notes"] if n.startswith("the objects are taken as read at")]
