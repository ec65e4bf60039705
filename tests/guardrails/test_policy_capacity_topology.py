"""kai-capacity on a topology stack: the adapter reads the Topology object and each workload's constraint.

Where KAI's pod-grouper reads them (kai-scheduler/KAI-Scheduler@v0.17.0): the top owner's
`kai.scheduler/topology*` annotations (pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go
`GetPodGroupMetadata`), the Worker template's segment annotations
(pkg/podgrouper/podgrouper/plugins/kubeflow/pytorch/pytorch_grouper.go `getSegmentSize`,
`getSegmentTopologyConstraints`); a tenant gang's constraint is in the PodGroup kaistack writes.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml
from policy_builders import engine

from kaistack.declaration.parse import parse_config
from kaistack.guardrails.capacity_adapter import declaration
from kaistack.guardrails.facts import StackFacts, facts_from_stack
from kaistack.guardrails.podspec import Res
from kaistack.guardrails.settings import Settings
from kaistack.guardrails.stack_rules import kai_capacity, stack_facts
from kaistack.ops.mocks import MockSession

ROOT = Path(__file__).resolve().parents[2]
RACK = "kaistack.io/rack"


def _example() -> dict[str, Any]:
    document = yaml.safe_load((ROOT / "examples" / "Pulumi.topology.yaml").read_text())
    return {key.removeprefix("kaistack:"): value for key, value in document["config"].items()}


def _rendered(mocks: MockSession, raw: dict[str, Any]) -> tuple[list[Res], StackFacts]:
    mocks.set_config(raw)
    mocks.run(ROOT / "__main__.py")
    resources = [
        Res(r.type, r.name, engine(copy.deepcopy(r.inputs)), r.urn, r.parent, r.provider) for r in mocks.resources
    ]
    return resources, stack_facts(resources, facts_from_stack(parse_config(raw)))


def test_the_rebuilt_declaration_has_the_examples_topology_and_constraints(mocks: MockSession) -> None:
    raw = _example()
    resources, facts = _rendered(mocks, raw)
    rebuilt = parse_config(declaration(resources, Settings(), facts).raw)
    declared = parse_config(raw)
    assert rebuilt.cluster.topology == declared.cluster.topology

    def constraints(w: Any) -> tuple[Any, ...]:
        return (w.topology, w.pytorch.segment_size, w.pytorch.segment_topology)

    assert {w.name: constraints(w) for w in rebuilt.workloads} == {w.name: constraints(w) for w in declared.workloads}


def test_a_tenant_gangs_constraint_is_read_from_its_podgroup(mocks: MockSession) -> None:
    raw = _example()
    raw["tenants"] = [{"name": "t", "queues": ["training"]}]
    raw["workloads"][0]["tenant"] = "t"
    resources, facts = _rendered(mocks, raw)
    rebuilt = parse_config(declaration(resources, Settings(), facts).raw)
    pretrain = next(w for w in rebuilt.workloads if w.name == "llm-pretrain")
    assert (pretrain.tenant, pretrain.topology and pretrain.topology.required) == ("t", RACK)


def _capacity_check(resources: list[Res], setting: str, max_seconds: Any = None) -> list[Res]:
    """The same resources as a stack whose kai.capacityCheck is `setting` renders them (the Platform's props)."""
    out = []
    for res in resources:
        if res.type == "kaistack:index:Platform":
            props = copy.deepcopy(dict(res.props))
            props["kai"]["capacityCheck"] = setting
            props["kai"]["capacityCheckMaxSeconds"] = max_seconds
            res = dataclasses.replace(res, props=props)
        out.append(res)
    return out


def _too_big_gang(mocks: MockSession) -> tuple[list[Res], StackFacts]:
    raw = _example()
    raw["workloads"][0]["pytorch"]["workers"] = 8
    raw["kai"] = {"capacityCheck": "off"}  # the program's own gate would refuse to render it
    return _rendered(mocks, raw)


def test_kai_capacity_reports_a_gang_no_rack_has_room_for(mocks: MockSession) -> None:
    resources, facts = _too_big_gang(mocks)
    [finding, *_] = kai_capacity(_capacity_check(resources, "enforce"), Settings(), facts)
    assert "llm-pretrain" in finding.message
    assert f"requirement {RACK} couldn't be satisfied" in finding.message


def test_kai_capacity_lets_a_stack_that_warns_or_does_not_check_deploy(mocks: MockSession) -> None:
    """kai.capacityCheck: warn deploys a stack that does not fit (the program warns), as `off` does."""
    resources, facts = _too_big_gang(mocks)
    assert kai_capacity(_capacity_check(resources, "warn"), Settings(), facts) == []
    assert kai_capacity(_capacity_check(resources, "off"), Settings(), facts) == []


def test_a_constraint_kai_would_refuse_is_dropped_and_named(mocks: MockSession) -> None:
    raw = _example()
    resources, facts = _rendered(mocks, raw)
    job = next(r for r in resources if r.name == "kaistack-workloads-llm-pretrain")
    annotations = copy.deepcopy(dict(job.props["metadata"]["annotations"]))
    annotations["kai.scheduler/topology-preferred-placement"] = "topology.kubernetes.io/zone"
    props = {**copy.deepcopy(dict(job.props)), "metadata": {**dict(job.props["metadata"]), "annotations": annotations}}
    resources = [Res(r.type, r.name, engine(props), r.urn, r.parent, r.provider) if r is job else r for r in resources]
    decl = declaration(resources, Settings(), facts)
    pretrain = next(w for w in decl.raw["workloads"] if w["name"] == "llm-pretrain")
    assert "topology" not in pretrain
    assert any(
        "PyTorchJob/llm-pretrain (its topology constraint names levels KAI would refuse)" in n for n in decl.left_out
    )


def test_kai_capacity_reports_a_stack_kai_never_settles_on(mocks: MockSession, monkeypatch) -> None:
    """The verdict of tests/data/unsettled/stack.yaml, whatever the resources: the loop first, then every workload
    that stays Pending or keeps moving."""
    from kaistack.capacity.check import MOVING, check
    from kaistack.guardrails import capacity_rule

    looping = check(parse_config(yaml.safe_load((ROOT / "tests" / "data" / "unsettled" / "stack.yaml").read_text())))
    monkeypatch.setattr(capacity_rule, "check", lambda config, **_: looping)
    resources, facts = _rendered(mocks, _example())
    findings = kai_capacity(_capacity_check(resources, "enforce"), Settings(), facts)
    assert findings[0].message.startswith("KAI does not settle: after 50 cycles")
    moving = sorted(f.message.split(" ")[1] for f in findings if MOVING in f.message)
    assert moving == ["w11", "w19", "w24"]
    assert "Deployment w0 " not in " ".join(f.message for f in findings)  # placed and staying: no finding


def test_the_rebuilt_declaration_keeps_the_declared_order_whatever_the_resources_order(mocks: MockSession) -> None:
    """AnalyzeStack's resources come from a map (pulumi/pulumi@v3.259.0 pkg/resource/deploy/step_generator.go,
    `sg.deployment.news.Range`), and KAI breaks ties by creation order: the Platform's `workloadOrder` gives it."""
    raw = yaml.safe_load((ROOT / "tests" / "data" / "unsettled" / "stack.yaml").read_text())
    raw["kai"] = {"capacityCheck": "off"}  # the program's gate would stop it: KAI never settles on it
    resources, facts = _rendered(mocks, raw)
    declared = [w["name"] for w in raw["workloads"]]
    for order in (resources, list(reversed(resources))):
        rebuilt = declaration(order, Settings(), facts).raw
        assert [w["name"] for w in rebuilt["workloads"]] == declared


def test_kai_capacity_on_a_looping_stack_agrees_with_check(mocks: MockSession) -> None:
    raw = yaml.safe_load((ROOT / "tests" / "data" / "unsettled" / "stack.yaml").read_text())
    raw["kai"] = {"capacityCheck": "off"}
    resources, facts = _rendered(mocks, raw)
    findings = kai_capacity(_capacity_check(list(reversed(resources)), "enforce"), Settings(), facts)
    assert findings[0].message.startswith("KAI does not settle: after 50 cycles KAI still moves 3 of 18 workloads")


def test_a_host_workload_in_a_tenants_namespace_keeps_its_declared_place(mocks: MockSession) -> None:
    """It is rebuilt as the tenant's (the namespace says so), so the order is keyed by name alone."""
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    raw = {k.removeprefix("kaistack:"): v for k, v in document["config"].items()}
    namespace = parse_config(raw).tenants[0].host_namespace
    first = {"name": "host-in-tenant-ns", "kind": "Pod", "namespace": namespace, "queue": "team-a"}
    raw["workloads"].insert(0, {**first, "image": "busybox:1.37.0", "cpu": "10m", "memory": "16Mi"})
    resources, facts = _rendered(mocks, raw)
    rebuilt = declaration(list(reversed(resources)), Settings(), facts).raw
    assert [w["name"] for w in rebuilt["workloads"]] == [w["name"] for w in raw["workloads"]]


def test_kai_capacity_stopped_by_the_stacks_time_limit_is_one_finding_on_the_platform(mocks: MockSession) -> None:
    """Not one per workload it had not reached: the clock stopped it, and the stack's key says so."""
    resources, facts = _rendered(mocks, _example())
    assert kai_capacity(_capacity_check(resources, "enforce", 600), Settings(), facts) == []
    [finding] = kai_capacity(_capacity_check(resources, "enforce", 1e-9), Settings(), facts)
    assert finding.message.startswith(
        "capacity check: unknown: stopped by the time limit (kai.capacityCheckMaxSeconds: 1e-09) with 0 of "
    )
    assert finding.message.endswith("placed: no verdict; raise it, or set kai.capacityCheck: warn to deploy anyway")
    assert finding.subject is not None
    assert finding.subject.type == "kaistack:index:Platform"


@pytest.mark.parametrize("value", [True, "1e-9", 0, -1, float("inf"), float("nan")])
def test_kai_capacity_reads_no_limit_from_a_prop_that_is_no_positive_number(mocks: MockSession, value: Any) -> None:
    resources, facts = _rendered(mocks, _example())
    assert kai_capacity(_capacity_check(resources, "enforce", value), Settings(), facts) == []


@pytest.mark.parametrize(
    ("stack", "own", "named"),
    [(600, 1e-9, "kai-capacity's maxSeconds: 1e-09"), (1e-9, 600, "kai.capacityCheckMaxSeconds: 1e-09")],
)
def test_kai_capacity_takes_the_smaller_of_the_stacks_and_its_own_limit_and_names_it(
    mocks: MockSession, stack: float, own: float, named: str
) -> None:
    resources, facts = _rendered(mocks, _example())
    [finding] = kai_capacity(_capacity_check(resources, "enforce", stack), Settings(capacity_max_seconds=own), facts)
    assert f"stopped by the time limit ({named})" in finding.message


def test_kai_capacity_stopped_by_its_own_limit_does_not_advise_deploying_anyway(mocks: MockSession) -> None:
    """That limit is the run's (validate --max-seconds), not the stack's: pulumi up is not bounded by it."""
    resources, facts = _rendered(mocks, _example())
    [finding] = kai_capacity(_capacity_check(resources, "enforce"), Settings(capacity_max_seconds=1e-9), facts)
    assert finding.message.endswith("no verdict; raise it (kaistack validate --max-seconds sets it)")
