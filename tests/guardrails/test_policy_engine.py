"""The pack as the engine sees it: `policies/__main__.py` as a subprocess, driven over the Analyzer protocol.

The engine starts the pack with the stack's config in `PULUMI_CONFIG`, reads the gRPC port from its
stdout, calls `GetAnalyzerInfo`, `Configure` (always with an enforcement level: a PolicyConfig without
one means ADVISORY), then `Analyze` per resource and `AnalyzeStack` once (pulumi.md §6.2). The
resources are the dev stack as `kaistack.ops.render` records it under mocks; each mutated copy breaks
exactly one rule.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from analyzer_pack import Diagnostic, Pack, engine_config_env, struct
from google.protobuf import empty_pb2, struct_pb2
from policy_builders import UNKNOWN
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from kaistack.ops.mocks import RecordedResource
from kaistack.ops.render import render_stack
from policies.pack import POLICY_NAMES

ROOT = Path(__file__).resolve().parents[2]
STACK = "dev"


@pytest.fixture(scope="module")
def pack() -> Iterator[Pack]:
    running = Pack({**os.environ, **engine_config_env(STACK)})
    try:
        yield running
    finally:
        running.close()


@pytest.fixture(autouse=True)
def mandatory(pack: Pack) -> None:
    """Every test starts from the engine's default configuration: all twelve policies MANDATORY."""
    pack.configure()


@pytest.fixture(scope="module")
def dev_stack() -> list[RecordedResource]:
    return render_stack(ROOT, STACK).resources


def _named(resources: list[RecordedResource], suffix: str) -> RecordedResource:
    return next(r for r in resources if r.name.endswith(suffix))


Change = Callable[[dict[str, Any]], None]


def _mutated(resources: list[RecordedResource], suffix: str, change: Change) -> list[RecordedResource]:
    out = []
    for r in resources:
        if r.name.endswith(suffix):
            inputs = copy.deepcopy(r.inputs)
            change(inputs)
            r = RecordedResource(r.type, r.name, r.urn, r.parent, inputs, r.custom, r.provider)
        out.append(r)
    return out


def _policies(diagnostics: list[Diagnostic]) -> set[str]:
    return {name for name, _, _ in diagnostics}


# --- the pack itself -----------------------------------------------------------------------------


def test_analyzer_info_lists_the_ten_policies_as_mandatory(pack: Pack) -> None:
    info = pack.stub.GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
    assert info.name == "kaistack"
    assert [p.name for p in info.policies] == list(POLICY_NAMES)
    assert {p.enforcementLevel for p in info.policies} == {analyzer_pb2.MANDATORY}
    stack = {p.name for p in info.policies if p.policy_type == analyzer_pb2.PolicyType.POLICY_TYPE_STACK}
    assert stack == {"kai-gpu-sharing-enabled", "kai-queue-tree", "kai-capacity", "tenant-queue-binding"}


def test_analyzer_info_advertises_each_policys_config_schema(pack: Pack) -> None:
    info = pack.stub.GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
    schemas = {p.name: dict(p.configSchema.properties) for p in info.policies}
    assert "exemptNamespaces" in schemas["kai-scheduler-name"]
    assert "requireInTenantNamespaces" in schemas["kai-scheduler-name"]
    assert "tenants" in schemas["tenant-queue-binding"]
    assert all("enforcementLevel" not in s for s in schemas.values())


# --- the dev stack -------------------------------------------------------------------------------


def test_dev_stack_passes_every_resource_policy(pack: Pack, dev_stack: list[RecordedResource]) -> None:
    assert [d for r in dev_stack for d in pack.analyze(r)] == []


def test_dev_stack_passes_every_stack_policy(pack: Pack, dev_stack: list[RecordedResource]) -> None:
    assert pack.analyze_stack(dev_stack) == []


