"""What a benchmark suite is made of (``benchmarks.suites``): the suite itself, the side-by-side
comparisons its report prints, and the helpers that list its runs (instances x solvers x seeds x
time limits, plus the solvers plugins add)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from benchmarks.harness import InstanceRef, RunSpec


@dataclass(frozen=True)
class Comparison:
    """Per instance, ``numerator``'s ``metric`` over ``denominator``'s (same seed where both have
    one), summarised by median / min / max in the report."""

    title: str
    numerator: str
    denominator: str
    metric: str  # objective or wall_time_s


def _ratios_to(denominator: str, what: str, titles: dict[str, str]) -> list[Comparison]:
    """The objective of each solver in ``titles`` (solver: its title) over ``denominator``'s,
    titled ``"<its title> / <what>"``."""
    return [
        Comparison(f"{title} / {what}", solver, denominator, "objective")
        for solver, title in titles.items()
    ]


@dataclass
class Suite:
    name: str
    description: str
    runs: list[RunSpec]
    comparisons: list[Comparison] = field(default_factory=list)
    anytime: tuple[str, ...] = ()  # solvers whose traces make the anytime plot


def _circ(name: str, **args) -> InstanceRef:
    return InstanceRef(name=name, kind="circuits", generator="circuits_instance", args=args)


@functools.cache
def plugin_solvers(plugins: tuple[str, ...], kind: str) -> list[str]:
    """Solvers of ``kind`` that the plugins add: a suite runs them next to the built-ins."""
    if not plugins:
        return []
    from planner.registry import build_registry

    builtin = {s.name for s in build_registry().solvers(kind)}
    return [s.name for s in build_registry(plugins).solvers(kind) if s.name not in builtin]


def _once(*solvers: str, limit: float | None = None) -> list[tuple]:
    """Each of ``solvers`` once: default options, seed 0, under ``limit`` (None: its own work
    budget)."""
    return [(s, {}, limit, (0,)) for s in solvers]


def _runs(
    suite: str,
    instances: list[InstanceRef],
    solvers: list[tuple[str, dict, float | None, tuple[int, ...]]],
    plugins: tuple[str, ...] = (),
    with_plugins: bool = True,
) -> list[RunSpec]:
    out = []
    kinds = {inst.kind for inst in instances}
    extra = (
        [(name, {}, None, (0,)) for kind in sorted(kinds) for name in plugin_solvers(plugins, kind)]
        if with_plugins
        else []
    )
    for inst in instances:
        for solver, options, limit, seeds in [*solvers, *extra]:
            out.extend(
                RunSpec(suite, inst, solver, dict(options), seed, limit, plugins) for seed in seeds
            )
    return out
