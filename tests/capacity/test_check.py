"""`kaistack.capacity.check`: the stack declaration as KAI would schedule it, and `kaistack check`'s reports."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kaistack.capacity.check import check
from kaistack.capacity.html import to_html
from kaistack.capacity.plan import plan
from kaistack.capacity.report import to_json, to_markdown
from kaistack.declaration.parse import parse_config
from kaistack.stack.load import load_stack

REPO = Path(__file__).resolve().parents[2]


def _stack(**overrides: Any) -> dict[str, Any]:
    """A small kind stack: one node with 2 GPUs of 10000 MiB, a `team` queue with 2 GPUs of quota."""
    raw: dict[str, Any] = {
        "cluster": {
            "provider": "kind",
            "nodePools": [{"name": "gpu", "count": 1, "gpus": 2, "gpuMemoryMiB": 10000, "cpu": "8", "memory": "32Gi"}],
        },
        "gpu": {"mode": "fake"},
        "queues": [
            {"name": "org"},
            {"name": "team", "parent": "org", "resources": {"gpu": {"quota": 2, "limit": 2}}},
        ],
        "workloads": [],
    }
    raw.update(overrides)
    return raw


def _work(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "kind": "Pod", "image": "busybox:1.37.0", "queue": "team", **fields}


def _verdicts(raw: dict[str, Any]) -> dict[str, Any]:
    report = check(parse_config(raw))
    return {w.name: w for w in report.workloads}


def test_dev_stack_fits_and_the_two_vllm_servers_share_one_gpu() -> None:
    """The field guide's 0.7 + 0.2 vLLM pair lands on one shared GPU (KAI gpupack)."""
    report = check(load_stack(REPO, "dev").config, "dev")
    assert report.ok, report.reasons
    pods = {w.name: w.pods[0] for w in report.workloads}
    seven, two = pods["vllm-test-07"], pods["vllm-test-02"]
    assert (seven.node, seven.gpu_groups) == (two.node, two.gpu_groups)
    assert len(seven.gpu_groups) == 1
    gpu = next(g for n in report.nodes if n.name == seven.node for g in n.gpus if g.id == seven.gpu_groups[0])
    assert sorted(gpu.fractions) == [0.2, 0.7]


def test_host_deployment_in_a_zero_quota_queue_stays_pending_as_non_preemptible() -> None:
    """Deployments default to `inference` (125): non-preemptible jobs never exceed their queue's quota."""
    raw = _stack(
        queues=[{"name": "org"}, {"name": "team", "parent": "org", "resources": {"gpu": {"quota": 0}}}],
        workloads=[_work("api", kind="Deployment", gpu=1)],
    )
    api = _verdicts(raw)["api"]
    assert api.status == "Pending"
    assert api.priority_class == "inference"
    assert any("non-preemptible" in r and "quota" in r for r in api.reasons)


def test_the_same_deployment_inside_a_tenant_is_a_bare_train_pod_and_runs() -> None:
    """vCluster syncs pods without owners, so KAI sees bare pods: class `train`, preemptible, over quota allowed."""
    raw = _stack(
        queues=[{"name": "org"}, {"name": "team", "parent": "org", "resources": {"gpu": {"quota": 0}}}],
        tenants=[{"name": "acme", "queues": ["team"]}],
        workloads=[_work("api", kind="Deployment", gpu=1, tenant="acme")],
    )
    api = _verdicts(raw)["api"]
    assert (api.status, api.priority_class) == ("Running", "train")


def test_unlabelled_workload_lands_in_kai_default_queue_whose_quota_zero_blocks_inference() -> None:
    """No queue label -> `default-queue` (chart default quota 0): the classic silent Pending."""
    raw = _stack(workloads=[{"name": "api", "kind": "Deployment", "image": "busybox:1.37.0", "cpu": "100m"}])
    api = _verdicts(raw)["api"]
    assert api.queue == "default-queue"
    assert api.status == "Pending"
    assert any("default-queue" in r or "default-parent-queue" in r for r in api.reasons)


def test_queue_gpu_limit_blocks_the_job_that_would_exceed_it() -> None:
    raw = _stack(workloads=[_work("a", gpu=2), _work("b", gpu=1)])
    verdicts = _verdicts(raw)
    assert verdicts["a"].status == "Running"
    assert verdicts["b"].status == "Pending"
    assert any("limit" in r for r in verdicts["b"].reasons)


