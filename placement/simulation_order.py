# Long module: the solver's job order mirrors JobsOrder's lazy heap step by step, and the static streams
# that stand in for untouched queue subtrees must follow the same steps; splitting them apart would hide that.
"""The job order of one solver simulation, without walking every pending job (solver `_simulate`).

A simulation re-places the victims and the pending job in queue order over a JobsOrder that also holds
every other pending job of the cluster. Those others are only popped, never placed, yet they decide the
order: a queue's key depends on the job at its head. Building and popping that full order for every
simulation is what made the solver quadratic (thousands of simulations, thousands of pending jobs each).

This order gives the same sequence of victims and preemptor with far less work:

- Queues with a victim or the preemptor below them are "relevant" and are mirrored step by step: the
  same heap of children per queue, the same lazy re-keying (a popped path is dirty and re-keyed, from the
  stale heap tops, only when it is next looked at), the same keys computed at link time.
- Every other queue subtree is untouched during the simulation: nothing there is placed or evicted, so
  its pops come in a fixed sequence whatever happens elsewhere. That sequence (its entry key and its
  descent head after k pops, its k-th job) is computed lazily once and cached on the queue until the
  queue's allocation version changes, which any change below it causes (QueueState.add bumps the path).
- Subtrees at the top level with no victim and no preemptor are dropped: with top-level keys in a strict
  total order, the root always serves the smallest key, so the relative order of the relevant subtrees
  does not depend on the others. That holds unless the queues' allocatable shares make the last
  tie-breaker cyclic; then they are kept as streams.
- Consecutive pops from one untouched subtree, or of a relevant leaf's other pending jobs, are taken as
  one run, whose end is found over blocks of jobs (run_bounds): on a busy cluster runs of hundreds of
  jobs are common, and popping them one by one was most of the solver's time.

`REFERENCE = True` switches the solver back to the full JobsOrder (the property tests
compare both).
"""

from __future__ import annotations

import bisect
import functools
import heapq
import itertools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from placement.queue_order import job_queue_keys, job_queue_values
from placement.queues import less_equal
from placement.run_bounds import Bounds, larger_request, run_end

if TYPE_CHECKING:
    from placement.queues import QueueState
    from placement.session import Session
    from placement.tasks import JobState

__all__ = ["REFERENCE", "SimulationOrder", "leaf_jobs", "queue_streams_cached", "running_preemptible"]

# True: solver simulations pop the full JobsOrder over every pending job, as KAI does (slow; kept as the
# reference the property tests compare against).
REFERENCE = False

# The preemptor is appended after every job when the reference order is built, so it links last.
_LAST = float("inf")


class _QueueCache:
    """Per queue and cycle: its jobs, its pending jobs in job order, its pop stream (all checked before use)."""

    __slots__ = (
        "by_age",
        "children_ordered",
        "jobs",
        "listed",
        "pending",
        "pending_bounds",
        "pending_version",
        "preemptible",
        "running",
        "siblings_ordered",
        "stream",
        "stream_alloc",
        "stream_version",
        "versions",
    )

    def __init__(self) -> None:
        self.jobs: list[JobState] = []
        self.versions: list[int] = []
        self.listed: set[JobState] = set()
        self.by_age: list[JobState] = []
        self.pending: list[tuple[Any, JobState]] = []
        self.pending_bounds: Bounds | None = None
        self.pending_version = -1
        self.preemptible: list[JobState] | None = None
        self.running: tuple[int, list[JobState]] = (-1, [])
        self.stream: _Stream | None = None
        self.stream_version = -1
        self.stream_alloc: tuple[float, ...] = ()
        self.siblings_ordered: bool | None = None
        self.children_ordered: bool | None = None


def _cache(ssn: Session, queue: QueueState) -> _QueueCache:
    cache = queue.order_cache
    if cache is None:
        # Queues are rebuilt every cycle, so the first use in a cycle files every job under its leaf once.
        for q in ssn.queues.values():
            q.order_cache = _QueueCache()
        for job in ssn.jobs.values():
            leaf = job.queue
            if leaf is not None and leaf.is_leaf and isinstance(leaf.order_cache, _QueueCache):
                leaf.order_cache.jobs.append(job)
        cache = queue.order_cache
    assert isinstance(cache, _QueueCache)
    return cache