def _set_path(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(inputs: dict[str, Any]) -> None:
        node = inputs
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value

    return change


def _delete_path(path: tuple[str, ...]) -> Callable[[dict[str, Any]], None]:
    def change(inputs: dict[str, Any]) -> None:
        node = inputs
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return change


def _vllm_utilization(value: str) -> Callable[[dict[str, Any]], None]:
    def change(inputs: dict[str, Any]) -> None:
        c = inputs["spec"]["template"]["spec"]["containers"][0]
        flag = "--gpu-memory-utilization"
        c["args"] = [f"{flag}={value}" if a.startswith(flag) else a for a in c["args"]]

    return change


TEMPLATE = ("spec", "template")
MUTATIONS = {
    "scheduler removed": ("vllm-test-07", _delete_path((*TEMPLATE, "spec", "schedulerName")), {"kai-scheduler-name"}),
    "queue label removed": (
        "vllm-test-02",
        lambda i: (
            i["metadata"]["labels"].pop("kai.scheduler/queue"),
            i["spec"]["template"]["metadata"]["labels"].pop("kai.scheduler/queue"),
        ),
        # default-queue has quota 0, so the inference Deployment also stays Pending.
        {"kai-queue-label", "kai-capacity"},
    ),
    "legacy queue label": (
        "gpu-pod",
        lambda i: i["metadata"]["labels"].update({"runai/queue": i["metadata"]["labels"].pop("kai.scheduler/queue")}),
        {"kai-queue-label", "tenant-queue-binding"},
    ),
    "undeclared queue": (
        "vllm-test-02",
        _set_path(("metadata", "labels", "kai.scheduler/queue"), "nope"),
        {"kai-queue-label"},
    ),
    "setOwner true": (
        "team-a-vcluster",
        _set_path(("values", "experimental", "syncSettings", "setOwner"), True),
        {"vcluster-set-owner-false"},
    ),
    "virtual scheduler on": (
        "team-a-vcluster",
        _set_path(("values", "controlPlane", "distro", "k8s", "scheduler", "enabled"), True),
        {"vcluster-set-owner-false"},
    ),
    "both annotations": (
        "gpu-sharing",
        _set_path(("metadata", "annotations", "gpu-memory"), "2000"),
        {"kai-gpu-sharing-annotations"},
    ),
    "fraction of one": (
        "vllm-test-07",
        _set_path((*TEMPLATE, "metadata", "annotations", "gpu-fraction"), "1"),
        {"kai-gpu-sharing-annotations"},
    ),
    "utilization above the share": (
        "vllm-test-02",
        _vllm_utilization("0.5"),
        {"gpu-memory-utilization-within-fraction"},
    ),
    "gpu sharing off": (
        "kai-release",
        _set_path(("values", "global", "gpuSharing"), False),
        {"kai-gpu-sharing-enabled"},
    ),
    "queue cycle": ("queues-default", _set_path(("spec", "parentQueue"), "test"), {"kai-queue-tree"}),
    "queue limit below quota": (
        "queues-team-a",
        _set_path(("spec", "resources", "gpu", "limit"), 1),
        {"kai-queue-tree"},
    ),
    # An omitted block is limit 0 to KAI, so test's workloads stay Pending too.
    "queue block missing": (
        "queues-test",
        _delete_path(("spec", "resources", "memory")),
        {"kai-queue-tree", "kai-capacity"},
    ),
    "over-capacity workloads": ("vllm-test-07", _set_path(("spec", "replicas"), 10), {"kai-capacity"}),
    "whole GPUs over the tenant's queue limit": (
        "gpu-pod",
        lambda i: [
            i["spec"]["containers"][0]["resources"][k].update({"nvidia.com/gpu": "3"}) for k in ("requests", "limits")
        ],
        {"kai-capacity"},
    ),
    "tenant uses a host queue": (
        "gpu-pod",
        _set_path(("metadata", "labels", "kai.scheduler/queue"), "test"),
        {"tenant-queue-binding"},
    ),
}


@pytest.mark.parametrize("case", list(MUTATIONS))
def test_mutated_dev_stack_reports_exactly_the_broken_policy(
    pack: Pack, dev_stack: list[RecordedResource], case: str
) -> None:
    suffix, change, expected = MUTATIONS[case]
    diagnostics = pack.analyze_all(_mutated(dev_stack, suffix, change))
    assert _policies(diagnostics) == expected, diagnostics
    assert {level for _, level, _ in diagnostics} == {analyzer_pb2.MANDATORY}


def test_violation_message_is_the_description_then_the_finding(pack: Pack, dev_stack: list[RecordedResource]) -> None:
    target = _mutated(dev_stack, "vllm-test-07", _delete_path((*TEMPLATE, "spec", "schedulerName")))
    [(name, _, message)] = pack.analyze(_named(target, "vllm-test-07"))
    assert name == "kai-scheduler-name"
    assert message.splitlines() == [
        "GPU workloads (and KAI-queued pods) must set schedulerName: kai-scheduler.",
        "spec.template.spec.schedulerName is unset (default-scheduler) but the pod requests GPUs: set "
        "schedulerName: kai-scheduler (KAI's pod-grouper only handles pods with that scheduler; no other "
        "scheduler knows KAI queues or GPU shares)",
    ]


def test_unknown_value_at_preview_is_advisory_not_a_violation(pack: Pack, dev_stack: list[RecordedResource]) -> None:
    unknown = _set_path((*TEMPLATE, "spec", "schedulerName"), UNKNOWN)
    target = _named(_mutated(dev_stack, "vllm-test-07", unknown), "vllm-test-07")
    diagnostics = pack.analyze(target)
    assert diagnostics
    assert {level for _, level, _ in diagnostics} == {analyzer_pb2.ADVISORY}
    assert all("can't run policy" in message and "during preview" in message for _, _, message in diagnostics)


def test_disabled_policy_reports_nothing(pack: Pack, dev_stack: list[RecordedResource]) -> None:
    pack.configure({"kai-scheduler-name": analyzer_pb2.PolicyConfig(enforcementLevel=analyzer_pb2.DISABLED)})
    target = _mutated(dev_stack, "vllm-test-07", _delete_path((*TEMPLATE, "spec", "schedulerName")))
    assert pack.analyze(_named(target, "vllm-test-07")) == []


def test_advisory_policy_reports_at_advisory(pack: Pack, dev_stack: list[RecordedResource]) -> None:
    pack.configure({"kai-scheduler-name": analyzer_pb2.PolicyConfig(enforcementLevel=analyzer_pb2.ADVISORY)})
    target = _mutated(dev_stack, "vllm-test-07", _delete_path((*TEMPLATE, "spec", "schedulerName")))
    assert [(n, level) for n, level, _ in pack.analyze(_named(target, "vllm-test-07"))] == [
        ("kai-scheduler-name", analyzer_pb2.ADVISORY)
    ]


def test_exempt_namespaces_come_from_policy_config(pack: Pack, dev_stack: list[RecordedResource]) -> None:
    properties = struct_pb2.Struct()
    properties.update({"exemptNamespaces": ["ai-workloads"]})
    pack.configure(
        {
            "kai-scheduler-name": analyzer_pb2.PolicyConfig(
                enforcementLevel=analyzer_pb2.MANDATORY, properties=properties
            )
        }
    )
    target = _mutated(dev_stack, "vllm-test-07", _delete_path((*TEMPLATE, "spec", "schedulerName")))
    assert pack.analyze(_named(target, "vllm-test-07")) == []


def test_declared_queues_come_from_the_stack_config_the_engine_passes(
    pack: Pack, dev_stack: list[RecordedResource]
) -> None:
    """`default` has children, so it is no leaf; the pack knows that only from PULUMI_CONFIG."""
    target = _mutated(dev_stack, "vllm-test-02", _set_path(("metadata", "labels", "kai.scheduler/queue"), "default"))
    [(name, _, message)] = pack.analyze(_named(target, "vllm-test-02"))
    assert name == "kai-queue-label"
    assert "default is not a declared leaf queue" in message
    assert "(declared leaf queues: default-queue, team-a, test)" in message


def test_capacity_is_not_applicable_when_the_stack_does_not_form_a_declaration(pack: Pack) -> None:
    """A queue with limit < quota is no declaration the checker can read: no verdict, only not-applicable."""
    spec = {
        "resources": {
            r: {"quota": 2, "limit": 1 if r == "gpu" else -1, "overQuotaWeight": 1} for r in ("gpu", "cpu", "memory")
        }
    }
    queue = RecordedResource(
        "kubernetes:scheduling.run.ai/v2:Queue",
        "q",
        "urn:pulumi:dev::kaistack::kubernetes:scheduling.run.ai/v2:Queue::q",
        None,
        {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "q"}, "spec": spec},
        True,
        None,
    )
    request = analyzer_pb2.AnalyzeStackRequest(
        resources=[
            analyzer_pb2.AnalyzerResource(type=queue.type, properties=struct(queue.inputs), urn=queue.urn, name="q")
        ]
    )
    response = pack.stub.AnalyzeStack(request, timeout=30)
    assert {d.policyName for d in response.diagnostics} == {"kai-queue-tree"}
    [skipped] = [n for n in response.not_applicable if n.policy_name == "kai-capacity"]
    assert "do not form a declaration the checker reads" in skipped.reason


