"""kai-capacity's verdict: the placement checker on the declaration the adapter rebuilds from the stack's resources.

`kai.capacityCheck: warn | off` on the Platform deploys a stack that does not fit (the program warns, or does not
check), so the rule finds nothing for it. `kai.capacityCheckMaxSeconds` bounds this simulation as it bounds the
program's gate, and so does the policy's own `maxSeconds` (`kaistack validate --max-seconds` sets it), the smaller
applying: a check stopped by either is one finding on the Platform, not every workload it did not reach.
"""

from __future__ import annotations

from collections.abc import Sequence

from kaistack.capacity.check import check
from kaistack.declaration.marks import PLATFORM_TYPE
from kaistack.declaration.parse import ConfigError, parse_config
from kaistack.guardrails.capacity_adapter import declaration
from kaistack.guardrails.facts import StackFacts
from kaistack.guardrails.podspec import mapping
from kaistack.guardrails.rules import Res
from kaistack.guardrails.settings import Settings
from kaistack.guardrails.stack_model import CheckerUnavailable, Finding

__all__ = ["check_capacity"]

_STACK_KEY = "kai.capacityCheckMaxSeconds"
_OWN_KEY = "kai-capacity's maxSeconds"
# What to do about each limit: the stack's stops `pulumi up` too; the policy's is set per run (kaistack validate
# --max-seconds, or --policy-pack-config), so deploying is not what it blocks.
_ADVICE = {
    _STACK_KEY: "raise it, or set kai.capacityCheck: warn to deploy anyway",
    _OWN_KEY: "raise it (kaistack validate --max-seconds sets it)",
}


def _max_seconds(platform: Res | None) -> float | None:
    """kai.capacityCheckMaxSeconds from the Platform's props; anything but a positive finite number is none."""
    value = mapping(platform.props.get("kai")).get("capacityCheckMaxSeconds") if platform is not None else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf"):
        return None
    return float(value)


def check_capacity(resources: Sequence[Res], s: Settings, facts: StackFacts) -> list[Finding]:
    if not any(r.type == PLATFORM_TYPE for r in resources) and facts.node_pools is None:
        return []  # not a kaistack platform stack: nothing declares capacity
    platform = next((r for r in resources if r.type == PLATFORM_TYPE), None)
    if platform is not None and mapping(platform.props.get("kai")).get("capacityCheck") in ("warn", "off"):
        # kai.capacityCheck: warn deploys a stack that does not fit (the program warns), off does not check.
        return []
    decl = declaration(resources, s, facts)
    try:
        config = parse_config(decl.raw, source="the stack's resources")
    except ConfigError as err:
        raise CheckerUnavailable(f"the stack's resources do not form a declaration the checker reads: {err}") from err
    bounds = [(n, key) for n, key in ((_max_seconds(platform), _STACK_KEY), (s.capacity_max_seconds, _OWN_KEY)) if n]
    limit, key = min(bounds) if bounds else (None, _STACK_KEY)
    report = check(config, max_seconds=limit, limit_name=key)
    if report.ok:
        return []
    if report.partial:
        # The workloads not reached yet are not the stack's fault: one finding, on the Platform, for the clock.
        return [Finding(f"capacity check: {report.summary()}: no verdict; {_ADVICE[key]}", platform)]
    findings = [
        Finding(
            f"{w.kind} {w.name} ({w.where}, queue {w.queue}) "
            f"{f'would stay {w.status}' if w.pending else 'does not stay where it is placed'}: "
            f"{'; '.join(w.why) or 'no placement found'}",
            decl.origin.get(w.name, platform),
        )
        for w in report.workloads
        if w.pending or w.moving
    ]
    if report.unsettled:
        findings.insert(0, Finding(f"KAI {report.summary()}", platform))
    if decl.left_out and findings:
        findings.append(Finding(f"not part of the capacity check: {'; '.join(decl.left_out)}", platform))
    return findings