def test_fraction_that_fits_no_shared_gpu_reports_fragmentation() -> None:
    """0.5 and 0.6 cannot share a GPU, so each opens one; a second 0.6 fits neither remainder and no GPU is free."""
    workloads = [_work("p1", gpuFraction=0.5), _work("p2", gpuFraction=0.6), _work("p3", gpuFraction=0.6)]
    raw = _stack(queues=[{"name": "org"}, {"name": "team", "parent": "org"}], workloads=workloads)
    verdicts = _verdicts(raw)
    assert verdicts["p3"].status == "Pending"
    assert any("fits no shared GPU" in r for r in verdicts["p3"].reasons)


def test_gpu_memory_request_without_the_memory_label_explains_the_missing_label() -> None:
    raw = _stack(
        cluster={"provider": "kind", "nodePools": [{"name": "gpu", "gpus": 2}]},
        gpu={"mode": "device-plugin"},
        queues=[{"name": "org"}, {"name": "team", "parent": "org"}],
        workloads=[_work("m", gpuMemoryMiB=2000)],
    )
    m = _verdicts(raw)["m"]
    assert m.status == "Pending"
    assert any("nvidia.com/gpu.memory" in r for r in m.reasons)


def _device_plugin_stack(gfd: bool, labels: dict[str, str] | None = None) -> dict[str, Any]:
    pool = {"name": "gpu", "gpus": 2, "gpuMemoryMiB": 10000, "labels": labels or {}}
    return _stack(
        cluster={"provider": "kind", "nodePools": [pool]},
        gpu={"mode": "device-plugin", "devicePlugin": {"gfd": gfd}},
        queues=[{"name": "org"}, {"name": "team", "parent": "org"}],
        workloads=[_work("m", gpuMemoryMiB=2000)],
    )


def test_without_gfd_a_declared_gpu_memory_writes_no_label_so_gpu_memory_pods_stay_pending() -> None:
    # Only GFD writes nvidia.com/gpu.memory on kind (components/gpu.py device_plugin_values); KAI@v0.17.0
    # pkg/scheduler/plugins/predicates/predicates.go:333-337 refuses gpu-memory pods on a node without it.
    m = _verdicts(_device_plugin_stack(gfd=False))["m"]
    assert m.status == "Pending"
    assert any("nvidia.com/gpu.memory" in r for r in m.reasons)


def test_with_gfd_the_declared_gpu_memory_is_the_label_kai_reads() -> None:
    assert _verdicts(_device_plugin_stack(gfd=True))["m"].status == "Running"


def test_without_gfd_a_memory_label_the_pool_declares_itself_still_counts() -> None:
    raw = _device_plugin_stack(gfd=False, labels={"nvidia.com/gpu.memory": "10000"})
    assert _verdicts(raw)["m"].status == "Running"


# NVIDIA/k8s-device-plugin@v0.20.0:README.md "With CUDA Time-Slicing": replicas x GPUs advertised as
# nvidia.com/gpu, or as nvidia.com/gpu.shared with renameByDefault (which KAI does not count as GPUs).


def _time_sliced_stack(mode: str, pods: int, rename: bool = False) -> dict[str, Any]:
    slicing = {"replicas": 4, "renameByDefault": rename}
    settings = (
        {"devicePlugin": {"timeSlicing": slicing}}
        if mode == "device-plugin"
        else {"gpuOperator": {"timeSlicing": slicing}}
    )
    return _stack(
        cluster={"provider": "kind", "nodePools": [{"name": "gpu", "gpus": 2, "cpu": "64", "memory": "256Gi"}]},
        gpu={"mode": mode, **settings},
        queues=[{"name": "org"}, {"name": "team", "parent": "org"}],
        workloads=[_work("w", kind="Deployment", replicas=pods, gpu=1)],
    )


@pytest.mark.parametrize("mode", ["device-plugin", "gpu-operator"])
def test_time_slicing_advertises_replicas_times_the_gpus_and_kai_counts_each_as_a_gpu(mode: str) -> None:
    assert _verdicts(_time_sliced_stack(mode, pods=8))["w"].status == "Running"
    assert _verdicts(_time_sliced_stack(mode, pods=9))["w"].status != "Running"


def test_time_slicing_renamed_to_gpu_shared_leaves_kai_no_gpu_to_place() -> None:
    assert _verdicts(_time_sliced_stack("device-plugin", pods=1, rename=True))["w"].status == "Pending"


