"""run_bounds: block checks find the same run end as a position-by-position scan, and queue keys grow with
the request (what makes a block's largest request a valid check for every job in it)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_placement_solver_order import _evict_some, busy_clusters

from placement import Placement, Snapshot
from placement.queue_order import job_queue_values
from placement.run_bounds import Bounds, larger_request, run_end
from placement.session import Session


def _scan(passes: list[bool], start: int, end: int) -> int:
    return next((k for k in range(start, end) if not passes[k]), end)


@given(
    st.lists(st.booleans(), min_size=1, max_size=80),
    st.data(),
)
def test_run_end_finds_the_first_failing_position_even_when_blocks_fail_wrongly(
    passes: list[bool], data: st.DataObject
) -> None:
    start = data.draw(st.integers(0, len(passes)))
    end = data.draw(st.integers(start, len(passes)))
    # A block that holds may still be refused (never the other way round), as a largest request may do.
    refuse = data.draw(st.lists(st.booleans(), min_size=64, max_size=64))
    bounds = Bounds(passes, lambda a, b: a and b)
    asked: list[tuple[int, int]] = []

    def holds(j: int, i: int) -> bool:
        asked.append((j, i))
        ok = bool(bounds.levels[j][i])
        return ok if j == 0 else ok and not refuse[(j * 7 + i) % 64]

    assert run_end(start, end, holds) == _scan(passes, start, end)
    # Only blocks inside the range are asked about.
    assert all(start <= i << j for j, i in asked)
    assert all((i + 1) << j <= end for j, i in asked)


def test_bounds_keep_only_whole_blocks() -> None:
    bounds = Bounds([(1.0, 0.0, 2.0), (2.0, 1.0, 0.0), (0.0, 5.0, 1.0)], larger_request)
    assert bounds.levels == [
        [(1.0, 0.0, 2.0), (2.0, 1.0, 0.0), (0.0, 5.0, 1.0)],
        [(2.0, 1.0, 2.0)],
    ]


_request = st.tuples(
    st.sampled_from([0.0, 500.0, 1000.0, 4000.0, 16000.0]),
    st.sampled_from([0.0, 2.0**30, 2.0**34]),
    st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 8.0, 40.0]),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_clusters(), st.lists(st.integers(0, 50), max_size=3), st.lists(st.tuples(_request, _request), max_size=6))
def test_a_queue_key_never_decreases_when_the_request_grows(
    snapshot: Snapshot, victim_picks: list[int], pairs: list[tuple[tuple[float, ...], tuple[float, ...]]]
) -> None:
    ssn = Session(snapshot, Placement())
    ssn.open()
    _evict_some(ssn, victim_picks)
    for a, b in pairs:
        small: tuple[float, float, float] = (a[0], a[1], a[2])
        large = larger_request(small, (b[0], b[1], b[2]))
        for queue in ssn.queues.values():
            assert job_queue_values(ssn, queue, small) <= job_queue_values(ssn, queue, large)
