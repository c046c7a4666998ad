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