def test_pytorch_gang_larger_than_the_cluster_places_no_pod_at_all() -> None:
    """All or nothing: a 3-pod gang of 1-GPU pods on 2 GPUs leaves every pod Pending."""
    raw = _stack(
        queues=[{"name": "org"}, {"name": "team", "parent": "org"}],
        workloads=[_work("ddp", kind="PyTorchJob", gpu=1, pytorch={"master": 1, "workers": 2})],
    )
    ddp = _verdicts(raw)["ddp"]
    assert ddp.status == "Pending"
    assert all(p.node is None for p in ddp.pods)
    assert len(ddp.pods) == 3


def test_plan_expands_deployment_replicas_into_one_podgroup_each_and_pytorchjob_into_one_gang() -> None:
    raw = _stack(
        queues=[{"name": "org"}, {"name": "team", "parent": "org"}],
        workloads=[
            _work("web", kind="Deployment", replicas=3, cpu="100m"),
            _work("ddp", kind="PyTorchJob", gpu=1, pytorch={"master": 1, "workers": 3, "minAvailable": 2}),
        ],
    )
    jobs = plan(parse_config(raw)).snapshot.jobs
    web = [j for j in jobs if j.name.startswith("web")]
    ddp = [j for j in jobs if j.name.startswith("ddp")]
    assert [(len(j.tasks), j.min_member, j.priority) for j in web] == [(1, 1, 125)] * 3
    assert [(len(j.tasks), j.min_member, j.priority) for j in ddp] == [(4, 2, 50)]


def test_report_json_has_the_documented_shape_and_gpu_ids_match_between_pods_and_nodes() -> None:
    data = to_json(check(load_stack(REPO, "dev").config, "dev"))
    assert data["fits"] is True
    assert {"name", "queue", "status", "reason", "pods"} <= set(data["workloads"][0])
    assert {"name", "quota", "limit", "fairShare", "allocated"} <= set(data["queues"][0])
    node_gpus = {(n["name"], g["id"]): g["pods"] for n in data["nodes"] for g in n["gpus"]}
    for work in data["workloads"]:
        for pod in work["pods"]:
            for group in pod["gpuGroups"]:
                assert pod["name"] in node_gpus[(pod["node"], group)]


def test_markdown_and_html_show_pending_workloads_with_their_reason() -> None:
    raw = _stack(workloads=[_work("a", gpu=2), _work("b", gpu=1)])
    report = check(parse_config(raw), "over")
    markdown, html = to_markdown(report), to_html(report)
    assert markdown.startswith("### ❌ Capacity")
    assert "**Pending**" in markdown
    assert "limit" in markdown
    assert "<!DOCTYPE html>" in html
    assert "limit" in html
    assert "<script" not in html
    assert "http" not in html.split("<body>")[1]


def test_every_name_in_the_html_report_is_text() -> None:
    """GPU ids included: the page is opened in a browser, so no value may become markup."""
    report = check(parse_config(_stack(workloads=[_work("a", gpu=1)])), "x")
    node = report.nodes[0]
    hostile = dataclasses.replace(node.gpus[0], id="<img src=x onerror=alert(1)>")
    report = dataclasses.replace(report, nodes=(dataclasses.replace(node, gpus=(hostile, *node.gpus[1:])),))
    page = to_html(report)
    assert "<img" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


# --- the command ------------------------------------------------------------------------------------