def leaf_jobs(ssn: Session, leaf: QueueState) -> list[JobState]:
    """Every job of a leaf queue, in snapshot order (the same list all cycle long)."""
    return _cache(ssn, leaf).jobs


def running_preemptible(ssn: Session, leaf: QueueState) -> list[JobState]:
    """The leaf's preemptible jobs with an active allocated pod, in snapshot order (read-only).

    Reclaim lists its victims this way for every probe. A job's active allocated count moves exactly when
    one of its pods enters or leaves an active allocated status, which adds to or takes from its queue's
    allocation and so bumps the leaf's version (Session.set_status, QueueState.add); queues are new
    objects every rebuild. So the list holds while the leaf's version does.
    """
    cache = _cache(ssn, leaf)
    version, running = cache.running
    if version != leaf.version:
        if cache.preemptible is None:
            cache.preemptible = [job for job in cache.jobs if job.preemptible]
        running = [job for job in cache.preemptible if job.n_active_alloc > 0]
        cache.running = (leaf.version, running)
    return running


def _pending_still(cache: _QueueCache, leaf: QueueState, skip: Iterable[Any]) -> bool:
    """Whether the cached pending list still holds for every job of the leaf not in `skip`.

    Every status change bumps the job's version (and the leaf's), but the leaf's version also moves when a
    victim is evicted and put back, so the jobs are compared one by one before the list is rebuilt: a
    job that moved but neither was nor is pending leaves the list as it is.
    """
    if cache.pending_version == leaf.version:
        return True
    versions = cache.versions
    exact = True
    for i, job in enumerate(cache.jobs):
        if job.version != versions[i]:
            if job in skip:
                exact = False
            elif job in cache.listed or job.has_pending():
                return False
            else:
                versions[i] = job.version
    if exact:
        cache.pending_version = leaf.version
    return True


def _pending(ssn: Session, leaf: QueueState, skip: Iterable[Any] = ()) -> list[tuple[Any, JobState]]:
    """The leaf's jobs with pending pods, in job order, as they are now (jobs in `skip` aside)."""
    cache = _cache(ssn, leaf)
    if cache.pending_version == -1 or not _pending_still(cache, leaf, skip):
        # A job's pending pods and elastic rank change only with its statuses, which bump its version.
        entries = [(job.order_key(), job) for job in cache.jobs if job.has_pending()]
        entries.sort()
        cache.pending = entries
        cache.pending_bounds = None
        cache.listed = {job for _, job in entries}
        cache.by_age = sorted((job for _, job in entries), key=lambda job: job.creation)
        cache.versions = [job.version for job in cache.jobs]
        cache.pending_version = leaf.version
    return cache.pending


def _pending_bounds(ssn: Session, leaf: QueueState) -> Bounds:
    """Largest requests over blocks of the leaf's pending list (after _pending, for as long as it holds).

    A job of the list keeps its request while the list holds: a job whose version moved is dropped from
    it unless the simulation skips it, and skipped jobs are passed over, never checked.
    """
    cache = _cache(ssn, leaf)
    if cache.pending_bounds is None:
        requests = [ssn.job_init_resources(job) for _, job in cache.pending]
        cache.pending_bounds = Bounds(requests, larger_request)
    return cache.pending_bounds


def _first_not_in(ssn: Session, leaf: QueueState, skip: set[Any]) -> float:
    """The snapshot index of the leaf's oldest pending job outside `skip` (after _pending)."""
    for job in _cache(ssn, leaf).by_age:
        if job not in skip:
            return job.creation
    return _LAST


def queue_streams_cached(ssn: Session) -> int:
    """How many queues hold a current cached stream (for tests: the cache is used and invalidated)."""
    count = 0
    for q in ssn.queues.values():
        cache = q.order_cache
        if isinstance(cache, _QueueCache) and cache.stream is not None and cache.stream_version == q.version:
            count += 1
    return count


def _tie_less(a: QueueState, b: QueueState) -> bool:
    """The order's last criterion (queue_order._ShareTie) between two queues."""
    left, right = a.allocatable, b.allocatable
    if not less_equal(right, left) and less_equal(left, right):
        return True
    if not less_equal(left, right) and less_equal(right, left):
        return False
    return a.creation < b.creation


