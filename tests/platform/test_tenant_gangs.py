"""Gangs inside a tenant: a host-side PodGroup the synced pods join, placed all-or-nothing by the checker.

The mechanism is kaistack.declaration.tenant_gangs (KAI@v0.17.0 pkg/podgrouper/pod_controller.go:101-107 and
247-253 for `kai.scheduler/skip-podgrouper`; pkg/scheduler/cache/cluster_info/indexers.go:17-26 for the
cluster-wide `pod-group-name` index; the PodGroup CRD at
KAI@v0.17.0:deployments/kai-scheduler/crds/scheduling.run.ai_podgroups.yaml, copied to tests/data/schemas/).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from platform_testlib import pruning

from kaistack.capacity.check import check
from kaistack.declaration.model import StackConfig
from kaistack.declaration.parse import parse_config
from kaistack.guardrails import admission
from kaistack.ops.render import Rendered, render_stack
from kaistack.stack.load import load_stack

ROOT = Path(__file__).resolve().parents[2]
PODGROUP = "kubernetes:scheduling.run.ai/v2alpha2:PodGroup"


@pytest.fixture(scope="module")
def dev() -> Rendered:
    return render_stack(ROOT, "dev")


def _pod_group_schema() -> dict[str, Any]:
    crd = yaml.safe_load((ROOT / "tests" / "data" / "schemas" / "scheduling.run.ai_podgroups.yaml").read_text())
    [version] = [v for v in crd["spec"]["versions"] if v["name"] == "v2alpha2"]
    assert version["served"]
    assert version["storage"]
    return pruning(version["schema"]["openAPIV3Schema"])


def test_dev_tenant_pytorchjob_is_one_host_podgroup_of_master_plus_workers(dev: Rendered) -> None:
    [group] = dev.of_type(PODGROUP)
    assert group.inputs["metadata"]["namespace"] == "vcluster-team-a"
    assert group.inputs["metadata"]["name"] == "kaistack-team-a-default-ddp-smoke"
    assert group.inputs["spec"] == {
        "queue": "team-a",
        "minMember": 3,
        "priorityClassName": "train",
        "subGroups": [{"name": "master", "minMember": 1}, {"name": "worker", "minMember": 2}],
    }


def test_the_podgroup_is_valid_for_kais_crd(dev: Rendered) -> None:
    [group] = dev.of_type(PODGROUP)
    body = {k: group.inputs[k] for k in ("apiVersion", "kind", "metadata", "spec")}
    jsonschema.validate(body, _pod_group_schema())


def test_the_podgroup_is_created_on_the_host_before_the_job(dev: Rendered) -> None:
    [group] = dev.of_type(PODGROUP)
    job = dev.named("kaistack-workloads-ddp-smoke")
    assert group.urn in job.dependencies
    assert "team-a-provider" in (job.provider or "")
    assert "team-a-provider" not in (group.provider or "")


def test_every_replica_template_joins_the_gang_and_tells_the_pod_grouper_to_stay_away(dev: Rendered) -> None:
    job = dev.named("kaistack-workloads-ddp-smoke")
    for role in ("Master", "Worker"):
        annotations = job.inputs["spec"]["pytorchReplicaSpecs"][role]["template"]["metadata"]["annotations"]
        assert annotations == {
            "pod-group-name": "kaistack-team-a-default-ddp-smoke",
            "kai.scheduler/skip-podgrouper": "true",
        }


def _synced(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "ddp-smoke-worker-0-x-default-x-team-a",
            "namespace": "vcluster-team-a",
            "labels": {"kai.scheduler/queue": "team-a", "vcluster.loft.sh/namespace": "default"},
            "annotations": {"pod-group-name": group, "kai.scheduler/skip-podgrouper": "true"},
        },
        "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "pytorch", "image": "busybox"}]},
    }


@pytest.mark.parametrize(
    ("group", "allowed"),
    [("kaistack-team-a-default-ddp-smoke", True), ("kaistack-team-b-default-train", False), ("pg-prod", False)],
)
def test_host_admission_lets_a_tenant_pod_join_only_its_own_gang(group: str, allowed: bool) -> None:
    import celpy

    config = load_stack(ROOT, "dev").config
    from components.admission import tenant_policy

    policy = tenant_policy(config, config.tenant("team-a"))
    env = celpy.Environment()
    activation = {
        "object": celpy.json_to_cel(_synced(group)),
        "oldObject": celpy.json_to_cel(None),
        "request": celpy.json_to_cel({"operation": "CREATE", "userInfo": {"username": "vc"}}),
    }
    results = [
        bool(env.program(env.compile(v["expression"])).evaluate(activation)) for v in policy["spec"]["validations"]
    ]
    assert all(results) is allowed
    assert admission.POD_GROUPER_USER.endswith(":pod-grouper")


# --- the checker: all or nothing ------------------------------------------------------------------------


def _config(workers: int) -> StackConfig:
    raw = {
        "cluster": {"provider": "kind", "nodePools": [{"name": "gpu", "gpus": 2, "cpu": "16", "memory": "64Gi"}]},
        "gpu": {"mode": "fake"},
        "queues": [{"name": "t"}],
        "tenants": [{"name": "t", "queues": ["t"]}],
        "workloads": [
            {"name": "ddp", "kind": "PyTorchJob", "tenant": "t", "queue": "t", "image": "x", "gpu": 1,
             "pytorch": {"master": 1, "workers": workers}},
        ],
        "kai": {"capacityCheck": "off"},
    }  # fmt: skip
    return parse_config(raw, source="test")


def test_a_tenant_gang_that_fits_is_placed_whole() -> None:
    report = check(_config(workers=1))
    [work] = report.workloads
    assert [p.status for p in work.pods] == ["Running", "Running"]


def test_a_tenant_gang_that_does_not_fit_places_no_pod_at_all() -> None:
    """3 pods of one GPU on a 2-GPU node: as bare pods two would start; as a gang none does."""
    report = check(_config(workers=2))
    [work] = report.workloads
    assert [p.status for p in work.pods] == ["Pending", "Pending", "Pending"]
    assert not report.ok


# KAI@v0.17.0 pkg/scheduler/cache/cluster_info/cluster_info.go:484-497 takes preemptibility from the PodGroup's
# spec.preemptibility (else from the priority); pkg/apis/scheduling/v2alpha2/podgroup_types.go:94-107 lists
# preemptible | non-preemptible. The pod-grouper, which would copy the pods' label there, skips these pods.


def _gang_with(preemptible: bool | None) -> dict[str, Any]:
    config = _config(workers=1)
    raw_work = config.workloads[0].model_copy(update={"preemptible": preemptible})
    config = config.model_copy(update={"workloads": (raw_work,)})
    from kaistack.declaration import tenant_gangs

    return tenant_gangs.pod_group(config, raw_work, "build")


@pytest.mark.parametrize(("preemptible", "value"), [(True, "preemptible"), (False, "non-preemptible")])
def test_a_declared_preemptibility_is_written_on_the_podgroup(preemptible: bool, value: str) -> None:
    group = _gang_with(preemptible)
    assert group["spec"]["preemptibility"] == value
    jsonschema.validate(group, _pod_group_schema())


def test_without_a_declared_preemptibility_the_podgroup_leaves_it_to_the_priority() -> None:
    assert "preemptibility" not in _gang_with(None)["spec"]
