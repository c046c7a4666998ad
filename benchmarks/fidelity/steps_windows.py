"""verl's published steps per 100-step window: how far a run's response lengths drifted while it
was averaged, and what the whole-step checks read once windows are compared like for like.

verl's ``docs/advance/fully_async.md`` (volcengine/verl@b178a3cd) gives, beside each run's mean
``step`` over 400 steps, the run's cumulative wall time after 100, 200, 300 and 400 steps
(``data/verl_published_windows.csv``, copied as published). Window w's mean step is

    step_w = step * (T_w - T_{w-1}) / (T_400 / 4),    T_0 = 0,

the published mean step scaled by the window's share of the run's time, so the steps of a run's
windows average to its published step (the totals also hold validation every 20 steps and
checkpoints, 1.5-3% of them, spread here in proportion).

Why it matters. The document itself says the response lengths "change significantly" as the
steps increase and that this moves training time; it does not publish the lengths. The windows
show how much: a run whose windows are equal kept its lengths (its per-stage means describe one
regime); a run whose later windows are twice its first averaged two regimes into one row. The
checks of the whole-step benchmark (the colocated 64 -> 128 GPU gain, the staleness ablation's
order) are ratios of such averages between runs whose lengths drifted differently; here they are
also read per window, where the runs are at the same point of training.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

WINDOWS_DATA = Path(__file__).parent / "data" / "verl_published_windows.csv"
WINDOW_COLUMNS = ("total_100", "total_200", "total_300", "total_400")
#: a run is stationary when its slowest window is within this of its fastest
STATIONARY = 1.05


def duration_s(text: str) -> float:
    """Seconds of verl's "1d 3h 43m" style durations; ValueError on anything else."""
    m = re.fullmatch(r"\s*(?:(\d+)d)?\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*", text)
    if not text.strip() or m is None:
        raise ValueError(f"not a duration: {text!r}")
    d, h, mins = (int(g) if g else 0 for g in m.groups())
    return d * 86400.0 + h * 3600.0 + mins * 60.0


def read_windows(path: Path = WINDOWS_DATA) -> dict[str, list[float]]:
    """Cumulative seconds after each window, by row id."""
    out = {}
    with path.open(newline="") as fh:
        for row in csv.DictReader(fh):
            out[row["id"]] = [duration_s(row[c]) for c in WINDOW_COLUMNS]
    return out


def window_steps(step_s: float, totals: list[float]) -> list[float]:
    """Each window's mean step (module doc): the published mean step scaled by the window's
    share of the run's time."""
    per = [b - a for a, b in zip([0.0, *totals[:-1]], totals, strict=True)]
    mean = totals[-1] / len(totals)
    return [step_s * p / mean for p in per]


def drift(steps: list[float]) -> dict[str, Any]:
    """Last window over first, slowest over fastest, and whether the run is stationary."""
    return {
        "last_over_first": steps[-1] / steps[0],
        "max_over_min": max(steps) / min(steps),
        "stationary": max(steps) / min(steps) <= STATIONARY,
    }


def analyse(
    rows: dict[str, dict[str, Any]], windows: dict[str, list[float]], staleness_rows: list[str]
) -> dict[str, Any]:
    """Window steps and drift of every row with windows, and what the two cross-run checks read
    per window: step(B3) / step(B5), and the steps of the staleness ablation's rows (in order
    of staleness)."""
    per = {i: window_steps(rows[i]["step_s"], totals) for i, totals in windows.items() if i in rows}
    n = len(WINDOW_COLUMNS)
    order = list(staleness_rows)
    return {
        "steps": per,
        "drift": {i: drift(s) for i, s in per.items()},
        "gain_64_to_128": [per["B3"][w] / per["B5"][w] for w in range(n)],
        "staleness_rows": order,
        "staleness_steps": [[per[i][w] for i in order] for w in range(n)],
    }
