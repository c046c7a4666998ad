"""``plan(request) -> PlanOutcome``: everything between a problem and the files a user gets, as one
library call (``docs/architecture.md``, "Data flow").

``rlplan plan`` parses its arguments into a :class:`PlanRequest`, calls :func:`plan` and renders
the :class:`PlanOutcome`; an external scheduler calling :func:`plan` in-process gets exactly what
the command line gets: the same checks, the same plan, the same files. In order:

1. the problem: a problem name with its spec fields (files, preset names, mappings), a problem
   file or preset, or a problem object already built;
2. every output path checked before any work starts (a bad path never costs a search);
3. the judge's kernels and engine (``profile``, ``engine``) and the framework restriction
   (``target``) applied to the problem;
4. the solver's options validated once (by name, type and range), then one solve
   (:func:`planner.solve.run_validated`) under ``watch``'s progress display;
5. with a ``target``, the same solver, seed and budget on the unrestricted space, to report what
   the restriction costs (:func:`restriction_cost`);
6. the plan file, the framework exports and the picture, each written atomically, only when the
   solve returned a usable plan.

Bad input raises a ``ValueError`` (a :class:`~costmodels.errors.SpecError` naming the file or
option, the field and the value; :class:`~planner.registry.UnknownSolverError` and
:class:`~planner.registry.SolverOptionError` for solvers) before the solve starts. A solve that
finds no usable plan is not an exception: the outcome says why (``failure``) and nothing is
written. The call holds no state between calls; concurrent calls share only the registry.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from costmodels.errors import SpecError
from costmodels.problem import ProblemKind, SolvedPlan, Summary
from planner.efficiency_choice import efficiency_update
from planner.io import build_problem, load_problem, solvable_kind, write_atomic
from planner.outputs import PLOT_SUFFIXES, check_distinct, check_output, write_picture
from planner.planfile import result_to_json
from planner.registry import Registry, SolverInfo, default_registry
from planner.result import Result
from planner.solve import run_validated, solve

#: ``progress(used, budget, best)``: evaluations used of the budget, and the best objective so far
ProgressFn = Callable[[int, int, float], None]
#: ``watch(what, counts)`` opens a progress display around the one solve: ``what`` says which
#: problem, solver and limit, ``counts`` whether the solver reports evaluations; the context's
#: value is the ``progress`` callback the solver calls (None: no progress wanted)
Watch = Callable[[str, bool], AbstractContextManager[ProgressFn | None]]


class PlanRequestError(ValueError):
    """A request that contradicts itself or its problem (an option that does not apply)."""


@dataclass(frozen=True)
class PlanRequest:
    """What to plan and what to write.

    ``problem``: a problem name (None: the first registered), a problem file or
    whole-problem preset name, or a problem object. ``fields``: spec fields by name (``cluster``,
    ``workflow``, ...: a path, a preset name or a mapping), for a problem name only.
    ``solver``/``time_limit``/``seed``/``options``: as :func:`planner.solve`; ``executor`` and
    ``ray_address`` set a distributed solver's options of those names. ``profile``/``engine``: the
    judge's kernels and serving engine (:mod:`planner.efficiency_choice`). ``target``: plan only
    what this framework runs. ``output``: the plan file (None: write none); ``exports``: a tuple
    of export format names (``("verl",)``; a bare string is refused, not read as its letters),
    each written beside it as ``<output stem>.<format>.yaml``; ``plot``: a PNG of the plan.
    ``watch``: a progress display around the solve (:data:`Watch`)."""

    problem: Any = None
    fields: Mapping[str, Any] = field(default_factory=dict)
    solver: str | None = None
    time_limit: float | None = None
    seed: int = 0
    options: Mapping[str, Any] = field(default_factory=dict)
    executor: str | None = None
    ray_address: str | None = None
    profile: str | None = None
    engine: str | None = None
    target: str | None = None
    output: str | Path | None = None
    exports: tuple[str, ...] = ()
    plot: str | Path | None = None
    watch: Watch | None = None

    def __post_init__(self) -> None:
        if isinstance(self.exports, str):
            raise PlanRequestError(
                f"exports: a tuple of format names, got the string {self.exports!r}; "
                f"write exports=({self.exports!r},)"
            )


@dataclass
class PlanOutcome:
    """What :func:`plan` did. ``result``: the solve, judged and validated (with the restriction's
    cost under ``stats["target"]`` for a ``target``). ``failure``: why there is no usable plan
    (None when there is one). ``plan_json``: the plan file's text; ``written``: the files written,
    the plan file first; ``exports``: each framework export's mapping (its ``not_expressible``
    list says what the framework cannot run); ``summary``: the problem's table for people;
    ``notes``: lines on how the search ended and what ``target`` cost."""

    kind: ProblemKind
    result: Result
    failure: str | None = None
    plan_json: str = ""
    written: list[Path] = field(default_factory=list)
    exports: dict[str, dict[str, Any]] = field(default_factory=dict)
    summary: Summary | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failure is None


def default_output(problem: str) -> str:
    """The plan file ``rlplan plan`` writes without ``-o``: one per problem, so planning one
    problem never overwrites another's plan."""
    return f"{problem}-plan.json"


