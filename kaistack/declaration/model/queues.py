"""KAI's Queue CRD (scheduling.run.ai/v2) as declared: resource blocks in the CRD's units, and the tree."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Annotated, Any

from pydantic import AfterValidator, Field, WithJsonSchema, field_validator, model_validator

from kaistack.declaration.model.base import Model, Name, Text
from placement.depth import depths as chain_depths
from placement.quantity import Quantity, QuantityError
from placement.scenario import DURATION_PATTERN, duration_seconds

# A CRD number, or a Kubernetes quantity string that QueueResources converts to the block's unit.
_CRD_NUMBER_OR_QUANTITY = {
    "anyOf": [
        {"type": "number"},
        {
            "type": "string",
            "pattern": r"^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$",
        },
    ]
}


def _in_crd_units(resource: str, value: Any) -> Any:
    """A quantity string converted to the block's CRD unit; numbers (the CRD's own units) pass as they are.

    `cpu: {quota: "4"}` is 4 cores = 4000 millicores, `memory: {limit: "16Gi"}` is 17179.869184 MB,
    `gpu: {quota: "500m"}` is 0.5 GPU. A bare number is always the CRD unit (`cpu: {quota: 4}` is
    4 millicores), as KAI reads it.
    """
    if not isinstance(value, str) or value.strip() == "-1":
        return -1 if isinstance(value, str) else value
    try:
        quantity = Quantity.parse(value)
    except QuantityError:
        return value  # the field reports it, at its own key path
    scale = {"gpu": Fraction(1), "cpu": Fraction(1000), "memory": Fraction(1, 10**6)}[resource]
    return float(quantity.value * scale)


class ResourceBlock(Model):
    """One of a Queue's gpu/cpu/memory blocks, always written out in full.

    KAI reads an omitted `limit` as 0 ("no resources allowed"), not unlimited, so the model fills
    every field. Defaults are the field guides' working setup: -1 (unlimited) and weight 1.
    """

    quota: Annotated[float, WithJsonSchema(_CRD_NUMBER_OR_QUANTITY)] = Field(
        default=-1, description="Deserved amount, in the block's unit (or a quantity string); -1 = unlimited"
    )
    limit: Annotated[float, WithJsonSchema(_CRD_NUMBER_OR_QUANTITY)] = Field(
        default=-1,
        description="Hard cap, in the block's unit (or a quantity string); -1 = unlimited (KAI reads an omitted "
        "limit as 0)",
    )
    over_quota_weight: float = Field(default=1, description="Share of spare capacity beyond quota (a weight, >= 0)")

    @field_validator("quota", "limit", "over_quota_weight", mode="before")
    @classmethod
    def _numbers(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError(f"must be a number, got {value!r}")
        if isinstance(value, str):
            raise ValueError(
                f"must be a number in the queue's unit or a Kubernetes quantity such as '4' (cores), "
                f"'500m' or '16Gi', got {value!r}"
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"must be a finite number, got {value!r}")
        return value

    @field_validator("quota", "limit")
    @classmethod
    def _unlimited_or_non_negative(cls, value: float) -> float:
        if value != -1 and value < 0:
            raise ValueError(f"must be -1 (unlimited) or >= 0, got {value:g}")
        return value

    @field_validator("over_quota_weight")
    @classmethod
    def _weight_non_negative(cls, value: float) -> float:
        if value < 0:
            raise ValueError(f"must be >= 0, got {value:g}")
        return value

    @model_validator(mode="after")
    def _limit_covers_quota(self) -> ResourceBlock:
        if self.limit != -1 and self.quota != -1 and self.limit < self.quota:
            raise ValueError(f"limit ({self.limit:g}) is below quota ({self.quota:g}); the limit must be >= quota")
        return self


class QueueResources(Model):
    """Units as in KAI's Queue CRD: gpu in GPUs (fractions allowed), cpu in millicores, memory in MB.

    A quota or limit may also be a Kubernetes quantity string ("4", "500m", "16Gi"), converted to the
    CRD's unit here, so `memory: {quota: 16Gi}` means what it says.
    """

    @model_validator(mode="before")
    @classmethod
    def _quantities_to_crd_units(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        converted = dict(data)
        for resource in ("gpu", "cpu", "memory"):
            block = data.get(resource)
            if isinstance(block, Mapping):
                converted[resource] = {
                    k: _in_crd_units(resource, v) if k in ("quota", "limit") else v for k, v in block.items()
                }
        return converted

    gpu: ResourceBlock = Field(default=ResourceBlock(), description="GPUs (fractions allowed)")
    cpu: ResourceBlock = Field(default=ResourceBlock(), description="CPU in millicores (1000 = one core)")
    memory: ResourceBlock = Field(default=ResourceBlock(), description="Memory in MB (10^6 bytes)")


# time.Duration's range, in seconds: ParseDuration refuses a value past it ("invalid duration").
_MAX_DURATION_SECONDS = (2**63 - 1) / 1e9


def _go_duration(value: str) -> str:
    # The CRD types these as plain strings, so the API server stores anything, but KAI reads them as
    # *metav1.Duration (KAI-Scheduler@v0.17.0:pkg/apis/scheduling/v2/queue_types.go:40-46), whose UnmarshalJSON
    # is time.ParseDuration (kubernetes/apimachinery@v0.35.2:pkg/apis/meta/v1/duration.go:32-45): a value it
    # refuses fails the decoding of the Queue in KAI.
    seconds = duration_seconds(value)
    if seconds is None or abs(seconds) > _MAX_DURATION_SECONDS:
        raise ValueError(
            f"{value[:80]!r} is not a Go duration: numbers each with a unit ns, us, ms, s, m or h, such as '10m', "
            "'90s' or '1h30m' (a bare number other than 0 has no unit)"
        )
    return value


GoDuration = Annotated[
    str, Field(max_length=64, json_schema_extra={"pattern": DURATION_PATTERN}), AfterValidator(_go_duration)
]


class Queue(Model):
    """A KAI queue; only leaf queues (no children) schedule pods."""

    name: Name = Field(description="Queue name (a DNS label); pods name it in the kai.scheduler/queue label")
    parent: Name | None = Field(default=None, description="Parent queue; none = a top-level queue")
    display_name: Text | None = Field(default=None, description="spec.displayName")
    priority: int = Field(
        default=100, ge=-(2**31), lt=2**31, description="Queue priority: higher gets over-quota first, reclaimed last"
    )
    resources: QueueResources = Field(default=QueueResources(), description="gpu/cpu/memory quota, limit, weight")
    preempt_min_runtime: GoDuration | None = Field(
        default=None, description="spec.preemptMinRuntime (a Go duration, '10m')"
    )
    reclaim_min_runtime: GoDuration | None = Field(
        default=None, description="spec.reclaimMinRuntime (a Go duration, '10m')"
    )


class DefaultQueues(Model):
    """The chart's own `default-parent-queue` -> `default-queue`, where unlabelled pods land.

    Chart defaults give them quota 0, which leaves every non-preemptible pod there Pending; they are
    part of the model so the checker accounts for them.
    """

    create: bool = Field(default=True, description="Let the KAI chart create its default queue pair")
    parent_name: Name = Field(default="default-parent-queue", description="defaultQueue.parentName")
    child_name: Name = Field(default="default-queue", description="defaultQueue.childName (where unlabelled pods go)")
    parent_resources: QueueResources = Field(
        default=QueueResources(gpu=ResourceBlock(quota=0), cpu=ResourceBlock(quota=0), memory=ResourceBlock(quota=0)),
        description="defaultQueue.parentResources (chart default: quota 0)",
    )
    child_resources: QueueResources = Field(
        default=QueueResources(gpu=ResourceBlock(quota=0), cpu=ResourceBlock(quota=0), memory=ResourceBlock(quota=0)),
        description="defaultQueue.childResources (chart default: quota 0)",
    )


def find_cycle(queues: Sequence[Queue]) -> list[str]:
    """One parent cycle as a path (`a -> b -> a`), or []; linear in the number of queues."""
    parent = {q.name: q.parent for q in queues}
    state: dict[str, int] = {}  # 1 = on the current walk, 2 = known to end at a root
    for start in parent:
        walk: list[str] = []
        node: str | None = start
        while node is not None and node in parent and state.get(node) is None:
            state[node] = 1
            walk.append(node)
            node = parent[node]
        if node is not None and state.get(node) == 1:
            return [*walk[walk.index(node) :], node]
        for name in walk:
            state[name] = 2
    return []


def depths(queues: Sequence[Queue]) -> dict[str, int]:
    """Each queue's depth (a top-level queue is 1), following parents iteratively; cycles and missing
    parents end the walk (placement.depth, which the simulator's readers share)."""
    return chain_depths({q.name: q.parent for q in queues})


def parents_first(queues: Sequence[Queue]) -> list[Queue]:
    """Stable topological order; queues in a cycle or under a missing parent keep their place last."""
    by_parent: dict[str | None, list[Queue]] = {}
    names = {q.name for q in queues}
    for queue in queues:
        by_parent.setdefault(queue.parent if queue.parent in names else None, []).append(queue)
    order = {q.name: i for i, q in enumerate(queues)}
    ordered: list[Queue] = []
    placed: set[str] = set()
    # Breadth-first by level keeps the old order: every top-level queue, then their children, ...
    level = [q for q in queues if q.parent is None]
    while level:
        ordered.extend(level)
        placed.update(q.name for q in level)
        level = sorted((c for q in level for c in by_parent.get(q.name, ())), key=lambda q: order[q.name])
    ordered.extend(q for q in queues if q.name not in placed)
    return ordered
