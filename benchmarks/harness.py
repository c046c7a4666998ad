"""The benchmark harness: every solver of a problem on the same instances, honest rows
(docs/architecture.md, "The cost model is the contract").

A suite is a list of :class:`RunSpec` = instance x solver x options x seed x time limit. Every run
goes through ``planner.solve`` in a worker process, so its objective is the cost model's and its
plan was validated; a crash is a row with status ``error``, a rejected plan a row with status
``invalid`` (never a silent skip). Each row is appended to ``runs.jsonl`` in the output directory
as soon as it finishes, so an interrupted suite resumes where it stopped: runs whose key is
already there are skipped.

Executors: ``local`` runs ``jobs`` processes at a time, one fresh process per run (so peak memory
is that run's, and a run killed for memory or by the watchdog is an error row for that run only);
``ray`` submits the same function as Ray tasks (one fresh worker per run),
to a local Ray started on the fly or to ``ray_address``. Rows do not depend on the executor.

Instances are recipes (:class:`InstanceRef`: a generator call, a preset, a file, or inline
fields), rebuilt inside the worker; the instance id is the hash of the built problem's content.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROW_FIELDS = (
    "key",
    "suite",
    "instance_id",
    "instance",
    "kind",
    "size",
    "solver",
    "exact",
    "options",
    "seed",
    "time_limit",
    "status",
    "termination",
    "objective",
    "primary",
    "bound",
    "gap",
    "wall_time_s",
    "peak_rss_mb",
    "message",
    "violations",
    "extra",
    "trace",
)


@dataclass(frozen=True)
class InstanceRef:
    """How to build one problem: ``generator`` (a function in benchmarks.instances, or any
    ``module:function``) called with ``args``, which makes a whole problem or, with
    ``generates="cluster"``, one field that ``fields`` completes; or ``fields`` for
    ``planner.io.build_problem(kind, fields)`` (each field inline, a file or a preset); or
    ``canned``, the name of one of the kind's canned instances (its descriptor's ``canned()``); or
    ``problem`` (a problem file or preset name)."""

    name: str
    kind: str
    generator: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    fields: dict[str, Any] | None = None
    problem: str | None = None
    generates: str | None = None
    canned: str | None = None

    def build(self, registry: Any = None) -> Any:
        from benchmarks import instances
        from planner.io import build_problem, load_problem
        from planner.registry import resolve

        if self.generator is not None:
            gen = (
                resolve(self.generator)
                if ":" in self.generator
                else getattr(instances, self.generator)
            )
            made = gen(**self.args)
            if self.generates is not None:
                return build_problem(
                    self.kind, {self.generates: made, **(self.fields or {})}, registry=registry
                )
            return made
        if self.fields is not None:
            return build_problem(self.kind, self.fields, registry=registry)
        if self.canned is not None:
            from planner.registry import default_registry

            kind = (registry or default_registry()).kind(self.kind)
            return next(c for c in kind.canned() if c.name == self.canned).build()
        return load_problem(self.problem, registry)


@dataclass(frozen=True)
class RunSpec:
    suite: str
    instance: InstanceRef
    solver: str
    options: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    time_limit: float | None = None
    plugins: tuple[str, ...] = ()

    def key(self) -> str:
        blob = json.dumps(
            {
                "suite": self.suite,
                "instance": asdict(self.instance),
                "solver": self.solver,
                "options": self.options,
                "seed": self.seed,
                "time_limit": self.time_limit,
            },
            sort_keys=True,
            default=str,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _base_row(spec: RunSpec) -> dict[str, Any]:
    """Every column of a row, filled in as far as the spec alone allows."""
    row: dict[str, Any] = dict.fromkeys(ROW_FIELDS)
    row.update(
        key=spec.key(),
        suite=spec.suite,
        instance=spec.instance.name,
        kind=spec.instance.kind,
        solver=spec.solver,
        options=json.dumps(spec.options, sort_keys=True),
        seed=spec.seed,
        time_limit=spec.time_limit,
        message="",
        violations=0,
        extra={},
    )
    return row


def _peak_rss_mb() -> float:
    # Linux reports KiB; a fresh process per run makes this the run's own peak
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _extra(kind: Any, breakdown: dict[str, Any]) -> dict[str, Any]:
    """Problem-specific columns the reports keep next to the objective (the descriptor's
    ``bench_extras``: column name -> breakdown key)."""
    return {column: breakdown.get(key) for column, key in kind.bench_extras.items()}


def execute_run(spec: RunSpec) -> dict[str, Any]:
    """Build the instance, solve it through planner.solve, return one row. Never raises."""
    from benchmarks.instances import instance_id
    from planner.planfile import json_safe
    from planner.registry import build_registry
    from planner.solve import solve

    row = _base_row(spec)
    start = time.perf_counter()
    try:
        registry = build_registry(spec.plugins)
        problem = spec.instance.build(registry)
        kind = registry.kind_of(problem)
        row["instance_id"], row["size"] = (
            instance_id(problem),
            kind.size(problem) if kind.size else 0,
        )
        row["exact"] = registry.get(kind.name, spec.solver).exact
        result = solve(
            problem,
            spec.solver,
            time_limit=spec.time_limit,
            seed=spec.seed,
            registry=registry,
            **spec.options,
        )
        primary = (
            result.breakdown.get(kind.primary_key)
            if kind.primary_key and result.objective is not None
            else None
        )
        row.update(
            status=result.status.value,
            termination=result.termination.value if result.termination is not None else None,
            objective=result.objective,
            primary=primary,
            bound=result.bound,
            gap=result.gap,
            wall_time_s=result.wall_time_s,
            message=result.message[:500],
            violations=len(result.violations),
            extra=_extra(kind, result.breakdown),
            trace=result.stats.get("trace"),
        )
    except Exception as exc:  # bad instance or solver setup: still a row
        row.update(
            status="error",
            wall_time_s=time.perf_counter() - start,
            message=f"{type(exc).__name__}: {exc}"[:500],
            extra={"traceback": traceback.format_exc()[-2000:]},
        )
    row["peak_rss_mb"] = _peak_rss_mb()
    return json_safe(row)


# ---------------------------------------------------------------- executors


def _child(conn: Any, spec: RunSpec, memory_limit_gb: float | None) -> None:
    if memory_limit_gb:
        cap = int(memory_limit_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    conn.send(execute_run(spec))
    conn.close()


def run_timeout(spec: RunSpec) -> float | None:
    """The watchdog: a run may overrun its own time limit (model building, a solver that checks
    the clock rarely) but not forever: twice the limit plus two minutes."""
    return None if spec.time_limit is None else 2 * spec.time_limit + 120


def _local(
    specs: list[RunSpec],
    jobs: int,
    on_row: Callable[[dict[str, Any]], None],
    memory_limit_gb: float | None = None,
) -> None:
    """A fresh process per run (forkserver: forked from a server that has imported rlplan), at
    most ``jobs`` at a time. A process that dies (killed for memory, a segfault in a native
    solver) or outlives its watchdog becomes an error row for that run alone."""
    import multiprocessing as mp
    from multiprocessing.connection import wait as wait_any

    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["planner", "benchmarks.harness", "benchmarks.instances"])
    queue = list(specs)
    running: dict[Any, tuple[RunSpec, Any, float]] = {}
    try:
        while queue or running:
            while queue and len(running) < max(1, jobs):
                spec = queue.pop(0)
                recv, send = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_child, args=(send, spec, memory_limit_gb), daemon=True)
                proc.start()
                send.close()
                running[proc] = (spec, recv, time.monotonic())
            wait_any(
                [p.sentinel for p in running] + [r for _, r, _ in running.values()], timeout=1.0
            )
            for proc, (spec, recv, started) in list(running.items()):
                limit = run_timeout(spec)
                row, closed = None, False
                if recv.poll():
                    try:
                        row = recv.recv()
                    except EOFError:
                        closed = True  # the pipe closed without a row: the process died
                if row is not None:
                    on_row(row)
                elif closed or not proc.is_alive():
                    proc.join(timeout=10)
                    code = proc.exitcode
                    why = (
                        f"killed by signal {-code}"
                        + (" (SIGKILL: out of memory?)" if code == -9 else "")
                        if code and code < 0
                        else f"exit code {code}"
                    )
                    on_row(
                        _crashed_row(
                            spec, RuntimeError(f"the run's process died without a result: {why}")
                        )
                    )
                elif limit is not None and time.monotonic() - started > limit:
                    proc.kill()
                    on_row(
                        _crashed_row(
                            spec,
                            TimeoutError(
                                f"no result after {limit:g} s (watchdog: 2 x time limit + 120 s)"
                            ),
                        )
                    )
                else:
                    continue
                proc.join()
                recv.close()
                del running[proc]
    finally:
        for proc in running:
            proc.kill()


def _ray(
    specs: list[RunSpec], jobs: int, on_row: Callable[[dict[str, Any]], None], address: str | None
) -> None:
    import ray

    started = False
    if not ray.is_initialized():
        ray.init(
            address=address,
            num_cpus=None if address else max(1, jobs),
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
            runtime_env={
                "env_vars": {
                    "PYTHONPATH": os.pathsep.join(
                        filter(None, [str(Path.cwd()), os.environ.get("PYTHONPATH", "")])
                    )
                }
            },
        )
        started = True
    try:
        remote = ray.remote(num_cpus=1, max_calls=1, max_retries=0)(execute_run)
        refs = {remote.remote(s): s for s in specs}
        while refs:
            done, _ = ray.wait(list(refs), num_returns=1)
            for ref in done:
                spec = refs.pop(ref)
                try:
                    on_row(ray.get(ref))
                except Exception as exc:
                    on_row(_crashed_row(spec, exc))
    finally:
        if started:
            ray.shutdown()


def _crashed_row(spec: RunSpec, exc: BaseException) -> dict[str, Any]:
    return {**_base_row(spec), "status": "error", "message": f"{type(exc).__name__}: {exc}"[:500]}


# ---------------------------------------------------------------- suite runner


def load_rows(path: Path) -> list[dict[str, Any]]:
    """Rows already in ``runs.jsonl`` (a torn last line from a killed run is ignored)."""
    rows = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows


def _number(value: Any, *, least: float | None = None, above: float | None = None) -> bool:
    """A finite JSON number (not a boolean), at least ``least`` / above ``above``."""
    import math

    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and (least is None or value >= least)
        and (above is None or value > above)
    )


def _json_object_text(value: Any) -> bool:
    try:
        return isinstance(value, str) and isinstance(json.loads(value), dict)
    except ValueError:
        return False


def _trace_point(point: Any) -> bool:
    """``[t, evaluations, best]`` (``costmodels.solving.Trace.rows``): the anytime plot reads the
    first entry as the time and the last as the best objective."""
    return (
        isinstance(point, list)
        and len(point) >= 2
        and _number(point[0], least=0)
        and (point[-1] is None or _number(point[-1]))
    )


def _row_checks() -> dict[str, tuple[Any, str]]:
    """Each field a row may have (:data:`ROW_FIELDS`, as :func:`_base_row`, :func:`execute_run`
    and :func:`_crashed_row` write it): (the test of its value, what it must be)."""
    from costmodels.solving import Status, Termination

    statuses = sorted(s.value for s in Status)
    terminations = sorted(t.value for t in Termination)
    text = (lambda v: isinstance(v, str), "a string")
    number_or_null = (lambda v: v is None or _number(v), "a finite number or null")
    return {
        "key": text,
        "suite": text,
        "instance_id": (lambda v: v is None or isinstance(v, str), "a string or null"),
        "instance": text,
        "kind": text,
        "size": (lambda v: v is None or _number(v, least=0), "a number >= 0 or null"),
        "solver": text,
        "exact": (lambda v: v is None or isinstance(v, bool), "true, false or null"),
        "options": (_json_object_text, "a JSON object as text (the solver's options)"),
        "seed": (
            lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
            "an integer >= 0",
        ),
        "time_limit": (
            lambda v: v is None or _number(v, above=0),
            "a number of seconds > 0 or null (no limit)",
        ),
        "status": (lambda v: v in statuses, f"one of {', '.join(statuses)}"),
        "termination": (
            lambda v: v is None or v in terminations,
            f"one of {', '.join(terminations)} or null",
        ),
        "objective": number_or_null,
        "primary": number_or_null,
        "bound": number_or_null,
        "gap": number_or_null,
        "wall_time_s": number_or_null,
        "peak_rss_mb": (lambda v: v is None or _number(v, least=0), "a number >= 0 or null"),
        "message": text,
        "violations": (
            lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
            "an integer >= 0",
        ),
        "extra": (lambda v: v is None or isinstance(v, dict), "a JSON object or null"),
        "trace": (
            lambda v: v is None or (isinstance(v, list) and all(map(_trace_point, v))),
            "null or a list of [t, evaluations, best] points",
        ),
    }


#: fields added after runs were published (benchmarks/results/scale and scenarios have none):
#: a row without one still resumes, read as null
_LATER_FIELDS = frozenset({"termination"})


def check_rows(path: Path) -> None:
    """Refuse a ``runs.jsonl`` a resumed run would misread (an edited or foreign file), before
    anything is written: every row an object with each field the harness writes
    (:data:`ROW_FIELDS`) and no other, each of the type and values the harness writes
    (:func:`_row_checks`); an extra column a number (or a string) in every row, and the
    traceback a string. Raises :class:`SpecError` naming the file, the row, the field and the
    value."""
    from costmodels.errors import SpecError

    checks = _row_checks()
    extra_kinds: dict[str, str] = {}  # an extra column's kind (number, text) as first seen
    for n, row in enumerate(load_rows(path), start=1):
        where = f"row {n}"
        if not isinstance(row, dict):
            raise SpecError(where, type(row).__name__, "a run is a JSON object", str(path))
        for name, value in row.items():
            if name not in checks:
                raise SpecError(
                    f"{where}.{name}", value, "not a field rlplan bench writes", str(path)
                )
            test, expected = checks[name]
            if not test(value):
                raise SpecError(f"{where}.{name}", value, expected, str(path))
        missing = [name for name in ROW_FIELDS if name not in row and name not in _LATER_FIELDS]
        if missing:
            raise SpecError(f"{where}.{missing[0]}", None, "missing; every run has it", str(path))
        for name, value in (row.get("extra") or {}).items():
            field = f"{where}.extra.{name}"
            if name == "traceback":
                if not isinstance(value, str):
                    raise SpecError(field, value, "a string", str(path))
                continue
            if value is None:
                continue
            kind = "number" if _number(value) else "text" if isinstance(value, str) else None
            if kind is None:
                raise SpecError(field, value, "a finite number, a string or null", str(path))
            first = extra_kinds.setdefault(name, kind)
            if kind != first:
                raise SpecError(
                    field, value, f"a {first}, as in the rows above (one column)", str(path)
                )


#: the fields of a row that say which run it is (:func:`_base_row`), checked against the run its
#: key names when a run resumes
_IDENTITY = ("suite", "instance", "kind", "solver", "options", "seed", "time_limit")


def check_resumed(specs: Iterable[RunSpec], path: Path) -> None:
    """Refuse a ``runs.jsonl`` row whose key names one of ``specs`` but whose suite, instance,
    kind, solver, options, seed or time limit are another run's (an edited or merged file): a
    resumed run would report it as that run. Raises :class:`SpecError` naming the file, the
    row, the field and the value, before anything is written."""
    from costmodels.errors import SpecError

    runs = {spec.key(): _base_row(spec) for spec in specs}
    for n, row in enumerate(load_rows(path), start=1):
        expected = runs.get(row.get("key")) if isinstance(row, dict) else None
        if expected is None:
            continue
        for name in _IDENTITY:
            if row.get(name) != expected[name]:
                raise SpecError(
                    f"row {n}.{name}",
                    row.get(name),
                    f"{expected[name]!r}, as the run its key {row['key']} names",
                    str(path),
                )


def run_specs(
    specs: Iterable[RunSpec],
    out: Path,
    *,
    executor: str = "local",
    jobs: int = 1,
    ray_address: str | None = None,
    progress: bool = True,
    retry_errors: bool = False,
    memory_limit_gb: float | None = None,
) -> list[dict[str, Any]]:
    """Run every spec not already in ``out/runs.jsonl`` (with ``retry_errors``, rows with status
    error run again and their new row supersedes the old); return all rows of these specs."""
    specs = list(specs)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "runs.jsonl"
    done = {r["key"]: r for r in load_rows(log)}  # a later row for a key supersedes an earlier one
    if retry_errors:
        done = {k: r for k, r in done.items() if r.get("status") != "error"}
    todo = [s for s in specs if s.key() not in done]
    bar = _Progress(len(specs), len(specs) - len(todo), progress)

    def on_row(row: dict[str, Any]) -> None:
        with log.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row, allow_nan=False) + "\n")
        done[row["key"]] = row
        bar.advance(row)

    with bar:
        if todo:
            if executor == "local":
                _local(todo, jobs, on_row, memory_limit_gb)
            elif executor == "ray":
                _ray(todo, jobs, on_row, ray_address)
            else:
                raise ValueError(f"unknown executor {executor!r}; use local or ray")
    return [done[s.key()] for s in specs if s.key() in done]


class _Progress:
    """A rich progress bar over runs (solver and instance of the last finished one); silent when
    not on a terminal or when disabled."""

    def __init__(self, total: int, skipped: int, enabled: bool):
        import sys

        self.enabled = enabled and sys.stderr.isatty()
        self.total, self.skipped = total, skipped
        self.bar = None

    def __enter__(self):
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self.bar.__enter__()
            self.task = self.bar.add_task(
                f"runs ({self.skipped} already done)", total=self.total, completed=self.skipped
            )
        return self

    def advance(self, row: dict[str, Any]) -> None:
        if self.bar is not None:
            self.bar.update(
                self.task,
                advance=1,
                description=f"{row['solver']} on {row['instance']}: {row['status']}",
            )

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.__exit__(*exc)