def export_path(output: str | Path, fmt: str) -> Path:
    """Where an export is written: beside the plan file, ``PLAN.<fmt>.yaml``."""
    return Path(output).with_suffix(f".{fmt}.yaml")


def export_text(snippet: dict[str, Any]) -> str:
    """An export's file: its ``document`` (what the framework loads) under its ``comments``, or,
    for an export without one, the whole mapping."""
    header = "".join(f"# {line}\n" for line in snippet.get("comments", []))
    return header + yaml.safe_dump(snippet.get("document", snippet), sort_keys=False)


def resolve_kind(
    problem: Any, fields: Mapping[str, Any], registry: Registry | None = None
) -> tuple[ProblemKind, Any]:
    """The problem's descriptor, and the problem itself when ``problem`` is a file, a preset or
    an object (None for a problem name: it is built from ``fields`` later)."""
    reg = registry or default_registry()
    given = {k: v for k, v in fields.items() if v is not None}
    if problem is None:
        problem = reg.solvable()[0].name
    if not isinstance(problem, str | Path | dict):
        if given:
            raise PlanRequestError(f"--{sorted(given)[0]} goes with a problem name, not a problem")
        return reg.kind_of(problem), problem
    if isinstance(problem, str) and problem in {k.name for k in reg.kinds()}:
        kind = solvable_kind(problem, None, reg)
        stray = sorted(set(given) - {f.name for f in kind.fields})
        if stray:
            raise PlanRequestError(f"--{stray[0]} does not apply to a {problem} problem")
        return kind, None
    if given:
        raise PlanRequestError(
            f"--{sorted(given)[0]} goes with a problem name "
            f"({', '.join(reg.problems())}), not with a problem file"
        )
    built = load_problem(problem, reg)
    return reg.kind_of(built), built


def _check_outputs(request: PlanRequest) -> None:
    """Every file the request will write, checked before any work starts."""
    targets: dict[str, Path] = {}
    if request.output is None and request.exports:
        fmt = request.exports[0]
        raise PlanRequestError(
            f"--export {fmt}: an export is written beside the plan file "
            f"(PLAN.{fmt}.yaml); give -o a file, not - (stdout)"
        )
    if request.output is not None:
        targets["-o"] = check_output(request.output, "-o")
        for fmt in request.exports:
            targets[f"--export {fmt}"] = check_output(
                export_path(request.output, fmt), f"--export {fmt}"
            )
    if request.plot is not None:
        targets["--plot"] = check_output(request.plot, "--plot", PLOT_SUFFIXES)
    check_distinct(targets)
    _refuse_overwriting_inputs(request, targets)


def _input_files(request: PlanRequest) -> dict[Path, str]:
    """The existing files the request reads (a problem file, spec files, a profile), each by
    the option it came from; preset names and mappings are not files."""
    named = {"the problem": request.problem, "--profile": request.profile}
    named |= {f"--{name}": value for name, value in request.fields.items()}
    return {
        Path(value).resolve(): option
        for option, value in named.items()
        if isinstance(value, str | Path) and Path(value).is_file()
    }


