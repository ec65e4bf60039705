"""kaistack's Pulumi program: read the `kaistack:` config once, validate it, build the Platform.

Everything the stack declares lives in Pulumi.<stack>.yaml under six keys (kaistack.declaration). A bad
config stops the program before any resource is registered, with every problem listed by key path.
"""

import pulumi

from kaistack.capacity.gate import CapacityError, gate
from kaistack.declaration.model import StackConfig
from kaistack.declaration.parse import TOP_LEVEL_KEYS, ConfigError
from kaistack.stack.load import resolve


def capacity_gate(config: StackConfig) -> None:
    """Refuse, at preview and up alike, a stack whose declared work KAI would leave Pending."""
    try:
        report = gate(config, pulumi.get_stack())
    except CapacityError as err:
        raise pulumi.RunError(str(err)) from None
    if report is not None and report.partial:
        # Stopped by a time limit (its summary names which): every workload not reached yet would be listed.
        pulumi.log.warn(report.summary())
    elif report is not None and not report.ok:
        pulumi.log.warn("\n".join([report.summary(), *report.reasons]))
    if report is not None:
        # What the verdict leaves out, and placements KAI makes that the pod will not live with (oversized
        # gpu-memory shares): a `fits` that says nothing else would hide them.
        for note in report.notes:
            pulumi.log.warn(f"kaistack capacity: {note}")


def load_config() -> StackConfig:
    config = pulumi.Config("kaistack")
    raw = {}
    problems = []
    for key in TOP_LEVEL_KEYS:
        try:
            value = config.get_object(key)
        except pulumi.ConfigTypeError as err:
            # Pulumi's message quotes the value, decrypted: a secret's is left out.
            if pulumi.runtime.is_config_secret(f"kaistack:{key}"):
                problems.append(f"kaistack:{key}: not valid JSON/YAML (a secret: its value is not shown)")
            else:
                problems.append(f"kaistack:{key}: not valid JSON/YAML ({err})")
            continue
        if value is not None:
            raw[key] = value
    try:
        if problems:
            raise ConfigError(problems, f"stack {pulumi.get_stack()}")
        # The one load path (kaistack.stack.load): the model `kaistack check` and `validate` see, EKS
        # pools resolved from EC2 (declared values without credentials). aws:region is read here, at
        # the edge, because components never read config and the load path holds it to the model's.
        stack = resolve(
            raw,
            stack=pulumi.get_stack(),
            source=f"stack {pulumi.get_stack()}",
            aws_region=pulumi.Config("aws").get("region"),
            # Pulumi marks secrecy per top-level key; the values themselves arrive decrypted.
            secret_keys=[key for key in raw if pulumi.runtime.is_config_secret(f"kaistack:{key}")],
        )
        for note in stack.notes:
            pulumi.log.warn(f"kaistack: {note}")
        return stack.config
    except ConfigError as err:
        # RunError prints the message alone (no traceback) and fails the update before any resource.
        raise pulumi.RunError(str(err)) from None


stack_config = load_config()
capacity_gate(stack_config)

from components.platform import Platform  # noqa: E402  (only once the config is known to be valid)

platform = Platform("kaistack", stack_config)

pulumi.export("kubeconfig", platform.kubeconfig)
pulumi.export("kaiNamespace", stack_config.kai.namespace)
pulumi.export("kaiVersion", stack_config.kai.version)
pulumi.export("queueTree", platform.queues.tree)
pulumi.export("tenants", [t.summary for t in platform.vclusters.values()])
