"""The `pulumi_policy` side: wraps the pure rules (kaistack.guardrails) into the twelve policies `__main__.py` serves.

Resource policies get the stack's facts from `PULUMI_CONFIG` (the engine passes the stack config to
the pack's process when it starts it), loaded once through kaistack.stack.load; stack policies also
read the Platform component's props. Enforcement defaults
to the pack's MANDATORY; each policy's level and knobs come from `--policy-pack-config`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pulumi_policy import (
    Policy,
    PolicyConfigSchema,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

from kaistack.declaration.parse import ConfigError
from kaistack.guardrails.facts import StackFacts, facts_from_stack
from kaistack.guardrails.podspec import Res
from kaistack.guardrails.rules import DESCRIPTIONS, RESOURCE_RULES, ResourceRule
from kaistack.guardrails.settings import config_schema, settings
from kaistack.guardrails.stack_model import CheckerUnavailable
from kaistack.guardrails.stack_rules import STACK_DESCRIPTIONS, STACK_RULES, StackRule, stack_facts
from kaistack.stack.load import LoadOptions, from_engine_config

# The order `GetAnalyzerInfo` lists them in.
POLICY_NAMES = (
    "kai-scheduler-name",
    "kai-queue-label",
    "vcluster-set-owner-false",
    "kai-gpu-sharing-annotations",
    "kai-gpu-sharing-enabled",
    "gpu-memory-utilization-within-fraction",
    "kai-no-bypass",
    "kai-unread-constraints",
    "kai-fraction-container",
    "kai-queue-tree",
    "kai-capacity",
    "tenant-queue-binding",
)


def facts_from_environ(environ: Mapping[str, str]) -> StackFacts:
    """The stack the engine describes in `PULUMI_CONFIG`, through the one load path.

    Nothing is discovered here (the Platform component's props carry the resolved capacity to stack
    policies). An invalid config fails the program before any resource is registered, so no rule
    ever needs facts from one: it gives "unknown" facts.
    """
    try:
        stack = from_engine_config(environ, LoadOptions(discover=False))
    except ConfigError:
        return StackFacts(source="stack config (PULUMI_CONFIG)")
    return facts_from_stack(stack.config, stack.source) if stack is not None else StackFacts()


def _res(resource_type: str, name: str, props: object, urn: str, parent: str | None, provider: object) -> Res:
    provider_urn = getattr(provider, "urn", None) if provider is not None else None
    provider_props = getattr(provider, "props", None) if provider is not None else None
    try:
        namespace = provider_props.get("namespace") if isinstance(provider_props, Mapping) else None
    except UnknownValueError:  # a provider whose namespace is another resource's output, at preview
        namespace = None
    return Res(
        type=resource_type,
        name=name,
        props=props,  # type: ignore[arg-type]
        urn=urn,
        parent=parent,
        provider=provider_urn,
        provider_namespace=namespace if isinstance(namespace, str) and namespace else None,
    )


def _stack_res(r: PolicyResource) -> Res:
    parent = r.parent.urn if r.parent is not None else (r.opts.parent if r.opts is not None else None)
    return _res(r.resource_type, r.name, r.props, r.urn, parent, r.provider)


def resource_policy(name: str, rule: ResourceRule, facts: StackFacts) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        parent = args.opts.parent if args.opts is not None else None
        res = _res(args.resource_type, args.name, args.props, args.urn, parent, args.provider)
        for message in rule(res, settings(args.get_config()), facts):
            report(message, None)

    return ResourceValidationPolicy(
        name=name,
        description=DESCRIPTIONS[name],
        validate=validate,
        config_schema=PolicyConfigSchema(properties=config_schema(name)),
    )


def stack_policy(name: str, rule: StackRule, facts: StackFacts) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        resources: Sequence[Res] = [_stack_res(r) for r in args.resources]
        try:
            findings = rule(resources, settings(args.get_config()), stack_facts(resources, facts))
        except CheckerUnavailable as err:
            args.not_applicable(str(err))
            return
        for finding in findings:
            report(finding.message, finding.subject.urn if finding.subject and finding.subject.urn else None)

    return StackValidationPolicy(
        name=name,
        description=STACK_DESCRIPTIONS[name],
        validate=validate,
        config_schema=PolicyConfigSchema(properties=config_schema(name)),
    )


def build_policies(facts: StackFacts) -> list[Policy]:
    """The twelve policies over `facts`, the stack the engine runs the pack for (see facts_from_environ)."""
    out: list[Policy] = []
    for name in POLICY_NAMES:
        if name in RESOURCE_RULES:
            out.append(resource_policy(name, RESOURCE_RULES[name], facts))
        else:
            out.append(stack_policy(name, STACK_RULES[name], facts))
    return out
