"""The training-speed consistency check over RollPacker's Tables 1, 2 and 4
(``benchmarks/rollout_training_speed.py``): its arithmetic on the paper's own rows, and its
report's conclusions computed from the rows it is given."""

from __future__ import annotations

import pytest

from benchmarks import rollout_training_speed as ts


def test_the_papers_fetch_once_rows_rise_14_5_s_per_unit_of_cap():
    # Table 4: 128.6, 129.5, 133.8, 132.0 s at caps 20-50%; least squares by hand
    assert pytest.approx(0.725 / 0.05) == ts.PAPER_TABLE4_SLOPE


def _row(k: float, slope: float, order3: str = "a < b") -> dict:
    return {
        "training_cost": f"1/{k:g}",
        "mfu": 0.1 * k,
        "table4_slope_s": slope,
        "table4_order": "x < y",
        "paper_table4_order": "y < x",
        "table3_order": order3,
        "paper_table3_order": "a < b",
        "table2_7b_rollpacker_faster": "1 / 2 / 2 / 2",
        "table2_7b_rollpacker_faster_worst_error": 0.1 * k,
        "table2_7b_all_faster": "1 / 2 / 2 / 2",
        "table2_7b_all_faster_worst_error": 0.05 * k,
        "paper_table2_7b": "1.30 / 2.01 / 2.01 / 2.03",
        "table1_training_share": 0.22 / k,
        "long_step_cv": 0.05,
    }


def test_the_cost_at_the_papers_slope_is_interpolated_between_measured_costs():
    # slope proportional to 1/k: met exactly where 87 / k = 14.5, k = 6
    rows = [_row(k, 87.0 / k) for k in (1, 2, 4, 8)]
    assert ts._cost_at_paper_slope(rows) == pytest.approx(6.0, rel=0.1)
    # never reached: the sweep's last cost
    assert ts._cost_at_paper_slope([_row(k, 100.0 / k) for k in (1, 2)]) == 2.0


def test_the_report_says_where_each_table_has_the_papers_order():
    rows = [_row(1, 80.0), _row(6, 13.0, order3="b < a")]
    text = ts.report(rows, "python -m benchmarks.rollout_training_speed")
    assert "Table 3 has the paper's order at 1/1;" in text
    assert "Table 4 has the paper's order at none of the costs" in text
    # chance: 124 s level x 5% x sqrt(2/5) = 3.9 s; Table 4's stream-to-once gap is 13.4 s
    assert "stream → once-20%: 13.4 s (3.4σ)" in text
