"""Where the placement ILP's columns are costed: in the calling process, or in worker processes
that each own a share of the compositions.

Costing is most of the ILP's time on 24 GPUs and more (``benchmarks/results/placement/
ilp_analysis.md``): the relaxed column of every pair (``GroupOptions.bound_option``) and the
exact options of every pair the master turns to (``GroupOptions.options``). Both are pure
functions of the problem, the pair, and for options the pruning bound, so they can run anywhere
and come back the same to the last bit. A worker process builds the problem's
:class:`~search.placement.group_options.GroupOptions` once and keeps its caches for the whole
solve; each composition always goes to the same worker (:meth:`ProcessCosting.owner`), whose
caches of that composition's candidates stay warm from the relaxed column to the expansions.

Results are consumed in the order the pairs were asked in, so the master sees the same columns
in the same order, and the solve takes the same path to the same plan, with any number of
workers (``tests/test_placement_ilp_workers.py``). Expansions are asked for in batches
(:meth:`ColumnCosting.submit_expand`) so that a batch runs while HiGHS solves a master, which
releases the GIL: the caller collects it afterwards.

Workers start from a ``forkserver`` context: a process that plans from several threads (an
external scheduler) must not ``fork`` itself, and the server keeps rlplan imported, so a
worker after the first starts in milliseconds.
"""

from __future__ import annotations

import gc
import math
import multiprocessing
import os
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from costmodels.placement.judge import StepShape
from costmodels.placement.problem import PlacementProblem
from costmodels.solving import Deadline, DeadlineExceeded
from search.placement.group_options import GroupOptions
from search.placement.options import GroupOption, Partial

Pair = tuple[tuple[str, ...], tuple[int, ...]]
#: an expansion's pruning bound: the least (generation, inference, training) phases of any plan
#: using the pair, or None when no plan can use it; the cost a plan must stay under; and the
#: pair's relaxed column, whose every term bounds each of its options' from below (or None)
KeepSpec = tuple[tuple[float, float, float] | None, float, GroupOption | None]
Relaxed = GroupOption | None

#: relaxed pairs (2^|tasks| prod_k (N_k + 1)) from which ``workers=None`` costs in processes
PROCESS_PAIRS = 4096
#: workers ``workers=None`` starts at most (a 2-core machine's share; more pay off little at
#: the sizes the ILP reaches, each worker builds its own caches)
AUTO_WORKERS = 2


def option_bound(o: GroupOption, shape: StepShape, phase_lb: tuple[float, float, float]) -> float:
    """The least iteration time of any plan using option ``o`` (phases at least the global
    phase bounds ``phase_lb`` = (generation, inference, training)). A relaxed option's
    ``joint`` bounds its inference + training together: every step formula reads those two
    through their sum, so training raised to ``joint`` - inference keeps the bound."""
    g, i, r = max(o.gen, phase_lb[0]), max(o.inf, phase_lb[1]), max(o.trn, phase_lb[2])
    return _raised_bound(shape, g, i, r, o)


def _raised_bound(shape: StepShape, g: float, i: float, r: float, o: GroupOption) -> float:
    """:func:`option_bound` once its phases are raised to their bounds: training to at least
    ``o.joint`` - inference, and ``o``'s busy time and transfer."""
    return shape.core(g, i, max(r, o.joint - i), o.busy) + o.xfer


def partial_keep(shape: StepShape, eta: float, spec: KeepSpec) -> Callable[[Partial], bool]:
    """The pruning test of a pair's partial combinations while it is expanded: a partial's
    phases only grow as tasks join, and every option of the pair is at least its relaxed column
    in every term, so each term of any option a partial leads to is at least the larger of the
    two. One whose bound already exceeds the cutoff leads to no option worth a column
    (``PlacementILP._keep_spec`` states the rest of the bound). The relaxed column matters most
    for the tasks not merged yet: generation, merged last, is otherwise absent from a partial's
    bound until the end."""
    lb, cutoff, floor = spec
    if lb is None:
        return lambda st: False
    if not math.isfinite(cutoff):
        return lambda st: True
    f = floor if floor is not None else GroupOption((), (), {}, 0.0, 0.0, 0.0, 0.0)
    # option_bound of the option with the partial's phases raised to the relaxed column's, the
    # two raises taken once: the test runs once per partial, most of an expansion's calls
    g0, i0, r0 = max(f.gen, lb[0]), max(f.inf, lb[1]), max(f.trn, lb[2])
    limit = cutoff * (1 + 1e-9)

    def keep(st: Partial) -> bool:
        g, i, r = st.phases(eta)
        return _raised_bound(shape, max(g, g0), max(i, i0), max(r, r0), f) <= limit

    return keep


