"""The column pool of the placement ILP: one column per group option, relaxed until needed.

A *pair* is a task subset T with a composition c (GPUs taken from each interchangeable class).
Its exact columns are :meth:`GroupOptions.options` (the Pareto options, pruned by the incumbent);
until the master picks it, the pair is one *relaxed* column, :meth:`GroupOptions.bound_option`,
whose every term bounds the same term of each exact option from below. The master over relaxed
and exact columns is therefore a relaxation of the ILP over exact columns only: its optimum is a
lower bound, and when it picks only exact columns that optimum is attained.

Symmetry: tasks with one signature (PPO's reward, reference and critic inference on one model)
are interchangeable, so the pairs (T, c) and (T', c) with T' = T with such tasks swapped have the
same options up to renaming. Each class is costed once, on its canonical subset (the first
members of each signature class), and copied under the renaming.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from costmodels.placement.frameworks import rules_of
from costmodels.placement.space import compositions
from costmodels.solving import UNLIMITED, Deadline
from costmodels.workflow import TaskKind
from formulations.placement.costing import ColumnCosting, KeepSpec, option_bound
from search.placement.group_options import GroupOptions
from search.placement.options import GroupOption

Pair = tuple[tuple[str, ...], tuple[int, ...]]
__all__ = ["Column", "ColumnPool", "LeftoverBounds", "option_bound"]


@dataclass
class Column:
    pair: Pair
    option: GroupOption
    relaxed: bool


#: relaxed pairs costed per batch (:meth:`ColumnPool._start_relax`), at most
RELAX_CHUNK = 4096
#: the first batch's size, doubled per batch up to :data:`RELAX_CHUNK`: workers start costing
#: while this process is still drawing (and admitting) the pairs after it (small-24 PPO: the
#: group columns' first 4 096 admitted pairs took this process about 0.5 s to draw)
RELAX_FIRST = 256


def _chunks(items: Iterator[Pair], size: int, first: int) -> Iterator[list[Pair]]:
    """``items`` in lists of ``first``, then twice as many each time, up to ``size``."""
    n = min(first, size)
    while chunk := list(itertools.islice(items, n)):
        yield chunk
        n = min(2 * n, size)


class ColumnPool:
    """Relaxed and exact columns of every feasible pair; :meth:`start_expansions` makes pairs
    exact."""

    def __init__(
        self,
        builder: GroupOptions,
        deadline: Deadline = UNLIMITED,
        costing: ColumnCosting | None = None,
    ):
        self.builder = builder
        self.deadline = deadline
        #: where the columns are costed (``formulations.placement.costing``)
        self.costing = costing if costing is not None else ColumnCosting(builder)
        self.names = list(builder.tasks)
        self.twins: dict[tuple, list[str]] = {}
        for n in self.names:
            self.twins.setdefault(builder.signature(n), []).append(n)
        #: each subset's canonical subset and renaming (asked for every column of every master)
        self._canonical = {subset: self._canonical_of(subset) for subset in self.subsets()}
        #: the subsets of each canonical subset's symmetry class
        self.orbit: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
        for subset, (canon, _) in self._canonical.items():
            self.orbit.setdefault(canon, []).append(subset)
        #: tasks of one kind on one model (a signature up to the actor-training flag): swapping
        #: them changes a pair's options only in the weight-transfer share
        self.kin: dict[tuple, list[str]] = {}
        for n in self.names:
            self.kin.setdefault(builder.signature(n)[:2], []).append(n)
        self.relaxed: dict[Pair, GroupOption] = {}
        self.exact: dict[Pair, list[GroupOption]] = {}
        #: a framework target's restriction (``costmodels.placement.frameworks``): pairs it
        #: rules out are never columns of the master; their relaxed singles still bound others
        self.rules = rules_of(builder.problem)
        self._admissible: dict[Pair, bool] = {}
        self.expansions = 0

    def subsets(self) -> Iterator[tuple[str, ...]]:
        for r in range(1, len(self.names) + 1):
            yield from itertools.combinations(self.names, r)

    def canonical(self, subset: tuple[str, ...]) -> tuple[tuple[str, ...], dict[str, str]]:
        """The canonical subset of ``subset``'s symmetry class and the renaming canonical ->
        actual."""
        return self._canonical[subset]

    def _canonical_of(self, subset: tuple[str, ...]) -> tuple[tuple[str, ...], dict[str, str]]:
        mapping: dict[str, str] = {}
        by: dict[tuple, list[str]] = {}
        for n in subset:
            by.setdefault(self.builder.signature(n), []).append(n)
        for sig, members in by.items():
            mapping.update(zip(self.twins[sig], members, strict=False))
        return tuple(n for n in self.names if n in mapping), mapping

    def class_of(self, pair: Pair) -> Pair:
        """The pair costed for ``pair``'s whole symmetry class: its canonical subset on its
        composition."""
        return self.canonical(pair[0])[0], pair[1]

    @staticmethod
    def rename(o: GroupOption, subset: tuple[str, ...], mapping: dict[str, str]) -> GroupOption:
        return replace(o, tasks=subset, configs={mapping[k]: v for k, v in o.configs.items()})

    def start_relax_singles(self) -> Callable[[], None]:
        """Start the relaxed column of every single task on every composition that fits it (the
        master filters every relaxed column by the incumbent as it falls); the returned call
        waits for them and adds them."""
        comps = compositions(self.builder.cap)
        return self._start_relax(((name,), comp) for comp in comps for name in self.names)

    def relax_singles(self) -> None:
        self.start_relax_singles()()

    def relax_groups(
        self, admit: Callable[[tuple[str, ...], tuple[int, ...]], bool] | None = None
    ) -> None:
        """The relaxed columns of co-located tasks (two or more), for the pairs ``admit`` lets
        through: a caller that can rule a pair out from the single-task columns alone saves
        costing it (building them is most of the ILP's set-up on 24 GPUs). ``admit`` is asked
        once per symmetry class, of its canonical pair: a pair's twins have its tasks'
        signatures, so the same costs, and one verdict keeps the pool symmetric under renaming
        (small-24 PPO: 41 496 -> 19 656 tests, PPO's three inference tasks on one model)."""
        verdict: dict[Pair, bool] = {}

        def admitted(pair: Pair) -> bool:
            if admit is None:
                return True
            key = self.class_of(pair)
            hit = verdict.get(key)
            if hit is None:
                hit = verdict[key] = admit(*key)
            return hit

        self._start_relax(
            (subset, comp)
            for comp in compositions(self.builder.cap)
            for subset in self.subsets()
            if len(subset) > 1 and self.admissible((subset, comp)) and admitted((subset, comp))
        )()

    def _start_relax(self, pairs: Iterator[Pair]) -> Callable[[], None]:
        """Cost each pair's symmetry class once, on its canonical subset, and add the pairs'
        relaxed columns in ``pairs``' order (renamed). The pairs are drawn in batches
        (:data:`RELAX_FIRST` doubling to :data:`RELAX_CHUNK`), never all at once (a cluster of
        many classes has more than memory holds, and the time limit stops the build between
        chunks); the next chunk is started before the last one is waited for, so workers do
        not idle while this process adds columns.
        The first chunk starts now, the rest in the returned call."""
        chunks = _chunks(pairs, RELAX_CHUNK, RELAX_FIRST)

        def submit(chunk: list[Pair] | None) -> tuple[list[Pair], dict[Pair, int], Any] | None:
            if chunk is None:
                return None
            todo: dict[Pair, int] = {}
            for pair in chunk:
                todo.setdefault(self.class_of(pair), len(todo))
            return chunk, todo, self.costing.submit_relax(list(todo), self.deadline)

        pending = submit(next(chunks, None))

        def finish() -> None:
            nonlocal pending
            while pending is not None:
                self.deadline.check()
                ahead = submit(next(chunks, None))
                chunk, todo, gather = pending
                got = gather()
                for subset, comp in chunk:
                    canon, mapping = self.canonical(subset)
                    o = got[todo[(canon, comp)]]
                    if o is not None:
                        self.relaxed[(subset, comp)] = self.rename(o, subset, mapping)
                pending = ahead

        return finish

    def start_expansions(self, pairs: list[Pair], specs: list[KeepSpec]) -> Callable[[], None]:
        """Start the exact options of each pair not yet exact (pruned by its spec, whose bound
        only falls), in place of its relaxed column, and likewise for every pair of its symmetry
        class (so the pool stays symmetric under renaming interchangeable tasks, which the
        master's symmetry-breaking rows rely on). The returned call waits for them and adds them
        in ``pairs``' order. A class's pairs leave out tasks of the same signatures, so the first
        pair's spec holds for all of them."""
        todo: dict[Pair, KeepSpec] = {}
        for pair, spec in zip(pairs, specs, strict=True):
            if pair not in self.exact:
                todo.setdefault(self.class_of(pair), spec)
        keys = list(todo)
        gather = self.costing.submit_expand(keys, [todo[k] for k in keys], self.deadline)

        def finish() -> None:
            for (canon, comp), opts in zip(keys, gather(), strict=True):
                for twin in self.orbit[canon]:
                    _, mapping = self.canonical(twin)
                    self.exact[(twin, comp)] = [self.rename(o, twin, mapping) for o in opts]
                    self.relaxed.pop((twin, comp), None)
                self.expansions += 1

        return finish

    def single_time(self, name: str, comp: tuple[int, ...]) -> float | None:
        """The relaxed single-task column's time of ``name`` on ``comp`` (None: it does not fit
        alone). Read before any expansion, which replaces relaxed columns."""
        o = self.relaxed.get(((name,), comp))
        return None if o is None else max(o.gen, o.inf, o.trn)

    def kin_pairs(self, pair: Pair) -> list[Pair]:
        """The pairs on the same composition whose subsets swap tasks of one kind and model
        (PPO's actor and critic training, one 8B model): the master that picked one relaxed
        usually picks the other next, once the first is exact (their bounds differ by a
        weight-transfer share), so expanding them together saves a master solve each."""
        subset, comp = pair
        choices = []
        for members in self.kin.values():
            k = sum(n in subset for n in members)
            choices.append(list(itertools.combinations(members, k)))
        out = []
        for pick in itertools.product(*choices):
            chosen = {n for part in pick for n in part}
            twin = tuple(n for n in self.names if n in chosen)
            if twin != subset and self.admissible((twin, comp)):
                out.append((twin, comp))
        return out

    def ranks(self, columns: list[Column]) -> list[int]:
        """Dense ranks 1.. of columns, unchanged by renaming interchangeable tasks."""
        keys = []
        for c in columns:
            o = c.option
            keys.append(
                (
                    self.canonical(c.pair[0])[0],
                    c.pair[1],
                    c.relaxed,
                    o.gen,
                    o.inf,
                    o.trn,
                    o.xfer,
                    o.busy,
                )
            )
        dense = {k: i + 1 for i, k in enumerate(sorted(set(keys)))}
        return [dense[k] for k in keys]

    def interchangeable(self) -> list[tuple[str, str]]:
        """Consecutive members of each class of interchangeable tasks."""
        return [(a, b) for members in self.twins.values() for a, b in itertools.pairwise(members)]

    def admissible(self, pair: Pair) -> bool:
        """Whether the target framework can run ``pair``'s tasks as one group on its GPUs
        (always, without a target)."""
        if self.rules is None:
            return True
        hit = self._admissible.get(pair)
        if hit is None:
            subset, comp = pair
            hit = self.rules.admits_subset(
                self.builder.problem, subset
            ) and self.rules.admits_composition(self.builder.node_counts(comp))
            self._admissible[pair] = hit
        return hit

    def columns(self, keep: Callable[[GroupOption], bool]) -> list[Column]:
        """Every admissible column ``keep`` admits: exact options first, then the relaxed ones."""
        ok = self.admissible
        out = [
            Column(p, o, False) for p, opts in self.exact.items() if ok(p) for o in opts if keep(o)
        ]
        out += [Column(p, o, True) for p, o in self.relaxed.items() if ok(p) and keep(o)]
        return out


class LeftoverBounds:
    """What the tasks a column leaves out cost at least on the GPUs it leaves free.

    A plan using option o (tasks T_o on composition c_o) places every other task t in some
    group whose composition c fits in the rest, c <= N - c_o. On c, t is no faster than its
    relaxed single-task column (fastest configuration that fits alone; co-located tasks only
    take memory away), so

        L_t(N - c_o) = min over compositions c <= N - c_o of bound((t,), c)

    bounds t's time in any such plan, and a phase (Φ_η of a group is at least its slowest task)
    is at least max_{t not in T_o of that kind} L_t(N - c_o). The tasks left out also need their
    least model memory (``memory_floor_gb``) on those GPUs. Both are much stronger than the
    whole-cluster phase bounds for a column that takes most of the cluster, which is exactly
    the kind of relaxed column (a large co-located group) the master otherwise keeps.

    L_t is built once by a downward-closed minimum over the composition lattice:
    L_t(c) = min(bound((t,), c), min_k L_t(c - e_k))."""

    def __init__(self, pool: ColumnPool, memory_floor: dict[str, float]):
        builder = pool.builder
        self.cap = tuple(builder.cap)
        self.kinds = {n: t.kind for n, t in builder.tasks.items()}
        self.memory_floor = memory_floor
        comps = sorted(itertools.product(*(range(k + 1) for k in self.cap)), key=sum)
        self.best: dict[str, dict[tuple[int, ...], float]] = {}
        for name in builder.tasks:
            own: dict[tuple[int, ...], float] = {}
            for comp in comps:
                single = pool.single_time(name, comp)
                v = math.inf if single is None else single
                for k, n in enumerate(comp):
                    if n:
                        v = min(v, own[comp[:k] + (n - 1,) + comp[k + 1 :]])
                own[comp] = v
            self.best[name] = own
        self.memory = {c: float(builder.capacity(c).sum()) if any(c) else 0.0 for c in comps}
        #: phases per (tasks, composition): asked of every column by the filter and the master
        self._phases: dict[
            tuple[tuple[str, ...], tuple[int, ...]], tuple[float, float, float] | None
        ] = {}

    def phases(self, o: GroupOption) -> tuple[float, float, float] | None:
        """Least (generation, inference, training) phases of any plan using ``o`` from the tasks
        it leaves out; None when they cannot fit on the GPUs it leaves."""
        return self.phases_of(o.tasks, o.comp)

    def phases_of(
        self, tasks: tuple[str, ...], comp: tuple[int, ...]
    ) -> tuple[float, float, float] | None:
        """:meth:`phases` of any option of the pair (``tasks``, ``comp``): what its left-out
        tasks cost depends on the pair alone."""
        key = (tasks, comp)
        if key not in self._phases:
            self._phases[key] = self._leftover(tasks, comp)
        return self._phases[key]

    def _leftover(
        self, tasks: tuple[str, ...], comp: tuple[int, ...]
    ) -> tuple[float, float, float] | None:
        rest = tuple(n - c for n, c in zip(self.cap, comp, strict=True))
        out = {TaskKind.GENERATION: 0.0, TaskKind.INFERENCE: 0.0, TaskKind.TRAINING: 0.0}
        need = 0.0
        for name, kind in self.kinds.items():
            if name in tasks:
                continue
            v = self.best[name][rest]
            if math.isinf(v):
                return None
            out[kind] = max(out[kind], v)
            need += self.memory_floor[name]
        if need > self.memory[rest] + 1e-9:
            return None
        return out[TaskKind.GENERATION], out[TaskKind.INFERENCE], out[TaskKind.TRAINING]