def _strictly_ordered(queues: Sequence[QueueState]) -> bool:
    """Whether the tie-breaker is transitive over these queues (then every key comparison is a total order)."""

    def compare(a: QueueState, b: QueueState) -> int:
        return -1 if _tie_less(a, b) else 1

    ordered = sorted(queues, key=functools.cmp_to_key(compare))
    return all(_tie_less(ordered[i], ordered[j]) for i in range(len(ordered)) for j in range(i + 1, len(ordered)))


def _top_level_ordered(ssn: Session) -> bool:
    top = [q for q in ssn.queues.values() if q.parent is None]
    if not top:
        return True
    cache = _cache(ssn, top[0])
    if cache.siblings_ordered is None:
        cache.siblings_ordered = _strictly_ordered(top)
    return cache.siblings_ordered


def _children_ordered(ssn: Session, queue: QueueState) -> bool:
    cache = _cache(ssn, queue)
    if cache.children_ordered is None:
        cache.children_ordered = _strictly_ordered(queue.children)
    return cache.children_ordered


def _stream_still(ssn: Session, queue: QueueState, cache: _QueueCache) -> bool:
    """Whether the cached stream still describes the queue's subtree (then it is marked current again).

    Its keys depend on the allocations below the queue and its jobs on their statuses; versions move on
    any change, even one that a rollback undid, so a moved version is checked against the values.
    """
    if cache.stream_version == queue.version:
        return True
    if tuple(queue.alloc) != cache.stream_alloc:
        return False
    stream = cache.stream
    if queue.is_leaf:
        ok = _pending_still(cache, queue, ())
    else:
        children = stream.children if stream is not None else []
        built = {s.queue.name: s for s in children}
        ok = True
        for child in queue.children:
            child_cache = _cache(ssn, child)
            if child_cache.stream is not built.get(child.name) or not _stream_still(ssn, child, child_cache):
                ok = False
                break
    if ok:
        cache.stream_version = queue.version
        if queue.is_leaf:
            cache.pending_version = queue.version
    return ok


class _Cursor:
    """A read position in a stream: one untouched subtree as a child of a heap."""

    __slots__ = ("dirty", "k", "stream")

    inner = False

    def __init__(self, stream: _Stream) -> None:
        self.stream = stream
        self.k = 0
        self.dirty = False

    def refresh(self) -> Any:
        return self.stream.key(self.k)

    def head(self) -> Any:
        return self.stream.head(self.k)

    def take(self) -> Any:
        job = self.stream.job(self.k)
        self.k += 1
        return job

    def empty(self) -> bool:
        return self.k >= self.stream.n


