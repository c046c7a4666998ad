"""Fit a :class:`~costmodels.profiles.HardwareProfile` to measured step times (``rlplan
calibrate``).

Measurements are decode steps (``B`` sequences at a KV length of ``context`` tokens each) and
prefills (``B`` prompts of ``context`` tokens each) of a known model at a known TP on one GPU type,
in seconds of kernel time (what vLLM's benchmark scripts and profilers report per step), and
all-reduces of ``bytes`` over ``tp`` GPUs (what nccl-tests or vLLM's custom all-reduce benchmark
reports); or AIConfigurator's database (``costmodels/data/measured``). The fit is nonlinear least
squares
(``scipy.optimize.least_squares``, trust-region reflective) on the log of predicted / measured,
so a 10 % miss weighs the same on a 2 ms step as on a 200 ms one; the parameters are fitted in
log space inside physical bounds (no efficiency above the peak). Which parameters a data set pins
down: the per-TP weight efficiencies and the per-layer floor need at least two models with
different layers-to-weights ratios; the GEMM efficiency needs steps past the roofline (prefills,
or batches of a few hundred); the all-reduce of a TP needs that TP, and is pinned down well only
by all-reduce measurements (in whole steps its few microseconds hide in the weight stream). Where
all-reduces were
measured at two or more message sizes of a TP, the profile keeps them as a table and steps
interpolate in it (:class:`~costmodels.profiles.AllReduceTerm`); the fit then pins ``a`` and ``b``
(used outside the table, and the ``allreduce`` residual) to those rows as an affine law. A fit with
fewer than
:data:`MIN_ROWS_PER_PARAMETER` rows per parameter, or that does not converge, is refused.

CSV columns (one row per measurement; ``#`` lines are comments; ``bytes`` only for all-reduces,
which leave model, batch and context empty; ``gpus`` and ``tokens`` only for training steps)::

    kind,gpu,model,tp,batch,context,seconds,bytes,gpus,tokens
    decode,H100-SXM,Qwen3-8B,2,32,4096,0.00713,,,
    prefill,H100-SXM,Qwen3-8B,2,4,2048,0.0412,,,
    allreduce,H100-SXM,,8,,,0.0000194,2097152,,
    train,H800,Qwen2.5-14B,,,,61.2,,32,2433024

A ``train`` row is one RL training step as verl's or ROLL's timing log reports it (``timing_s/
update_actor`` plus the log-prob passes and the weight sync): ``tokens`` trained (prompts and
responses of the batch) on ``gpus`` GPUs in ``seconds``. Its fit (:func:`fit_training`) is the
one number the training model (:mod:`costmodels.rl_training`) does not derive, the effective
MFU, by least squares on the log of the same step's predicted / measured time.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from costmodels.catalog import GPUSpec, ModelSpec, get_gpu, get_model
from costmodels.errors import SpecError
from costmodels.limits import MAX_BYTES, MAX_GLOBAL_BATCH, MAX_NUM_SEQS, MAX_SECONDS, MAX_TOKENS
from costmodels.profiles import AllReduceTerm, HardwareProfile
from costmodels.rl_training import TrainingFit

COLUMNS = ("kind", "gpu", "seconds")  # and per kind the fields of :data:`FIELDS`
#: the numeric fields a row of each kind must fill
FIELDS = {
    "decode": ("tp", "batch", "context", "seconds"),
    "prefill": ("tp", "batch", "context", "seconds"),
    "allreduce": ("tp", "seconds", "bytes"),
    "train": ("gpus", "tokens", "seconds"),
}
MIN_ROWS_PER_PARAMETER = 3
#: parameters in log space: efficiencies in [0.001, 1], times in µs, bus bandwidth in GB/s
_BOUNDS = {
    "e": (1e-3, 1.0),
    "c0": (1e-3, 1e4),
    "c1": (1e-7, 1e3),
    "a": (1e-3, 1e4),
    "b": (0.1, 1e5),
}
_START = {"e_w": 0.8, "e_c": 0.6, "e_kv": 0.6, "c0": 10.0, "c1": 0.05, "a": 10.0, "b": 100.0}


@dataclass(frozen=True)
class Measurement:
    kind: Literal["decode", "prefill", "allreduce", "train"]
    model: ModelSpec | None
    tp: int
    batch: int
    context: int
    seconds: float
    where: str = ""
    bytes: float = 0.0
    gpus: int = 0
    tokens: float = 0.0


def read_measurements(text: str, source: str) -> dict[str, list[Measurement]]:
    """Measurements by GPU type from CSV text (module doc); a bad row is a SpecError naming the
    file, the row, the field and the value."""
    # comment lines are blanked, not dropped, so a row's number is its line in the file
    lines = ["" if ln.lstrip().startswith("#") else ln for ln in text.splitlines()]
    skipped = next((i for i, ln in enumerate(lines) if ln.strip()), len(lines))
    reader = csv.DictReader(io.StringIO("\n".join(lines[skipped:])))
    header = [h.strip() for h in reader.fieldnames or []]
    problem = _header_problem(header)
    if problem:
        raise SpecError("header", ",".join(header), problem, source)
    reader.fieldnames = header
    out: dict[str, list[Measurement]] = {}
    for row in reader:
        where = f"row {reader.line_num + skipped}"
        if None in row:  # DictReader's key for values past the header's columns
            raise SpecError(where, ",".join(row[None])[:60], "more fields than the header", source)
        gpu_name, measurement = _read_row(row, where, source)
        out.setdefault(gpu_name, []).append(measurement)
    if not out:
        raise SpecError("", source, "holds no measurements", source)
    return out


def _header_problem(header: list[str]) -> str | None:
    """What is wrong with a measurements CSV's header: a column twice, one no row kind reads,
    or one every row needs missing (None when it is fine)."""
    known = (*COLUMNS, "model", *sorted({f for fs in FIELDS.values() for f in fs} - {*COLUMNS}))
    for h in header:
        if header.count(h) > 1:
            return f"column {h!r} appears twice"
        if h not in known:
            return f"unknown column {h!r}; known: {', '.join(known)}"
    missing = [c for c in COLUMNS if c not in header]
    return f"needs columns {','.join(COLUMNS)} (missing {missing[0]})" if missing else None


def _read_row(row: dict[str, Any], where: str, source: str) -> tuple[str, Measurement]:
    """One CSV row as its GPU type and measurement; refused in the order kind, GPU, model, each
    number of the kind, TP."""
    kind = (row["kind"] or "").strip()
    if kind not in FIELDS:
        raise SpecError(f"{where}.kind", kind, "decode, prefill, allreduce or train", source)
    try:
        gpu = get_gpu((row["gpu"] or "").strip())
    except SpecError as exc:
        raise SpecError(f"{where}.gpu", exc.value, exc.reason, source) from None
    model = None
    if kind != "allreduce":
        try:
            model = get_model((row["model"] or "").strip())
        except SpecError as exc:
            raise SpecError(f"{where}.model", exc.value, exc.reason, source) from None
    numbers = _row_numbers(row, kind, where, source)
    tp = int(numbers["tp"])
    if tp & (tp - 1) or tp > 64:
        raise SpecError(f"{where}.tp", row["tp"], "a power of two up to 64", source)
    if kind == "allreduce" and tp == 1:
        raise SpecError(f"{where}.tp", row["tp"], "an all-reduce spans at least 2 GPUs", source)
    if model is not None and kind in ("decode", "prefill") and model.query_heads % tp:
        raise SpecError(
            f"{where}.tp",
            row["tp"],
            f"TP must divide {model.name}'s {model.query_heads} attention heads",
            source,
        )
    return gpu.name, Measurement(
        kind,
        model,
        tp,
        int(numbers["batch"]),
        int(numbers["context"]),  # type: ignore[arg-type]
        numbers["seconds"],
        f"{source} {where}",
        numbers["bytes"],
        int(numbers["gpus"]),
        numbers["tokens"],
    )


#: the least time a measured row can take, s: no GPU kernel or collective completes faster
#: than its launch (a few µs; 0.1 µs leaves room)
MIN_MEASURED_S = 1e-7
#: the most each number of a row can be (costmodels.limits), and how a refusal says it
_ROW_LIMITS = {
    "seconds": (MAX_SECONDS, f"at most {MAX_SECONDS:g} s"),
    "context": (MAX_TOKENS, f"at most {MAX_TOKENS:,} tokens"),
    "batch": (MAX_NUM_SEQS, f"at most {MAX_NUM_SEQS:,} sequences"),
    "tokens": (float(MAX_TOKENS) * MAX_GLOBAL_BATCH, "at most 2^44 tokens"),
    "bytes": (MAX_BYTES, f"at most {MAX_BYTES:g} bytes"),
}


def _row_numbers(row: dict[str, Any], kind: str, where: str, source: str) -> dict[str, float]:
    """The row's numbers its kind needs (each positive and finite, counts integral), over the
    defaults of those it does not."""
    numbers = {
        "tp": 1.0,
        "batch": 0.0,
        "context": 0.0,
        "bytes": 0.0,
        "gpus": 0.0,
        "tokens": 0.0,
    }
    for field in FIELDS[kind]:
        raw = (row.get(field) or "").strip()
        try:
            value = float(raw)
        except ValueError:
            raise SpecError(
                f"{where}.{field}",
                raw,
                "not a number" if raw else f"a {kind} row needs {field}",
                source,
            ) from None
        integer = field in ("tp", "batch", "context", "gpus")
        if not math.isfinite(value) or value <= 0 or (integer and value != int(value)):
            raise SpecError(
                f"{where}.{field}",
                raw,
                "a positive integer" if integer else f"a positive number of {field}",
                source,
            )
        if field == "gpus" and value > 1 << 20:
            raise SpecError(f"{where}.{field}", raw, "at most 1 048 576 GPUs", source)
        high = _ROW_LIMITS.get(field)
        if high is not None and not value <= high[0]:
            raise SpecError(f"{where}.{field}", raw, high[1], source)
        if field == "seconds" and value < MIN_MEASURED_S:
            # below any kernel launch: a unit slip (ns for s) that would pin the fit at a bound
            raise SpecError(f"{where}.{field}", raw, "at least 1e-7 s (a kernel launch)", source)
        numbers[field] = value
    return numbers


def predict(
    profile: HardwareProfile, gpu: GPUSpec, m: Measurement, affine_allreduce: bool = False
) -> float:
    """The profile's time for measurement ``m``; with ``affine_allreduce`` an all-reduce row is
    priced by the affine term alone (what the fit pins ``a`` and ``b`` to: the measured table
    would reproduce its own rows whatever they are)."""
    if m.kind == "allreduce":
        ar = profile.allreduce[m.tp]
        return ar.affine_seconds(m.bytes) if affine_allreduce else ar.seconds(m.bytes)
    assert m.model is not None
    if m.kind == "decode":
        return profile.decode_s(m.model, gpu, m.tp, m.batch, m.batch * m.context)
    return profile.prefill_s(m.model, gpu, m.tp, m.batch, m.context)


def _layout(tps: list[int]) -> list[str]:
    names = [f"e_w{t}" for t in tps] + ["e_c", "e_kv", "c0", "c1"]
    for t in tps:
        if t > 1:
            names += [f"a{t}", f"b{t}"]
    return names


def allreduce_tables(rows: list[Measurement]) -> dict[int, tuple[tuple[float, float], ...]]:
    """Per TP, the measured all-reduce times at two or more message sizes (the median where one
    size was measured more than once), ascending: the table :class:`AllReduceTerm` interpolates."""
    by: dict[int, dict[float, list[float]]] = {}
    for r in rows:
        if r.kind == "allreduce":
            by.setdefault(r.tp, {}).setdefault(r.bytes, []).append(r.seconds)
    return {
        t: tuple((b, float(np.median(v))) for b, v in sorted(sizes.items()))
        for t, sizes in by.items()
        if len(sizes) >= 2
    }


def _profile(
    gpu: str,
    names: list[str],
    x: np.ndarray,
    source: str = "",
    residuals: dict[str, float] | None = None,
    tables: dict[int, tuple[tuple[float, float], ...]] | None = None,
) -> HardwareProfile:
    tables = tables or {}
    v = dict(zip(names, np.exp(x).tolist(), strict=True))
    tps = sorted(int(n[3:]) for n in names if n.startswith("e_w"))
    return HardwareProfile(
        gpu=gpu,
        source=source,
        weight_efficiency={t: min(v[f"e_w{t}"], 1.0) for t in tps},
        gemm_efficiency=min(v["e_c"], 1.0),
        kv_efficiency=min(v["e_kv"], 1.0),
        layer_floor_us=v["c0"],
        layer_sequence_us=v["c1"],
        allreduce={
            t: AllReduceTerm(
                latency_us=v[f"a{t}"], bus_gb_per_s=v[f"b{t}"], measured=tables.get(t, ())
            )
            for t in tps
            if t > 1
        },
        residuals=residuals or {},
    )


def vector(profile: HardwareProfile) -> tuple[list[str], np.ndarray]:
    """The profile's parameters as the fit sees them: names and log values."""
    tps = sorted(profile.weight_efficiency)
    names = _layout(tps)
    values = {f"e_w{t}": e for t, e in profile.weight_efficiency.items()}
    values.update(
        e_c=profile.gemm_efficiency,
        e_kv=profile.kv_efficiency,
        c0=profile.layer_floor_us,
        c1=profile.layer_sequence_us,
    )
    for t, ar in profile.allreduce.items():
        values[f"a{t}"], values[f"b{t}"] = ar.latency_us, ar.bus_gb_per_s
    return names, np.log([values[n] for n in names])


