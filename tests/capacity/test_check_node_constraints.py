"""`kaistack check` keeps pods off nodes their taints and nodeSelector keep them off on a cluster.

What reaches a pod is what components.podspec renders: the workload's nodeSelector, and the GPU toleration
on GPU workloads unless `tolerateGpuTaint` is false. A tenant's pod keeps both on the host: kaistack runs
the vCluster without its virtual scheduler, so the syncer copies the nodeSelector and keeps the pod's
tolerations (loft-sh/vcluster@v0.36.1:pkg/controllers/resources/pods/translate/translator.go:424-451).
KAI then applies NodeAffinity and TaintToleration as predicates
(kai-scheduler/KAI-Scheduler@v0.17.0:pkg/scheduler/k8s_internal/predicates/predicates.go:67-150).
"""

from __future__ import annotations

import copy
import html
from typing import Any

from components.podspec import pod_spec
from kaistack.capacity.check import CapacityReport, check
from kaistack.capacity.html import to_html
from kaistack.capacity.report import to_json, to_markdown, to_text
from kaistack.declaration import kai_api
from kaistack.declaration.parse import parse_config

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
IMAGE = "busybox:1.37.0"


def _kind(*workloads: dict[str, Any], gpu_taint: bool = True) -> dict[str, Any]:
    gpu_pool: dict[str, Any] = {"name": "gpu", "count": 1, "gpus": 2, "cpu": "32", "labels": {"tier": "a100"}}
    if gpu_taint:
        gpu_pool["taints"] = [GPU_TAINT]
    return {
        "cluster": {"provider": "kind", "nodePools": [gpu_pool, {"name": "cpu", "count": 1}]},
        "queues": [{"name": "q"}],
        "tenants": [{"name": "team-a", "queues": ["q"]}],
        "workloads": [{"kind": "Pod", "queue": "q", "image": IMAGE, **w} for w in workloads],
    }


def _eks(*workloads: dict[str, Any], system: dict[str, Any] | None = None) -> dict[str, Any]:
    pool = {
        "name": "l4",
        "instanceType": "g6.xlarge",
        "count": 1,
        "gpus": 1,
        "gpuProduct": "NVIDIA-L4",
        "gpuMemoryMiB": 22888,
        "taints": [GPU_TAINT],  # what kaistack.stack.eks adds to every GPU pool
    }
    eks: dict[str, Any] = {"region": "us-west-2", "availabilityZones": ["us-west-2a", "us-west-2b"]}
    if system is not None:
        eks["systemNodeGroup"] = system
    return {
        "cluster": {"provider": "eks", "name": "t", "eks": eks, "nodePools": [pool]},
        "gpu": {"mode": "gpu-operator"},
        "queues": [{"name": "q"}],
        "workloads": [{"kind": "Pod", "queue": "q", "image": IMAGE, **w} for w in workloads],
    }


M6I_LARGE = {"cpu": "1930m", "memory": "7518Mi", "pods": 29}


def _check(raw: dict[str, Any]) -> CapacityReport:
    return check(parse_config(copy.deepcopy(raw), source="test"), "t")


def _nodes(report: CapacityReport, workload: str) -> list[str | None]:
    return next([p.node for p in w.pods] for w in report.workloads if w.name == workload)


def _verdict(report: CapacityReport, workload: str) -> Any:
    return next(w for w in report.workloads if w.name == workload)


# --- taints and tolerations ---------------------------------------------------------------------------


def test_a_gpu_workload_tolerates_the_gpu_taint_and_is_placed_on_the_tainted_pool() -> None:
    report = _check(_kind({"name": "train", "gpu": 1}))
    assert _nodes(report, "train") == ["gpu-0"]


def test_a_gpu_workload_told_not_to_tolerate_the_gpu_taint_stays_pending_and_says_why() -> None:
    report = _check(_kind({"name": "train", "gpu": 1, "tolerateGpuTaint": False}))
    verdict = _verdict(report, "train")
    assert verdict.status == "Pending"
    assert "has the taint nvidia.com/gpu=true:NoSchedule, which it does not tolerate" in "; ".join(verdict.reasons)
    assert not report.ok


