"""The rollout judge's training-efficiency sensitivity
(``benchmarks.fidelity.rollout_sensitivity``): its fit reads the calibration table only, its gains
and errors are the rows' own, and its report states the split. A stub judge stands in for the
rollout judge (a step = rollout + training / MFU per row), so the logic is tested without
simulating an epoch; one slow check runs the real judge at two MFUs."""

from __future__ import annotations

import pytest

from benchmarks.fidelity import rollout_sensitivity as rs
from benchmarks.fidelity.rollout_rows import ROWS
from benchmarks.fidelity.rollout_steps import markdown
from costmodels.rl_training import FITTED_MFU

#: per row, a stub's (rollout s, training GPU-share s): step = rollout + training / mfu
STUB = {row: (60.0 + 2.0 * i, 12.0) for i, row in enumerate(ROWS)}


def _stub(stub: dict[str, tuple[float, float]] = STUB) -> rs.Predict:
    return lambda mfu, rows=None: {
        row: g + t / mfu for row, (g, t) in stub.items() if rows is None or row in rows
    }


def _share(mfu: float) -> float:
    return 0.025 / mfu


def test_the_fit_reads_the_calibration_table_only():
    fitted = rs.fit_mfu(_stub())
    assert rs.MFU_RANGE[0] <= fitted <= rs.MFU_RANGE[1]

    # the stub's Table 3 rows' RMS log error is least at the fit: no MFU a step either side
    # does better
    def t3(mfu: float) -> float:
        steps = _stub()(mfu, None)
        return rs._error({r: s for r, s in steps.items() if ROWS[r][2] == "Table 3"})["rms_log"]

    assert t3(fitted) <= min(t3(fitted - 0.01), t3(fitted + 0.01)) + 1e-9
    # a Table 4 row moved far does not move the fit
    moved = {**STUB, "T4 once-50%": (500.0, 80.0)}
    assert rs.fit_mfu(_stub(moved)) == pytest.approx(fitted, abs=1e-12)
    # a Table 3 row moved does
    moved = {**STUB, "T3 off": (200.0, 12.0)}
    assert rs.fit_mfu(_stub(moved)) != pytest.approx(fitted, abs=1e-3)


def test_each_setting_reports_its_rows_split_gains_and_share():
    sens = rs.sensitivity(_stub(), _share)
    shipped, fitted = sens["settings"]
    assert shipped["mfu"] == FITTED_MFU and fitted["mfu"] == sens["fitted_mfu"]
    for s in (shipped, fitted):
        steps = s["steps"]
        assert s["calibration"]["rows"] == [r for r in ROWS if ROWS[r][2] == "Table 3"]
        assert s["test"]["rows"] == [r for r in ROWS if ROWS[r][2] == "Table 4"]
        assert s["scaling_gain"] == pytest.approx(steps["T3 off"] / steps["T3 adaptive"])
        assert s["table1_training_share"] == pytest.approx(_share(s["mfu"]))
    assert fitted["calibration"]["rms_log"] <= shipped["calibration"]["rms_log"] + 1e-12
    assert sens["measured"]["scaling_gain"] == pytest.approx(124.2 / 115.2)
    assert sens["measured"]["streaming_gain"] == pytest.approx(132.0 / 115.2)


def test_the_report_states_the_split_and_keeps_the_shipped_fit():
    result = {
        "job": "rollout-7b-8k",
        "seeds": 3,
        "rows": [
            {"id": r, "table": t, "measured_s": m, "predicted_s": m, "ratio": 1.0}
            for r, (_, m, t) in ROWS.items()
        ],
        "error": {"step": {"rms_log": 0.0, "worst_ratio": 1.0, "worst_row": "T3 off"}},
        "sensitivity": rs.sensitivity(_stub(), _share),
    }
    text = markdown(result, "python -m benchmarks.fidelity.rollout_steps")
    assert "## Sensitivity: the training efficiency" in text
    assert "fitted to Table 3's five steps alone" in text and "the shipped fit stays" in text
    without = {k: v for k, v in result.items() if k != "sensitivity"}
    assert "## Sensitivity" not in markdown(without, "x")


@pytest.mark.slow
def test_the_real_judges_steps_fall_as_the_training_mfu_rises():
    """The what-if is the judge's own: at the shipped MFU it is the published run, and a
    higher MFU shortens every row (training is on every long round's path)."""
    from benchmarks.fidelity.rollout_rows import run

    published = {r["id"]: r["predicted_s"] for r in run()["rows"]}
    assert rs.predicted_steps(FITTED_MFU) == pytest.approx(published, rel=1e-12)
    faster = rs.predicted_steps(2 * FITTED_MFU)
    assert all(faster[r] < published[r] for r in ROWS)


def test_the_rows_run_the_job_as_rollpackers_artifact_trains(monkeypatch):
    """RollPacker's rows are judged without the old log-prob pass (its launcher fakes the old
    log-probs), and every what-if keeps that unless it says otherwise."""
    from benchmarks.fidelity import rollout_rows

    seen: list[dict] = []

    def fake(job, seeds, kw, **opts):
        seen.append(opts)
        return ROWS[next(r for r in ROWS if ROWS[r][0] == kw)][1]

    monkeypatch.setattr(rollout_rows, "long_step", fake)
    result = rollout_rows.run(range(1), training_mfu=0.2)
    assert len(seen) == len(ROWS)
    assert all(o == {"log_prob_pass": False, "training_mfu": 0.2} for o in seen)
    assert result["error"]["step"]["rms_log"] == pytest.approx(0.0, abs=1e-12)
    assert "no old log-prob pass" in result["error"]["source"]
    seen.clear()
    rollout_rows.run(range(1), log_prob_pass=True)
    assert all(o == {"log_prob_pass": True} for o in seen)