#: catalog GPU types with no measurements of their own, each given the fitted efficiencies of a
#: measured part as fractions of its own peaks (HBM, FLOP/s, link), and why
DERIVED = {"H800": "H100-SXM", "A100-40GB": "A100-80GB", "H20": "H100-SXM", "L4": "L40S"}
DERIVED_WHY = {
    "H800": (
        "an H100 SXM (same SMs, clocks and 3.35 TB/s HBM3) with NVLink cut from 900 to 400 GB/s: "
        "measured silicon"
    ),
    "A100-40GB": (
        "the same A100 SXM4 die and NVLink3 as the 80 GB part, with 1 555 GB/s HBM2 instead of "
        "2 039 HBM2e: assumes its kernels reach the same share of that bandwidth"
    ),
    "H20": (
        "a Hopper part on NVLink 900 GB/s with a cut-down SM count (148 dense TFLOP/s) and "
        "4.0 TB/s HBM3: ASSUMED, no measurement; its decode is deeper in the memory-bound regime "
        "than the "
        "H100's, where the fitted weight and KV efficiencies, not the GEMM one, decide"
    ),
    "L4": (
        "an Ada part on PCIe like the L40S, with 300 GB/s GDDR6 and 121 dense TFLOP/s: ASSUMED, no "
        "measurement; PCIe all-reduces as fitted on the L40S box"
    ),
}