def _refuse_overwriting_inputs(request: PlanRequest, targets: dict[str, Path]) -> None:
    """No output may be one of the request's input files (``--workflow w.yaml -o w.yaml`` would
    replace the user's workflow by the plan)."""
    inputs = _input_files(request)
    for option, p in targets.items():
        source = inputs.get(p.resolve())
        if source is not None:
            raise SpecError(
                option,
                str(p),
                f"is the {source} file this plan reads; give the output its own path",
            )


def _check_applies(request: PlanRequest, kind: ProblemKind, reg: Registry) -> None:
    """``profile``, ``engine`` and ``target`` apply to this problem."""
    for flag, value in (("--profile", request.profile), ("--engine", request.engine)):
        if value is not None and kind.with_efficiency is None:
            raise PlanRequestError(
                f"{flag}: a {kind.name} problem has no decode kernels to calibrate; "
                f"{', '.join(k.name for k in reg.solvable() if k.with_efficiency)} take one"
            )
    target = request.target
    if target is None:
        return
    if kind.with_target is None:
        having = ", ".join(k.name for k in reg.solvable() if k.with_target)
        raise PlanRequestError(
            f"--target {target}: {kind.name} plans have no framework restriction ({having} do)"
        )
    if target not in kind.targets:
        raise PlanRequestError(
            f"--target {target!r}: not a framework rlplan plans for; choose "
            + ", ".join(kind.targets)
        )


def _check_products(request: PlanRequest, kind: ProblemKind, reg: Registry) -> None:
    """The exports and the picture exist for this problem's plans."""
    for fmt in request.exports:
        if fmt not in kind.exports:
            # one line near 80 columns: this problem's formats only (`--help` lists them all)
            if kind.exports:
                raise PlanRequestError(
                    f"--export {fmt}: not available for {kind.name} plans; "
                    f"use {', '.join(kind.exports)}"
                )
            having = ", ".join(k.name for k in reg.solvable() if k.exports) or "none"
            raise PlanRequestError(
                f"--export {fmt}: {kind.name} plans have no exports ({having} do)"
            )
    if request.plot is not None and kind.plot is None:
        raise PlanRequestError(
            "--plot: pictures exist for "
            f"{', '.join(k.name for k in reg.solvable() if k.plot)} plans, not {kind.name}"
        )


def executor_options(
    info: SolverInfo,
    executor: str | None,
    ray_address: str | None,
    options: Mapping[str, Any],
    registry: Registry | None = None,
) -> dict[str, Any]:
    """``executor`` / ``ray_address`` as the solver's options of those names (SHA-EA's
    evaluations on Ray); a solver that evaluates in its own process gets a clear no."""
    given = {
        k: v for k, v in (("executor", executor), ("ray_address", ray_address)) if v is not None
    }
    if not given:
        return {}
    flag = "--executor" if executor is not None else "--ray-address"
    if executor is not None and executor not in ("local", "ray"):
        raise PlanRequestError(f"{flag} {executor}: use local or ray")
    if "executor" not in info.options:
        reg = registry or default_registry()
        distributed = [s.name for s in reg.solvers(info.problem) if "executor" in s.options]
        raise PlanRequestError(
            f"{flag}: solver {info.name!r} runs in this process; the solvers that distribute "
            "their evaluations take it "
            f"({', '.join(distributed) or 'none here'})"
        )
    clash = sorted(k for k in given if k in options)
    if clash:
        raise PlanRequestError(f"{flag} and -O {clash[0]}=... both set {clash[0]}: give one")
    if ray_address is not None and executor == "local":
        raise PlanRequestError(f"--ray-address {ray_address} needs --executor ray (it is local)")
    return {
        "executor": executor or "ray",
        **({"ray_address": ray_address} if ray_address is not None else {}),
    }


