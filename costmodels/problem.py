"""The problem descriptor: everything the rest of rlplan needs to know about one planning problem.

Each problem sub-package (``costmodels/placement``, ``costmodels/circuits``, ...) exports one
:class:`ProblemKind`. The planner (file loading, plan files and their JSON Schema, the CLI, the
solver registry) and the benchmarks (harness, report) loop over descriptors and hold no
per-problem literal, so adding a problem is one sub-package per layer plus one descriptor
(``docs/architecture.md``).

A descriptor is the problem's language and judge only: its solvers are wired above the layers that
hold them (``planner/solvers/<problem>.py``) and its own commands live in the command-line package
(``planner/cli/``), so this layer imports nothing of rlplan's above it.

What a descriptor carries:

* identity: ``name`` (the ``problem:`` key of problem files and ``rlplan plan <name>``), a one-line
  ``summary``, a ``title`` (the stem of its schema class names: ``PlacementPlanFile``);
* inputs: its :class:`SpecField` list (each a pydantic model loaded from a file, a preset name or
  an inline mapping, checked once, optionally against fields loaded before it), ``build`` which
  makes the problem object from the loaded fields, and the ``presets`` it ships;
* the judge: ``plan_type``, ``evaluate`` (objective, breakdown) and the independent ``check``
  (violations), the ``objective`` meaning and its ``units``;
* presentation and measurement: ``summary_table`` (what ``rlplan plan`` prints, as plain
  :class:`Summary` data the CLI renders, from one :class:`SolvedPlan`), ``plot``, ``exports``
  (framework configs), the harness's instance ``size`` and ``size_label``, the breakdown keys the
  reports keep (``bench_extras``), and ``primary_key`` for lexicographic objectives (a breakdown
  key compared before the objective);
* ``canned``: small instances with known optima, which the contract test runs every registered
  solver of the kind on (after cvxpy's ``solver_test_helpers``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from costmodels.violations import Violation


@dataclass(frozen=True)
class Preset:
    """A shipped example, usable wherever a file is expected. ``kind`` is the spec field it fills
    (``cluster``, ``demand``, ...) or ``problem`` for a whole problem file. ``text`` renders the
    data in the file format users edit (``rlplan presets show``); YAML when absent."""

    name: str
    kind: str
    description: str
    build: Callable[[], Any]
    text: Callable[[Any], str] | None = None

    def data(self) -> Any:
        return self.build()


@dataclass(frozen=True)
class SpecField:
    """One input of a problem.

    ``model`` validates the data; ``check()`` on the model, when it has one, runs its cross-field
    rules. ``depends`` names fields that must load first; ``check_with(spec, loaded)`` checks this
    field against them (a demand against its fabric). ``csv`` parses a ``.csv`` file's text into
    model data; ``list_key`` wraps a bare list (``[...]`` becomes ``{list_key: [...]}``).
    ``default`` is the preset ``rlplan plan <problem>`` uses when the field is not given; with
    ``required=False`` a missing field takes the model's defaults, and ``file=False`` means the
    field is inline-only (a mapping inside the problem file, never a file or preset name)."""

    name: str
    model: type[BaseModel]
    help: str
    default: str | None = None
    required: bool = True
    file: bool = True
    depends: tuple[str, ...] = ()
    check_with: Callable[[Any, dict[str, Any]], None] | None = None
    csv: Callable[[str], Any] | None = None
    list_key: str | None = None


@dataclass(frozen=True)
class Summary:
    """A table for people: what ``rlplan plan`` prints after solving (the CLI renders it)."""

    title: str
    columns: tuple[str, ...]
    rows: list[tuple[str, ...]]
    caption: str = ""


ProblemT = TypeVar("ProblemT")
PlanT = TypeVar("PlanT")


@dataclass(frozen=True)
class SolvedPlan(Generic[ProblemT, PlanT]):
    """What a summary table reads: the problem, the plan, the judge's objective and breakdown for
    it, the solver's name and the status line (what came back and why the solver stopped)."""

    problem: ProblemT
    plan: PlanT
    objective: float
    breakdown: dict[str, Any]
    solver: str
    status: str


