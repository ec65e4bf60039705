"""The topology fast paths decide exactly what the straightforward computation decides.

Each rack caches its free room and pod counts until one of its nodes changes, and the lowest common domain
of the whole cluster is kept between batches. On random labelled clusters with constrained gangs, a run
with those caches gives the same result as a run that recomputes everything for every batch.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement import Job, Node, Queue, QueueResource, Snapshot, Task, simulate
from placement.model import Placement, SubGroup, Topology, TopologyConstraint, TopologyLevel
from placement.topology_tree import TopologyTree

UNLIMITED = QueueResource(-1, -1, 1)
TOPOLOGY = Topology("dc", (TopologyLevel("zone"), TopologyLevel("rack")))
LEVELS = ["zone", "rack", None]


class _Forgetful(dict):  # type: ignore[type-arg]
    """A cache that never keeps anything: every lookup misses."""

    def __setitem__(self, key: Any, value: Any) -> None:
        return None


@st.composite
def constraints(draw: st.DrawFn) -> TopologyConstraint | None:
    required, preferred = draw(st.sampled_from(LEVELS)), draw(st.sampled_from(LEVELS))
    if required is None and preferred is None:
        return None
    if required == "rack" and preferred == "zone":
        preferred = None
    return TopologyConstraint("dc", required, preferred)


@st.composite
def snapshots(draw: st.DrawFn) -> Snapshot:
    nodes = []
    for i in range(draw(st.integers(2, 10))):
        labels = {"zone": f"z{draw(st.integers(0, 1))}", "rack": f"r{draw(st.integers(0, 2))}"}
        if draw(st.integers(0, 9)) == 0:
            labels = {}
        nodes.append(Node(f"n{i}", gpus=draw(st.sampled_from([1, 2, 4, 8])), labels=labels))
    jobs = []
    for j in range(draw(st.integers(1, 10))):
        count = draw(st.integers(1, 4))
        task = Task(gpu=draw(st.integers(1, 4))) if draw(st.booleans()) else Task(gpu_fraction=0.5)
        if draw(st.booleans()):
            groups = (
                SubGroup("a", min_member=1, topology=draw(constraints())),
                SubGroup("b", min_member=draw(st.integers(0, 1))),
            )
            tasks = tuple(
                Task(gpu=task.gpu, gpu_fraction=task.gpu_fraction, sub_group="ab"[k % 2]) for k in range(count)
            )
            jobs.append(
                Job(
                    f"j{j}",
                    "q",
                    tasks,
                    priority=draw(st.sampled_from([50, 100])),
                    sub_groups=groups,
                    topology=draw(constraints()),
                )
            )
        else:
            jobs.append(
                Job(
                    f"j{j}",
                    "q",
                    (task,) * count,
                    priority=draw(st.sampled_from([50, 100])),
                    topology=draw(constraints()),
                )
            )
    return Snapshot(
        tuple(nodes), (Queue("q", gpu=UNLIMITED, cpu=UNLIMITED, memory=UNLIMITED),), tuple(jobs), (TOPOLOGY,)
    )


def _outcome(snapshot: Snapshot) -> dict[str, tuple[str, str | None]]:
    result = simulate(snapshot, rounds=2, placement=Placement())
    return {name: (t.status, t.node) for name, t in result.tasks.items()}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots())
def test_cached_topology_room_places_exactly_like_recomputing_it(snapshot: Snapshot) -> None:
    fast = _outcome(snapshot)
    original = TopologyTree.attach

    def forgetful_attach(self: TopologyTree, nodes: Any) -> None:
        original(self, nodes)
        self.cache = _Forgetful()
        self.common = _Forgetful()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TopologyTree, "attach", forgetful_attach)
        slow = _outcome(snapshot)
    assert fast == slow
