"""Speed of the generation simulator, side by side with the plain per-token stepper
(docs/architecture.md, "Online policies on the generation simulator").

    python -m benchmarks.generation_speed --out benchmarks/results/generation

Cases: (a) one generation step of 16 384 requests (1024 GPUs x 16 requests per GPU, group-aware
heavy-tailed lengths up to 16k) on 128 TP8 instances — the engine alone (the stepper would take
minutes); (b) 512 requests x up-to-8k tokens on one instance, engine vs stepper, at several TP and
length shapes, same completion times checked. Writes ``results.csv``, ``results.json``,
``speedup.png`` and ``report.md`` (machine, versions, this command).
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import numpy as np

from benchmarks.publish import command_line, parse_out_dir, save_figure
from costmodels.catalog import get_gpu, get_model
from costmodels.decode import Instance
from costmodels.generation.engine import simulate
from costmodels.generation.reference import reference_run
from costmodels.generation.request_traces import synthetic_trace
from costmodels.generation.requests import Request


def _timed(fn, repeat: int = 3) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def run(out_dir: Path) -> list[dict]:
    m, g = get_model("Qwen3-8B"), get_gpu("H800")
    rows = []
    big = synthetic_trace(1024, 16, 16384, seed=0)
    secs, res = _timed(lambda: simulate([Instance(m, g, 8)] * 128, big), repeat=2)
    rows.append(
        {
            "case": "16384 requests / 128 x TP8 (1024 GPUs), heavy-tailed <= 16k",
            "requests": len(big),
            "engine_s": secs,
            "reference_s": None,
            "speedup": None,
            "preemptions": res.preemptions,
            "makespan_s": res.makespan_s,
            "max_rel_diff": None,
        }
    )
    rng = np.random.default_rng(0)
    shapes = {"uniform 1..8k": lambda: int(rng.integers(1, 8193)), "all 8k": lambda: 8192}
    for shape, draw in shapes.items():
        reqs = [Request(i, 512, draw()) for i in range(512)]
        for tp in (2, 8):
            inst = [Instance(m, g, tp)]
            e_s, res = _timed(lambda inst=inst, reqs=reqs: simulate(inst, reqs))
            r_s, ref = _timed(
                lambda inst=inst, reqs=reqs: reference_run(inst, reqs, [0] * len(reqs)), repeat=1
            )
            diff = max(abs(res.records[i].completed - t) / t for i, t in ref.items())
            rows.append(
                {
                    "case": f"512 requests x {shape}, 1 x TP{tp}",
                    "requests": 512,
                    "engine_s": e_s,
                    "reference_s": r_s,
                    "speedup": r_s / e_s,
                    "preemptions": res.preemptions,
                    "makespan_s": res.makespan_s,
                    "max_rel_diff": diff,
                }
            )
    return rows


def write_csv(rows: list[dict], path: Path) -> None:
    """The rows as CSV, a case's name quoted (it holds commas), floats to 6 significant digits."""
    import csv

    with path.open("w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        out.writeheader()
        for r in rows:
            out.writerow(
                {k: "" if v is None else f"{v:.6g}" if isinstance(v, float) else v
                 for k, v in r.items()}
            )  # fmt: skip


def write(rows: list[dict], out_dir: Path, command: str) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    write_csv(rows, out_dir / "results.csv")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    versions = {"python": platform.python_version(), "numpy": np.__version__}
    machine = f"{platform.processor() or platform.machine()}, {platform.platform()}"
    (out_dir / "results.json").write_text(
        json.dumps(
            {"command": command, "machine": machine, "versions": versions, "rows": rows}, indent=2
        )
        + "\n"
    )
    paired = [r for r in rows if r["speedup"]]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.barh([r["case"] for r in paired], [r["speedup"] for r in paired])
    ax.axvline(50, color="red", ls="--", lw=1, label="target 50x")
    ax.set_xscale("log")
    ax.set_xlabel("per-token stepper time / event engine time")
    ax.legend()
    save_figure(fig, out_dir / "speedup.png", dpi=110)
    table = [
        "| case | engine s | stepper s | speed-up | preemptions | makespan s | max rel. diff |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:

        def f(v, fmt):
            return "" if v is None else format(v, fmt)

        table.append(
            f"| {r['case']} | {r['engine_s']:.3f} | {f(r['reference_s'], '.2f')} | "
            f"{f(r['speedup'], '.1f')} | {r['preemptions']} | {r['makespan_s']:.1f} | "
            f"{f(r['max_rel_diff'], '.1e')} |"
        )
    (out_dir / "report.md").write_text(
        "# Generation simulator speed\n\nCommand: `"
        + command
        + "`\n\nMachine: "
        + machine
        + f"\n\nVersions: {versions}\n\n"
        "Best of 2-3 runs for the engine, one run of the stepper; both run the same rules and "
        "give the same completion "
        "times (last column).\n\n" + "\n".join(table) + "\n\n![speed-up](speedup.png)\n"
    )


def main(argv: list[str] | None = None) -> None:
    out = parse_out_dir(__doc__, "bench-out/generation", argv)
    rows = run(out)
    write(
        rows,
        out,
        command_line("benchmarks.generation_speed", argv),
    )
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()
