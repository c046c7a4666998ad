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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from costmodels.placement.options import GroupOption, GroupOptions, Partial
from costmodels.placement.space import compositions
from costmodels.solving import UNLIMITED, Deadline

Pair = tuple[tuple[str, ...], tuple[int, ...]]


@dataclass
class Column:
    pair: Pair
    option: GroupOption
    relaxed: bool


class ColumnPool:
    """Relaxed and exact columns of every feasible pair; :meth:`expand` makes a pair exact."""

    def __init__(self, builder: GroupOptions, deadline: Deadline = UNLIMITED):
        self.builder = builder
        self.deadline = deadline
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
        self.relaxed: dict[Pair, GroupOption] = {}
        self.exact: dict[Pair, list[GroupOption]] = {}
        self.expansions = 0

    def subsets(self) -> Iterator[tuple[str, ...]]:
        for r in range(1, len(self.names) + 1):
            yield from itertools.combinations(self.names, r)

    def canonical(self, subset: tuple[str, ...]) -> tuple[tuple[str, ...], dict[str, str]]:
        """The canonical subset of ``subset``'s symmetry class and the renaming canonical -> actual."""
        return self._canonical[subset]

    def _canonical_of(self, subset: tuple[str, ...]) -> tuple[tuple[str, ...], dict[str, str]]:
        mapping: dict[str, str] = {}
        by: dict[tuple, list[str]] = {}
        for n in subset:
            by.setdefault(self.builder.signature(n), []).append(n)
        for sig, members in by.items():
            mapping.update(zip(self.twins[sig], members, strict=False))
        return tuple(n for n in self.names if n in mapping), mapping

    @staticmethod
    def rename(o: GroupOption, subset: tuple[str, ...], mapping: dict[str, str]) -> GroupOption:
        return replace(o, tasks=subset, configs={mapping[k]: v for k, v in o.configs.items()})

    def relax_all(self) -> None:
        """A relaxed column for every pair whose bound fits in memory (the master filters them
        by the incumbent as it falls)."""
        for comp in compositions(self.builder.cap):
            for subset in self.subsets():
                self.deadline.check()
                canon, mapping = self.canonical(subset)
                o = self.builder.bound_option(canon, comp, self.deadline)
                if o is not None:
                    self.relaxed[(subset, comp)] = self.rename(o, subset, mapping)

    def expand(self, pair: Pair, keep: Callable[[Partial], bool] | None) -> list[GroupOption]:
        """The exact options of ``pair`` (pruned by ``keep``, whose bound only falls), in place
        of its relaxed column, and likewise for every pair of its symmetry class (so the pool
        stays symmetric under renaming interchangeable tasks, which the master's symmetry-breaking
        rows rely on)."""
        subset, comp = pair
        if pair in self.exact:
            return self.exact[pair]
        canon, _ = self.canonical(subset)
        opts = self.builder.options(canon, comp, keep, cache_pruned=True, deadline=self.deadline)
        for twin in self.orbit[canon]:
            _, mapping = self.canonical(twin)
            self.exact[(twin, comp)] = [self.rename(o, twin, mapping) for o in opts]
            self.relaxed.pop((twin, comp), None)
        self.expansions += 1
        return self.exact[pair]

    def ranks(self, columns: list[Column]) -> list[int]:
        """Dense ranks 1.. of columns, unchanged by renaming interchangeable tasks."""
        keys = []
        for c in columns:
            o = c.option
            keys.append((self.canonical(c.pair[0])[0], c.pair[1], c.relaxed, o.gen, o.inf, o.trn, o.xfer, o.busy))
        dense = {k: i + 1 for i, k in enumerate(sorted(set(keys)))}
        return [dense[k] for k in keys]

    def interchangeable(self) -> list[tuple[str, str]]:
        """Consecutive members of each class of interchangeable tasks."""
        return [(a, b) for members in self.twins.values() for a, b in itertools.pairwise(members)]

    def columns(self, keep: Callable[[GroupOption], bool]) -> list[Column]:
        """Every column ``keep`` admits: exact options first, then the relaxed ones."""
        out = [Column(p, o, False) for p, opts in self.exact.items() for o in opts if keep(o)]
        out += [Column(p, o, True) for p, o in self.relaxed.items() if keep(o)]
        return out


def option_bound(o: GroupOption, mode: str, phase_lb: tuple[float, float, float]) -> float:
    """The least iteration time of any plan using option ``o`` (phases at least the global
    phase bounds ``phase_lb`` = (generation, inference, training))."""
    g, i, r = max(o.gen, phase_lb[0]), max(o.inf, phase_lb[1]), max(o.trn, phase_lb[2])
    core = g + i + r if mode == "sync" else max(max(o.busy, g), i + r)
    return core + o.xfer