def derive_profile(base: HardwareProfile, gpu_name: str) -> HardwareProfile:
    """``base``'s kernels on ``gpu_name`` (:data:`DERIVED_WHY` says why that is fair): the
    efficiencies are shares of each part's own peaks, so they carry over; every all-reduce's
    bandwidth scales by the ratio of the two links (catalog, one direction) and its latency stays
    (NVLink's per-call cost does not depend on the link count)."""
    ratio = get_gpu(gpu_name).link_gb_per_s / get_gpu(base.gpu).link_gb_per_s
    why = DERIVED_WHY.get(gpu_name, "")
    return base.model_copy(
        update={
            "gpu": gpu_name,
            "source": (
                f"{base.source}; derived from {base.gpu}: {why}; all-reduce bandwidth x "
                f"{ratio:.3f} (link {gpu_name} / {base.gpu})"
            ),
            "allreduce": {t: a.scaled(ratio) for t, a in base.allreduce.items()},
            "residuals": {},
        }
    )


def _family(name: str) -> str:
    """A parameter's family, which sets its bounds and start: ``e_w`` for every ``e_w<tp>``, ``a``
    and ``b`` for every TP's all-reduce; the others are their own."""
    return name.rstrip("0123456789") if name[0] in "ab" or name.startswith("e_w") else name


