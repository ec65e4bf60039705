"""An existing cluster (OpenShift, OpenNebula, a lab cluster...): nothing is created, only a provider.

The admin kubeconfig comes from config (`pulumi config set --secret --path
kaistack:cluster.existing.kubeconfig ...`) or from a context in the user's own kubeconfig
($KUBECONFIG or ~/.kube/config), which Pulumi's Kubernetes provider reads itself.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
import yaml

from kaistack.declaration.model import StackConfig


def context_kubeconfig(context: str) -> str:
    """A kubeconfig that only selects `context`.

    kubectl merges the files listed in KUBECONFIG, so `KUBECONFIG=<this>:~/.kube/config` selects the
    same cluster the provider uses, without copying the user's credentials into the stack state.
    """
    return yaml.safe_dump(
        {"apiVersion": "v1", "kind": "Config", "preferences": {}, "current-context": context}, sort_keys=False
    )


class ExistingCluster(pulumi.ComponentResource):
    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider

    def __init__(self, name: str, config: StackConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kaistack:index:ExistingCluster", name, None, opts)
        child_opts = pulumi.ResourceOptions(parent=self)
        existing = config.cluster.existing
        assert existing is not None  # guaranteed by ClusterConfig._provider_settings
        if existing.kubeconfig:
            # Secret even when the stack file holds it in clear (a misconfigured `pulumi config set`).
            self.kubeconfig = pulumi.Output.secret(existing.kubeconfig)
        else:
            self.kubeconfig = pulumi.Output.secret(context_kubeconfig(existing.context or ""))
        self.provider = k8s.Provider(
            f"{name}-provider",
            kubeconfig=self.kubeconfig if existing.kubeconfig else None,
            context=existing.context,
            opts=child_opts,
        )
        self.register_outputs(
            {"context": existing.context, "kubeconfig": self.kubeconfig, "clusterName": config.cluster.name}
        )