class ColumnCosting:
    """Costing in the calling process, on the caller's builder (its caches shared with it)."""

    workers = 1

    def __init__(self, builder: GroupOptions):
        self.builder = builder
        self.shape = StepShape.of(builder.problem.workflow)

    @property
    def evaluations(self) -> int:
        return self.builder.evaluations

    def submit_relax(
        self, pairs: Sequence[Pair], deadline: Deadline
    ) -> Callable[[], list[Relaxed]]:
        """Start the relaxed column of each (canonical) pair; the returned call gives them in
        order (None: nothing fits; here it computes them)."""
        return lambda: _relax(self.builder, pairs, deadline)

    def submit_expand(
        self, pairs: Sequence[Pair], specs: Sequence[KeepSpec], deadline: Deadline
    ) -> Callable[[], list[list[GroupOption]]]:
        """Start the exact options of each (canonical) pair, pruned by its spec; the returned
        call gives them in order (here it computes them)."""
        return lambda: _expand(self.builder, self.shape, pairs, specs, deadline)

    def close(self) -> None:
        pass


class ProcessCosting(ColumnCosting):
    """Costing in ``workers`` processes; composition ``comp`` always goes to :meth:`owner`."""

    def __init__(self, builder: GroupOptions, workers: int):
        super().__init__(builder)
        self.workers = workers
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload([__name__])
        self._pools = [
            ProcessPoolExecutor(
                1, mp_context=ctx, initializer=_init_worker, initargs=(builder.problem,)
            )
            for _ in range(workers)
        ]
        self._evaluations = [0] * workers
        self._futures: list[Future] = []

    def owner(self, comp: tuple[int, ...]) -> int:
        """The worker of ``comp``: a stable hash spreads the compositions evenly, their position
        in the lattice would not (on classes of odd size it is the parity of the GPU count, and
        the groups the master turns to mostly take even counts)."""
        return zlib.crc32(repr(comp).encode()) % self.workers

    @property
    def evaluations(self) -> int:
        return self.builder.evaluations + sum(self._evaluations)

    def _scatter(
        self,
        fn: Callable[..., Any],
        pairs: Sequence[Pair],
        extra: Sequence[Any] | None,
        deadline: Deadline,
    ) -> Callable[[], list[Any]]:
        shares: list[list[int]] = [[] for _ in self._pools]
        for i, (_, comp) in enumerate(pairs):
            shares[self.owner(comp)].append(i)
        futures: list[tuple[int, list[int], Future]] = []
        remaining = deadline.remaining()
        for w, idx in enumerate(shares):
            if idx:
                items = [pairs[i] for i in idx]
                args = [extra[i] for i in idx] if extra is not None else None
                futures.append((w, idx, self._pools[w].submit(fn, items, args, remaining)))
        self._futures = [f for f in self._futures if not f.done()] + [f for _, _, f in futures]

        def gather() -> list[Any]:
            out: list[Any] = [None] * len(pairs)
            for w, idx, fut in futures:
                try:
                    evaluations, results = fut.result()
                except DeadlineExceeded:
                    deadline.note_bound()  # the worker's clock is the solve's
                    raise
                self._evaluations[w] = evaluations
                for i, r in zip(idx, results, strict=True):
                    out[i] = r
            return out

        return gather

    def submit_relax(
        self, pairs: Sequence[Pair], deadline: Deadline
    ) -> Callable[[], list[Relaxed]]:
        return self._scatter(_worker_relax, pairs, None, deadline)

    def submit_expand(
        self, pairs: Sequence[Pair], specs: Sequence[KeepSpec], deadline: Deadline
    ) -> Callable[[], list[list[GroupOption]]]:
        return self._scatter(_worker_expand, pairs, specs, deadline)

    def close(self) -> None:
        # idle workers are joined: a pool left to the interpreter's exit may write to its
        # closed wake-up pipe there ("OSError: Bad file descriptor" on stderr); a solve
        # stopped mid-batch (an exception, not the deadline) does not wait for the batch
        idle = all(f.done() for f in self._futures)
        for pool in self._pools:
            pool.shutdown(wait=idle, cancel_futures=True)