@dataclass(frozen=True)
class Canned:
    """A small instance with a known optimum (``optimum``), or one that the kind's exact
    ``reference`` solver (typically brute force) proves at test time, or neither: then only
    ``lower_bound`` (a physical floor no plan beats) is checked. Every solver's objective must be
    >= the optimum (and the bound); exact solvers must hit the optimum. For a lexicographic
    objective, ``primary`` is the optimum's first key (the kind's ``primary_key``)."""

    name: str
    build: Callable[[], Any]
    optimum: float | None = None
    primary: float | None = None
    reference: str | None = None
    lower_bound: float | None = None


Evaluate = Callable[[Any, Any], tuple[float, dict[str, Any]]]
Check = Callable[[Any, Any], list[Violation]]
SummaryFn = Callable[[SolvedPlan[Any, Any]], Summary]


def evaluated_table(
    summary: SummaryFn,
) -> Callable[[Any, Any, float, dict[str, Any], str], Summary]:
    """An ``evaluate_table`` that prints what ``rlplan plan`` prints (``summary``) for a plan
    file's plan, its solver named as the file and its status ``evaluated``."""

    def table(problem: Any, plan: Any, objective: float, breakdown: dict[str, Any], source: str):
        return summary(SolvedPlan(problem, plan, objective, breakdown, source, "evaluated"))

    return table


PlotFn = Callable[[Any, Any, dict[str, Any], Path, str], None]


@dataclass(frozen=True, eq=False)
class ProblemKind:
    """One planning problem, described once (see the module docstring). A kind without solvers
    (its data shapes landed before its solvers) loads no problem: the planner refuses it."""

    name: str
    summary: str
    title: str
    fields: tuple[SpecField, ...]
    problem_type: type
    build: Callable[..., Any]
    plan_type: type[BaseModel] | None = None
    evaluate: Evaluate | None = None
    check: Check | None = None
    objective: str = ""
    units: str = ""
    presets: tuple[Preset, ...] = ()
    summary_table: SummaryFn | None = None
    evaluate_table: Callable[[Any, Any, float, dict[str, Any], str], Summary] | None = None
    plot: PlotFn | None = None
    exports: Mapping[str, Callable[[Any, Any], dict[str, Any]]] = field(default_factory=dict)
    size: Callable[[Any], int] | None = None
    size_label: str = "size"
    bench_extras: Mapping[str, str] = field(default_factory=dict)
    primary_key: str | None = None
    canned: Callable[[], list[Canned]] | None = None
    # : the same problem with these :class:`~costmodels.efficiency.Efficiency` fields
    # replaced: fitted
    #: hardware profiles (``costmodels.profiles``, by GPU type) for its decode steps and prefills, a
    #: serving engine's overheads; None: the problem has no decode kernels to calibrate
    with_efficiency: Callable[[Any, dict[str, Any]], Any] | None = None
    #: the same problem restricted to what one framework runs (``rlplan plan --target``; None
    #: lifts the restriction), and the frameworks it knows; None: no framework restriction
    with_target: Callable[[Any, str | None], Any] | None = None
    targets: tuple[str, ...] = ()
    #: why no plan of the problem can exist, when the judge can tell from a physical floor the
    #: inputs break, with what would do (placement: memory); None when it cannot tell
    explain_no_plan: Callable[[Any], str | None] | None = None

    def spec_field(self, name: str) -> SpecField:
        """The spec field ``name`` (``KeyError`` if the problem has none)."""
        return {f.name: f for f in reversed(self.fields)}[name]  # the first, as listed

    def defaults(self) -> dict[str, str]:
        """The default example: preset names of the fields that have one."""
        return {f.name: f.default for f in self.fields if f.default is not None}

    def incomplete(self) -> list[str]:
        """What this descriptor lacks to be solvable end to end (plan files, CLI, benchmarks and
        the contract test need all of it); empty for a complete one."""
        missing = [a for a in ("summary", "title", "objective", "units") if not getattr(self, a)]
        if not self.fields:
            missing.append("fields")
        missing += [
            a
            for a in ("plan_type", "evaluate", "check", "summary_table", "size", "canned")
            if getattr(self, a) is None
        ]
        if any(f.default is None for f in self.fields if f.required and f.file):
            missing.append("a default preset for every required file field")
        names = [f.name for f in self.fields]
        for i, f in enumerate(self.fields):
            if set(f.depends) - set(names[:i]):
                missing.append(
                    f"field {f.name} depends on {sorted(set(f.depends) - set(names[:i]))}, not "
                    "loaded before it"
                )
        return missing
