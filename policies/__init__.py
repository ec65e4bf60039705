"""kaistack's CrossGuard policy pack: the `pulumi_policy` adapters over the rules `kaistack lint` shares.

- the rules themselves live in `kaistack/guardrails/` (`podspec`, `facts`, `settings` read resources and config;
  `rules` and `stack_rules` are the resource and stack policies, pure functions with no Pulumi);
- `pack`: the `pulumi_policy` adapters; `__main__.py`: only `PolicyPack(...)` (it serves forever).
"""
