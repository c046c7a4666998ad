"""Set partitions, shared by every problem that groups things: placement's task groupings
(HetRL §3.2, Level 1) and RollMux's co-execution groups (§4.1) and their node pinnings.

Both generators are deterministic: the brute-force optima and the searches that enumerate them
break ties by this order, so it is part of every published result (docs/architecture.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")


def set_partitions(items: list[T]) -> Iterator[list[list[T]]]:
    """Every partition of ``items`` into non-empty blocks (Bell number many): the partitions of
    the rest, with the first item joining each block in turn, then alone."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in set_partitions(rest):
        for i in range(len(part)):
            yield [*part[:i], [first, *part[i]], *part[i + 1 :]]
        yield [[first], *part]


def restricted_growth_strings(n: int, blocks: int) -> Iterator[list[int]]:
    """Every partition of ``n`` positions into exactly ``blocks`` labelled-by-first-use blocks, as
    restricted growth strings (position 0 has label 0; each label is at most one more than the
    largest before it), in lexicographic order; none for ``n == 0``."""

    def rec(prefix: list[int], top: int) -> Iterator[list[int]]:
        if len(prefix) == n:
            if top + 1 == blocks:
                yield list(prefix)
            return
        if blocks - (top + 1) > n - len(prefix):  # not enough positions left to open the rest
            return
        for label in range(min(top + 2, blocks)):
            prefix.append(label)
            yield from rec(prefix, max(top, label))
            prefix.pop()

    if n == 0:
        return
    yield from rec([0], 0)


def canonical_pinnings(
    sizes: list[int],
    bins: int,
    weights: list[tuple[float, ...]] | None = None,
    capacity: tuple[float, ...] | None = None,
) -> Iterator[list[tuple[int, ...]]]:
    """Every way to pin item i to ``sizes[i]`` distinct bins out of ``bins`` interchangeable ones,
    every bin used, one per orbit under relabelling the bins; with ``weights``/``capacity``, only
    those where no bin's summed weights exceed the capacity (each coordinate, e.g. rollout load
    and host memory), pruned as the items are placed.

    Why canonical: a job of k_j > 1 rollout nodes has C(N, k_j) pinnings, and the product over a
    group's jobs holds each orbit up to N! times; RollMux's nodes are interchangeable (§4.1), so
    one per orbit is enough. How: bins are opened in order; before item i the opened bins fall
    into classes of equal history (the items pinned to each so far, hence equal weights), and item
    i takes a count from each class (its lowest-numbered members) plus new bins. Any pinning
    relabels to exactly one such sequence. For all sizes 1 this is
    :func:`restricted_growth_strings`, in its order: earlier classes first, a new bin last."""
    n = len(sizes)
    dims = len(capacity) if capacity is not None else 0
    zero = (0.0,) * dims
    later = [sum(sizes[i + 1 :]) for i in range(n)]  # bins items after i can still open
    classes: list[tuple[list[int], tuple[float, ...]]] = []  # (bins, their summed weights)
    pins: list[tuple[int, ...]] = []
    tol = 1e-9

    def fits(usage: tuple[float, ...], w: tuple[float, ...]) -> bool:
        return all(
            u + x <= c * (1 + tol) + tol for u, x, c in zip(usage, w, capacity or (), strict=True)
        )

    def add(usage: tuple[float, ...], w: tuple[float, ...]) -> tuple[float, ...]:
        return tuple(u + x for u, x in zip(usage, w, strict=True))

    def place(i: int, opened: int) -> Iterator[list[tuple[int, ...]]]:
        if i == n:
            if opened == bins:
                yield list(pins)
            return
        if bins - opened > sizes[i] + later[i]:
            return  # too few pins left to open every bin
        w = weights[i] if weights is not None else zero
        yield from choose(i, opened, 0, sizes[i], [], w)

    def choose(
        i: int, opened: int, ci: int, left: int, taken: list[int], w: tuple[float, ...]
    ) -> Iterator[list[tuple[int, ...]]]:
        if ci == len(classes):
            if opened + left > bins or bins - opened - left > later[i]:
                return
            if left and not fits(zero, w):
                return
            new = list(range(opened, opened + left))
            saved = list(classes)
            if new:
                classes.append((new, add(zero, w)))
            pins.append(tuple(sorted(taken + new)))
            yield from place(i + 1, opened + left)
            pins.pop()
            classes[:] = saved
            return
        members, usage = classes[ci]
        for c in range(min(len(members), left), -1, -1):
            if c and not fits(usage, w):
                continue
            saved = list(classes)
            parts = [(members[:c], add(usage, w)), (members[c:], usage)]
            classes[ci : ci + 1] = [p for p in parts if p[0]]
            step = 1 + (0 < c < len(members))  # the class may have split in two
            yield from choose(i, opened, ci + step, left - c, taken + members[:c], w)
            classes[:] = saved

    yield from place(0, 0)
