"""The expected error every plan prints is the current judge's: the shipped
``costmodels/data/measured/step_error.json`` is what ``benchmarks/fidelity/steps.py`` computes now
(a change that moves the judge re-runs the whole-step fidelity, as docs/judge.md asks)."""

from __future__ import annotations

import pytest

from benchmarks.fidelity.steps import error_file, run
from costmodels.step_error import STAGES, describe, step_error_table


def test_shipped_expected_error_is_the_current_judges():
    fresh = error_file(run())
    shipped = step_error_table()
    for stage in STAGES:
        # the median's fit runs on BLAS kernels picked per CPU: equal to many digits, not all
        assert shipped[stage]["rms_log"] == pytest.approx(fresh[stage]["rms_log"], rel=1e-4)
        assert shipped[stage]["rows"] == fresh[stage]["rows"]
    assert shipped["source"] == fresh["source"]


def test_the_summary_line_fits_80_columns():
    assert len(describe("step")) <= 80
