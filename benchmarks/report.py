"""Tables, plots and the markdown report of a suite run.

From the rows (``runs.jsonl``) it writes, into the output directory:

* ``runs.csv`` and ``runs.parquet``: one tidy row per run, with ``best_known`` (the best objective
  an exact solver proved optimal on that instance in this suite) and ``ratio`` to it;
* ``summary.json``: per (problem, solver, time limit) statistics, the suite's comparisons, the
  machine and versions;
* ``ratio_box.png`` (objective / best known, per solver), ``time_vs_size.png`` (wall time against
  instance size, log scales), ``anytime.png`` (best objective / best known against elapsed time
  from the solvers' traces: SHA-EA, EA, the ILP's incumbents);
* ``report.md``: the machine, the versions, the exact command, the tables and the plots' names.

Lexicographic objectives (a descriptor's ``primary_key``; circuits: uncovered demand first, App. D)
compare the ``primary`` column first: a run whose primary is worse than the optimum's is worse
whatever its objective; its ratio is left empty and counted in ``worse_primary``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

VERSIONED = ("rlplan", "highspy", "ortools", "PuLP", "numpy", "pandas", "deap", "ray", "matplotlib")
OK = ("optimal", "feasible")


def machine() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    with contextlib.suppress(ValueError, OSError):
        mem_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    return {
        "host": platform.node(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": mem_gb,
        "python": sys.version.split()[0],
    }


def versions() -> dict[str, str]:
    out = {}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def tidy(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows as a DataFrame with best_known, ratio, and the problem-specific extras as columns."""
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    extra = pd.json_normalize(
        df["extra"].apply(lambda e: {k: v for k, v in (e or {}).items() if k != "traceback"})
    )
    extra.index = df.index
    df = pd.concat([df.drop(columns=["extra"]), extra.add_prefix("x_")], axis=1)
    ok = df["status"].isin(OK) & df["objective"].notna()
    exact = ok & (df["status"] == "optimal") & df["exact"].fillna(False).astype(bool)
    best = df[exact].groupby("instance_id")["objective"].min()
    df["best_known"] = df["instance_id"].map(best)
    df["ratio"] = np.where(
        ok & df["best_known"].notna(),
        df["objective"] / df["best_known"].where(df["best_known"] > 0),
        np.nan,
    )
    if "primary" in df and df["primary"].notna().any():
        opt_primary = df[exact].groupby("instance_id")["primary"].min()
        worse = ok & (df["primary"] > df["instance_id"].map(opt_primary) + 1e-9)
        df["worse_primary"] = worse
        df.loc[worse, "ratio"] = np.nan
    else:
        df["worse_primary"] = False
    df["time_limit"] = df["time_limit"].astype(float)
    return df


