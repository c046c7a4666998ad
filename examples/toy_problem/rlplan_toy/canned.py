"""Canned instances with known optima, which the contract test runs every toy solver on."""

from __future__ import annotations

from costmodels.problem import Canned
from rlplan_toy.presets import TOY_FIVE
from rlplan_toy.problem import JobsSpec, ToyProblem


def canned_toys() -> list[Canned]:
    """five-jobs: total work 12 on 2 machines, so C_max >= 6, and 3+3 | 2+2+2 reaches it."""
    return [Canned("five-jobs", lambda: ToyProblem(JobsSpec(**TOY_FIVE)), optimum=6.0)]