def test_the_engines_python_launcher_starts_the_pack_too() -> None:
    """The CLI runs `python -m pulumi.policy <engine> .` in the pack directory (runpy on the directory)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "pulumi.policy", "127.0.0.1:1", "."], cwd=ROOT / "policies", stdout=subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            info = analyzer_pb2_grpc.AnalyzerStub(channel).GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
        assert len(info.policies) == len(POLICY_NAMES)
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_provider_default_namespace_places_a_workload_that_names_none(
    pack: Pack, dev_stack: list[RecordedResource]
) -> None:
    """A Kubernetes provider's `namespace` input is where an object without metadata.namespace goes; the engine
    sends the provider's inputs with each resource, so a Deployment written that way into a tenant's host
    namespace is caught like one that names it."""
    urn = "urn:pulumi:dev::kaistack::pulumi:providers:kubernetes::team-a-host"
    provider = RecordedResource(
        "pulumi:providers:kubernetes", "team-a-host", urn, None, {"namespace": "vcluster-team-a"}, True, None
    )
    stack = [*_mutated(dev_stack, "vllm-test-07", lambda i: i["metadata"].pop("namespace")), provider]
    target = _named(stack, "vllm-test-07")
    moved = dataclasses.replace(target, provider=f"{urn}::id")
    messages = [m for _, _, m in pack.analyze(moved, stack)]
    assert any("runs pods in tenant team-a's host namespace vcluster-team-a" in m for m in messages), messages
    unmoved = pack.analyze(target, stack)
    assert not any("host namespace" in m for _, _, m in unmoved)
