"""A node's layouts in OrchestrRL Eq. 1 (§4.1; ``costmodels.replan.problem``'s module doc): the
aligned tilings of its GPUs by instances of the candidate TPs, and the instances a layout creates
(what the solvers enumerate)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache


@lru_cache(maxsize=64)
def _tilings(first: int, size: int, tps: frozenset[int]) -> tuple[tuple[tuple[int, int], ...], ...]:
    out: list[tuple[tuple[int, int], ...]] = [()]
    if size in tps:
        out.append(((first, size),))
    if size > 1 and size % 2 == 0:
        half = size // 2
        lower, upper = _tilings(first, half, tps), _tilings(first + half, half, tps)
        out += [a + b for a in lower for b in upper if a or b]
    return tuple(out)


def aligned_tilings(first: int, size: int, tps: Iterable[int]) -> list[tuple[tuple[int, int], ...]]:
    """Every way to place instances of TPs in ``tps`` on the aligned GPUs ``first .. first +
    size - 1`` (a power-of-two block), slots left idle included: the block is idle, one instance
    of TP ``size``, or any tiling of its two halves side by side. As (first GPU, TP) pairs in GPU
    order; 677 of them on an 8-GPU node with TPs 1, 2, 4 and 8. Every node of a state asks the
    same, so the tilings are built once."""
    return list(_tilings(first, size, frozenset(tps)))


@dataclass(frozen=True)
class Layout:
    """A node's layout: its name and instances as (first GPU, TP)."""

    name: str
    slots: tuple[tuple[int, int], ...]


@dataclass
class Slot:
    """One instance a node layout would create (what the solvers enumerate)."""

    node: int
    layout: int
    gpu: int
    tp: int
    switch_s: float
    kept: int | None = None
