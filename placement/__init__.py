"""A pure-Python simulator of NVIDIA KAI scheduler v0.17's scheduling cycle.

    from placement import Snapshot, Node, Queue, QueueResource, Job, Task, Placement, simulate
    result = simulate(snapshot, actions=["allocate"], rounds=1, placement=Placement("binpack", "pack"))
    result.tasks["train-0"].status, result.reasons["train"].message

Scenario documents (the kai-conformance FORMAT) parse with `placement.scenario.parse_scenario`; kaistack
reads the files (`kaistack.ops.scenarios.load_scenario`).
"""

from placement.model import (
    ACTIONS,
    UNLIMITED,
    Job,
    Node,
    Placement,
    Queue,
    QueueResource,
    Snapshot,
    Task,
)
from placement.quantity import cpu_millis, memory_bytes, parse_quantity
from placement.reasons import Reason
from placement.result import GpuResult, JobResult, NodeResult, QueueResult, Resources, Result, TaskResult
from placement.simulation import simulate

__all__ = [
    "ACTIONS",
    "UNLIMITED",
    "GpuResult",
    "Job",
    "JobResult",
    "Node",
    "NodeResult",
    "Placement",
    "Queue",
    "QueueResource",
    "QueueResult",
    "Reason",
    "Resources",
    "Result",
    "Snapshot",
    "Task",
    "TaskResult",
    "cpu_millis",
    "memory_bytes",
    "parse_quantity",
    "simulate",
]
