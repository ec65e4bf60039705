"""Policy-pack config (defaults in code, schema per policy) and where stack facts come from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from policy_builders import engine

from kaistack.guardrails.facts import StackFacts, TenantFacts, facts_from_platform
from kaistack.guardrails.podspec import DEFAULT_EXEMPT_NAMESPACES
from kaistack.guardrails.settings import POLICY_KNOBS, Settings, config_schema, settings
from kaistack.stack.files import read_stack_config
from policies.pack import POLICY_NAMES, facts_from_environ

ROOT = Path(__file__).resolve().parents[2]


def test_empty_config_gives_the_defaults() -> None:
    """The SDK applies no schema defaults and passes no config without Configure: defaults live in code."""
    assert settings(None) == settings({}) == Settings()
    assert Settings().exempt_namespaces == frozenset(DEFAULT_EXEMPT_NAMESPACES)
    assert Settings().vllm_default_utilization == 0.9


def test_config_values_arrive_as_engine_json() -> None:
    """Numbers come as floats, lists as lists; the result is typed."""
    s = settings({"exemptNamespaces": ["a"], "nodeGpuMemoryMiB": 81920.0, "requireInTenantNamespaces": True})
    assert s.exempt_namespaces == frozenset({"a"})
    assert s.node_gpu_memory_mib == 81920
    assert s.require_in_tenant_namespaces is True


def test_tenants_in_config_default_their_namespace() -> None:
    s = settings({"tenants": [{"name": "alpha", "queues": ["q"]}]})
    assert s.tenants == (TenantFacts("alpha", "vcluster-alpha", ("q",)),)


def test_a_string_where_a_list_belongs_is_refused() -> None:
    with pytest.raises(
        ValueError, match="policy config exemptNamespaces: expected a list of strings, got 'kube-system'"
    ):
        settings({"exemptNamespaces": "kube-system"})


def test_a_word_where_a_number_belongs_is_refused() -> None:
    with pytest.raises(ValueError, match="policy config nodeGpuMemoryMiB: expected a number"):
        settings({"nodeGpuMemoryMiB": "lots"})


def test_kai_capacity_takes_a_time_limit_in_seconds() -> None:
    assert "maxSeconds" in config_schema("kai-capacity")
    assert config_schema("kai-capacity")["maxSeconds"]["exclusiveMinimum"] == 0
    assert settings({"maxSeconds": 120.0}).capacity_max_seconds == 120.0
    assert settings({}).capacity_max_seconds is None


@pytest.mark.parametrize("value", [0.0, -1.0, float("inf"), float("nan")])
def test_a_time_limit_that_is_no_positive_number_is_refused(value: float) -> None:
    with pytest.raises(ValueError, match="policy config maxSeconds: expected a positive number of seconds"):
        settings({"maxSeconds": value})


def test_every_policy_has_a_schema_without_the_reserved_key() -> None:
    assert set(POLICY_KNOBS) == set(POLICY_NAMES)
    for name in POLICY_NAMES:
        schema = config_schema(name)
        assert "enforcementLevel" not in schema
        assert all("type" in prop for prop in schema.values())


def test_workload_policies_take_exempt_namespaces() -> None:
    workload_policies = set(POLICY_NAMES) - {"vcluster-set-owner-false", "kai-queue-tree"}
    assert all("exemptNamespaces" in config_schema(name) for name in workload_policies)


def test_stack_facts_come_from_the_config_the_engine_passes() -> None:
    raw = read_stack_config(ROOT, "dev")
    environ = {"PULUMI_CONFIG": json.dumps({f"kaistack:{k}": json.dumps(v) for k, v in raw.items()})}
    facts = facts_from_environ(environ)
    assert facts.leaf_queues == frozenset({"test", "team-a", "default-queue"})
    assert facts.tenants == (
        TenantFacts("team-a", "vcluster-team-a", ("team-a",), ("kaistack-team-a-default-ddp-smoke",)),
    )
    assert facts.gpu_memory_mib == (11441,)
    assert facts.gpu_sharing is True


def test_structured_config_may_also_arrive_as_objects() -> None:
    environ = {
        "PULUMI_CONFIG": json.dumps({"kaistack:cluster": {"provider": "kind"}, "kaistack:queues": [{"name": "q"}]})
    }
    assert facts_from_environ(environ).leaf_queues == frozenset({"q", "default-queue"})


@pytest.mark.parametrize(
    "environ",
    [{}, {"PULUMI_CONFIG": "not json"}, {"PULUMI_CONFIG": json.dumps({"aws:region": "x"})}],
)
def test_without_kaistack_config_nothing_is_known(environ: dict[str, str]) -> None:
    assert facts_from_environ(environ) == StackFacts()


def test_invalid_kaistack_config_gives_no_facts() -> None:
    """The program refuses it before registering anything, so no rule needs facts from it."""
    environ = {"PULUMI_CONFIG": json.dumps({"kaistack:cluster": json.dumps({"provider": "mars"})})}
    assert facts_from_environ(environ).leaf_queues is None


def test_platform_props_override_the_config_facts() -> None:
    props = engine(
        {
            "kai": {"queueLabelKey": "example.com/queue", "gpuSharing": False},
            "tenants": [{"name": "a", "namespace": "ns-a", "queues": ["qa"]}],
            "nodePools": [{"name": "gpu", "gpus": 8.0, "gpuMemoryMiB": 81559.0}, {"name": "cpu", "gpus": 0.0}],
        }
    )
    facts = facts_from_platform(props, StackFacts(gpu_sharing=True))
    assert facts.queue_label_key == "example.com/queue"
    assert facts.gpu_sharing is False
    assert facts.tenants == (TenantFacts("a", "ns-a", ("qa",)),)
    assert facts.gpu_memory_mib == (81559,)
    assert facts.node_pools is not None
    assert len(facts.node_pools) == 2


def test_example_pack_config_fits_every_policys_schema() -> None:
    import jsonschema

    example = json.loads((ROOT / "policies" / "policy-config.example.json").read_text())
    for name, value in example.items():
        if name == "all" or not isinstance(value, dict):
            continue
        properties = {
            **config_schema(name),
            "enforcementLevel": {"enum": ["advisory", "mandatory", "remediate", "disabled"]},
        }
        jsonschema.validate(value, {"type": "object", "properties": properties, "additionalProperties": False})
