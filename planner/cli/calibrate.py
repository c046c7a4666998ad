"""``rlplan calibrate``: fit hardware profiles to measured step times
(:mod:`costmodels.calibration`).

"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
import yaml
from rich.table import Table

from costmodels.errors import SpecError
from planner.cli.console import fail, out
from planner.io import read_text, write_atomic
from planner.outputs import check_output


def calibrate(
    measurements: Annotated[
        list[Path] | None,
        typer.Option(
            "--measurements",
            help=(
                "CSV of measurements: "
                "kind,gpu,model,tp,batch,context,seconds[,bytes,gpus,tokens]; kinds decode, "
                "prefill, "
                "allreduce, train (repeatable)"
            ),
        ),
    ] = None,
    aic: Annotated[
        bool,
        typer.Option(
            "--aic",
            help=(
                "fit to AIConfigurator's vLLM data shipped in costmodels/data/measured (the "
                "default without --measurements)"
            ),
        ),
    ] = False,
    gpu: Annotated[
        list[str] | None, typer.Option("--gpu", help="only this GPU type (repeatable)")
    ] = None,
    output: Annotated[
        str, typer.Option("--output", "-o", help="profile file to write (YAML; - for stdout)")
    ] = "profiles.yaml",
    as_json: Annotated[
        bool, typer.Option("--json", help="print the profiles as JSON instead of tables")
    ] = False,
) -> None:
    """Fit a hardware profile per GPU type (GEMM, weight-stream and KV-read efficiencies, per-layer
    floors, all-reduce per TP) by least squares on log step times, and the training MFU per GPU
    type from measured training steps; print each fit's residual per TP. About a second per GPU
    type."""
    from costmodels.calibration import CalibrationError, fit_all

    try:
        if output != "-":
            check_output(output, "-o")
        data, sources = _measurements(measurements, aic)
        start = time.time()
        profiles, training = fit_all(data, gpu, " + ".join(sources))
    except (SpecError, CalibrationError) as exc:
        fail(exc)
    doc: dict = {}
    if profiles:
        doc["profiles"] = [p.model_dump(mode="json") for p in profiles]
    if training:
        doc["training"] = [t.model_dump(mode="json") for t in training]
    text = yaml.safe_dump(doc, sort_keys=False)
    if output == "-":
        sys.stdout.write(text)
    else:
        write_atomic(Path(output), text)
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    if output == "-":
        return
    kernel_rows = {n: sum(r.kind != "train" for r in rows) for n, rows in data.items()}
    for table in _tables(profiles, training, kernel_rows, time.time() - start):
        out.print(table)
    out.print(f"wrote {output}", highlight=False)


def _measurements(measurements: list[Path] | None, aic: bool) -> tuple[dict[str, list], list[str]]:
    """The measured rows by GPU type (AIConfigurator's shipped extract and each file), and their
    sources."""
    from costmodels.calibration import aic_measurements, read_measurements

    data: dict[str, list] = {}
    sources: list[str] = []
    if aic or not measurements:
        for name, rows in aic_measurements().items():
            data.setdefault(name, []).extend(rows)
        sources.append("AIConfigurator (aiconfigurator-core 0.12.0, vLLM)")
    for path in measurements or []:
        for name, rows in read_measurements(read_text(path), str(path)).items():
            data.setdefault(name, []).extend(rows)
        sources.append(str(path))
    return data, sources


def _tables(
    profiles: list, training: list, kernel_rows: dict[str, int], seconds: float
) -> list[Table]:
    """The fits for people: per GPU type, per TP, and the training MFU."""
    tables = []
    if profiles:
        per_gpu = Table(title=f"hardware profiles, fitted in {seconds:.1f} s")
        for col in (
            "GPU",
            "rows",
            "RMS log err",
            "GEMM e_c",
            "KV e_kv",
            "µs/layer",
            "µs/layer/seq",
        ):
            per_gpu.add_column(col, justify="left" if col == "GPU" else "right")
        per_tp = Table(title="per TP: fit residual, weight-stream efficiency, all-reduce")
        for col in ("GPU", "TP", "RMS log err", "weights e_w", "all-reduce µs", "all-reduce GB/s"):
            per_tp.add_column(col, justify="left" if col == "GPU" else "right")
        for p in profiles:
            per_gpu.add_row(
                p.gpu,
                str(kernel_rows[p.gpu]) if kernel_rows.get(p.gpu) else "-",
                f"{p.residuals['all']:.3f}" if p.residuals else "derived",
                f"{p.gemm_efficiency:.2f}",
                f"{p.kv_efficiency:.2f}",
                f"{p.layer_floor_us:.1f}",
                f"{p.layer_sequence_us:.3f}",
            )
            for t, e in p.weight_efficiency.items():
                ar = p.allreduce.get(t)
                per_tp.add_row(
                    p.gpu,
                    str(t),
                    f"{p.residuals[f'tp{t}']:.3f}" if p.residuals else "-",
                    f"{e:.2f}",
                    "-" if ar is None else f"{ar.latency_us:.1f}",
                    "-" if ar is None else f"{ar.bus_gb_per_s:.0f}",
                )
        tables += [per_gpu, per_tp]
    if training:
        per_train = Table(title="training: effective MFU fitted to measured steps")
        for col in ("GPU", "steps", "MFU", "RMS log err"):
            per_train.add_column(col, justify="left" if col == "GPU" else "right")
        for t in training:
            per_train.add_row(t.gpu, str(t.steps), f"{t.mfu:.3f}", f"{t.residuals['train']:.3f}")
        tables.append(per_train)
    return tables
