"""How a task placement divides its model and batch: layers per pipeline stage and each DP
replica's share of the batch (HetRL §3.3, Appendix B.2: L_j and S_i)."""

from __future__ import annotations


def layer_split(layers: int, pp: int, given: list[int] | None = None) -> list[int]:
    """Layers per pipeline stage: the plan's split, or as even as possible (earlier stages get
    the remainder)."""
    if given is not None:
        return list(given)
    base, extra = divmod(layers, pp)
    return [base + (1 if j < extra else 0) for j in range(pp)]


def batch_shares(dp: int, given: list[float] | None = None) -> list[float]:
    if given is not None:
        total = sum(given)
        return [s / total for s in given]
    return [1.0 / dp] * dp