def solver_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per (problem, solver, options, time limit): the runs, counted by status (``ok`` = with a
    plan, optimal or feasible; ``optimal`` of those; then each status without a plan, so that
    ok + infeasible + no_solution + invalid + error = runs), the ratios to the best known and
    the times and memory."""

    def summarise(g: pd.DataFrame) -> pd.Series:
        r = g["ratio"].dropna()
        return pd.Series(
            {
                "runs": len(g),
                "ok": int(g["status"].isin(OK).sum()),
                "optimal": int((g["status"] == "optimal").sum()),
                # proved that no plan exists
                "infeasible": int((g["status"] == "infeasible").sum()),
                "no_solution": int((g["status"] == "no_solution").sum()),
                "invalid": int((g["status"] == "invalid").sum()),
                "error": int((g["status"] == "error").sum()),
                "worse_primary": int(g["worse_primary"].sum()),
                # why the runs stopped, apart from what they returned: the clock
                # deciding is not reproducible
                "time_capped": int((g["termination"] == "time_limit").sum())
                if "termination" in g
                else 0,
                "median_ratio": r.median() if len(r) else np.nan,
                "worst_ratio": r.max() if len(r) else np.nan,
                "median_wall_s": g["wall_time_s"].median(),
                "max_wall_s": g["wall_time_s"].max(),
                "peak_rss_mb": g["peak_rss_mb"].max(),
            }
        )

    keys = ["kind", "solver", "options", df["time_limit"].fillna(-1).rename("time_limit")]
    out = df.groupby(keys, dropna=False).apply(summarise, include_groups=False).reset_index()
    out["time_limit"] = out["time_limit"].replace(-1, np.nan)
    return out


def comparison_table(df: pd.DataFrame, comparisons: list[Any]) -> pd.DataFrame:
    rows = []
    ok = df[df["status"].isin(OK)]
    for c in comparisons:
        a = ok[ok["solver"] == c.numerator]
        b = ok[
            (ok["solver"] == c.denominator) & (ok["options"] == "{}")
        ]  # the denominator at its defaults
        # one value per (instance, time limit, options) on the numerator side: the median over seeds
        keys = ["instance_id", a["time_limit"].fillna(-1), "options"]
        ga = a.groupby(keys)[c.metric].median()
        gb = b.groupby("instance_id")[c.metric].median()
        # lexicographic objectives: compare only between equal primaries (circuits: equal coverage)
        lexi = c.metric == "objective" and "primary" in ok and ok["primary"].notna().any()
        ca = a.groupby(keys)["primary"].median() if lexi else None
        cb = b.groupby("instance_id")["primary"].median() if lexi else None
        pairs, differ = [], 0
        for k, va in ga.items():
            iid = k[0]
            if iid not in gb.index:
                continue
            if lexi and abs(ca[k] - cb[iid]) > 1e-9:
                differ += 1
                continue
            pairs.append((va, gb[iid]))
        ratios = [x / y for x, y in pairs if y and y > 0 and math.isfinite(x)]
        rows.append(
            {
                "comparison": c.title,
                "numerator": c.numerator,
                "denominator": c.denominator,
                "metric": c.metric,
                "primary_differs": differ,
                "instances": len(ratios),
                "median": float(np.median(ratios)) if ratios else np.nan,
                "min": float(np.min(ratios)) if ratios else np.nan,
                "max": float(np.max(ratios)) if ratios else np.nan,
                "geomean": float(np.exp(np.mean(np.log(ratios)))) if ratios else np.nan,
            }
        )
    return pd.DataFrame(rows)


def run_label(row: pd.Series) -> str:
    """``sha-ea (evaluations=300) 60 s``: a run's solver, options and limit as a person reads
    them (the options are stored as JSON text)."""
    tl = row.get("time_limit")
    raw = row.get("options", "{}")
    try:
        options = json.loads(raw) if isinstance(raw, str) else dict(raw or {})
    except (TypeError, ValueError):
        options = {"options": raw}
    opts = (
        " ("
        + ", ".join(
            f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in options.items()
        )
        + ")"
        if options
        else ""
    )
    return row["solver"] + opts + ("" if pd.isna(tl) else f" {tl:g} s")


def plain_log(ax: Any, which: str = "xy") -> None:
    """Log scale on ``which`` axes with plain tick labels (0.1, 1, 10, 1.2 instead of 10^-1 and
    1.2x10^0): a ratio axis spanning 1.0-1.3 would otherwise show only minor ticks in powers."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    for name in which:
        axis = ax.xaxis if name == "x" else ax.yaxis
        (ax.set_xscale if name == "x" else ax.set_yscale)("log")

        def minor(
            v: float, _: Any, axis: Any = axis
        ) -> str:  # 2 and 5 labelled only on a short axis
            lo, hi = sorted(axis.get_view_interval())
            return f"{v:g}" if lo > 0 and hi / lo < 30 else ""

        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
        axis.set_minor_formatter(FuncFormatter(minor))


def _panel_per_kind(data: pd.DataFrame) -> tuple[Any, list[tuple[Any, str]]]:
    """A figure with one panel per problem kind in ``data``, side by side: (figure, [(axes,
    kind)])."""
    kinds = sorted(data["kind"].unique())
    fig, axes = plt.subplots(
        1, len(kinds), figsize=(6 * len(kinds), 4.5), constrained_layout=True, squeeze=False
    )
    return fig, list(zip(axes[0], kinds, strict=True))


def plot_ratios(df: pd.DataFrame, path: Path) -> bool:
    data = df[df["ratio"].notna()]
    if data.empty:
        return False
    fig, panels = _panel_per_kind(data)
    for ax, kind in panels:
        d = data[data["kind"] == kind].copy()
        d["label"] = d.apply(run_label, axis=1)
        labels = sorted(d["label"].unique())
        ax.boxplot(
            [d[d["label"] == lab]["ratio"] for lab in labels], tick_labels=labels, showfliers=True
        )
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_title(f"{kind}: objective / best known (exact)")
        ax.set_ylabel("ratio (1 = optimal, lower is better)")
        ax.tick_params(axis="x", rotation=30)
        for tick in ax.get_xticklabels():
            tick.set_horizontalalignment("right")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def _size_label(kind: str) -> str:
    from planner.registry import default_registry

    known = {k.name: k.size_label for k in default_registry().kinds()}
    return known.get(kind, "size")