def relaxed_pairs(tasks: int, cap: Sequence[int]) -> int:
    """The ILP's relaxed pairs: every task subset on every composition, 2^|tasks| prod_k
    (N_k + 1) over the classes' capacities ``cap``."""
    return 2**tasks * math.prod(n + 1 for n in cap)


def column_costing(builder: GroupOptions, workers: int | None) -> ColumnCosting:
    """The costing for ``workers`` processes (1: in process). ``None`` picks in process below
    :data:`PROCESS_PAIRS` relaxed pairs, where starting workers costs more than it saves, and
    up to :data:`AUTO_WORKERS` processes, one per usable CPU, above. A daemonic process (a
    worker of a process pool: ``rlplan bench``'s local executor) may not start processes, so
    there the costing is in process whatever ``workers`` says; the result is the same."""
    if workers is None:
        pairs = relaxed_pairs(len(builder.tasks), builder.cap)
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        workers = min(AUTO_WORKERS, cpus or 1) if pairs >= PROCESS_PAIRS else 1
    if workers <= 1 or multiprocessing.current_process().daemon:
        return ColumnCosting(builder)
    return ProcessCosting(builder, workers)


def _relax(builder: GroupOptions, pairs: Sequence[Pair], deadline: Deadline) -> list[Relaxed]:
    out = []
    for subset, comp in pairs:
        deadline.check()
        out.append(builder.bound_option(subset, comp, deadline))
    return out


def _expand(
    builder: GroupOptions,
    shape: StepShape,
    pairs: Sequence[Pair],
    specs: Sequence[KeepSpec],
    deadline: Deadline,
) -> list[list[GroupOption]]:
    eta = builder.problem.workflow.eta
    return [
        builder.options(subset, comp, partial_keep(shape, eta, spec), True, deadline)
        for (subset, comp), spec in zip(pairs, specs, strict=True)
    ]


_WORKER: ColumnCosting | None = None


def _init_worker(problem: PlacementProblem) -> None:
    global _WORKER  # one builder per worker process, its caches kept for the whole solve
    # The caches only grow, and the cyclic collector would traverse them again and again while
    # a batch runs (a sixth of the single-task tables' time on small-24 PPO; costing makes
    # next to no cyclic garbage: the same peak memory without the collector). So a worker
    # collects once after each batch and freezes what survives out of later collections. A
    # worker is this solve's own process: the caller's collector is untouched.
    gc.disable()
    gc.freeze()
    _WORKER = ColumnCosting(GroupOptions(problem, defer_explicit=True))


def _collect() -> None:
    """A worker's cyclic garbage collection after a batch (:func:`_init_worker`)."""
    gc.collect()
    gc.freeze()


def _worker_relax(pairs: list[Pair], _: None, remaining: float | None) -> tuple[int, list[Relaxed]]:
    assert _WORKER is not None
    try:
        out = _WORKER.submit_relax(pairs, Deadline(remaining))()
    finally:
        _collect()
    return _WORKER.evaluations, out


def _worker_expand(
    pairs: list[Pair], specs: list[KeepSpec], remaining: float | None
) -> tuple[int, list[list[GroupOption]]]:
    assert _WORKER is not None
    try:
        out = _WORKER.submit_expand(pairs, specs, Deadline(remaining))()
    finally:
        _collect()
    return _WORKER.evaluations, out
