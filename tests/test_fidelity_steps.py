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
    assert CALIBRATION == ("B1",)
    tests = ("B3", "B5", "A1", "A3", "A2", "A4", "B2", "B4", "B6", "B7", "B8", "B9")
    assert [split_of(i) for i in ("B1", *tests)] == ["calibration", *["test"] * len(tests)]
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
    moved = {**rows, "B1": _scaled(rows["B1"], 1.5)}
    assert fit_median(moved)["median"] > base["median"] * 1.1
    assert base["rows"] == ["B1"]


def test_fit_matches_its_stage(rows):
    fit = fit_median(rows)
    pred = predict(SPECS["B1"], fit["median"])
    assert pred["training"] == pytest.approx(269.80, rel=0.02)


def test_errors_are_out_of_sample(rows):
    result = run(rows)
    for stage, e in result["summary"]["errors"].items():
        assert "B1" not in e["rows"], stage
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
