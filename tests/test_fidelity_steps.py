"""The whole-step fidelity section (benchmarks/fidelity/steps.py): its cases build, verl's plans
are valid rlplan plans, and the calibration never reads a test row."""

from __future__ import annotations

import copy
import json

import pytest

from benchmarks.fidelity.steps import ERROR_FILE, fit_median, predict, run, stage_error
from benchmarks.fidelity.steps_cases import (
    CALIBRATION,
    SPECS,
    lognormal,
    measured_stages,
    modelled,
    plan,
    problem,
    read_rows,
    split_of,
)
from benchmarks.fidelity.steps_sensitivity import ENGINE_STEP_MS, assess, fit_engine_step
from benchmarks.fidelity.steps_windows import drift, duration_s, read_windows, window_steps
from costmodels.placement.check import check_placement


@pytest.fixture(scope="module")
def rows():
    return read_rows()


def test_rows_parse(rows):
    assert set(rows) == set(SPECS)
    b1 = measured_stages(SPECS["B1"], rows["B1"])
    assert b1 == {"step": 790.10, "generation": 357.41, "inference": 107.71, "training": 269.80}
    # one-step-off: generation is generate_sequences (overlapped), not the wait
    assert measured_stages(SPECS["A2"], rows["A2"])["generation"] == 458


@pytest.mark.parametrize("spec", modelled(), ids=lambda s: s.id)
def test_plans_are_valid(spec):
    for median in (500.0, 4000.0):
        prob = problem(spec, lognormal(min(median, spec.max_response), 0.9, "test"))
        pl = plan(spec, prob)
        assert check_placement(prob, pl) == []
        assert pl.task("actor_generation").tp == spec.gen_tp
        assert sum(len(g.devices) for g in pl.groups) == spec.gpus


def test_split():
    assert CALIBRATION == ("B3",)
    tests = ("B1", "B5", "A1", "A3", "A2", "A4", "B2", "B4", "B6", "B7", "B8", "B9")
    assert [split_of(i) for i in ("B3", *tests)] == ["calibration", *["test"] * len(tests)]
    for i in ("B10", "B11"):  # multi-turn tool calls
        assert split_of(i) == "not modelled" and SPECS[i].reason


def _scaled(row, factor):
    row = copy.deepcopy(row)
    row["step_s"] *= factor
    row["stages"] = {k: v * factor for k, v in row["stages"].items()}
    return row


def test_calibration_does_not_read_test_rows(rows):
    base = fit_median(rows)
    perturbed = {
        i: (r if split_of(i) == "calibration" else _scaled(r, 3.0)) for i, r in rows.items()
    }
    assert fit_median(perturbed)["median"] == base["median"]
    # ... while the calibration row does move it
    moved = {**rows, "B3": _scaled(rows["B3"], 1.5)}
    assert fit_median(moved)["median"] > base["median"] * 1.1
    assert base["rows"] == ["B3"]


def test_fit_matches_its_stage(rows):
    fit = fit_median(rows)
    pred = predict(SPECS["B3"], fit["median"])
    assert pred["training"] == pytest.approx(133.41, rel=0.02)


def test_errors_are_out_of_sample(rows):
    result = run(rows)
    for stage, e in result["summary"]["errors"].items():
        assert "B3" not in e["rows"], stage
    assert stage_error([], "step")["rms_log"] is None
    shipped = json.loads(ERROR_FILE.read_text())
    assert {"step", "generation", "inference", "training", "source"} <= set(shipped)
    assert shipped["step"]["rows"] == result["summary"]["errors"]["step"]["rows"]
    # fully-async runs are pooled apart: their plans carry their own figures
    fully = result["summary"]["errors_fully_async"]["step"]["rows"]
    assert fully == ["B2", "B4", "B6", "B7", "B8", "B9"] == shipped["fully-async"]["step"]["rows"]
    assert not set(fully) & set(shipped["step"]["rows"])


