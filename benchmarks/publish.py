"""What every standalone benchmark script writes next to its figures: the command that made
them, the rows as CSV and a JSON document (``benchmarks/results/<topic>/``)."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def parse_out_dir(doc: str, default: str, argv: list[str] | None) -> Path:
    """The ``--out`` folder of a script whose only option it is (``default`` unless given),
    created; ``doc``'s first line describes the script in ``--help``."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path(default))
    out = parser.parse_args(argv).out
    out.mkdir(parents=True, exist_ok=True)
    return out


def instance_args(
    doc: str,
    default_out: str,
    clusters: tuple[str, ...],
    workflows: tuple[str, ...],
    argv: list[str] | None,
) -> argparse.Namespace:
    """``--out`` (``default_out`` unless given), ``--clusters`` and ``--workflows`` (the script's
    instances: each cluster x each workflow) and ``--replot`` (redraw the report and plot from
    ``--out``'s results without re-running) of a script over cluster x workflow instances;
    ``doc``'s first line describes it in ``--help``."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(default_out))
    ap.add_argument("--clusters", nargs="*", default=list(clusters))
    ap.add_argument("--workflows", nargs="*", default=list(workflows))
    ap.add_argument(
        "--replot", action="store_true", help="redraw README and plot from --out's results.json"
    )
    return ap.parse_args(argv)


def command_line(module: str, argv: list[str] | None) -> str:
    """``python -m <module> <args>`` as the script was run (``argv`` when called from Python),
    each argument quoted as a shell needs it, so the command can be pasted back."""
    import shlex

    return f"python -m {module} " + shlex.join(sys.argv[1:] if argv is None else argv)


def dash(x: Any, fmt: str) -> str:
    """``x`` formatted for a markdown table, "-" when it is missing."""
    return "-" if x is None else format(x, fmt)


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """One row per dict, columns in order of first appearance (a key a row lacks, or None, is an
    empty cell)."""
    fields = list(dict.fromkeys(k for row in rows for k in row))
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def write_json(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(json.dumps(doc, indent=2) + "\n")


def publish_rows(
    out: Path,
    stem: str,
    rows: list[dict[str, Any]],
    command: str,
    report: Callable[[list[dict[str, Any]], str], str],
    plot: Callable[[list[dict[str, Any]], Path], None],
    md: str | None = None,
) -> None:
    """Write ``<stem>.csv``, ``<stem>.json`` (the command and the rows), the report (``md``,
    default ``<stem>.md``) and the ``<stem>.png`` plot into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / f"{stem}.csv", rows)
    write_json(out / f"{stem}.json", {"command": command, "rows": rows})
    redraw(out, stem, report, plot, md)


def redraw(
    out: Path,
    stem: str,
    report: Callable[[list[dict[str, Any]], str], str],
    plot: Callable[[list[dict[str, Any]], Path], None],
    md: str | None = None,
) -> None:
    """Redraw the report (``md``, default ``<stem>.md``) and ``<stem>.png`` from the published
    ``<stem>.json``, without re-running anything."""
    doc = json.loads((out / f"{stem}.json").read_text())
    (out / (md or f"{stem}.md")).write_text(report(doc["rows"], doc["command"]))
    plot(doc["rows"], out / f"{stem}.png")


def save_figure(fig: Any, path: Path, dpi: int = 120) -> None:
    """Lay the figure out tight, write it to ``path`` at ``dpi`` and free it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
