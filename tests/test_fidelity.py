"""The fidelity report (benchmarks/fidelity): the judge against AIConfigurator's measured vLLM
data, shipped as CSV so that nothing extra is needed; re-extraction only with the extra."""

from __future__ import annotations

import csv
import json
import math

import pytest

from benchmarks.fidelity.report import (
    MEASURED,
    decode_cases,
    fastest_tp_agreement,
    prefill_cases,
    write_report,
)


@pytest.mark.slow
def test_report_covers_every_measured_gpu_and_writes_its_files(tmp_path):
    summary = write_report(tmp_path)
    for judge in ("flat", "calibrated"):
        assert {g["gpu"] for g in summary[judge]["gpus"]} == {
            "H100-SXM",
            "H200",
            "A100-80GB",
            "L40S",
        }
    for name in ("decode.csv", "prefill.csv", "summary.json", "README.md", "decode.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    assert (
        json.loads((tmp_path / "summary.json").read_text())["decode_cases"]
        == summary["decode_cases"]
        > 1500
    )
    assert "RMS log error" in (tmp_path / "README.md").read_text()
    # leave-one-model-out: the calibrated judge meets the decode targets on data it was not
    # fitted to
    assert all(g["rms_met"] and g["prefill_met"] for g in summary["calibrated"]["gpus"])


def test_every_case_fits_its_instance_and_has_a_finite_ratio():
    from costmodels.catalog import get_gpu, get_model
    from costmodels.decode import Instance

    cases = decode_cases()
    for c in cases[::37]:
        inst = Instance(get_model(c["model"]), get_gpu(c["gpu"]), c["tp"])
        assert inst.kv_capacity_tokens() >= c["batch"] * c["context"]
    assert all(math.isfinite(c["ratio"]) and c["ratio"] > 0 for c in cases + prefill_cases())
    with (MEASURED / "aic_vllm_decode.csv").open() as fh:
        assert len(cases) < sum(1 for _ in csv.DictReader(fh)), (
            "cases that do not fit (Qwen3-32B at TP1 on L40S) are dropped"
        )


def test_fastest_tp_agreement_counts_points_with_two_fitting_tps():
    def case(tp, pred, meas, batch=4):
        return {
            "gpu": "G",
            "model": "M",
            "batch": batch,
            "context": 1024,
            "tp": tp,
            "predicted_s": pred,
            "measured_s": meas,
        }

    cases = [
        case(1, 3.0, 3.0),
        case(2, 2.0, 1.0),
        case(4, 1.0, 2.0),  # predicted TP4, measured TP2: disagree
        case(1, 2.0, 2.0, batch=64),
        case(2, 1.0, 1.0, batch=64),  # agree, not a tail case
        case(8, 1.0, 1.0, batch=128),
    ]  # alone: no choice to agree on
    assert fastest_tp_agreement(cases, tail=False) == {"G": (1, 2)}
    assert fastest_tp_agreement(cases, tail=True) == {"G": (0, 1)}


def test_re_extraction_reproduces_the_shipped_data(tmp_path):
    pytest.importorskip(
        "aiconfigurator_core",
        reason="aiconfigurator-core is not installed: pip install 'rlplan[calibrate]'",
    )
    from benchmarks.fidelity.aic import extract

    extract(tmp_path)
    for name in ("aic_vllm_decode.csv", "aic_vllm_prefill.csv"):
        assert (tmp_path / name).read_text() == (MEASURED / name).read_text(), name
