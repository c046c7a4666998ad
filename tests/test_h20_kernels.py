"""The H20's derived kernel profile held to AIConfigurator's measured H20-3e GEMMs
(``benchmarks/fidelity/h20_kernels.py``): the shares are computed as stated, the shipped extract
gives the published figures, and the measured shares move the judge's H20 generation as the
sensitivity reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.fidelity.h20_kernels import DATA, PEAK, analyse, read, shares
from benchmarks.fidelity.steps_sensitivity import h20_profile
from costmodels.profiles import shipped_profiles

RESULT = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "fidelity"


def test_a_gemms_shares_are_bytes_and_flops_over_the_parts_peaks():
    row = {"m": 1.0, "n": 4096.0, "k": 4096.0}
    moved = 2 * (4096 * 4096 + 4096 + 4096)
    hbm, flop = shares(row, "H100-SXM", 0.01)
    assert hbm == pytest.approx(moved / 1e-5 / PEAK["H100-SXM"][0])
    assert flop == pytest.approx(2 * 4096 * 4096 / 1e-5 / PEAK["H100-SXM"][1])


def test_the_h20_die_feeds_its_sms_better_and_streams_a_smaller_share_of_its_hbm():
    """Measured, not assumed: the compute-bound share is above the H100's (fewer SMs on the
    same memory system), the small-batch stream's share below it; the published figures are the
    shipped extract's."""
    rows = read(DATA)
    assert len(rows) > 1000 and all(r["n"] * r["k"] >= 2048 * 2048 for r in rows)
    result = analyse(rows)
    assert 1.1 < result["compute_share_ratio"] < 1.4
    assert 0.6 < result["stream_share_ratio"] < 0.9
    assert result["stream_share_ratio"] < result["stream_share_ratio_same_bytes"] <= 1.0
    published = json.loads((RESULT / "h20_kernels.json").read_text())
    assert published["compute_share_ratio"] == pytest.approx(result["compute_share_ratio"])
    assert published["stream_share_ratio"] == pytest.approx(result["stream_share_ratio"])


def test_the_measured_setting_scales_the_derived_h20_profile_only():
    base = shipped_profiles()["H20"]
    p = h20_profile(0.8, 1.2)
    assert p.gemm_efficiency == pytest.approx(min(1.0, base.gemm_efficiency * 1.2))
    assert p.kv_efficiency == pytest.approx(base.kv_efficiency * 0.8)
    for tp, e in base.weight_efficiency.items():
        assert p.weight_efficiency[tp] == pytest.approx(e * 0.8)
    assert p.layer_floor_us == base.layer_floor_us and p.allreduce == base.allreduce