class CalibrationError(ValueError):
    """A fit that cannot be trusted: too few measurements, or no convergence."""


def _case(m: Measurement) -> tuple[Any, ...]:
    """What a prediction reads of a measurement: equal cases are predicted once."""
    return (m.kind, m.model.name if m.model else "", m.tp, m.batch, m.context, m.bytes)


def fit_profile(gpu_name: str, rows: list[Measurement], source: str = "") -> HardwareProfile:
    """The profile of ``gpu_name`` that best explains ``rows`` (module doc), with its residuals."""
    from scipy.optimize import least_squares

    gpu = get_gpu(gpu_name)
    rows = [r for r in rows if r.kind != "train"]  # training steps: fit_training
    tps = sorted({r.tp for r in rows if r.kind != "allreduce"})
    stray = sorted({r.tp for r in rows if r.kind == "allreduce"} - set(tps))
    if stray:
        raise CalibrationError(
            f"{source or gpu_name}: all-reduces of {gpu_name} over TP{stray[0]} but no steps at "
            "that TP to fit with them"
        )
    names = _layout(tps)
    if len(rows) < MIN_ROWS_PER_PARAMETER * len(names):
        raise CalibrationError(
            f"{source or gpu_name}: {len(rows)} measurements of {gpu_name} for {len(names)} "
            "parameters "
            f"(TP {', '.join(map(str, tps))}); a fit needs at least "
            f"{MIN_ROWS_PER_PARAMETER * len(names)}"
        )
    families = [_family(n) for n in names]
    lower = [math.log(_BOUNDS["e" if f.startswith("e_") else f][0]) for f in families]
    upper = [math.log(_BOUNDS["e" if f.startswith("e_") else f][1]) for f in families]
    x0 = [math.log(_START[f]) for f in families]
    measured = np.log([r.seconds for r in rows])
    tables = allreduce_tables(rows)
    # a case measured more than once is predicted once (repeated runs of one sweep are common;
    # every residual call predicts every case, and scipy's Jacobian calls it once a parameter)
    first: dict[tuple[Any, ...], Measurement] = {}
    for r in rows:
        first.setdefault(_case(r), r)
    distinct = list(first.values())
    index = {case: k for k, case in enumerate(first)}
    of_row = np.array([index[_case(r)] for r in rows])

    def residual(x: np.ndarray) -> np.ndarray:  # least_squares keeps x inside the bounds
        p = _profile(gpu_name, names, x, tables=tables)
        predicted = np.log([predict(p, gpu, r, affine_allreduce=True) for r in distinct])
        return predicted[of_row] - measured

    result = least_squares(
        residual, np.array(x0), bounds=(lower, upper), method="trf", x_scale=1.0, max_nfev=2000
    )
    if not result.success or result.status <= 0:
        raise CalibrationError(
            f"{source or gpu_name}: the fit of {gpu_name} did not converge ({result.message})"
        )
    res = result.fun
    residuals = {"all": float(np.sqrt(np.mean(res**2)))}
    for t in tps:
        sel = np.array([r.tp == t for r in rows])
        residuals[f"tp{t}"] = float(np.sqrt(np.mean(res[sel] ** 2)))
    for kind in ("decode", "prefill", "allreduce"):
        sel = np.array([r.kind == kind for r in rows])
        if sel.any():
            residuals[kind] = float(np.sqrt(np.mean(res[sel] ** 2)))
    return _profile(
        gpu_name, names, result.x, source, {k: round(v, 4) for k, v in residuals.items()}, tables
    )


