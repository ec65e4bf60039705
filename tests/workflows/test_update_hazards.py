"""What `pulumi up` of a change would delete, replace or fail on (kaistack.ops.update_hazards), one change each.

Each hazard is one a routine edit of a stack file causes on a real cluster; the component that makes it so is
named in kaistack/ops/update_hazards.py, and the provider behaviour in the component's own tests.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from workflow_testlib import TRAIN_JOB, two_tenant_kind_stack

from kaistack.cli import main
from kaistack.declaration.parse import parse_config
from kaistack.ops.update_hazards import update_hazards

ROOT = Path(__file__).resolve().parents[2]


def _kind() -> dict[str, Any]:
    return two_tenant_kind_stack(
        TRAIN_JOB, {"name": "serve", "kind": "Deployment", "queue": "a", "image": "s:1", "namespace": "ml"}
    )


def _eks() -> dict[str, Any]:
    pool = {"name": "h100", "instanceType": "p5.48xlarge", "count": 1, "gpus": 8, "gpuMemoryMiB": 81559}
    pool |= {"gpuProduct": "NVIDIA-H100", "cpu": "191", "memory": "1900Gi", "pods": 100}
    system = {"instanceType": "m6i.large", "cpu": "1930m", "memory": "7Gi", "pods": 29}
    eks = {"region": "us-west-2", "availabilityZones": ["us-west-2a", "us-west-2b"], "systemNodeGroup": system}
    return {"cluster": {"provider": "eks", "eks": eks, "nodePools": [pool]}, "gpu": {"mode": "gpu-operator"}}


def _eks_public_pinned() -> dict[str, Any]:
    raw = _eks()
    raw["cluster"]["eks"] |= {"privateNodes": False, "availabilityZones": ["us-west-2a", "us-west-2b", "us-west-2c"]}
    raw["cluster"]["nodePools"][0]["availabilityZones"] = ["us-west-2a"]
    return raw


def _hazards(base: dict[str, Any], change: Callable[[dict[str, Any]], Any]) -> list[tuple[str, str]]:
    head = copy.deepcopy(base)
    change(head)
    return [(h.kind, h.subject) for h in update_hazards(parse_config(base), parse_config(head))]


CASES: dict[str, tuple[Callable[[], dict[str, Any]], Callable[[dict[str, Any]], Any], list[tuple[str, str]]]] = {
    "no change": (_kind, lambda r: None, []),
    "a Deployment's new image rolls, it is no hazard": (
        _kind,
        lambda r: r["workloads"][1].update(image="s:2"),
        [],
    ),
    # Removing alpha also moves beta's unset NodePort onto the one alpha holds until it is deleted.
    "tenant removed": (
        _kind,
        lambda r: (r["tenants"].pop(0), r["queues"].pop(0), r["workloads"].clear()),
        [("tenant-deleted", "alpha"), ("tenant-port-moved", "beta"), ("namespace-deleted", "ml")],
    ),
    # gamma's unset NodePort is the one alpha holds until it is deleted, after the creates.
    "tenant replaced by a new one": (
        _kind,
        lambda r: (r["tenants"].__setitem__(0, {"name": "gamma", "queues": ["a"]}), r["workloads"].clear()),
        [("tenant-deleted", "alpha"), ("tenant-port-taken", "gamma"), ("namespace-deleted", "ml")],
    ),
    # Every other hazard is one change to the same cluster; leaving it is reported once.
    "provider kind to eks": (_kind, lambda r: r.update(_eks()), [("cluster-replaced", "unit")]),
    "tenant moved to another namespace": (
        _kind,
        lambda r: r["tenants"][0].update(namespace="alpha-host"),
        [("tenant-moved", "alpha")],
    ),
    "tenant port set explicitly where it was": (
        _kind,
        lambda r: (r["tenants"].pop(0), r["tenants"][0].update(nodePort=31001)),
        [("tenant-deleted", "alpha")],
    ),
    "kai namespace": (_kind, lambda r: r.update(kai={"namespace": "kai-system"}), [("kai-replaced", "kai")]),
    # KAI's chart writes its default queues at install only (templates/default-queue.yaml:4, .Release.IsInstall).
    "kai default queue quota": (
        _kind,
        lambda r: r.update(kai={"defaultQueues": {"childResources": {"gpu": {"quota": 1}}}}),
        [("default-queues-not-applied", "kai")],
    ),
    # A new namespace installs KAI again, default queues included: the replacement is the hazard.
    "kai namespace and default queues": (
        _kind,
        lambda r: r.update(kai={"namespace": "kai-system", "defaultQueues": {"create": False}}),
        [("kai-replaced", "kai")],
    ),
    "gpu namespace": (_kind, lambda r: r["gpu"].update(namespace="gpus"), [("gpu-stack-replaced", "gpu")]),
    "kind node added": (
        _kind,
        lambda r: r["cluster"]["nodePools"][0].update(count=2),
        [("kind-cluster-replaced", "unit")],
    ),
    "kind cluster renamed": (_kind, lambda r: r["cluster"].update(name="laptop"), [("kind-cluster-replaced", "unit")]),
    "training operator turned off": (
        lambda: {**_kind(), "cluster": {**_kind()["cluster"], "trainingOperator": True}},
        lambda r: r["cluster"].update(trainingOperator=False),
        [("training-operator-removed", "trainingOperator")],
    ),
    "job image": (_kind, lambda r: r["workloads"][0].update(image="t:2"), [("workload-restarted", "train")]),
    "eks disk size": (
        _eks,
        lambda r: r["cluster"]["eks"].update(gpuNodeDiskGiB=1000),
        [("node-group-replaced", "h100")],
    ),
    "eks instance type": (
        _eks,
        lambda r: r["cluster"]["nodePools"][0].update(instanceType="p5e.48xlarge"),
        [("node-group-replaced", "h100")],
    ),
    "eks scaling is no hazard": (_eks, lambda r: r["cluster"]["nodePools"][0].update(maxSize=3), []),
    "bare pod gpu share": (
        lambda: {
            **_kind(),
            "workloads": [{"name": "nb", "kind": "Pod", "queue": "a", "image": "n:1", "gpuFraction": 0.5}],
        },
        lambda r: r["workloads"][0].update(gpuFraction=0.25),
        [("workload-not-updated", "nb")],
    ),
    "job parallelism": (_kind, lambda r: r["workloads"][0].update(replicas=2), [("workload-restarted", "train")]),
    "pytorchjob image (kaistack replaces it: the operator keeps running pods' templates)": (
        lambda: {**_kind(), "workloads": [{"name": "ddp", "kind": "PyTorchJob", "queue": "a", "image": "p:1"}]},
        lambda r: r["workloads"][0].update(image="p:2"),
        [("workload-restarted", "ddp")],
    ),
    "pytorchjob workers added is no hazard (the operator creates the new indexes)": (
        lambda: {**_kind(), "workloads": [{"name": "ddp", "kind": "PyTorchJob", "queue": "a", "image": "p:1"}]},
        lambda r: r["workloads"][0].update(pytorch={"workers": 3}),
        [],
    ),
    "job moved to another namespace": (
        _kind,
        lambda r: r["workloads"][0].update(namespace="batch"),
        [("workload-restarted", "train")],
    ),
    "pool zones set to the cluster's own are no hazard": (
        _eks,
        lambda r: r["cluster"]["nodePools"][0].update(availabilityZones=["us-west-2b", "us-west-2a"]),
        [],
    ),
    # components.eks_network.subnet_cidrs carves the ranges by the zones' order.
    "cluster zones reordered": (
        _eks,
        lambda r: r["cluster"]["eks"].update(availabilityZones=["us-west-2b", "us-west-2a"]),
        [("subnets-replaced", "network"), ("node-group-replaced", "system"), ("node-group-replaced", "h100")],
    ),
    "a host pod leaving a tenant's host namespace deletes no namespace (the tenant owns it)": (
        lambda: {
            **_kind(),
            "workloads": [{"name": "p", "kind": "Pod", "queue": "a", "image": "x", "namespace": "vcluster-alpha"}],
        },
        lambda r: r["workloads"].clear(),
        [],
    ),
    "a bare pod's own annotation is no hazard": (
        lambda: {**_kind(), "workloads": [{"name": "nb", "kind": "Pod", "queue": "a", "image": "n"}]},
        lambda r: r["workloads"][0].update(annotations={"example.com/owner": "me"}),
        [],
    ),
    "system instance type": (
        _eks,
        lambda r: r["cluster"]["eks"]["systemNodeGroup"].update(
            instanceType="m6i.xlarge", cpu="3920m", memory="14Gi", pods=58
        ),
        [("node-group-replaced", "system")],
    ),
    "a zone appended keeps the other subnets' ranges (public nodes, 3 -> 4 zones)": (
        lambda: _eks_public_pinned(),
        lambda r: r["cluster"]["eks"]["availabilityZones"].append("us-west-2d"),
        [("node-group-replaced", "system")],
    ),
    "bare pod moved to another queue": (
        lambda: {**_kind(), "workloads": [{"name": "nb", "kind": "Pod", "queue": "a", "image": "n"}]},
        lambda r: r["workloads"][0].update(queue="b"),
        [("workload-not-updated", "nb")],
    ),
    "eks one minor up": (
        _eks,
        lambda r: r["cluster"]["eks"].update(version="1.36"),
        [("eks-upgraded", "cluster")],
    ),
    "eks two minors up": (
        _eks,
        lambda r: r["cluster"]["eks"].update(version="1.37"),
        [("eks-version-refused", "cluster")],
    ),
    "eks downgrade": (_eks, lambda r: r["cluster"]["eks"].update(version="1.34"), [("eks-version-refused", "cluster")]),
    "cluster zones": (
        _eks,
        lambda r: r["cluster"]["eks"].update(availabilityZones=["us-west-2a", "us-west-2c"]),
        [("subnets-replaced", "network"), ("node-group-replaced", "system"), ("node-group-replaced", "h100")],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_change_names_what_applying_it_destroys(case: str) -> None:
    base, change, expected = CASES[case]
    assert _hazards(base(), change) == expected


def test_a_protected_stack_says_the_removal_is_refused_until_unprotected() -> None:
    base = _eks()
    base["queues"] = [{"name": "a"}]
    base["tenants"] = [{"name": "alpha", "queues": ["a"]}]
    base["cluster"]["eks"]["protect"] = True
    base["cluster"]["eks"]["systemNodeGroup"] |= {"minSize": 2, "desiredSize": 2, "maxSize": 3}
    head = copy.deepcopy(base)
    head["tenants"], head["queues"] = [], []
    (hazard,) = update_hazards(parse_config(base), parse_config(head))
    assert hazard.message.endswith("(the stack is protected: `pulumi up` refuses it until the tenant is unprotected)")


@pytest.mark.skipif(shutil.which("git") is None, reason="git is needed to make the repository")
def test_diff_exits_1_and_lists_the_hazard_when_nothing_changes_in_capacity(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("Pulumi.yaml", "Pulumi.dev.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "."], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=tmp_path, check=True)
    stack = tmp_path / "Pulumi.dev.yaml"
    stack.write_text(stack.read_text().replace("  kaistack:kai:\n", "  kaistack:kai:\n    namespace: kai-system\n", 1))
    assert main(["diff", "--stack", "dev", "--base", "HEAD", "--project", str(tmp_path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["updateHazards"][0]["kind"] == "kai-replaced"
    assert report["harmful"] is True
