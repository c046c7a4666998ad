"""`rlplan calibrate` and the profile fit (costmodels.calibration): parameters recovered from
measurements a known profile generates, bad measurement files refused by row and field, and the
shipped profiles reproducible from the shipped measurements."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from costmodels.calibration import Measurement, fit_profile, predict, read_measurements, vector
from costmodels.catalog import get_gpu, get_model
from costmodels.errors import SpecError
from costmodels.profiles import AllReduceTerm, HardwareProfile
from tests.conftest import run_cli, run_cli_json

KNOWN = HardwareProfile(
    gpu="H100-SXM",
    weight_efficiency={1: 0.82, 2: 0.78, 4: 0.7, 8: 0.55},
    gemm_efficiency=0.7,
    kv_efficiency=0.6,
    layer_floor_us=20.0,
    layer_sequence_us=0.2,
    allreduce={
        2: AllReduceTerm(latency_us=5.0, bus_gb_per_s=150.0),
        4: AllReduceTerm(latency_us=8.0, bus_gb_per_s=120.0),
        8: AllReduceTerm(latency_us=12.0, bus_gb_per_s=90.0),
    },
)


def _synthetic(profile: HardwareProfile, noise: float, seed: int) -> list[Measurement]:
    """What a benchmark sweep of three models would measure on a GPU that behaves as ``profile``."""
    rng = np.random.default_rng(seed)
    gpu = get_gpu(profile.gpu)
    rows = [
        Measurement("allreduce", None, tp, 0, 0, 1.0, bytes=tokens * 4096 * 2)
        for tp in (2, 4, 8)
        for tokens in (1, 16, 256, 4096, 16384)
    ]
    for model in ("Qwen3-8B", "Qwen3-32B", "Llama-3.1-8B"):
        m = get_model(model)
        for tp in (1, 2, 4, 8):
            for batch in (1, 2, 4, 8, 16, 32, 64, 128, 256):
                for context in (1024, 2048, 4096, 8192, 16384):
                    rows.append(Measurement("decode", m, tp, batch, context, 1.0))
            for batch in (1, 4, 16):
                for tokens in (512, 1024, 2048, 4096, 8192):
                    rows.append(Measurement("prefill", m, tp, batch, tokens, 1.0))
    return [
        Measurement(
            r.kind,
            r.model,
            r.tp,
            r.batch,
            r.context,
            predict(profile, gpu, r) * math.exp(rng.normal(0, noise)),
            bytes=r.bytes,
        )
        for r in rows
    ]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fit_recovers_a_known_profile_within_5_percent(seed):
    """1 % lognormal noise, about what repeated CUDA-graph step timings scatter by; the weakest
    parameter is the per-sequence floor c1 (0.2 µs per layer: under 1 % of a small step)."""
    fitted = fit_profile("H100-SXM", _synthetic(KNOWN, noise=0.01, seed=seed))
    names, truth = vector(KNOWN)
    _, found = vector(fitted)
    errors = {n: abs(math.exp(f - t) - 1) for n, t, f in zip(names, truth, found, strict=True)}
    assert max(errors.values()) <= 0.05, errors
    assert fitted.residuals["all"] < 0.015


def test_a_case_measured_twice_is_weighed_twice_and_predicted_once():
    """Repeated runs of one case enter the least squares once each (two runs of a case weigh
    twice), as before the fit predicted each distinct case once: the fit on a sweep measured
    three times over is the fit on the sweep once, whose every case carries the same weight."""
    once = _synthetic(KNOWN, noise=0.01, seed=0)
    _, alone = vector(fit_profile("H100-SXM", once))
    _, thrice = vector(fit_profile("H100-SXM", once * 3))
    assert np.allclose(alone, thrice, atol=1e-6)
    # a case measured twice with different times is pulled to their geometric mean
    skew = once + [Measurement(r.kind, r.model, r.tp, r.batch, r.context, r.seconds * 1.5,
                               bytes=r.bytes) for r in once[:40]]  # fmt: skip
    _, skewed = vector(fit_profile("H100-SXM", skew))
    assert not np.allclose(alone, skewed, atol=1e-6)


def test_fit_refuses_too_few_measurements():
    from costmodels.calibration import CalibrationError

    with pytest.raises(CalibrationError, match="needs at least"):
        fit_profile("H100-SXM", _synthetic(KNOWN, 0.0, 0)[-10:], "few.csv")


CSV = "kind,gpu,model,tp,batch,context,seconds\n"


@pytest.mark.parametrize(
    ("row", "field", "value"),
    [
        ("step,H100-SXM,Qwen3-8B,2,8,1024,0.01", "row 2.kind", "step"),
        ("train,H100-SXM,Qwen3-8B,2,8,1024,0.01", "row 2.gpus", "train row needs gpus"),
        ("decode,H100-SXM,Qwen3-8B,3,8,1024,0.01", "row 2.tp", "3"),
        ("decode,H100-SXM,Qwen3-8B,2,8,1024,-0.01", "row 2.seconds", "-0.01"),
        ("decode,H100-SXM,Qwen3-8B,2,eight,1024,0.01", "row 2.batch", "eight"),
        ("decode,H100-SXM,Qwen3-8B,2,8,1024,nan", "row 2.seconds", "nan"),
        ("decode,H100-SXM,GPT-9,2,8,1024,0.01", "row 2.model", "GPT-9"),
        # impossible values a fit would take (a unit slip, a typo): refused, not fitted
        ("decode,H100-SXM,Qwen3-8B,2,8,1024,1e30", "row 2.seconds", "1e30"),
        ("decode,H100-SXM,Qwen3-8B,2,8,1024,1e-30", "row 2.seconds", "1e-30"),
        ("decode,H100-SXM,Qwen3-8B,2,8,1000000000000,0.01", "row 2.context", "1000000000000"),
        ("decode,H100-SXM,Qwen3-8B,2,100000000,1024,0.01", "row 2.batch", "100000000"),
        ("decode,H100-SXM,Qwen3-8B,64,8,1024,0.01", "row 2.tp", "attention heads"),
        ("decode,H100-SXM,Qwen3-8B,2,8,1024,0.01,7", "row 2", "more fields"),
    ],
)
def test_bad_measurement_rows_are_named(row, field, value):
    with pytest.raises(SpecError) as exc:
        read_measurements(CSV + row + "\n", "m.csv")
    assert exc.value.source == "m.csv" and exc.value.field == field and value in str(exc.value)


@pytest.mark.parametrize(
    ("header", "words"),
    [
        ("kind,gpu,model,tp,batch,context,seconds,extra", ["unknown column 'extra'"]),
        ("kind,gpu,model,tp,batch,seconds,seconds", ["'seconds' appears twice"]),
        ("kind,gpu,model,tp,batch,context", ["missing seconds"]),
    ],
)
def test_a_bad_measurements_header_is_named(header, words):
    with pytest.raises(SpecError) as exc:
        read_measurements(header + "\ndecode,H100-SXM,Qwen3-8B,2,8,1024,0.01\n", "m.csv")
    assert exc.value.field == "header" and all(w in str(exc.value) for w in words)


def test_a_bad_row_is_named_by_its_line_in_the_file_comments_included():
    text = "# measured on\n# our cluster\n" + CSV + "# a note\n"
    text += "decode,H100-SXM,Qwen3-8B,2,8,1024,0.01\ndecode,H100-SXM,Qwen3-8B,2,8,1024,-1\n"
    with pytest.raises(SpecError) as exc:
        read_measurements(text, "m.csv")
    assert exc.value.field == "row 6.seconds"


def test_calibrate_cli_writes_profiles_and_refuses_bad_input(tmp_path):
    good = tmp_path / "m.csv"
    rows = _synthetic(KNOWN, 0.01, 3)
    good.write_text(
        CSV.replace("\n", ",bytes\n")
        + "".join(
            f"{r.kind},H100-SXM,{r.model.name if r.model else ''},{r.tp},{r.batch or ''},"
            f"{r.context or ''},{r.seconds!r},{r.bytes or ''}\n"
            for r in rows
        )
    )
    out = tmp_path / "p.yaml"
    proc = run_cli("calibrate", "--measurements", str(good), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    profile = HardwareProfile.model_validate(yaml.safe_load(out.read_text())["profiles"][0])
    assert abs(profile.gemm_efficiency / KNOWN.gemm_efficiency - 1) < 0.05

    bad = tmp_path / "bad.csv"
    bad.write_text(
        CSV + "decode,H100-SXM,Qwen3-8B,2,8,1024,0.01\ndecode,H100-SXM,Qwen3-8B,2,8,1024,soon\n"
    )
    proc = run_cli("calibrate", "--measurements", str(bad), "-o", str(tmp_path / "q.yaml"))
    assert (
        proc.returncode == 2
        and "bad.csv" in proc.stderr
        and "row 3.seconds" in proc.stderr
        and "soon" in proc.stderr
    )
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "q.yaml").exists()
    few = tmp_path / "few.csv"
    few.write_text(CSV + "decode,H100-SXM,Qwen3-8B,2,8,1024,0.01\n")
    proc = run_cli("calibrate", "--measurements", str(few), "-o", str(tmp_path / "q.yaml"))
    assert proc.returncode == 2 and "few.csv" in proc.stderr and "needs at least" in proc.stderr
    proc = run_cli("calibrate", "--gpu", "B999", "-o", str(tmp_path / "q.yaml"))
    assert proc.returncode == 2 and "B999" in proc.stderr


def test_shipped_profiles_are_what_calibrate_fits_to_the_shipped_measurements():
    shipped = {
        p["gpu"]: HardwareProfile.model_validate(p)
        for p in yaml.safe_load(
            (
                Path(__file__).parents[1] / "costmodels" / "data" / "profiles" / "aic-vllm.yaml"
            ).read_text()
        )["profiles"]
    }
    assert set(shipped) == {
        "H100-SXM",
        "H200",
        "A100-80GB",
        "L40S",
        "H800",
        "A100-40GB",
        "H20",
        "L4",
    }, "every catalog GPU"
    h800, h100 = shipped["H800"], shipped["H100-SXM"]
    assert (
        h800.weight_efficiency == h100.weight_efficiency and "derived from H100-SXM" in h800.source
    )
    assert h800.allreduce[8].bus_gb_per_s == pytest.approx(
        h100.allreduce[8].bus_gb_per_s * 400 / 900
    )
    for derived in ("H20", "L4"):  # no measurement of their own: the profile says it is assumed
        assert "ASSUMED" in shipped[derived].source and not shipped[derived].residuals
    proc = run_cli("calibrate", "--gpu", "H200", "-o", "-")
    assert proc.returncode == 0, proc.stderr
    fresh = HardwareProfile.model_validate(yaml.safe_load(proc.stdout)["profiles"][0])
    _, a = vector(fresh)
    _, b = vector(shipped["H200"])
    assert np.allclose(a, b, rtol=0, atol=1e-6)
    assert all(
        p.residuals["all"] <= (0.15 if gpu == "L40S" else 0.08)
        for gpu, p in shipped.items()
        if p.residuals
    )


def _shipped() -> dict[str, HardwareProfile]:
    from planner.io import load_profiles

    return load_profiles("aic-vllm")


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_a_profile_in_the_efficiency_set_drives_decode_prefill_and_the_simulator(tp):
    from costmodels.decode import Instance, ServingParams, step_coefficients
    from costmodels.efficiency import Efficiency

    profiles = _shipped()
    m, g = get_model("Qwen3-8B"), get_gpu("H200")
    inst = Instance(m, g, tp, ServingParams(efficiency=Efficiency(profiles=profiles)))
    for batch, context in ((1, 1024), (32, 32 * 4096), (256, 256 * 2048)):
        step = inst.decode_step(batch, context)
        assert step["step_s"] - step["overhead_s"] == pytest.approx(
            profiles["H200"].decode_s(m, g, tp, batch, context), rel=1e-12
        )
        coeff = step_coefficients(inst, batch)
        for c in (0.0, context, 3 * context):
            assert coeff.at(c) == pytest.approx(inst.decode_step(batch, c)["step_s"], rel=1e-9)
    assert inst.prefill_batch([2048] * 4) == pytest.approx(
        profiles["H200"].prefill_s(m, g, tp, 4, 2048), rel=1e-12
    )
    without_l4 = {k: v for k, v in profiles.items() if k != "L4"}
    other = Instance(
        m, get_gpu("L4"), tp, ServingParams(efficiency=Efficiency(profiles=without_l4))
    )
    assert other.decode_step(8, 8192) == Instance(m, get_gpu("L4"), tp).decode_step(8, 8192), (
        "no L4 profile: the default judge"
    )


def test_profile_option_on_estimate_and_simulate(tmp_path):
    proc = run_cli(
        "estimate",
        "generation",
        "--model",
        "Qwen3-8B",
        "--gpu",
        "H100-SXM",
        "--profile",
        "aic-vllm",
    )
    assert proc.returncode == 0 and "profile fitted to AIConfigurator" in proc.stdout.replace(
        "\n", " "
    )
    data = yaml.safe_load(
        Path(__file__)
        .parents[1]
        .joinpath("costmodels", "data", "profiles", "aic-vllm.yaml")
        .read_text()
    )
    twice = tmp_path / "twice.yaml"
    twice.write_text(yaml.safe_dump({"profiles": [data["profiles"][0]] * 2}))
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text(yaml.safe_dump({"profiles": [{**data["profiles"][0], "gpu": "B999"}]}))
    for path, words in (
        (twice, ["twice.yaml", "profiles[1].gpu"]),
        (unknown, ["unknown.yaml", "B999"]),
        (tmp_path / "none.yaml", ["none.yaml"]),
    ):
        proc = run_cli("simulate", "generation", "--profile", str(path))
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert all(w in proc.stderr for w in words), proc.stderr


def test_plan_profile_is_recorded_and_validated(tmp_path):
    """`rlplan plan --profile` puts the profiles into the problem the plan file records, so
    `validate` re-checks it on the same kernels; problems without decode kernels refuse it."""
    import json

    out = tmp_path / "replan.json"
    proc = run_cli("plan", "replan", "--profile", "aic-vllm", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    # the summary names the profiles the plan was costed with as the user's
    assert "kernels: aic-vllm (yours for " in " ".join(proc.stdout.split())
    doc = json.loads(out.read_text())
    assert "H800" in doc["inputs"]["state"]["serving"]["efficiency"]["profiles"]
    assert run_cli("validate", str(out)).returncode == 0
    default, flat = tmp_path / "default.json", tmp_path / "flat.json"
    assert run_cli("plan", "replan", "-q", "-o", str(default)).returncode == 0
    assert json.loads(default.read_text())["objective"] == doc["objective"], (
        "the shipped profiles are the default"
    )
    assert run_cli("plan", "replan", "--profile", "flat", "-q", "-o", str(flat)).returncode == 0
    flat_doc = json.loads(flat.read_text())
    assert (
        flat_doc["objective"] != doc["objective"]
        and flat_doc["inputs"]["state"]["serving"]["efficiency"]["kernels"] == "flat"
    )
    proc = run_cli("plan", "cosched", "--profile", "aic-vllm", "-o", str(tmp_path / "c.json"))
    assert (
        proc.returncode == 2 and "--profile" in proc.stderr and not (tmp_path / "c.json").exists()
    )


def test_engine_option_and_flat_kernels_on_the_cli(tmp_path):
    """--engine picks a shipped serving mode (eager is slower per step: kernel launches per layer),
    a mode that does not exist is a usage error naming the choices; --profile flat is the 0.x
    judge."""

    def makespan(*extra: str) -> float:
        est = run_cli_json(
            "estimate", "generation", "--model", "Qwen2.5-14B", "--gpu", "H800", "--json", *extra
        )
        return min(r["makespan_s"] for r in est["configurations"])

    default, eager, flat = makespan(), makespan("--engine", "eager"), makespan("--profile", "flat")
    assert eager > default and flat != default
    proc = run_cli("estimate", "generation", "--engine", "turbo")
    assert (
        proc.returncode == 2
        and "--engine" in proc.stderr
        and "cuda-graph" in proc.stderr
        and "turbo" in proc.stderr
    )
    proc = run_cli("plan", "cosched", "--engine", "eager", "-o", str(tmp_path / "c.json"))
    assert proc.returncode == 2 and "--engine" in proc.stderr and not (tmp_path / "c.json").exists()


def test_allreduce_table_interpolates_between_measured_sizes():
    """A measured table is reproduced at its points, interpolated linearly between them, and
    continued with the affine bandwidth outside (never below the fixed latency)."""
    ar = AllReduceTerm(
        latency_us=10.0,
        bus_gb_per_s=2.0,
        measured=((8192.0, 30e-6), (524288.0, 444e-6), (1048576.0, 583e-6)),
    )
    assert ar.seconds(524288.0) == pytest.approx(444e-6)
    assert ar.seconds(786432.0) == pytest.approx((444e-6 + 583e-6) / 2)
    assert ar.seconds(2097152.0) == pytest.approx(583e-6 + 1048576.0 / 2e9)
    assert ar.seconds(1.0) == pytest.approx(
        30e-6 - 8191.0 / 2e9
    )  # below the table: the affine slope down to it
    assert AllReduceTerm(
        latency_us=10.0, bus_gb_per_s=2.0, measured=((1e6, 20e-6), (2e6, 40e-6))
    ).seconds(1.0) == pytest.approx(10e-6)
    sizes = np.geomspace(1, 1 << 24, 200)
    times = [ar.seconds(float(x)) for x in sizes]
    assert all(
        b >= a - 1e-15 for a, b in zip(times, times[1:], strict=False)
    )  # monotone: a bigger message never costs less
    slower = ar.scaled(0.5)
    assert slower.seconds(524288.0) == pytest.approx(10e-6 + (444e-6 - 10e-6) * 2)
    with pytest.raises(ValueError, match="ascending"):
        AllReduceTerm(latency_us=1.0, bus_gb_per_s=1.0, measured=((2.0, 1e-6), (1.0, 2e-6)))


def test_fit_keeps_measured_allreduces_as_a_table():
    """Two or more sizes of a TP become its table (the median of repeats); steps interpolate in
    it."""
    rows = _synthetic(KNOWN, 0.0, 0)
    fitted = fit_profile("H100-SXM", rows)
    for tp in (2, 4, 8):
        table = dict(fitted.allreduce[tp].measured)
        assert sorted(table) == [t * 4096 * 2.0 for t in (1, 16, 256, 4096, 16384)]
        assert table[256 * 4096 * 2.0] == pytest.approx(
            KNOWN.allreduce[tp].seconds(256 * 4096 * 2.0)
        )


def test_shipped_l40s_tp8_allreduce_is_not_affine():
    """AIConfigurator's L40S TP8 all-reduce costs less per byte at 1 MiB than at 512 KiB (the
    algorithm changes with size): the shipped profile keeps that, an affine law cannot."""
    from costmodels.profiles import shipped_profiles

    ar = shipped_profiles()["L40S"].allreduce[8]
    assert ar.seconds(1048576.0) / 1048576.0 < ar.seconds(524288.0) / 524288.0


def test_a_message_never_costs_less_than_a_smaller_one():
    """A message can be sent padded to a larger measured size, so the table is read through its
    padded envelope: every shipped all-reduce is non-decreasing in the message, although
    AIConfigurator's L40S TP8 table dips at its latency floor (27.62 µs at 8 KiB, 27.37 µs at
    16 KiB; the decode step it made cheaper for two sequences than for one is an example of
    ``test_judge_physics``)."""
    from costmodels.profiles import shipped_profiles

    sizes = np.geomspace(1.0, float(1 << 28), 400)
    for gpu, profile in shipped_profiles().items():
        for tp, ar in profile.allreduce.items():
            times = [ar.seconds(float(x)) for x in sizes]
            assert all(b >= a for a, b in zip(times, times[1:], strict=False)), (gpu, tp)
            for (b, t), (_, padded) in zip(ar.measured, ar.padded, strict=True):
                assert padded <= t and ar.seconds(b) == padded
    l40s = shipped_profiles()["L40S"].allreduce[8]
    raw = dict(l40s.measured)
    assert raw[8192.0] > raw[16384.0]  # the dip is in the data
    assert l40s.seconds(8192.0) == raw[16384.0]


TRAIN_CSV = "kind,gpu,model,seconds,gpus,tokens\n"


def _train_rows(mfu: float, noise: float, seed: int) -> list[Measurement]:
    """Training steps a cluster whose training stage reaches ``mfu`` would log: three models,
    16-64 GPUs, 0.5-4 M tokens per step."""
    from costmodels.rl_training import TrainingProfile

    rng = np.random.default_rng(seed)
    truth = TrainingProfile(mfu=mfu)
    rows = []
    for model in ("Qwen2.5-7B", "Qwen2.5-14B", "Qwen2.5-32B"):
        for gpus in (16, 32, 64):
            for tokens in (5e5, 1e6, 4e6):
                s = truth.compute_s(model, "H800", gpus, tokens) + truth.fixed_s(
                    model, "H800", gpus
                )
                rows.append(
                    Measurement(
                        "train",
                        get_model(model),
                        1,
                        0,
                        0,
                        s * math.exp(rng.normal(0, noise)),
                        gpus=gpus,
                        tokens=tokens,
                    )
                )
    return rows


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_training_fit_recovers_a_known_mfu_within_5_percent(seed):
    from costmodels.calibration import fit_training

    fit = fit_training("H800", _train_rows(0.31, 0.03, seed))
    assert abs(fit.mfu / 0.31 - 1) <= 0.05 and fit.steps == 27 and fit.residuals["train"] < 0.05


def test_training_fit_refuses_too_few_or_impossible_steps():
    from costmodels.calibration import CalibrationError, fit_training

    rows = _train_rows(0.3, 0.0, 0)
    with pytest.raises(CalibrationError, match="needs at least"):
        fit_training("H800", rows[:2], "few.csv")
    short = [
        Measurement(
            "train", get_model("Qwen2.5-32B"), 1, 0, 0, 1e-3, "t.csv row 2", gpus=16, tokens=1e6
        )
    ] * 3
    with pytest.raises(CalibrationError, match="t.csv row 2.*optimizer step and weight sync"):
        fit_training("H800", short)


def test_calibrate_training_rows_drive_the_rollout_job(tmp_path):
    """`rlplan calibrate` on training steps writes a `training:` fit; `--profile` with that file
    gives the rollout job's training stage the fitted MFU (a faster training stage, a shorter
    step), and a bad training row exits 2 naming file, row, field and value."""

    good = tmp_path / "train.csv"
    good.write_text(
        TRAIN_CSV
        + "".join(
            f"train,H800,{r.model.name},{r.seconds!r},{r.gpus},{r.tokens:g}\n"
            for r in _train_rows(0.3, 0.01, 4)
        )
    )
    out = tmp_path / "fit.yaml"
    proc = run_cli("calibrate", "--measurements", str(good), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = yaml.safe_load(out.read_text())
    assert (
        "profiles" not in doc
        and doc["training"][0]["gpu"] == "H800"
        and abs(doc["training"][0]["mfu"] / 0.3 - 1) < 0.05
    )
    assert "training: effective MFU" in proc.stdout

    def step(*extra: str) -> float:
        sim = run_cli_json(
            "simulate", "rollout", "--job", "rollout-7b-8k", "--setting", "verl", "--json", *extra
        )
        return sim["results"][0]["objective_s"]

    assert step("--profile", str(out)) < step()
    # a placement's summary names the fitted training efficiency it used
    cluster = tmp_path / "h800.yaml"
    cluster.write_text(
        "nodes: [{name: n0, gpu: H800, count: 8, zone: dc}]\n"
        "network: {intra_zone: {bandwidth_gbps: 400, latency_ms: 0.005}}\n"
    )
    placed = run_cli(
        "plan", "placement", "--cluster", str(cluster), "--workflow", "grpo-sync-qwen3-8b",
        "--solver", "sha-ea", "-O", "evaluations=4", "--profile", str(out),
        "-o", str(tmp_path / "p.json"),
    )  # fmt: skip
    assert placed.returncode == 0, placed.stderr
    mfu = doc["training"][0]["mfu"]
    assert f"training and log-prob at {mfu:.1%} of H800's peak" in placed.stdout
    rollout = run_cli(
        "plan", "rollout", "--job", "rollout-7b-8k", "--solver", "verl", "--profile", str(out),
        "-o", str(tmp_path / "r.json"),
    )  # fmt: skip
    assert rollout.returncode == 0, rollout.stderr
    assert f"training at {mfu:.1%} of H800 peak" in rollout.stdout
    bad = tmp_path / "bad.csv"
    bad.write_text(TRAIN_CSV + "train,H800,Qwen2.5-7B,30.5,0,1000000\n")
    proc = run_cli("calibrate", "--measurements", str(bad), "-o", str(tmp_path / "q.yaml"))
    assert (
        proc.returncode == 2
        and "bad.csv" in proc.stderr
        and "row 2.gpus" in proc.stderr
        and not (tmp_path / "q.yaml").exists()
    )


def test_cluster_spec_profiles_drive_placement_and_are_checked(tmp_path):
    """A cluster spec's `profiles:` replace the shipped kernels of their GPU types (slower weight
    streams: a slower plan), --profile FILE overrides them per GPU type, `flat` drops them, and a
    profile of a GPU type no node has is refused by field."""
    from costmodels.placement.kind import KIND as PLACEMENT
    from planner.io import build_problem
    from planner.presets import get_preset
    from planner.solve import solve

    preset = get_preset("hetrl-single-region")
    assert preset is not None
    cluster = preset.data()
    cluster = cluster if isinstance(cluster, dict) else cluster.model_dump(mode="json")
    shipped = _shipped()
    slow = [
        shipped[g].model_copy(
            update={
                "weight_efficiency": {t: e / 2 for t, e in shipped[g].weight_efficiency.items()}
            }
        )
        for g in sorted({n["gpu"] for n in cluster["nodes"]})
    ]

    def objective(c: dict, update: dict | None = None) -> float:
        problem = build_problem("placement", {"cluster": c, "workflow": "ppo-sync-qwen3-8b"})
        if update is not None:
            problem = PLACEMENT.with_efficiency(problem, update)
        return solve(problem, solver="verl").objective

    base = objective(cluster)
    with_profiles = {**cluster, "profiles": [p.model_dump(mode="json") for p in slow]}
    assert objective(with_profiles) > base
    assert objective(
        with_profiles, {"profiles": {p.gpu: shipped[p.gpu] for p in slow}}
    ) == pytest.approx(base)
    assert objective(with_profiles, {"kernels": "flat", "profiles": {}}) == pytest.approx(
        objective(cluster, {"kernels": "flat", "profiles": {}})
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump({**cluster, "profiles": [shipped["H100-SXM"].model_dump(mode="json")]})
    )
    proc = run_cli(
        "plan",
        "placement",
        "--cluster",
        str(bad),
        "--solver",
        "verl",
        "-q",
        "-o",
        str(tmp_path / "x.json"),
    )
    assert (
        proc.returncode == 2
        and "bad.yaml" in proc.stderr
        and "profiles[0].gpu" in proc.stderr
        and "H100-SXM" in proc.stderr
    )
    assert not (tmp_path / "x.json").exists()