def test_fully_async_rows_follow_verls_launch(rows):
    """The 64 + 64 staleness ablation: rollout on whole nodes, four local updates per sync, and
    the judge's generation falls as staleness grows (``costmodels.placement.decode_cost``)."""
    gens = []
    for i in ("B7", "B8", "B9", "B6"):
        spec = SPECS[i]
        prob = problem(spec, lognormal(600.0, 0.93, "test"))
        wf = prob.workflow
        assert wf.mode == "fully-async" and wf.asynchrony.updates_per_sync == 4
        assert wf.asynchrony.staleness == spec.staleness
        pl = plan(spec, prob)
        gen_devices = pl.groups[pl.group_of()["actor_generation"]].devices
        assert gen_devices == [d.id for d in prob.topology.devices][:64]
        gens.append(predict(spec, 600.0)["generation"])
    assert gens == sorted(gens, reverse=True) and gens[0] > gens[-1]


@pytest.mark.parametrize("case", ["A1", "A3", "B1", "B5"])
def test_the_mean_rank_waits_for_no_longer_than_the_slowest(case):
    """verl's generate_sequences is the ranks' mean (reduce_timing) and its gen the slowest
    rank; the judge's mean rank (its own longest response, the average prompts) never exceeds
    its generation (the step's longest, the most loaded replica's prompts); where a rank's own
    longest already reaches the cap (A3) the prompts alone set them apart, as measured."""
    pred = predict(SPECS[case], 544.0)
    assert 0 < pred["generation_mean_rank"] <= pred["generation"] * (1 + 1e-12)
    if case == "A3":
        assert pred["generation"] > 1.05 * pred["generation_mean_rank"]
    if case == "B5":  # 64 replicas of 128 responses: the step's longest is far out in the tail
        assert pred["generation_mean_rank"] < 0.5 * pred["generation"]


def test_published_windows_parse_and_average_to_the_published_step(rows):
    """verl's cumulative 100-step totals: each run's windows average to its published step, the
    calibration row is the stationary colocated run, and B1 (the row calibrated on before)
    is not (its last 100 steps took 2.3x its first)."""
    windows = read_windows()
    assert set(windows) == {f"B{i}" for i in range(1, 10)}
    assert duration_s("1d 3h 43m") == 99780.0 and duration_s("13h 44m") == 49440.0
    for bad in ("", "3 weeks", "1d 3x"):
        with pytest.raises(ValueError):
            duration_s(bad)
    for i, totals in windows.items():
        assert totals == sorted(totals), i
        steps = window_steps(rows[i]["step_s"], totals)
        assert sum(steps) / len(steps) == pytest.approx(rows[i]["step_s"], rel=1e-12)
    b1 = drift(window_steps(rows["B1"]["step_s"], windows["B1"]))
    assert not b1["stationary"] and b1["last_over_first"] > 2.2
    for i in CALIBRATION:
        assert drift(window_steps(rows[i]["step_s"], windows[i]))["stationary"], i


def test_window_checks_read_what_verl_published(rows):
    """The 64 -> 128 GPU gain is 1.21x in the first 100 steps and below 1 in the last (B5's
    lengths grow, B3's do not); the staleness rows keep their 400-step means' order only in the
    first two windows."""
    w = run(rows)["windows"]
    gain = w["gain_64_to_128"]
    assert gain[0] == pytest.approx(1.214, abs=0.005) and gain[-1] < 1.0
    assert w["staleness_rows"] == ["B7", "B8", "B9", "B6"]
    assert w["staleness_means_order"] == [True, True, False, False]
    assert set(w["first_window_ratio"]) == set(w["steps"])


def test_every_verl_row_is_costed_on_the_engine_its_code_ran():
    """verl's rollout default was ``enforce_eager: True`` at every commit these runs' scripts
    come from (July 2025 for rows A; the fully-async branch, August-September 2025, for rows B),
    and no script overrides it: every modelled row runs the eager engine, at its script's TP."""
    for spec in SPECS.values():
        if not spec.reason:
            assert spec.engine == "eager", spec.id
    assert {SPECS[i].gen_tp for i in ("B1", "B3", "B5")} == {4}


