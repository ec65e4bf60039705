"""The one load path: a stack's `kaistack:` config -> the resolved, validated model every consumer uses.

`load_stack(project_dir, stack)` reads `Pulumi.<stack>.yaml`; `resolve(raw, ...)` takes config that
arrived another way (the Pulumi program's `pulumi.Config`, the policy pack's `PULUMI_CONFIG`). Both
then do the same three things, so every command sees the same stack:

1. parse and validate the keys into the frozen model (`kaistack.declaration.parse`), every problem
   named by key path, with the version rules of the model (KAI/vCluster features by version), and
   hold an EKS stack's `aws:region`, when given, to `kaistack:cluster.eks.region`;
2. resolve capacity the declaration leaves to discovery: EKS pools from EC2 (`kaistack.stack.eks`,
   the declared values when AWS cannot be asked); an existing cluster's pools from its live nodes
   when it declares none (`kaistack.stack.existing`, refused with what to declare when unreadable);
   a real-GPU kind cluster's GPUs from this machine's NVML (`kaistack.stack.local_gpus`);
3. return the model with notes that say what resolution did (zones picked, facts taken unverified).

`__main__.py`, render, validate, check, verify, lint `--stack`, promote and the policy pack all call it.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kaistack.declaration.config_secrets import secure_keys
from kaistack.declaration.model import StackConfig
from kaistack.declaration.parse import NAMESPACE, ConfigError, parse_config
from kaistack.stack import eks, existing, local_gpus
from kaistack.stack.files import kaistack_keys, plain_setting, read_stack_file, stack_file


@dataclass(frozen=True)
class LoadOptions:
    """How much of the outside world resolution may ask.

    `discover=False` takes every declared fact as it is and asks nobody (the policy pack, which
    reads the resolved capacity from the Platform component's props instead). `ec2` is a boto3 EC2
    client to use instead of one from the default credential chain (tests pass a moto client).
    """

    discover: bool = True
    ec2: Any = None
    read_nodes: Any = None  # `(existing settings) -> [node]`, instead of asking the cluster (tests)
    nvml: Any = None  # a pynvml-like module, instead of this machine's NVML (tests)
    compared: bool = False  # only simulated to compare with (diff's base): parse_config skips deploy-time refusals


@dataclass(frozen=True)
class ResolvedStack:
    """A stack ready for every consumer: the model plus where it came from and what resolution did."""

    name: str
    source: str  # "Pulumi.dev.yaml", or "stack dev" for config from the engine
    raw: Mapping[str, Any]  # the `kaistack:` keys as read (secure values masked)
    config: StackConfig
    notes: tuple[str, ...] = field(default=())


def resolve(
    raw: Mapping[str, Any],
    *,
    stack: str,
    source: str,
    options: LoadOptions | None = None,
    aws_region: str | None = None,
    secret_keys: Collection[str] | None = None,
) -> ResolvedStack:
    """Parse, validate and resolve `kaistack:` keys (prefix stripped); ConfigError lists every problem.

    `aws_region` is the stack's `aws:region` setting (None when it has none); `secret_keys` the keys the
    source holds as secret (config_secrets: a kubeconfig that is not one is never connected with).
    """
    options = options or LoadOptions()
    config = parse_config(raw, source=source, secret_keys=secret_keys, compared=options.compared)
    # Before discovery: a mismatch is refused without asking EC2 about the wrong region.
    _check_aws_region(config, aws_region, source)
    notes: list[str] = []
    if options.discover:
        config, found = eks.discover(config, options.ec2)
        notes += found
        config, found = existing.discover(config, source, options.read_nodes)
        notes += found
        config, found = local_gpus.discover(config, options.nvml)
        notes += found
    return ResolvedStack(stack, source, raw, config, tuple(notes))


def load_stack(project_dir: Path, stack: str, options: LoadOptions | None = None) -> ResolvedStack:
    """`Pulumi.<stack>.yaml` in `project_dir`, resolved; ConfigError for a missing or invalid stack."""
    settings = read_stack_file(Path(project_dir), stack)
    return resolve_settings(settings, stack=stack, source=stack_file(Path(project_dir), stack).name, options=options)


def resolve_settings(
    settings: Mapping[str, Any], *, stack: str, source: str, options: LoadOptions | None = None
) -> ResolvedStack:
    """A stack file's `config:` mapping (from disk, from git or from promote's candidate), resolved."""
    return resolve(
        kaistack_keys(settings),
        stack=stack,
        source=source,
        options=options,
        aws_region=plain_setting(settings, "aws:region"),
        secret_keys=secure_keys(settings),
    )


def _check_aws_region(config: StackConfig, aws_region: str | None, source: str) -> None:
    # The default AWS provider reads aws:region; the model's region drives discovery and the
    # kubeconfig. Two different regions would create the cluster where nothing else looks. Only the
    # stack's config is compared: an AWS_REGION in the shell of an offline `kaistack render` is not.
    settings = config.cluster.eks
    if config.cluster.provider != "eks" or settings is None or not aws_region or aws_region == settings.region:
        return
    region = settings.region
    raise ConfigError(
        [
            f"aws:region is {aws_region!r} but kaistack:cluster.eks.region is {region!r}; set both to the same "
            f"region (pulumi config set aws:region {region})"
        ],
        source,
    )


def from_engine_config(environ: Mapping[str, str], options: LoadOptions | None = None) -> ResolvedStack | None:
    """The stack the engine describes in `PULUMI_CONFIG` (a policy pack's environment), or None.

    The engine passes structured values as JSON text (pulumi `analyzer_plugin.go` `constructEnv`).
    None when there is no `kaistack:` config; ConfigError when there is and it is invalid.
    """
    text = environ.get("PULUMI_CONFIG")
    if not text:
        return None
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(document, Mapping):
        return None
    prefix = f"{NAMESPACE}:"
    raw = {k[len(prefix) :]: _json_value(v) for k, v in document.items() if str(k).startswith(prefix)}
    if not raw:
        return None
    stack = environ.get("PULUMI_STACK", "")
    return resolve(raw, stack=stack, source="stack config (PULUMI_CONFIG)", options=options)


def _json_value(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value