def test_a_cpu_only_workload_is_kept_off_the_tainted_gpu_pool() -> None:
    """It has no toleration (podspec gives the GPU one to GPU workloads only): 16 CPUs fit only the GPU node."""
    report = _check(_kind({"name": "web", "cpu": "16"}))
    verdict = _verdict(report, "web")
    assert verdict.status == "Pending"
    assert verdict.reasons == (
        "the nodes with room for it keep it off: node gpu-0 has the taint nvidia.com/gpu=true:NoSchedule, "
        "which it does not tolerate",
    )


def test_an_untainted_gpu_pool_takes_cpu_only_work_as_before() -> None:
    report = _check(_kind({"name": "web", "cpu": "16"}, gpu_taint=False))
    assert _nodes(report, "web") == ["gpu-0"]


def test_the_toleration_the_checker_gives_is_the_one_the_pod_spec_renders() -> None:
    config = parse_config(_kind({"name": "train", "gpu": 1}), source="test")
    assert pod_spec(config.workloads[0])["tolerations"] == [kai_api.GPU_TOLERATION]


# --- nodeSelector ------------------------------------------------------------------------------------


def test_a_node_selector_sends_the_pod_to_the_pool_whose_label_it_names() -> None:
    report = _check(_kind({"name": "web", "nodeSelector": {"kaistack.io/node-pool": "cpu"}}, gpu_taint=False))
    assert _nodes(report, "web") == ["cpu-0"]


def test_a_node_selector_value_no_pool_has_leaves_the_pod_pending_and_names_the_label() -> None:
    report = _check(_kind({"name": "train", "gpu": 1, "nodeSelector": {"tier": "h100"}}))
    verdict = _verdict(report, "train")
    assert verdict.status == "Pending"
    assert "tier" in "; ".join(verdict.reasons)


def test_a_tenant_pods_node_selector_reaches_the_host_and_is_checked() -> None:
    work = {"name": "train", "tenant": "team-a", "gpu": 1, "nodeSelector": {"tier": "h100"}}
    verdict = _verdict(_check(_kind(work, gpu_taint=False)), "train")
    assert verdict.status == "Pending"
    assert "tier" in "; ".join(verdict.reasons)


def test_a_tenant_gpu_pod_keeps_its_gpu_toleration_on_the_host() -> None:
    report = _check(_kind({"name": "train", "tenant": "team-a", "gpu": 1}))
    assert _nodes(report, "train") == ["gpu-0"]


def test_a_hostname_selector_is_left_out_as_snapshot_nodes_are_not_the_real_ones() -> None:
    report = _check(_kind({"name": "web", "nodeSelector": {"kubernetes.io/hostname": "kaistack-worker2"}}))
    assert _verdict(report, "web").status == "Running"
    assert report.notes[0].startswith("web: nodeSelector kubernetes.io/hostname=kaistack-worker2 not checked")


def test_a_label_only_a_pool_of_zero_nodes_carries_is_checked_and_leaves_the_pod_pending() -> None:
    """The pool is declared, scaled to 0: the selector waits for it, as on the cluster."""
    raw = _kind({"name": "train", "gpu": 1, "nodeSelector": {"tier": "h100"}})
    raw["cluster"]["nodePools"].append({"name": "h100", "count": 0, "gpus": 8, "labels": {"tier": "h100"}})
    report = _check(raw)
    assert (_verdict(report, "train").status, report.notes) == ("Pending", ())


def test_a_node_selector_key_no_declared_node_carries_is_left_out_and_the_report_says_so() -> None:
    """Real nodes carry labels a declaration does not list (kubernetes.io/os...): refusing would be a guess."""
    report = _check(_kind({"name": "web", "nodeSelector": {"kubernetes.io/os": "linux"}}))
    assert _nodes(report, "web") == ["cpu-0"]
    assert report.notes == (
        "web: nodeSelector kubernetes.io/os=linux not checked: no node the declaration describes has that label "
        "(declare it in the pool's labels to check it)",
    )


# --- EKS: the system node group ----------------------------------------------------------------------


