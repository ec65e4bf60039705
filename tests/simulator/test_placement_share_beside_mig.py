"""A GPU share that asks a MIG device too (read from a cluster; KAI's admission allows it): its GPU requirement is the
share alone, its vector keeps the MIG device (KAI@v0.17.0 pkg/scheduler/api/pod_info/pod_info.go:215, 527-531,
576-583). What reads which, as placement.tasks.TaskRequest keeps them."""

from __future__ import annotations

from placement.idle_gpus_filter import AccumulatedIdleGpus
from placement.model import Task
from placement.tasks import KIND_FRACTION, TaskRequest

SHARE_BESIDE_MIG = Task(gpu_fraction=0.5, mig={"nvidia.com/mig-1g.10gb": 1})


class _Pending:
    def __init__(self, req: TaskRequest) -> None:
        self.req = req


def test_a_share_beside_a_mig_device_stays_a_share_and_keeps_the_device() -> None:
    req = TaskRequest(SHARE_BESIDE_MIG)
    assert (req.kind, req.mig) == (KIND_FRACTION, (("nvidia.com/mig-1g.10gb", 1),))


def test_its_vector_counts_the_device_and_its_requirement_does_not() -> None:
    """TotalGPUs of the vector (resource_vector.go:274-288) is 0.5 + 1; GpuRequirement.GetGpusQuota() is 0.5."""
    req = TaskRequest(SHARE_BESIDE_MIG)
    assert (req.quota_gpus, req.requirement_gpus) == (1.5, 0.5)


def test_the_idle_gpus_filter_requires_the_share_alone() -> None:
    """AccumulatedIdleGpus reads pod.GpuRequirement.GetGpusQuota() (accumulated_scenario_filters/idle_gpus/
    idle_gpus.go:157), so the MIG device is not required of the freed GPUs."""
    filter_ = AccumulatedIdleGpus({}, [_Pending(TaskRequest(SHARE_BESIDE_MIG))], top=[])  # type: ignore[list-item]
    assert filter_.required == [0.5]