def aic_measurements() -> dict[str, list[Measurement]]:
    """The shipped AIConfigurator extracts (``costmodels/data/measured``) as measurements, the
    cases that fit their instance only (as the fidelity report)."""
    from costmodels.decode import Instance

    base = Path(__file__).parent / "data" / "measured"
    out: dict[str, list[Measurement]] = {}
    for name, kind, col in (
        ("aic_vllm_decode.csv", "decode", "context"),
        ("aic_vllm_prefill.csv", "prefill", "prompt_tokens"),
    ):
        with (base / name).open(newline="") as fh:
            for i, r in enumerate(csv.DictReader(fh), start=2):
                model, gpu, tp = get_model(r["model"]), get_gpu(r["gpu"]), int(r["tp"])
                batch, context = int(r["batch"]), int(r[col])
                if Instance(model, gpu, tp).kv_capacity_tokens() < batch * context:
                    continue
                seconds = float(r["step_s"] if kind == "decode" else r["prefill_s"])
                out.setdefault(gpu.name, []).append(
                    Measurement(kind, model, tp, batch, context, seconds, f"{name} row {i}")
                )  # type: ignore[arg-type]
    with (base / "aic_vllm_allreduce.csv").open(newline="") as fh:
        for i, r in enumerate(csv.DictReader(fh), start=2):
            out.setdefault(r["gpu"], []).append(
                Measurement(
                    "allreduce",
                    None,
                    int(r["tp"]),
                    0,
                    0,
                    float(r["seconds"]),
                    f"aic_vllm_allreduce.csv row {i}",
                    float(r["bytes"]),
                )
            )
    return out


