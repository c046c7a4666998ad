"""Solver registry: one per process, keyed by (problem kind, solver name) (after vidur's
registries). Unknown or duplicate keys fail loudly; option names are checked against each
solver's allow-list before it runs (after scipy.optimize.milp)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from costmodels.solving import SolverOutput

SolverFn = Callable[..., SolverOutput]


class UnknownSolverError(LookupError):
    pass


@dataclass(frozen=True)
class SolverInfo:
    problem: str
    name: str
    func: SolverFn
    description: str
    exact: bool = False
    options: tuple[str, ...] = field(default=())


class Registry:
    def __init__(self) -> None:
        self._solvers: dict[tuple[str, str], SolverInfo] = {}
        self._defaults: dict[str, str] = {}

    def register(self, problem: str, name: str, func: SolverFn, *, description: str, exact: bool = False, default: bool = False) -> SolverInfo:
        """Add a solver. Its options are the keyword-only parameters of ``func`` other than
        ``time_limit`` and ``seed``."""
        key = (problem, name)
        if key in self._solvers:
            raise ValueError(f"solver {name!r} is already registered for problem {problem!r}")
        params = inspect.signature(func).parameters
        for required in ("time_limit", "seed"):
            if required not in params:
                raise TypeError(f"solver {name!r} must accept keyword {required!r}")
        options = tuple(p for p, spec in params.items() if spec.kind is inspect.Parameter.KEYWORD_ONLY and p not in ("time_limit", "seed"))
        info = SolverInfo(problem, name, func, description, exact, options)
        self._solvers[key] = info
        if default or problem not in self._defaults:
            self._defaults[problem] = name
        return info

    def get(self, problem: str, name: str | None = None) -> SolverInfo:
        name = name or self._defaults.get(problem)
        if name is None:
            raise UnknownSolverError(f"no solvers are registered for problem {problem!r} yet")
        if (problem, name) not in self._solvers:
            known = ", ".join(s.name for s in self.solvers(problem)) or "none"
            raise UnknownSolverError(f"unknown solver {name!r} for problem {problem!r}; available: {known}")
        return self._solvers[(problem, name)]  # type: ignore[index]

    def default(self, problem: str) -> str | None:
        return self._defaults.get(problem)

    def solvers(self, problem: str | None = None) -> list[SolverInfo]:
        return [s for (p, _), s in sorted(self._solvers.items()) if problem is None or p == problem]

    def problems(self) -> list[str]:
        return sorted({p for p, _ in self._solvers})

    def check_options(self, info: SolverInfo, options: dict[str, Any]) -> None:
        unknown = sorted(set(options) - set(info.options))
        if unknown:
            allowed = ", ".join(info.options) or "none"
            raise TypeError(f"solver {info.name!r} does not take option(s) {', '.join(unknown)}; it takes: {allowed}")


def _exact_with_fill(exact: SolverFn, filler: Callable[..., Any]) -> SolverFn:
    """Wrap an exact circuits model so spare ports are filled by ``filler`` (Algorithm 3): the
    planner passes the heuristic in because formulations never import heuristics (DESIGN.md)."""

    def solve(problem: Any, *, time_limit: float | None = None, seed: int = 0, fill: bool = True) -> SolverOutput:
        return exact(problem, time_limit=time_limit, seed=seed, fill=filler if fill else None)

    solve.__doc__ = exact.__doc__
    return solve


def _register_builtins(reg: Registry) -> None:
    """Every solver rlplan ships. Solvers import costmodels only; the planner wires them up."""
    from formulations.circuits.bruteforce import solve_circuits_bruteforce
    from formulations.circuits.exact import solve_circuits_cpsat, solve_circuits_milp
    from formulations.placement.bruteforce import solve_placement_bruteforce
    from formulations.placement.ilp import solve_placement_ilp
    from heuristics.broadcast.schedule import solve_naive, solve_two_level
    from heuristics.circuits.greedy import (
        allocate_greedy,
        solve_greedy,
        solve_greedy_reference,
        solve_uniform,
    )
    from heuristics.placement.colocated import solve_colocated
    from heuristics.placement.ea import solve_plain_ea, solve_random
    from heuristics.placement.sha_ea import solve_sha_ea
    from heuristics.placement.streamrl import solve_streamrl

    reg.register("placement", "sha-ea", solve_sha_ea, default=True,
                 description="HetRL SHA-EA (§3.4): nested successive halving over task and GPU groupings, EA over GPU assignment, exact Level 4")
    reg.register("placement", "ilp", solve_placement_ilp, exact=True,
                 description="HetRL ILP (§3.5) on HiGHS via PuLP (backend=cbc for CBC); optimal over rlplan's placement space")
    reg.register("placement", "ea", solve_plain_ea, description="plain DEAP-style evolutionary algorithm over the same space (HetRL §5.4 baseline)")
    reg.register("placement", "verl", solve_colocated,
                 description="verl-style baseline: all tasks co-located on all GPUs, one homogeneous config per task, best of a sweep")
    reg.register("placement", "streamrl", solve_streamrl, description="StreamRL-style baseline: generation on one node set, all other tasks on the rest")
    reg.register("placement", "random", solve_random, description="random feasible plans from the same space, best kept")
    reg.register("placement", "bruteforce", solve_placement_bruteforce, exact=True,
                 description="enumerate the whole space (tiny instances only; ground truth for the ILP)")

    reg.register("circuits", "greedy", solve_greedy, default=True,
                 description="OrchestrRL Algorithm 3 (App. D.2): one circuit at a time to the largest pair time, heap-based")
    reg.register("circuits", "greedy-reference", solve_greedy_reference,
                 description="plain transcription of Algorithm 3 (rescans every pair each step); same allocation as greedy")
    reg.register("circuits", "milp", _exact_with_fill(solve_circuits_milp, allocate_greedy), exact=True,
                 description="exact lexicographic model (max covered demand, then min bottleneck) on HiGHS via PuLP")
    reg.register("circuits", "cpsat", _exact_with_fill(solve_circuits_cpsat, allocate_greedy), exact=True,
                 description="the same exact model on OR-Tools CP-SAT (bottleneck picked from its candidate set)")
    reg.register("circuits", "uniform", solve_uniform,
                 description="uniform splitting baseline (App. I): each endpoint's ports spread evenly over its demanded pairs")
    reg.register("circuits", "bruteforce", solve_circuits_bruteforce, exact=True,
                 description="enumerate every allocation (tiny instances only; ground truth for the exact models)")

    reg.register("broadcast", "two-level", solve_two_level, default=True,
                 description="RFabric App. E: cross-PoD seeding in budget-aware waves (relay on), intra-PoD fan-out trees")
    reg.register("broadcast", "naive", solve_naive, description="naive one-to-all: every generation rank fetches every shard from its holder")


def build_registry(plugins: tuple[str, ...] = ()) -> Registry:
    """A fresh registry: the built-ins, the ``rlplan.solvers`` entry points, then each plugin
    given as ``module:function`` (called with the registry; how `rlplan bench --plugin` and the
    tests add solvers without packaging them)."""
    import importlib
    from importlib.metadata import entry_points

    reg = Registry()
    _register_builtins(reg)
    for ep in entry_points(group="rlplan.solvers"):
        ep.load()(reg)
    for ref in plugins:
        module, _, func = ref.partition(":")
        if not module or not func:
            raise ValueError(f"plugin {ref!r}: expected module:function")
        getattr(importlib.import_module(module), func)(reg)
    return reg


@functools.cache
def default_registry() -> Registry:
    """The process-wide registry with the built-in solvers and any ``rlplan.solvers`` plugins."""
    return build_registry()
