"""The declared KAI queue tree as `scheduling.run.ai/v2` Queue objects.

KAI's own default pair (`default-parent-queue` -> `default-queue`) is created by the chart from the
`defaultQueue.*` values (components/kai.py); it appears in this component's `tree` output but is not
declared again here.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.kai import resource_values
from kaistack.declaration import kai_api
from kaistack.declaration.model import Queue, StackConfig


def queue_spec(queue: Queue) -> dict[str, Any]:
    """The Queue CRD spec (kai.md §3): every resource block in full, parent and priority explicit."""
    spec: dict[str, Any] = {}
    if queue.display_name:
        spec["displayName"] = queue.display_name
    if queue.parent:
        spec["parentQueue"] = queue.parent
    spec["priority"] = queue.priority
    spec["resources"] = resource_values(queue.resources)
    if queue.preempt_min_runtime:
        spec["preemptMinRuntime"] = queue.preempt_min_runtime
    if queue.reclaim_min_runtime:
        spec["reclaimMinRuntime"] = queue.reclaim_min_runtime
    return spec


def queue_tree(config: StackConfig) -> list[dict[str, Any]]:
    """Every queue KAI will have (chart defaults included), parents first, with its children."""
    queues = config.all_queues()
    declared = {q.name for q in config.queues}
    leaves = config.leaf_queue_names()
    return [
        {
            "name": q.name,
            "parent": q.parent,
            "children": [c.name for c in queues if c.parent == q.name],
            "leaf": q.name in leaves,
            "priority": q.priority,
            "resources": resource_values(q.resources),
            "createdBy": "kaistack" if q.name in declared else "kai-chart",
        }
        for q in queues
    ]


class QueueTree(pulumi.ComponentResource):
    queues: dict[str, k8s.apiextensions.CustomResource]
    tree: list[dict[str, Any]]

    def __init__(
        self,
        name: str,
        config: StackConfig,
        kai_ready: pulumi.Resource,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("kaistack:index:QueueTree", name, None, opts)
        child_opts = pulumi.ResourceOptions(parent=self)
        declared = {q.name for q in config.queues}
        self.queues = {}
        # all_queues() is parents-first; each Queue waits for its parent (KAI drops a queue whose
        # parent is missing, with its children: kai.md §3) and for KAI's webhooks to answer (components.kai_ready).
        for queue in config.all_queues():
            if queue.name not in declared:
                continue
            depends: list[pulumi.Resource] = [kai_ready]
            if queue.parent in self.queues:
                depends.append(self.queues[queue.parent])
            self.queues[queue.name] = k8s.apiextensions.CustomResource(
                f"{name}-{queue.name}",
                api_version=kai_api.QUEUE.api_version,
                kind=kai_api.QUEUE.kind,
                metadata={"name": queue.name},
                spec=queue_spec(queue),
                opts=child_opts.merge(pulumi.ResourceOptions(depends_on=depends)),
            )
        self.tree = queue_tree(config)
        self.register_outputs({"tree": self.tree})
