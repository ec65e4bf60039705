"""kaistack's guardrails: the CrossGuard policy pack and the rules it shares with `kaistack lint`.

- `podspec`, `facts`, `settings`, `vllm`: reading resources (engine proxies or manifests) and config;
- `rules` (resource policies) and `stack_rules` (stack policies): pure functions, no Pulumi;
- `pack`: the `pulumi_policy` adapters; `__main__.py`: only `PolicyPack(...)` (it serves forever).
"""