def restriction_cost(target: str, restricted: Result, free: Result) -> dict[str, Any]:
    """What ``target`` costs: the restricted plan against the same solver, seed and budget on
    the unrestricted space (an exact solver's ratio is between two optima)."""
    row: dict[str, Any] = {
        "framework": target,
        "objective": restricted.objective,
        "unrestricted_objective": free.objective if free.success else None,
        "unrestricted_status": free.status.value,
        "unrestricted_wall_s": free.wall_time_s,
        "ratio": None,
    }
    if free.success and free.objective and restricted.objective is not None:
        row["ratio"] = restricted.objective / free.objective
    return row


def _prepared(request: PlanRequest, reg: Registry) -> tuple[ProblemKind, Any, SolverInfo, dict]:
    """The problem as the solver will see it, the solver and its validated options; every check
    of the request is made here, before any work."""
    kind, problem = resolve_kind(request.problem, request.fields, reg)
    _check_outputs(request)
    _check_applies(request, kind, reg)
    if problem is None:
        given = {k: v for k, v in request.fields.items() if v is not None}
        problem = build_problem(kind.name, {**kind.defaults(), **given}, registry=reg)
    if request.profile is not None or request.engine is not None:
        assert kind.with_efficiency is not None
        problem = kind.with_efficiency(problem, efficiency_update(request.profile, request.engine))
    if request.target is not None:
        assert kind.with_target is not None
        problem = kind.with_target(problem, request.target)
    info = reg.get(kind.name, request.solver)
    options = dict(request.options)
    options.update(
        executor_options(info, request.executor, request.ray_address, options, registry=reg)
    )
    _check_products(request, kind, reg)
    return kind, problem, info, info.validate_options(options)


def _solve_watched(
    request: PlanRequest, problem: Any, info: SolverInfo, options: dict, reg: Registry
) -> Result:
    limit = request.time_limit if request.time_limit is not None else info.time_limit
    what = f"{info.problem} by {info.name}, limit {limit:g} s" + (
        "" if request.time_limit is not None else " (default)"
    )
    watching = (
        request.watch(what, info.takes_progress)
        if request.watch is not None
        else contextlib.nullcontext(None)
    )
    with watching as progress:
        return run_validated(
            problem,
            info,
            options,
            time_limit=request.time_limit,
            seed=request.seed,
            progress=progress,
            registry=reg,
        )


def failure_of(result: Result, kind: ProblemKind | None = None) -> str | None:
    """Why ``result`` gives the user no plan file (None when it does): the solver's words, and
    the judge's reason when the inputs admit no plan at all (``ProblemKind.explain_no_plan``), so
    a search that found nothing does not invite a bigger budget that cannot help."""
    if not result.success:
        detail = "; ".join(result.violations[:5])
        why = kind.explain_no_plan(result.problem) if kind and kind.explain_no_plan else None
        return (
            f"no feasible plan: {result.solver} ended with status {result.status.value}. "
            f"{result.message} {detail}".strip()
            + (f" Why: {why}" if why else "")
        )
    if result.objective is None or not math.isfinite(result.objective):
        return (
            f"no usable plan: {result.solver}'s plan has objective {result.objective} (the cost "
            "model overflowed or the plan serves nothing)"
        )
    return None


def plan(request: PlanRequest, registry: Registry | None = None) -> PlanOutcome:
    """Solve the request's problem and write its files (see the module docstring)."""
    reg = registry or default_registry()
    kind, problem, info, options = _prepared(request, reg)
    result = _solve_watched(request, problem, info, options, reg)
    if request.target is not None and result.success:
        assert kind.with_target is not None
        free = solve(
            kind.with_target(problem, None),
            info.name,
            time_limit=request.time_limit,
            seed=request.seed,
            registry=reg,
            **options,
        )
        result.stats["target"] = restriction_cost(request.target, result, free)
    outcome = PlanOutcome(kind, result, failure=failure_of(result, kind))
    if not outcome.ok:
        return outcome
    outcome.plan_json = result_to_json(result)
    outcome.exports = {
        fmt: kind.exports[fmt](result.problem, result.plan) for fmt in request.exports
    }
    _write(request, outcome)
    outcome.summary = summary_of(kind, result)
    outcome.notes = outcome_lines(result) + target_lines(result, kind.units)
    return outcome


