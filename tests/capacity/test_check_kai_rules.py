"""`kaistack check` simulates the stack's own KAI release where the simulator has its rules, and says so
when it has to use the nearest ones (kaistack.declaration.versions.simulator_rules)."""

from __future__ import annotations

from typing import Any

from kaistack.capacity.check import check
from kaistack.capacity.report import to_json, to_text
from kaistack.declaration import versions
from kaistack.declaration.parse import parse_config


def _stack(version: str) -> Any:
    raw = {
        "cluster": {"provider": "kind", "nodePools": [{"name": "gpu", "count": 1, "gpus": 2}]},
        "queues": [{"name": "q"}],
        "kai": {"version": version},
        "workloads": [{"name": "p", "kind": "Pod", "queue": "q", "image": "busybox:1.37.0", "gpu": 1}],
    }
    return parse_config(raw, source="test")


def test_a_v0_17_0_stack_is_simulated_with_v0_17_0_rules_and_no_note() -> None:
    report = check(_stack("v0.17.0"), "t")
    assert (report.kai_version, report.rules) == ("v0.17.0", "v0.17.0")
    assert "note:" not in to_text(report)


def test_an_older_release_is_simulated_with_the_nearest_rules_and_the_report_says_so() -> None:
    report = check(_stack("v0.16.3"), "t")
    assert to_json(report)["simulatedRules"] == "v0.17.0"
    assert "note: KAI v0.16.3 is simulated with KAI v0.17.0's rules" in to_text(report)


def test_every_supported_release_maps_to_a_rule_set_the_simulator_has() -> None:
    assert {versions.simulator_rules(tag) for tag in versions.KAI_CHARTS} <= set(versions.SIMULATOR_RULES)
