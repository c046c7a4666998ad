"""A solver of a problem, as the registry lists it (``planner.registry``).

An entry names its function through ``load``, a function of no arguments that imports the module
holding the solver and returns it: the reader, an editor and a type checker follow it to the
solver, and the module (with its backend: HiGHS, CP-SAT, DEAP) is imported only when the solver
is first used (``docs/architecture.md``, "Adding a solver")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from costmodels.solving import SolverOutput

SolverFn = Callable[..., SolverOutput]


@dataclass(frozen=True)
class SolverEntry:
    """A solver of one problem. ``load()`` returns the function, which takes ``(problem, *,
    time_limit, seed, **options)`` and returns a ``SolverOutput``. ``inject`` maps keyword
    parameters to loaders of objects the planner passes in (how an exact formulation gets a
    heuristic's warm start or fill: the two layers never import each other).

    ``ignores`` names validator constraints the solver knowingly does not enforce, because the
    published baseline it reproduces does not (RollMux §7.5's random and greedy place jobs "where
    they fit", with no SLO check): its plans are still judged, a plan breaking them comes back
    ``invalid`` naming what it broke, and the contract test allows exactly those violations.

    ``time_limit`` is the solver's default wall-clock cap in seconds: what bounds a run whose
    caller gives no limit (``rlplan plan`` without ``--time-limit``, ``solve()`` without
    ``time_limit``). It is a cap, not a budget: the solver keeps its own default effort and
    stops early only when that would overrun it (``costmodels.solving.default_cap``)."""

    name: str
    load: Callable[[], SolverFn]
    description: str
    exact: bool = False
    default: bool = False
    inject: Mapping[str, Callable[[], Any]] = field(default_factory=dict)
    time_limit: float = 60.0
    ignores: tuple[str, ...] = ()