def _project(tmp_path: Path, raw: dict[str, Any], stack: str = "over") -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: kaistack\nruntime: python\n")
    config = {f"kaistack:{k}": v for k, v in raw.items()}
    (tmp_path / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": config}))
    return tmp_path


def _kaistack(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kaistack", *args], capture_output=True, text=True, check=False)


def test_check_command_exits_0_on_the_dev_stack() -> None:
    run = _kaistack("check", "--stack", "dev", "--project", str(REPO))
    assert run.returncode == 0, run.stderr
    assert "fits" in run.stdout


@pytest.mark.parametrize("form", ["text", "--json", "--markdown"])
def test_check_command_exits_1_with_reasons_when_work_cannot_fit(tmp_path: Path, form: str) -> None:
    project = _project(tmp_path, _stack(workloads=[_work("a", gpu=2), _work("b", gpu=1)]))
    extra = [] if form == "text" else [form]
    run = _kaistack("check", "--stack", "over", "--project", str(project), *extra)
    assert run.returncode == 1, run.stderr
    assert "queue team is over its gpu limit" in run.stdout
    if form == "--json":
        data = json.loads(run.stdout)
        assert data["fits"] is False
        assert [w["status"] for w in data["workloads"]] == ["Running", "Pending"]


def test_check_command_writes_an_html_page(tmp_path: Path) -> None:
    project = _project(tmp_path, _stack(workloads=[_work("a", gpuFraction=0.5)]))
    page = tmp_path / "capacity.html"
    run = _kaistack("check", "--stack", "over", "--project", str(project), "--html", str(page))
    assert run.returncode == 0, run.stderr
    assert 'class="slice"' in page.read_text()


def test_check_command_on_bad_config_prints_the_key_path_and_exits_2(tmp_path: Path) -> None:
    project = _project(tmp_path, _stack(workloads=[_work("a", gpu=1, queue="nope")]))
    run = _kaistack("check", "--stack", "over", "--project", str(project))
    assert run.returncode == 2
    assert "kaistack:workloads[0].queue" in run.stderr
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("command", ["check", "render", "validate"])
def test_stack_commands_outside_a_project_say_so_and_exit_2(tmp_path: Path, command: str) -> None:
    """No Pulumi.yaml here or above: a clear message naming --project, never a traceback."""
    run = subprocess.run(
        [sys.executable, "-m", "kaistack", command, "--stack", "dev"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert run.returncode == 2
    assert "no Pulumi.yaml" in run.stderr
    assert "--project" in run.stderr
    assert "Traceback" not in run.stderr


def test_max_seconds_gives_a_partial_verdict_that_never_fits() -> None:
    """A time limit already passed: nothing is decided, and the report says it cannot tell."""
    from pathlib import Path

    from kaistack.capacity.check import check
    from kaistack.stack.load import load_stack

    config = load_stack(Path(__file__).resolve().parents[2], "dev").config
    report = check(config, "dev", max_seconds=0.0)
    assert report.partial is True
    assert report.ok is False
    assert report.summary().startswith("unknown: stopped by the time limit")
    assert check(config, "dev").partial is False


def test_a_fragmentation_reason_names_the_shared_gpu_as_the_gpu_list_does() -> None:
    """The report numbers a node's GPUs whole-GPU pods first (gpu0 here), shared ones next: the reason must name
    the shared GPU gpu1 too, not by the simulator's group id ("0"), which reads as the whole pod's GPU."""
    workloads = [_work("whole", gpu=1), _work("p1", gpuFraction=0.6), _work("p2", gpuFraction=0.6)]
    report = check(
        parse_config(_stack(queues=[{"name": "org"}, {"name": "team", "parent": "org"}], workloads=workloads))
    )
    [node] = report.nodes
    assert [(g.id, g.pods) for g in node.gpus] == [("gpu0", ("whole-0",)), ("gpu1", ("p1-0",))]
    p2 = next(w for w in report.workloads if w.name == "p2")
    assert p2.reasons == (
        "fraction 0.6 fits no shared GPU and no whole GPU is free (fragmentation: 0.40 free on gpu-0/gpu1)",
    )


def test_a_check_stopped_before_any_action_says_each_workload_was_not_reached() -> None:
    report = check(load_stack(REPO, "dev").config, "dev", max_seconds=0.0)
    assert report.partial is True
    assert {r for w in report.workloads for r in w.reasons} == {
        "not reached: the run stopped at its time limit (--max-seconds) before any action got to this job"
    }


def test_a_job_with_fewer_completions_than_parallelism_runs_only_that_many_pods() -> None:
    """batch/v1 JobSpec.parallelism: fewer pods run "when ((.spec.completions - .status.successful) <
    .spec.parallelism)"; KAI sees the two the Job controller creates, and both fit the node's 2 GPUs."""
    job = _work("j", kind="Job", gpu=1, replicas=4, completions=2)
    verdict = _verdicts(_stack(workloads=[job]))["j"]
    assert verdict.status == "Running"
    assert len(verdict.pods) == 2


def _pytorch(workers: int, master: int = 1) -> dict[str, Any]:
    return _work("ddp", kind="PyTorchJob", cpu="10m", memory="1Mi", pytorch={"master": master, "workers": workers})


def _small_cpu_node(cpu: str) -> dict[str, Any]:
    return {"provider": "kind", "nodePools": [{"name": "n", "count": 1, "gpus": 1, "cpu": cpu, "memory": "32Gi"}]}


def test_pytorchjob_workers_ask_for_the_operators_init_container() -> None:
    """kubeflow/training-operator@v1.8.1 initcontainer.go: with a master, each worker gets init-pytorch
    (50m CPU); KAI counts the larger of containers and init container (pod_info.go SetMaxResource): 10m + 16
    x 50m = 810m does not fit 500m, though 17 x 10m would."""
    verdict = _verdicts(_stack(cluster=_small_cpu_node("500m"), workloads=[_pytorch(16)]))["ddp"]
    assert verdict.status == "Pending"


def test_pytorchjob_without_a_master_has_no_init_container() -> None:
    verdict = _verdicts(_stack(cluster=_small_cpu_node("500m"), workloads=[_pytorch(16, master=0)]))["ddp"]
    assert verdict.status == "Running"


# --- ephemeral storage ------------------------------------------------------------------------------------


def _eks_l4(replicas: int, storage: str, disk: int = 200) -> dict[str, Any]:
    """One g6.xlarge (1 x L4) and a known system group; a Deployment of quarter-GPU pods, each asking `storage`."""
    return {
        "cluster": {
            "provider": "eks",
            "eks": {
                "region": "us-west-2",
                "availabilityZones": ["us-west-2a", "us-west-2b"],
                "gpuNodeDiskGiB": disk,
                "systemNodeGroup": {"cpu": "1930m", "memory": "7518Mi", "pods": 29},
            },
            "nodePools": [
                {
                    "name": "l4",
                    "instanceType": "g6.xlarge",
                    "count": 1,
                    "gpus": 1,
                    "gpuMemoryMiB": 22888,
                    "gpuProduct": "NVIDIA-L4",
                    "cpu": "3920m",
                    "memory": "14Gi",
                }
            ],
        },
        "gpu": {"mode": "gpu-operator", "gpuOperator": {"driver": False, "toolkit": False}},
        "queues": [{"name": "team"}],
        "workloads": [_work("serve", kind="Deployment", gpuFraction=0.25, replicas=replicas, ephemeralStorage=storage)],
    }


def test_an_eks_node_offers_its_root_volume_less_the_kubelets_reserve() -> None:
    """amazon-eks-ami@v20260724 nodeadm kubelet config: kubeReserved ephemeral-storage 1Gi and evictionHard
    nodefs.available 10% of the 200 GiB volume leave 179 GiB: two pods of 150Gi get one node's worth."""
    verdict = _verdicts(_eks_l4(replicas=2, storage="150Gi"))["serve"]
    assert [p.status for p in verdict.pods].count("Pending") == 1
    assert "ephemeral-storage" in " ".join(verdict.reasons)


def test_pods_within_the_nodes_ephemeral_storage_fit() -> None:
    verdict = _verdicts(_eks_l4(replicas=2, storage="80Gi"))["serve"]
    assert verdict.status == "Running"


def test_a_larger_root_volume_makes_room() -> None:
    verdict = _verdicts(_eks_l4(replicas=2, storage="150Gi", disk=400))["serve"]
    assert verdict.status == "Running"


def _kind_storage(pool_storage: str | None, **work: Any) -> dict[str, Any]:
    pool: dict[str, Any] = {"name": "gpu", "count": 1, "gpus": 4, "cpu": "8", "memory": "32Gi"}
    if pool_storage is not None:
        pool["ephemeralStorage"] = pool_storage
    return _stack(cluster={"provider": "kind", "nodePools": [pool]}, queues=[{"name": "team"}], workloads=[
        _work("w", kind="Deployment", gpu=1, **work)])  # fmt: skip


def test_a_kind_pool_that_declares_its_ephemeral_storage_is_checked() -> None:
    verdict = _verdicts(_kind_storage("100Gi", replicas=3, ephemeralStorage="40Gi"))["w"]
    assert [p.status for p in verdict.pods].count("Pending") == 1


def test_a_kind_pool_that_does_not_is_not_checked_and_the_report_says_so() -> None:
    report = check(parse_config(_kind_storage(None, replicas=3, ephemeralStorage="40Gi")))
    assert report.ok
    assert any("ephemeralStorage is not checked: pool gpu declares no ephemeralStorage" in n for n in report.notes)


def test_on_an_existing_cluster_the_note_says_why_without_naming_kind() -> None:
    raw = _kind_storage(None, replicas=1, ephemeralStorage="40Gi")
    raw["cluster"].update(provider="existing", existing={"context": "lab"})
    (note,) = [n for n in check(parse_config(raw)).notes if "ephemeralStorage is not checked" in n]
    assert "the nodes' allocatable ephemeral storage is not declared" in note
    assert "kind" not in note


def test_a_tenant_pod_without_ephemeral_storage_asks_for_the_limit_ranges_default() -> None:
    """loft-sh/vcluster@v0.36.1 chart/values.yaml policies.limitRange.defaultRequest: 3Gi a container, so a
    10Gi node holds three such pods."""
    raw = _kind_storage("10Gi", replicas=4)
    raw["tenants"] = [{"name": "t1", "queues": ["team"]}]
    raw["workloads"][0]["tenant"] = "t1"
    verdict = _verdicts(raw)["w"]
    assert [p.status for p in verdict.pods].count("Pending") == 1


# --- pods kaistack adds -----------------------------------------------------------------------------------


def _tenant_pytorch(operator: bool, cpu_limit: int) -> dict[str, Any]:
    raw = _stack(
        queues=[{"name": "team", "resources": {"cpu": {"quota": cpu_limit, "limit": cpu_limit}}}],
        tenants=[{"name": "t1", "queues": ["team"]}],
        workloads=[_work("ddp", kind="PyTorchJob", tenant="t1", pytorch={"master": 1, "workers": 1})],
    )
    raw["cluster"]["trainingOperator"] = operator
    return raw


def test_the_training_operator_kaistack_installs_in_a_tenant_is_a_pod_in_its_first_queue() -> None:
    """KAI schedules it there (kaistack.declaration.training_operator), with the LimitRange's 100m/128Mi."""
    verdict = _verdicts(_tenant_pytorch(True, 1000))["t1-training-operator"]
    assert verdict.status == "Running"
    assert len(verdict.pods) == 1


def test_a_tenant_without_a_pytorchjob_still_runs_the_training_operator_pod() -> None:
    """cluster.trainingOperator installs it in every tenant (components.workloads), jobs or not."""
    raw = _tenant_pytorch(True, 1000)
    raw["workloads"] = [_work("serve", kind="Deployment", tenant="t1")]
    assert _verdicts(raw)["t1-training-operator"].status == "Running"


def test_the_training_operator_takes_its_share_of_the_queue() -> None:
    """Master 100m + worker 100m fit a 250m limit; with the operator's 100m the gang does not."""
    assert _verdicts(_tenant_pytorch(False, 250))["ddp"].status == "Running"
    assert _verdicts(_tenant_pytorch(True, 250))["ddp"].status == "Pending"


def test_the_operators_name_steps_aside_for_declared_workloads_of_that_name() -> None:
    """A workload named like the operator pod must not hide it (or loop: a fixed suffix at 63 characters did)."""
    tenant = "t" * 55
    raw = _tenant_pytorch(True, 1000)
    raw["tenants"] = [{"name": tenant, "queues": ["team"]}]
    raw["workloads"][0]["tenant"] = tenant
    base = f"{tenant}-training-operator"[:56].rstrip("-")
    raw["workloads"] += [_work(base, image="x"), _work(f"{base}-2", image="x")]
    names = set(_verdicts(raw))
    assert f"{base}-3" in names


def test_a_fraction_blocked_by_ephemeral_storage_is_told_so_not_fragmentation() -> None:
    """Two g6.xlarge, one GPU taken whole; three 70Gi quarter-GPU pods: the GPU with room is on a node whose
    179 GiB two of them took, and the node with the storage has no GPU room. The reason is the storage."""
    raw = _eks_l4(replicas=3, storage="70Gi")
    raw["cluster"]["nodePools"][0]["count"] = 2
    raw["workloads"].insert(0, _work("whole", kind="Deployment", gpu=1, replicas=1))
    verdict = _verdicts(raw)["serve"]
    pending = [p for p in verdict.pods if p.status == "Pending"]
    assert pending
    reasons = " ".join(verdict.reasons)
    assert "no node with room for the rest has 70Gi ephemeral-storage free" in reasons
    assert "fragmentation" not in reasons