class _Stream:
    """The pops of an untouched queue subtree, as JobsOrder makes them, memoised as far as they are read.

    After k pops: `key(k)` is the subtree's entry key in its parent's heap (for k = 0 the one computed
    when it was linked, from its first-linked leaf), `head(k)` the job its entry is re-keyed from (the
    descent along stale heap tops), `job(k)` the job the next pop takes.
    """

    __slots__ = (
        "children",
        "ends",
        "extras",
        "first",
        "first_head",
        "heads",
        "heap",
        "jobs",
        "keys",
        "n",
        "queue",
        "run_bounds",
        "seq",
        "ssn",
        "top_dirty",
    )

    def __init__(self, ssn: Session, queue: QueueState) -> None:
        self.ssn = ssn
        self.queue = queue
        self.children: list[_Stream] = []
        self.keys: list[Any] = []
        self.extras: list[Any] = []
        self.heap: list[Any] = []
        self.top_dirty = False
        self.seq = itertools.count()
        self.n = 0
        self.jobs: list[Any] = []
        self.heads: list[Any] = []
        self.first: float = _LAST
        self.first_head: Any = None
        self.run_bounds: tuple[Bounds, Bounds] | None = None
        self.ends: dict[Any, tuple[int, tuple[Any, ...]]] = {}

    @staticmethod
    def build(ssn: Session, queue: QueueState) -> _Stream | None:
        """The queue's stream (None: no pending job below it), reused while nothing below it changed."""
        cache = _cache(ssn, queue)
        if cache.stream_version != -1 and _stream_still(ssn, queue, cache):
            return cache.stream
        stream: _Stream | None = _Stream(ssn, queue)
        assert stream is not None
        if queue.is_leaf:
            pending = _pending(ssn, queue)
            if not pending:
                stream = None
            else:
                stream.jobs = [job for _, job in pending]
                stream.heads = stream.jobs
                stream.n = len(pending)
                stream.first = min(job.creation for job in stream.jobs)
                stream.first_head = stream.jobs[0]
        else:
            children = [s for s in (_Stream.build(ssn, c) for c in queue.children) if s is not None]
            if not children:
                stream = None
            else:
                stream.children = children
                for child in sorted(children, key=lambda s: s.first):
                    stream.n += child.n
                    heapq.heappush(stream.heap, (child.key(0), next(stream.seq), _Cursor(child)))
                stream.first = min(child.first for child in children)
                stream.first_head = min(children, key=lambda s: s.first).first_head
                stream.heads.append(stream.heap[0][2].head())
        cache.stream = stream
        cache.stream_version = queue.version
        cache.stream_alloc = tuple(queue.alloc)
        return stream

    def key(self, k: int) -> Any:
        keys = self.keys
        while len(keys) <= k:
            i = len(keys)
            job = self.first_head if i == 0 else self.head(i)
            keys.append(job_queue_values(self.ssn, self.queue, self.ssn.job_init_resources(job)))
        return keys[k]

    def head(self, k: int) -> Any:
        while len(self.heads) <= k:
            self._grow()
        return self.heads[k]

    def extra(self, k: int) -> Any:
        """The request of head(k), the vector the parent queues are re-keyed with."""
        extras = self.extras
        while len(extras) <= k:
            extras.append(self.ssn.job_init_resources(self.head(len(extras))))
        return extras[k]

    def bounds(self) -> tuple[Bounds, Bounds]:
        """Largest requests and largest keys over blocks of the whole stream (read to its end once)."""
        if self.run_bounds is None:
            requests = [self.extra(k) for k in range(self.n)]
            keys = [self.key(k) for k in range(self.n)]
            self.run_bounds = (Bounds(requests, larger_request), Bounds(keys, max))
        return self.run_bounds

    def job(self, k: int) -> Any:
        while len(self.jobs) <= k:
            self._grow()
        return self.jobs[k]

    def _grow(self) -> None:
        """One more pop of an inner queue: re-key the stale top, take from the smallest child."""
        heap = self.heap
        if self.top_dirty:
            self.top_dirty = False
            top = heap[0][2]
            heapq.heapreplace(heap, (top.refresh(), next(self.seq), top))
        child = heap[0][2]
        self.jobs.append(child.take())
        if child.empty():
            heapq.heappop(heap)
        else:
            self.top_dirty = True
        if heap:
            self.heads.append(heap[0][2].head())


class _Leaf:
    """A leaf queue holding the preemptor or a victim: its pending jobs plus those, in job order."""

    __slots__ = ("bg", "bi", "dirty", "first", "gen", "mi", "mine", "parent", "queue", "skip", "src", "ssn")

    inner = False

    def __init__(self, ssn: Session, queue: QueueState, mine: list[Any], skip: set[Any], preemptor: Any) -> None:
        self.ssn = ssn
        self.queue = queue
        self.parent: _Inner | None = None
        self.dirty = False
        self.src: Any = None
        self.gen = 0
        self.bg = _pending(ssn, queue, skip)
        self.bi = 0
        self.skip = skip
        self.mine = sorted(((job.order_key(), job) for job in mine), key=lambda entry: entry[0])
        self.mi = 0
        first = min(_LAST if job is preemptor else job.creation for job in mine)
        self.first = min(first, _first_not_in(ssn, queue, skip))

    def head(self) -> Any:
        bg, bi, skip = self.bg, self.bi, self.skip
        while bi < len(bg) and bg[bi][1] in skip:
            bi += 1
        self.bi = bi
        mine, mi = self.mine, self.mi
        if mi < len(mine) and (bi >= len(bg) or mine[mi][0] < bg[bi][0]):
            return mine[mi][1]
        return bg[bi][1]

    def first_head(self) -> Any:
        return self.head()

    def refresh(self) -> Any:
        return job_queue_values(self.ssn, self.queue, self.ssn.job_init_resources(self.head()))

    def take(self) -> Any:
        job = self.head()
        if self.mi < len(self.mine) and self.mine[self.mi][1] is job:
            self.mi += 1
        else:
            self.bi += 1
        return job

    def empty(self) -> bool:
        if self.mi < len(self.mine):
            return False
        bg, bi, skip = self.bg, self.bi, self.skip
        while bi < len(bg) and bg[bi][1] in skip:
            bi += 1
        self.bi = bi
        return bi >= len(bg)