def test_sensitivity_starts_from_the_shipped_judge_and_fits_on_calibration_only(rows):
    """The sensitivity's shipped setting is the report's judge (same generation ratios), more
    CPU time per decode step never makes generation faster, and the engine term's fit reads the
    calibration row only (its generation matches; a test row's measurement does not move it)."""
    result = run(rows)
    by = {r["id"]: r for r in result["rows"]}
    median = result["fit"]["median"]
    shipped = assess(median, rows, ENGINE_STEP_MS[0], 1.0)
    for i, ratio in shipped["calibration_generation"].items():
        assert ratio == pytest.approx(by[i]["ratio"]["generation"], rel=1e-9)
    assert shipped["test_step"]["rms_log"] == pytest.approx(
        result["summary"]["errors"]["step"]["rms_log"], rel=1e-9
    )
    slower = assess(median, rows, ENGINE_STEP_MS[-1], 1.0)
    assert slower["calibration_generation"]["B3"] > shipped["calibration_generation"]["B3"]
    fitted = fit_engine_step(median, rows)
    assert assess(median, rows, fitted, 1.0)["calibration_generation"]["B3"] == pytest.approx(
        1.0, abs=0.01
    )
    moved = {**rows, "B5": {**rows["B5"], "stages": {**rows["B5"]["stages"], "gen": 1.0}}}
    assert fit_engine_step(median, moved) == pytest.approx(fitted, rel=1e-9)


def test_the_engine_step_what_if_changes_the_rollout_engine_term_only():
    """RollPacker's rows under the sensitivity's engine settings
    (``benchmarks.instances.engine_step_what_if``): at the profile's own term the what-if is the
    published judge, a larger term decodes slower, and the two workloads hash apart (the judge's
    caches must not hand one the other's rounds)."""
    from benchmarks.fidelity.rollout_rows import JOB, ROWS
    from benchmarks.instances import rollout_problem
    from benchmarks.rollout_breakdown import long_step
    from costmodels.profiles import engine_profiles

    kw = ROWS["T3 adaptive"][0]
    shipped_ms = engine_profiles()["cuda-graph"].step_ms
    seeds = range(1)
    published = long_step(JOB, seeds, kw, dataset_prompts=256)
    same = long_step(JOB, seeds, kw, dataset_prompts=256, engine_step_ms=shipped_ms)
    slower = long_step(JOB, seeds, kw, dataset_prompts=256, engine_step_ms=shipped_ms + 4.0)
    assert same == pytest.approx(published, rel=1e-12)
    assert slower > published
    base = rollout_problem(JOB, dataset_prompts=256).workload
    what_if = rollout_problem(JOB, dataset_prompts=256, engine_step_ms=shipped_ms).workload
    assert hash(base) != hash(what_if)
    assert what_if.serving().efficiency.decode_step_overhead_ms == shipped_ms


def test_a_heavier_tail_refits_a_smaller_median_and_reaches_the_cap(rows):
    """The sensitivity's spread settings: B3's training holds the fit, so a heavier tail gets a
    smaller median; it brings B3's longest response to (near) the 28 672-token cap and its
    generation closer to the measured, and the fit never reads a test row."""
    from benchmarks.fidelity.steps_predict import SIGMA

    base, heavy = fit_median(rows), fit_median(rows, sigma=1.5)
    assert heavy["sigma"] == 1.5 and heavy["median"] < base["median"]
    assert heavy["ratios"]["B3"] == pytest.approx(1.0, abs=0.02)
    b3 = SPECS["B3"]
    longest = predict(b3, heavy["median"], sigma=1.5)["longest_response"]
    # the expected longest of the step's draws (``ResponseLengths.longest_of``): near the cap,
    # which some steps' longest stops short of
    assert b3.max_response >= longest >= 0.9 * b3.max_response
    assert longest > predict(b3, base["median"])["longest_response"]
    shipped = assess(base["median"], rows, None, 1.0)
    heavier = assess(heavy["median"], rows, None, 1.0, sigma=1.5)
    assert heavier["sigma"] == 1.5 and shipped["sigma"] == SIGMA
    assert heavier["calibration_generation"]["B3"] > shipped["calibration_generation"]["B3"]
    moved = {**rows, "B1": {**rows["B1"], "stages": {**rows["B1"]["stages"], "update_actor": 1.0}}}
    assert fit_median(moved, sigma=1.5)["median"] == heavy["median"]
