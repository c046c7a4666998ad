"""The dominance filters of Level 4 (HetRL §3.4, §3.5): Pareto fronts of a task's candidates,
of (vector, item) rows, and of partial combinations (exact, and thinned to a beam)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from costmodels.solving import UNLIMITED, Deadline
from search.placement.options import Candidate, Partial


def dominates(a: Candidate, b: Candidate) -> bool:
    return (
        a.time <= b.time
        and a.ag_min <= b.ag_min
        and a.ag_max <= b.ag_max
        and bool((a.model <= b.model).all())
        and bool((a.working <= b.working).all())
    )


def pareto_candidates(cands: list[Candidate]) -> list[Candidate]:
    deferred = [c for c in cands if c.deferred]
    cands = sorted(
        (c for c in cands if not c.deferred),
        key=lambda c: (c.time, float(c.model.sum()), float(c.working.sum())),
    )
    kept: list[Candidate] = list(deferred)
    for c in cands:
        if not any(dominates(k, c) for k in kept if not k.deferred):
            kept.append(c)
    return kept


def pareto_pairs(rows: list[tuple[tuple[float, ...], Any]]) -> list[tuple[tuple[float, ...], Any]]:
    """The (vector, item) rows whose vector no other kept row dominates (all <=)."""
    rows = sorted(rows, key=lambda r: r[0])
    kept: list[tuple[tuple[float, ...], Any]] = []
    for vec, item in rows:
        if not any(all(a <= b + 1e-15 for a, b in zip(kv, vec, strict=True)) for kv, _ in kept):
            kept.append((vec, item))
    return kept


def pareto_rows(rows: list[tuple[tuple[float, ...], Any]]) -> list[Any]:
    return [item for _, item in pareto_pairs(rows)]


def prune_partials(states: list[Partial], deadline: Deadline = UNLIMITED) -> list[Partial]:
    """Drop partial combinations dominated in every metric and every GPU's memory (vectorised).
    Quadratic in the states, so it checks ``deadline`` as it goes."""
    if len(states) <= 1:
        return states
    mat = np.array([np.concatenate([np.asarray(st.key), st.model, st.working]) for st in states])
    order = np.lexsort(mat.T[::-1])
    kept = np.empty_like(mat)
    rows: list[int] = []
    for n, i in enumerate(order):
        if n % 256 == 255:
            deadline.check(256 * mat.shape[1])
        row = mat[i]
        k = len(rows)
        if k and np.any(np.all(kept[:k] <= row + 1e-12, axis=1)):
            continue
        kept[k] = row
        rows.append(int(i))
    return [states[i] for i in rows]


def thin_front(
    states: list[Partial], est: Callable[[Partial], float], capacity: np.ndarray, width: int
) -> list[Partial]:
    """The (estimated time, memory) Pareto front of partial combinations, thinned to ``width``
    states spread evenly along it (both ends kept). Memory is summarised two ways, the fullest
    GPU's share and the total resident GB, and a state on either front is kept: a fast state
    that fills memory and a slow one that leaves room are both worth extending."""
    scored = [
        (est(st), float(np.max((st.model + st.working) / capacity)), float(st.model.sum()), i)
        for i, st in enumerate(states)
    ]
    keep: dict[int, None] = {}
    for col in (1, 2):
        front: list[tuple[float, float, int]] = []
        for row in sorted(scored, key=lambda r: (r[0], r[col])):
            if not front or row[col] < front[-1][1] - 1e-12:
                front.append((row[0], row[col], row[3]))
        if len(front) > width:
            step = (len(front) - 1) / (width - 1)
            front = [front[round(k * step)] for k in range(width)]
        keep.update((i, None) for _, _, i in front)
    return [states[i] for i in keep]
