"""``rlplan bench``.

The benchmarks layer sits on top of the planner (docs/architecture.md, "The house":
benchmarks -> planner -> ...), so the planner's typer app cannot import it; instead the package
declares :func:`register` under the ``rlplan.commands`` entry-point group (pyproject.toml), and
the console script (``planner.cli.entry``) calls it with its app.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from costmodels.errors import SpecError
from planner.cli.console import fail, out
from planner.outputs import check_output_dir
from planner.registry import PluginError, UnknownSolverError, build_registry

#: the least address space a run is given: each imports numpy, SciPy and the solvers (0.18 GB
#: of address space at the end of the smallest placement solve, measured), and HiGHS's and Ray's
#: threads reserve more, so below a gigabyte every run would end in a MemoryError
MIN_RUN_MEMORY_GB = 1.0
#: the most: the global --memory-limit-gb's bound; past 2^63 bytes setrlimit overflows
MAX_RUN_MEMORY_GB = 1e6


def bench(
    suite: Annotated[
        str | None,
        typer.Option(
            show_default=False,
            help=(
                "smoke (the default), placement, circuits, scenarios, scale, broadcast, "
                "replan, cosched, rollout; custom (the default with --problem)"
            ),
        ),
    ] = None,
    problem: Annotated[
        list[str] | None,
        typer.Option("--problem", help="custom suite: a problem file or preset (repeatable)"),
    ] = None,
    solver: Annotated[
        list[str] | None,
        typer.Option("--solver", help="custom suite: a solver (repeatable; default all)"),
    ] = None,
    time_limit: Annotated[
        list[float] | None,
        typer.Option("--time-limit", help="custom suite: a time limit in s (repeatable)"),
    ] = None,
    seeds: Annotated[
        int, typer.Option(min=1, max=10_000, help="custom suite: seeds per solver")
    ] = 1,
    out_path: Annotated[
        str, typer.Option("--out", help="output directory (rerunning into it skips finished runs)")
    ] = "bench-out",
    jobs: Annotated[int, typer.Option(min=1, max=1024, help="runs in parallel")] = 1,
    executor: Annotated[str, typer.Option(help="local (process pool) or ray")] = "local",
    ray_address: Annotated[
        str | None,
        typer.Option("--ray-address", help="connect to this Ray cluster instead of starting one"),
    ] = None,
    plugin: Annotated[
        list[str] | None,
        typer.Option(help="module:function that registers extra solvers (repeatable)"),
    ] = None,
    retry_errors: Annotated[
        bool, typer.Option("--retry-errors", help="run again the runs that ended with status error")
    ] = False,
    memory_limit_gb: Annotated[
        float | None,
        typer.Option("--memory-limit-gb", help="cap each run's address space (local executor)"),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar or tables")] = False,
) -> None:
    """Run a benchmark suite: every solver on the same instances, checked rows, CSV/Parquet/JSON,
    plots and a markdown report in --out.
    \f
    Over 80 lines for its typer option declarations; the checks are in _checked_arguments and
    _load_suite."""
    # imported here: pandas and matplotlib would cost every `rlplan` command half a second
    from benchmarks.harness import check_resumed, run_specs
    from benchmarks.report import write_report

    suite, out_dir = _checked_arguments(
        suite, problem, solver, time_limit, seeds, jobs, executor, memory_limit_gb, out_path
    )
    s = _load_suite(suite, problem, solver, time_limit, seeds, tuple(plugin or ()))
    try:
        check_resumed(s.runs, out_dir / "runs.jsonl")
    except SpecError as exc:
        fail(str(exc))
    rows = run_specs(
        s.runs,
        out_dir,
        executor=executor,
        jobs=jobs,
        ray_address=ray_address,
        progress=not quiet,
        retry_errors=retry_errors,
        memory_limit_gb=memory_limit_gb,
    )
    command = (
        "rlplan " + " ".join(sys.argv[1:])
        if sys.argv and sys.argv[0].endswith("rlplan")
        else f"rlplan bench --suite {suite} --out {out_dir}"
    )
    summary = write_report(s, rows, out_dir, command)
    if not quiet:
        for table in end_tables(summary):
            out.print(table)
    out.print(
        f"{summary['runs']} runs; "
        + ", ".join(f"{k} {n}" for k, n in summary["statuses"].items())
        + f"; wrote {out_dir}/report.md",
        highlight=False,
    )


def _suite(suite: str | None, problem: list[str] | None) -> str:
    """The suite to run: the one named, or without ``--suite`` smoke (custom with
    ``--problem``); a named suite given with ``--problem`` contradicts itself (exit 2)."""
    from benchmarks.suites import SUITES

    if suite is None:
        return "custom" if problem else "smoke"
    if suite != "custom" and suite not in SUITES:
        fail(f"--suite: unknown suite {suite!r}; known: {', '.join(SUITES)}, custom")
    if suite != "custom" and problem:
        fail(
            f"--suite {suite} and --problem: a named suite runs its own problems; give "
            "--problem alone for a custom suite"
        )
    return suite


def _checked_arguments(
    suite: str | None,
    problem: list[str] | None,
    solver: list[str] | None,
    time_limit: list[float] | None,
    seeds: int,
    jobs: int,
    executor: str,
    memory_limit_gb: float | None,
    out_path: str,
) -> tuple[str, Path]:
    """Refuse a bad combination or value of the options (exit 2, one line), in the order the
    command line reads; the suite (without ``--suite``: smoke, or custom with ``--problem``)
    and the output directory when all hold."""
    suite = _suite(suite, problem)
    if suite == "custom" and not problem:
        fail("--suite custom needs at least one --problem FILE")
    if suite != "custom" and (solver or time_limit):
        fail(
            "--solver and --time-limit go with --problem (a custom suite); the named suites fix "
            "their own"
        )
    if executor not in ("local", "ray"):
        fail(f"--executor: unknown executor {executor!r}; use local or ray")
    if jobs < 1:
        fail(f"--jobs: must be >= 1, got {jobs}")
    if seeds < 1:
        fail(f"--seeds: must be >= 1, got {seeds}")
    for limit in time_limit or []:
        if not limit > 0 or limit != limit or limit == float("inf"):
            fail(f"--time-limit: must be a finite number of seconds > 0, got {limit}")
    if memory_limit_gb is not None and not (
        MIN_RUN_MEMORY_GB <= memory_limit_gb <= MAX_RUN_MEMORY_GB
    ):
        fail(
            f"--memory-limit-gb: must be {MIN_RUN_MEMORY_GB:g} to {MAX_RUN_MEMORY_GB:g} GB (each "
            f"run's address space), got {memory_limit_gb}"
        )
    if (
        not out_path.strip()
    ):  # Path("") is ".": an empty --out would write the report into the current directory
        fail("--out: empty path; give the directory for the report")
    out_dir = Path(out_path)
    from benchmarks.harness import check_rows

    try:
        check_output_dir(out_dir, "--out")
        check_rows(out_dir / "runs.jsonl")  # a resumed run reads them
    except SpecError as exc:
        fail(str(exc))
    if executor == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            fail("--executor ray needs Ray: pip install 'rlplan[ray]'")
    return suite, out_dir


def _load_suite(
    suite: str,
    problem: list[str] | None,
    solver: list[str] | None,
    time_limit: list[float] | None,
    seeds: int,
    plugins: tuple[str, ...],
) -> Any:
    """The plugins registered, then the named or custom suite; refused (exit 2) when a plugin,
    a problem or a solver is bad or the suite has no run."""
    from benchmarks.suites import custom, get_suite

    if plugins and os.getcwd() not in sys.path:
        sys.path.insert(
            0, os.getcwd()
        )  # plugins import from the current directory, as with `python -m`
    try:
        # a bad plugin is a usage error, before any run starts
        build_registry(plugins, origin="--plugin")
    except PluginError as exc:
        fail(str(exc))
    try:
        s = (
            custom(problem, solver, time_limit, seeds, plugins)
            if suite == "custom"
            else get_suite(suite, plugins)
        )
    except SpecError as exc:
        fail(str(exc))
    except UnknownSolverError as exc:
        fail(f"--solver: {exc}")
    if not s.runs:
        fail(
            f"--problem: no solver to run on {', '.join(problem or [suite])} (only brute force is "
            "registered, or none)"
        )
    return s


def end_tables(summary: dict[str, Any]) -> list[Any]:
    """What ``rlplan bench`` prints when done: one short table per solver configuration (runs,
    how many ended with a plan, the ratio to the best known, the wall time) and the suite's
    comparisons; the full report stays in report.md."""
    import math

    from rich.table import Table

    from benchmarks.report import run_label

    def num(v: Any, fmt: str = ".3g") -> str:
        return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)

    tables = []
    for kind in dict.fromkeys(r["kind"] for r in summary["solvers"]):
        t = Table(title=f"{summary['suite']}: {kind} (ratio = objective / best known)")
        for col in ("solver", "runs", "plan", "optimal", "median ratio", "worst ratio", "median s"):
            t.add_column(
                col, justify="left" if col == "solver" else "right", no_wrap=col == "solver"
            )
        for r in (r for r in summary["solvers"] if r["kind"] == kind):
            label = run_label(
                r
            )  # a summary row has solver, options and time_limit (None: no limit) like a run row
            t.add_row(
                label,
                str(int(r["runs"])),
                str(int(r["ok"])),
                str(int(r["optimal"])),
                num(r["median_ratio"]),
                num(r["worst_ratio"]),
                num(r["median_wall_s"], ".2g"),
            )
        tables.append(t)
    if summary["comparisons"]:
        comps = Table(title="comparisons (per instance, median over seeds)")
        for col in ("comparison", "instances", "median", "min - max"):
            comps.add_column(col, justify="left" if col == "comparison" else "right")
        for c in summary["comparisons"]:
            comps.add_row(
                c["comparison"],
                str(c["instances"]),
                num(c["median"]),
                f"{num(c['min'])} - {num(c['max'])}",
            )
        tables.append(comps)
    return tables


def register(app: typer.Typer) -> None:
    """Add ``bench`` to the ``rlplan`` app (the ``rlplan.commands`` entry point)."""
    app.command()(bench)
