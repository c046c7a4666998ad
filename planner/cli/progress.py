"""The live display of one solve (:data:`planner.planning.Watch`): on a terminal a bar for solvers
that count evaluations and a spinner with the clock for the others; outside one, a progress line
on stderr every few seconds, so a long run in CI or under ``nohup`` is never silent."""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from planner.cli.console import err
from planner.planning import ProgressFn

#: seconds between progress lines on stderr when it is not a terminal (RLPLAN_PROGRESS_EVERY)
PROGRESS_EVERY_S = 5.0


@contextmanager
def watch(what: str, counts: bool) -> Iterator[ProgressFn]:
    """The display for a terminal or for a log, whichever stderr is."""
    display = on_terminal if sys.stderr.isatty() else heartbeat
    with display(what, counts) as progress:
        yield progress


@contextmanager
def on_terminal(what: str, counts: bool) -> Iterator[ProgressFn]:
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = [SpinnerColumn(), TextColumn("[progress.description]{task.description}")]
    if counts:
        columns += [
            BarColumn(),
            TextColumn("{task.fields[count]}"),
            TextColumn("best {task.fields[best]}"),
        ]
    with Progress(*columns, TimeElapsedColumn(), console=err, transient=True) as bar:
        task = bar.add_task(f"solving {what}", total=None, best="-", count="")

        def report(used: int, budget: int, best: float) -> None:
            bar.update(
                task,
                completed=min(used, budget),
                total=budget,
                count=_count(used, budget),
                best=f"{best:.6g}" if best < math.inf else "-",
            )

        yield report


@contextmanager
def heartbeat(what: str, counts: bool) -> Iterator[ProgressFn]:
    state: dict = {"used": None, "budget": None, "best": math.inf}

    def remember(used: int, budget: int, best: float) -> None:
        state.update(used=used, budget=budget, best=best)

    every = float(os.environ.get("RLPLAN_PROGRESS_EVERY", PROGRESS_EVERY_S) or PROGRESS_EVERY_S)
    done = threading.Event()
    start = time.perf_counter()

    def beat() -> None:
        while not done.wait(every):
            line = f"rlplan: solving {what}: {time.perf_counter() - start:.0f} s"
            if state["used"] is not None:
                line += f", {_count(state['used'], state['budget'])}"
            if math.isfinite(state["best"]):
                line += f", best {state['best']:.6g}"
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    thread = threading.Thread(target=beat, name="rlplan-progress", daemon=True)
    thread.start()
    try:
        yield remember
    finally:
        done.set()
        thread.join()


def _count(used: int, budget: int) -> str:
    """Evaluations against the budget, never past it: a search that polishes its best plan after
    the budget is spent (SHA-EA's exact Level 4) has done its budget, not more."""
    return f"{min(used, budget)}/{budget} evaluations"