def _write(request: PlanRequest, outcome: PlanOutcome) -> None:
    """The plan file, its exports and its picture, each whole or not at all."""
    kind, result = outcome.kind, outcome.result
    if request.output is not None:
        write_atomic(Path(request.output), outcome.plan_json)
        outcome.written.append(Path(request.output))
        for fmt, snippet in outcome.exports.items():
            path = export_path(request.output, fmt)
            write_atomic(path, export_text(snippet))
            outcome.written.append(path)
    if request.plot is not None:
        assert kind.plot is not None
        draw = kind.plot
        write_picture(
            Path(request.plot),
            lambda tmp: draw(
                result.problem,
                result.plan,
                result.breakdown,
                tmp,
                f"{kind.name} by {result.solver}: ",
            ),
        )
        outcome.written.append(Path(request.plot))


def status_line(result: Result) -> str:
    """What came back and why the solver stopped, apart (a time-capped MILP and a finished search
    are both "feasible")."""
    return result.status.value + (
        f": {result.termination.phrase}" if result.termination is not None else ""
    )


def breakdown_summary(title: str, objective: float | None, breakdown: dict[str, Any]) -> Summary:
    """A plain field/value table of an objective and its breakdown (a problem without a table of
    its own)."""
    rows = [("objective", f"{objective:.6g}" if objective is not None else "-")]
    rows += [(str(k), str(v)) for k, v in breakdown.items()]
    return Summary(title, ("field", "value"), rows)


def summary_of(kind: ProblemKind, result: Result) -> Summary:
    """The problem's table for people of a solved plan."""
    status = status_line(result)
    if kind.summary_table is not None:
        return kind.summary_table(
            SolvedPlan(
                result.problem,
                result.plan,
                result.objective,
                result.breakdown,
                result.solver,
                status,
            )
        )
    return breakdown_summary(
        f"{kind.name} by {result.solver} ({status})", result.objective, result.breakdown
    )


def target_lines(result: Result, units: str) -> list[str]:
    """The ``target`` line under the summary: what running in that framework costs."""
    row = result.stats.get("target")
    if not row:
        return []
    if row["ratio"] is None:
        return [
            f"--target {row['framework']}: the unrestricted solve found no plan "
            f"({row['unrestricted_status']}), so its cost is unknown"
        ]
    return [
        f"--target {row['framework']}: {100 * (row['ratio'] - 1):+.1f}% against the best plan "
        f"of the whole space ({row['unrestricted_objective']:.6g} {units}, "
        f"{result.solver} {row['unrestricted_status']}, same seed and budget"
        + (
            f"; {row['unrestricted_wall_s']:.1f} s more"
            if row.get("unrestricted_wall_s") is not None
            else ""
        )
        + ")"
    ]


def outcome_lines(result: Result) -> list[str]:
    """What a person should know about how the search ended, under the summary table: the
    solver's own words (e.g. SHA-EA's "the StreamRL seed was not beaten"), the gap to the
    proven bound when there is one, and whether a time limit stopped it."""
    said = result.message.strip()
    lines = (
        [said if said.lower().startswith(result.solver.lower()) else f"{result.solver}: {said}"]
        if said
        else []
    )
    if result.bound is not None and result.gap is not None:
        lines.append(
            f"bound {result.bound:.6g}, gap {100 * result.gap:.3g}%"
            + (" (proven optimal)" if result.gap <= 1e-9 else "")
        )
    limit = (
        result.time_limit
        if result.time_limit is not None
        else result.stats.get("default_time_limit")
    )
    if limit is not None:
        whose = "its" if result.time_limit is not None else "the default"
        used = f"took {result.wall_time_s:.1f} s of {whose} {limit:g} s limit"
        lines.append(
            used + ("" if result.time_limit is not None else " (--time-limit S to change it)")
        )
    return lines