class _Inner:
    """An inner queue with the preemptor or a victim below it: the mirrored heap of its children."""

    __slots__ = ("dirty", "first", "first_child", "gen", "heap", "ordered", "parent", "queue", "src", "ssn")

    inner = True

    def __init__(self, ssn: Session, queue: QueueState) -> None:
        self.ssn = ssn
        self.queue = queue
        self.parent: _Inner | None = None
        self.dirty = False
        self.src: Any = None
        self.gen = 0
        self.heap: list[Any] = []
        self.ordered = _children_ordered(ssn, queue)
        self.first: float = _LAST
        self.first_child: Any = None

    def head(self) -> Any:
        return self.heap[0][2].head()

    def first_head(self) -> Any:
        child = self.first_child
        return child.first_head() if not isinstance(child, _Cursor) else child.stream.first_head

    def refresh(self) -> Any:
        return job_queue_values(self.ssn, self.queue, self.ssn.job_init_resources(self.head()))


def _link_key(ssn: Session, node: Any) -> Any:
    """The entry key a child gets when the reference order links it (from its first-linked leaf's head)."""
    if isinstance(node, _Cursor):
        return node.stream.key(0)
    return job_queue_values(ssn, node.queue, ssn.job_init_resources(node.first_head()))


def _first(node: Any) -> float:
    return node.stream.first if isinstance(node, _Cursor) else node.first