def plot_time_vs_size(df: pd.DataFrame, path: Path) -> bool:
    data = df[df["status"].isin(OK) & (df["size"].fillna(0) > 0) & (df["wall_time_s"] > 0)]
    if data.empty:
        return False
    fig, panels = _panel_per_kind(data)
    for ax, kind in panels:
        d = data[data["kind"] == kind]
        for solver, g in d.groupby("solver"):
            g = g.groupby("size")["wall_time_s"].median()
            ax.plot(g.index, g.values, marker="o", label=solver)
        plain_log(ax)
        ax.set_xlabel(_size_label(kind))
        ax.set_ylabel("wall time, s (median)")
        ax.set_title(f"{kind}: solve time vs instance size")
        ax.legend(fontsize=8)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def plot_anytime(df: pd.DataFrame, solvers: tuple[str, ...], path: Path) -> bool:
    data = df[df["solver"].isin(solvers) & df["trace"].notna() & df["best_known"].notna()]
    if data.empty:
        return False
    instances = sorted(data["instance"].unique())[:6]
    cols = min(3, len(instances))
    rows_ = math.ceil(len(instances) / cols)
    fig, axes = plt.subplots(
        rows_, cols, figsize=(5 * cols, 4 * rows_), constrained_layout=True, squeeze=False
    )
    for ax in axes.flat[len(instances) :]:
        ax.set_visible(False)
    for ax, inst in zip(axes.flat, instances, strict=False):
        for _, r in data[data["instance"] == inst].iterrows():
            pts = [(p[0], p[-1]) for p in r["trace"] if p[-1] is not None and math.isfinite(p[-1])]
            if not pts:
                continue
            t = [max(p[0], 1e-3) for p in pts] + [r["wall_time_s"]]
            y = [p[1] / r["best_known"] for p in pts] + [pts[-1][1] / r["best_known"]]
            ax.step(t, y, where="post", label=f"{run_label(r)} seed {r['seed']}")
        plain_log(ax)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_title(inst, fontsize=9)
        ax.set_xlabel("elapsed s")
        ax.set_ylabel("best objective / optimum")
        ax.legend(fontsize=6)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def _markdown(df: pd.DataFrame, floatfmt: str = ".4g") -> str:
    if df.empty:
        return "(none)\n"
    cols = list(df.columns)

    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return "" if math.isnan(v) else format(v, floatfmt)
        return str(v)

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def write_report(suite: Any, rows: list[dict[str, Any]], out: Path, command: str) -> dict[str, Any]:
    """Write every output file for ``rows`` of ``suite``; return the JSON summary."""
    df = tidy(rows)
    flat = df.copy()
    if not flat.empty:
        flat["trace"] = flat["trace"].apply(lambda t: json.dumps(t) if t is not None else None)
    # the Parquet bytes first: a column Arrow cannot store then fails before runs.csv is
    # rewritten, not after (the outputs of one run stay together)
    parquet = flat.to_parquet(index=False)
    flat.to_csv(out / "runs.csv", index=False)
    (out / "runs.parquet").write_bytes(parquet)
    table = solver_table(df) if not df.empty else pd.DataFrame()
    comps = comparison_table(df, suite.comparisons) if not df.empty else pd.DataFrame()
    plots = {}
    if not df.empty:
        for name, ok in (
            ("ratio_box.png", plot_ratios(df, out / "ratio_box.png")),
            ("time_vs_size.png", plot_time_vs_size(df, out / "time_vs_size.png")),
            (
                "anytime.png",
                plot_anytime(df, suite.anytime, out / "anytime.png") if suite.anytime else False,
            ),
        ):
            if ok:
                plots[name] = str(out / name)
    summary = {
        "suite": suite.name,
        "description": suite.description,
        "command": command,
        "machine": machine(),
        "versions": versions(),
        "runs": len(df),
        "statuses": df["status"].value_counts().to_dict() if not df.empty else {},
        "solvers": json.loads(table.to_json(orient="records")) if not table.empty else [],
        "comparisons": json.loads(comps.to_json(orient="records")) if not comps.empty else [],
        "plots": sorted(plots),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    m, v = summary["machine"], summary["versions"]
    md = (
        [
            f"# rlplan bench: suite `{suite.name}`",
            "",
            suite.description,
            "",
            f"Command: `{command}`",
            "",
            f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, {m['platform']}, "
            f"Python {m['python']}",
            "",
            "Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()),
            "",
            f"Runs: {len(df)}; statuses: "
            + ", ".join(f"{k} {n}" for k, n in summary["statuses"].items()),
            "",
            "## Per solver",
            "",
            "ratio = objective / best known (an exact solver's proven optimum on the same "
            "instance); "
            "wall times measured side by side in this run.",
            "",
            _markdown(table),
            "## Comparisons (per instance, median over seeds)",
            "",
            _markdown(comps),
            "## Plots",
            "",
        ]
        + [f"- `{p}`" for p in sorted(plots)]
        + [""]
    )
    (out / "report.md").write_text("\n".join(md), encoding="utf-8")
    return summary