def fit_training(
    gpu_name: str, rows: list[Measurement], source: str = "", gpus_per_node: int = 8
) -> TrainingFit:
    """The training efficiency of ``gpu_name`` that best explains its ``train`` rows (module
    doc): the step is the training model's passes plus its fixed part
    (:class:`~costmodels.rl_training.TrainingProfile`), a row's passes A / e + B at efficiency e
    (the GEMMs scale with 1 / e, the TP, PP and DP traffic does not; A and B are read off the model
    at e = 1 and e = 1/2), fitted in log space inside [0.001, 1] (bounded scalar minimisation,
    scipy), with its residual. A row gives tokens, not sequences: the model costs them as
    constant sequences of ``REFERENCE_SEQUENCE`` tokens (``BatchShape.of_tokens``)."""
    from scipy.optimize import minimize_scalar

    from costmodels.rl_training import TrainingProfile

    rows = [r for r in rows if r.kind == "train"]
    if len(rows) < MIN_ROWS_PER_PARAMETER:
        raise CalibrationError(
            f"{source or gpu_name}: {len(rows)} training steps of {gpu_name}; a fit of the "
            "training MFU needs at least "
            f"{MIN_ROWS_PER_PARAMETER}"
        )
    assert all(r.model is not None for r in rows)
    at_one, at_half = TrainingProfile(mfu=1.0), TrainingProfile(mfu=0.5)
    names = [r.model.name for r in rows]  # type: ignore[union-attr]
    full = np.array(
        [at_one.compute_s(n, gpu_name, r.gpus, r.tokens) for n, r in zip(names, rows, strict=True)]
    )
    half = np.array(
        [at_half.compute_s(n, gpu_name, r.gpus, r.tokens) for n, r in zip(names, rows, strict=True)]
    )
    compute, comm = half - full, 2 * full - half  # A and B of A / e + B
    fixed = comm + np.array(
        [
            at_one.fixed_s(n, gpu_name, r.gpus, gpus_per_node)
            for n, r in zip(names, rows, strict=True)
        ]
    )
    measured = np.log([r.seconds for r in rows])
    if np.any(np.exp(measured) <= fixed):
        worst = rows[int(np.argmax(fixed - np.exp(measured)))]
        raise CalibrationError(
            f"{worst.where or source}: a training step of {worst.seconds:g} s is shorter than its "
            "optimizer step and "
            f"weight sync alone ({fixed[int(np.argmax(fixed - np.exp(measured)))]:.3g} s): not a "
            "whole step"
        )

    def loss(log_mfu: float) -> float:
        return float(np.sum((np.log(compute / math.exp(log_mfu) + fixed) - measured) ** 2))

    result = minimize_scalar(
        loss, bounds=(math.log(1e-3), 0.0), method="bounded", options={"xatol": 1e-6}
    )
    if not result.success:
        raise CalibrationError(
            f"{source or gpu_name}: the training fit of {gpu_name} did not converge "
            f"({result.message})"
        )
    mfu = float(math.exp(result.x))
    rms = math.sqrt(loss(result.x) / len(rows))
    return TrainingFit(
        gpu=gpu_name,
        mfu=round(mfu, 6),
        source=source,
        residuals={"train": round(rms, 4)},
        steps=len(rows),
    )


def fit_all(
    data: dict[str, list[Measurement]], gpus: list[str] | None, source: str
) -> tuple[list[HardwareProfile], list[TrainingFit]]:
    """Every fit ``data`` (measurements by GPU type) supports, for the GPU types ``gpus`` (None:
    all measured): a hardware profile per type with kernel rows, a training fit per type with
    ``train`` rows, and a derived profile for each catalog type without data of its own that
    shares a fitted type's silicon (:data:`DERIVED`). A type asked for with no data, neither its
    own nor its silicon's, is a :class:`~costmodels.errors.SpecError` naming ``--gpu``."""
    for name in gpus or []:
        if name not in data and DERIVED.get(name) not in data:
            raise SpecError(
                "--gpu", name, f"no measurements of it (measured: {', '.join(sorted(data))})"
            )
    kernel = {n: [r for r in rows if r.kind != "train"] for n, rows in data.items()}
    train = {n: [r for r in rows if r.kind == "train"] for n, rows in data.items()}
    wanted = sorted({DERIVED.get(n, n) if n not in data else n for n in gpus} if gpus else data)
    profiles = [fit_profile(n, kernel[n], source) for n in wanted if kernel.get(n)]
    training = [fit_training(n, train[n], source) for n in wanted if train.get(n)]
    fitted = {p.gpu: p for p in profiles}
    profiles += [
        derive_profile(fitted[base], name)
        for name, base in DERIVED.items()
        if base in fitted and name not in data and (not gpus or name in gpus)
    ]
    return profiles, training