class SimulationOrder:
    """Victims and the preemptor in the order `JobsOrder(ssn, [*pending, *victims, preemptor])` pops them.

    `pop()` returns the next of them (never another pending job), or None when none is left.
    """

    def __init__(self, ssn: Session, preemptor: Any, victims: Iterable[JobState]) -> None:
        self.ssn = ssn
        self.seq = itertools.count()
        # Pulls so far, and the request of the descent head last re-keyed from (for pull `extra_gen`).
        self.gen = 0
        self.extra_gen = -1
        self.extra: Any = None
        interesting: list[Any] = [v for v in victims if v is not preemptor.job]
        self.interesting = set(interesting)
        self.interesting.add(preemptor)
        skip: set[Any] = set(interesting)
        skip.add(preemptor.job)
        by_leaf: dict[str, list[Any]] = {}
        leaves: dict[str, QueueState] = {}
        for job in [*interesting, preemptor]:
            queue = job.queue
            if queue is not None and queue.is_leaf:
                by_leaf.setdefault(queue.name, []).append(job)
                leaves[queue.name] = queue
        nodes: dict[str, Any] = {}
        for name, jobs in by_leaf.items():
            nodes[name] = _Leaf(ssn, leaves[name], jobs, skip, preemptor)
        # Inner queues on the paths of the relevant leaves, deepest first.
        relevant: dict[str, QueueState] = {}
        for name in by_leaf:
            for q in leaves[name].path[1:]:
                relevant[q.name] = q
        for q in sorted(relevant.values(), key=lambda q: -len(q.path)):
            nodes[q.name] = _Inner(ssn, q)
        for q in sorted(relevant.values(), key=lambda q: -len(q.path)):
            self._fill(nodes[q.name], q, nodes)
        self.root: list[Any] = []
        tops: list[Any] = [node for node in nodes.values() if node.queue.parent is None]
        self.root_ordered = _top_level_ordered(ssn)
        if not self.root_ordered:
            for q in ssn.queues.values():
                if q.parent is None and q.name not in nodes:
                    stream = _Stream.build(ssn, q)
                    if stream is not None:
                        tops.append(_Cursor(stream))
        self._push_all(self.root, tops, None)

    def _fill(self, node: _Inner, queue: QueueState, nodes: dict[str, Any]) -> None:
        children: list[Any] = []
        for child in queue.children:
            existing = nodes.get(child.name)
            if existing is not None:
                children.append(existing)
                continue
            stream = _Stream.build(self.ssn, child)
            if stream is not None:
                children.append(_Cursor(stream))
        self._push_all(node.heap, children, node)
        first = min(children, key=_first)
        node.first = _first(first)
        node.first_child = first

    def _push_all(self, heap: list[Any], children: list[Any], parent: _Inner | None) -> None:
        # JobsOrder links leaves in the order their first job appears: a queue enters its parent's heap
        # when its first-linked leaf does, keyed from that leaf's head.
        children.sort(key=_first)
        for child in children:
            if not isinstance(child, _Cursor):
                child.parent = parent
            heapq.heappush(heap, (_link_key(self.ssn, child), next(self.seq), child))

    def pop(self) -> Any:
        root = self.root
        interesting = self.interesting
        seq = self.seq
        ssn = self.ssn
        heapreplace = heapq.heapreplace
        while True:
            heap = root
            parent: _Inner | None = None
            # (heap, the queue on top of it) from the root down, and whether every heap on it is a total order.
            path: list[tuple[list[Any], Any]] = []
            ordered = self.root_ordered
            while True:
                if not heap:
                    return None
                child = heap[0][2]
                if child.dirty:
                    child.dirty = False
                    if not isinstance(child, _Cursor):
                        # Re-keyed from its descent head along the stale heap tops, which ends where the
                        # pull that dirtied it left off (`src`): unchanged, as no pull went below it since.
                        if child.gen != self.extra_gen:
                            self.extra = ssn.job_init_resources(child.src.head())
                            self.extra_gen = child.gen
                        key = job_queue_values(ssn, child.queue, self.extra)
                    else:
                        key = child.refresh()
                    heapreplace(heap, (key, next(seq), child))
                    continue
                path.append((heap, child))
                if child.inner:
                    parent = child
                    ordered = ordered and child.ordered
                    heap = child.heap
                    continue
                break
            while True:
                job = child.take()
                self.gen += 1
                up: _Inner | None
                if child.empty():
                    heapq.heappop(heap)
                    up = parent
                    while up is not None and not up.heap:
                        heapq.heappop(up.parent.heap if up.parent is not None else root)
                        up = up.parent
                    src: Any = up
                else:
                    child.dirty = True
                    if not isinstance(child, _Cursor):
                        child.src, child.gen = child, self.gen
                    up = parent
                    src = child
                while up is not None:
                    up.dirty = True
                    up.src, up.gen = src, self.gen
                    up = up.parent
                if job in interesting:
                    return job
                if src is not child or not ordered:
                    break
                if isinstance(child, _Cursor):
                    self._cursor_run(path, child)
                else:
                    self._leaf_run(path, child)
                break

    def _levels(self, path: list[tuple[list[Any], Any]]) -> list[tuple[dict[Any, Any], QueueState, Any]]:
        """Per queue on the path: its key memo, the queue, and the smallest other key in its heap (or None)."""
        ssn = self.ssn
        levels = []
        for heap, node in path:
            # _smallest_other, inlined (one call per queue per run).
            other = heap[1][0] if len(heap) > 1 else None
            if len(heap) > 2 and heap[2][0] < other:
                other = heap[2][0]
            levels.append((job_queue_keys(ssn, node.queue), node.queue, other))
        return levels

    def _store_run(self, path: list[tuple[list[Any], Any]], keys: list[Any]) -> None:
        """Leave the path as the run's last descent left it: each queue on top, keyed from the last job."""
        self.gen += 1
        seq = self.seq
        for (heap, node), key in zip(path, keys, strict=True):
            heap[0] = (key, next(seq), node)
            if not isinstance(node, _Cursor):
                node.gen = self.gen  # still dirty, still re-keyed from the run's head: the next one

    def _cursor_run(self, path: list[tuple[list[Any], Any]], child: _Cursor) -> None:
        """Pull on from an untouched subtree for as long as the next descent would come back to it.

        It comes back when every queue on the path, re-keyed from the subtree's next head, stays on top
        of its heap. In a heap whose comparisons form a total order that is when the new key is below
        the entry's two children, and then heapreplace leaves everything else where it was: so the run
        stores only the last keys, exactly as the step-by-step descent would have left them. The last job
        of the subtree is left to the descent (its removal changes the heaps). Where the run ends is found
        over blocks of jobs (run_bounds); the subtree's own keys are bounded directly.
        """
        ssn = self.ssn
        stream = child.stream
        start, end = child.k, stream.n - 1
        if start >= end:
            return
        # Nothing but this path changes during the run, so each heap's smallest other entry is fixed.
        levels = self._levels(path[:-1])
        other_c = _smallest_other(path[-1][0])
        # The run's end depends on the stream, where the run starts, the bound it is compared against in its
        # own heap and, per queue above, the key function (its memo: one per allocation state) and the
        # smallest other key. The simulations of a probe come back to the same runs again and again, so the
        # end is kept on the stream for those inputs (the memos held, so that no other dict takes their ids).
        memos = tuple([level[0] for level in levels])
        inputs = (start, other_c, tuple(map(id, memos)), tuple([level[2] for level in levels]))
        known = stream.ends.get(inputs)
        if known is not None:
            k = known[0]
        else:
            checks = [level for level in levels if level[2] is not None]
            extras, keys = stream.bounds()
            request_levels, key_levels = extras.levels, keys.levels

            def holds(j: int, i: int) -> bool:
                if other_c is not None and not key_levels[j][i] < other_c:
                    return False
                extra = request_levels[j][i]
                # Every queue above, with a job of `extra` at its head, still sorts before its heap's next entry.
                for memo, queue, other in checks:
                    key = memo.get(extra)
                    if key is None:
                        key = job_queue_values(ssn, queue, extra)
                    if not key < other:
                        return False
                return True

            k = run_end(start, end, holds)
            if len(stream.ends) >= _ENDS_KEPT:
                stream.ends.clear()
            stream.ends[inputs] = (k, memos)
        if k == start:
            return
        child.k = k
        extra = stream.extras[k - 1]
        found = [job_queue_values(ssn, queue, extra) for _, queue, _ in levels]
        found.append(stream.keys[k - 1])
        self._store_run(path, found)

    def _leaf_run(self, path: list[tuple[list[Any], Any]], child: _Leaf) -> None:
        """The same run over a relevant leaf's other pending jobs, up to its next victim or preemptor.

        Those jobs are only popped, and nothing is placed between pops, so the leaf's allocation stays
        put: it is re-keyed from its head like any queue on the path, and the run's condition is the
        cursor run's with the leaf's own key last. Background jobs are never victims nor the preemptor;
        the leaf's own ones stop the run, and so does its last job (left to the descent).
        """
        ssn = self.ssn
        bg, skip = child.bg, child.skip
        end = len(bg)
        if child.mi < len(child.mine):
            # The leaf's next own job comes before every background job with a larger order key.
            end = bisect.bisect_right(bg, child.mine[child.mi][0], key=_order_key)
        else:
            end -= 1
            while end >= 0 and bg[end][1] in skip:
                end -= 1
        start = child.bi
        if start >= end:
            return
        levels = self._levels(path)
        checks = [level for level in levels if level[2] is not None]
        request_levels = _pending_bounds(ssn, child.queue).levels

        def holds(j: int, i: int) -> bool:
            if j == 0:
                job = bg[i][1]
                if job in skip:
                    return True  # passed over, never popped
                extra = ssn.job_init_resources(job)
            else:
                extra = request_levels[j][i]
            # As in _cursor_run's holds (the leaf's own key last).
            for memo, queue, other in checks:
                key = memo.get(extra)
                if key is None:
                    key = job_queue_values(ssn, queue, extra)
                if not key < other:
                    return False
            return True

        k = run_end(start, end, holds)
        last = k - 1
        while last >= start and bg[last][1] in skip:
            last -= 1
        child.bi = k
        if last < start:
            return
        extra = ssn.job_init_resources(bg[last][1])
        self._store_run(path, [job_queue_values(ssn, queue, extra) for _, queue, _ in levels])


# How many run ends a stream remembers before it starts over (bounds memory on long searches).
_ENDS_KEPT = 256


def _smallest_other(heap: list[Any]) -> Any:
    """The smallest key in a heap but its top's (None: the top is alone)."""
    other = heap[1][0] if len(heap) > 1 else None
    if len(heap) > 2 and heap[2][0] < other:
        other = heap[2][0]
    return other


def _order_key(entry: tuple[Any, Any]) -> Any:
    return entry[0]