def test_on_eks_cpu_only_pods_run_on_the_system_node_group() -> None:
    report = _check(_eks({"name": "web", "cpu": "1"}, {"name": "train", "gpu": 1}, system=M6I_LARGE))
    assert (_nodes(report, "web"), _nodes(report, "train")) == (["system-0"], ["l4-0"])
    assert {n.name: n.pool for n in report.nodes} == {"l4-0": "l4", "system-0": "system", "system-1": "system"}


def test_on_eks_a_cpu_only_pod_larger_than_a_system_node_stays_pending() -> None:
    """The g6.xlarge has room for it, but the GPU taint keeps it off."""
    report = _check(_eks({"name": "web", "cpu": "3"}, system=M6I_LARGE))
    assert _verdict(report, "web").status == "Pending"


def test_on_eks_a_whole_gpu_pod_is_given_the_gpu_toleration_by_admission_even_when_told_not_to_tolerate() -> None:
    """EKS runs ExtendedResourceToleration (aws/containers-roadmap#739): a pod requesting nvidia.com/gpu gets
    {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
    (kubernetes/kubernetes:plugin/pkg/admission/extendedresourcetoleration/admission.go)."""
    report = _check(_eks({"name": "train", "gpu": 1, "tolerateGpuTaint": False}, system=M6I_LARGE))
    assert _nodes(report, "train") == ["l4-0"]


def test_on_eks_a_shared_gpu_pod_requests_no_nvidia_gpu_so_admission_gives_it_no_toleration() -> None:
    report = _check(_eks({"name": "serve", "gpuFraction": 0.5, "tolerateGpuTaint": False}, system=M6I_LARGE))
    assert _verdict(report, "serve").status == "Pending"


def test_on_eks_without_the_system_groups_allocatable_nothing_is_constrained_and_the_report_says_so() -> None:
    report = _check(_eks({"name": "web", "cpu": "3"}, {"name": "train", "gpu": 1, "tolerateGpuTaint": False}))
    assert report.ok
    assert "system" not in {n.pool for n in report.nodes}
    assert report.notes == (
        "taints, tolerations and nodeSelectors are not checked: CPU-only pods run on the EKS system node group, "
        "whose allocatable is not known (give AWS credentials, or declare cluster.eks.systemNodeGroup.cpu, "
        ".memory and .pods)",
    )


# --- the notes in every report format ----------------------------------------------------------------


def test_notes_are_in_the_text_json_markdown_and_html_reports() -> None:
    report = _check(_kind({"name": "web", "nodeSelector": {"kubernetes.io/os": "linux"}}))
    note = report.notes[0]
    assert f"note: {note}" in to_text(report).splitlines()
    assert to_json(report)["notes"] == [note]
    assert f"> note: {note}" in to_markdown(report).splitlines()
    assert f"<p class='note'>note: {html.escape(note)}</p>" in to_html(report)


def test_a_stack_without_constraints_has_no_notes() -> None:
    report = _check(_kind({"name": "train", "gpu": 1}))
    assert report.notes == ()
    assert to_json(report)["notes"] == []


# --- an existing cluster -----------------------------------------------------------------------------


def test_an_existing_clusters_nodes_carry_no_kaistack_pool_label_so_a_selector_on_it_is_left_out() -> None:
    """kaistack labels only the nodes it creates (components/cluster_kind.py, components/cluster_eks.py)."""
    raw = _kind({"name": "web", "nodeSelector": {"kaistack.io/node-pool": "cpu"}})
    raw["cluster"] = {**raw["cluster"], "provider": "existing", "existing": {"context": "prod"}}
    report = _check(raw)
    assert _verdict(report, "web").status == "Running"
    assert report.notes[0].startswith("web: nodeSelector kaistack.io/node-pool=cpu not checked")


def test_an_existing_clusters_pool_taints_are_checked() -> None:
    raw = _kind({"name": "train", "gpu": 1, "tolerateGpuTaint": False})
    raw["cluster"] = {**raw["cluster"], "provider": "existing", "existing": {"context": "prod"}}
    assert _verdict(_check(raw), "train").status == "Pending"
