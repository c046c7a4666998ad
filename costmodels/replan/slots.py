"""What the re-planning solvers enumerate (OrchestrRL §4.1): the instances every node layout
creates, and those of one layout choice per node."""

from __future__ import annotations

from costmodels.replan.layouts import Slot
from costmodels.replan.problem import ReplanProblem


def slots(problem: ReplanProblem) -> list[list[list[Slot]]]:
    """slots[n][ℓ]: the instances of layout ℓ of node n (``ReplanProblem.slot_table``)."""
    return problem.slot_table


def layout_slots(problem: ReplanProblem, choice: list[int]) -> list[Slot]:
    """The instances of layout ``choice[n]`` on every node n."""
    table = problem.slot_table
    return [s for n, li in enumerate(choice) for s in table[n][li]]
