"""The circuit-allocation problem's descriptor (RFabric, OrchestrRL App. D)."""

from __future__ import annotations

from typing import Any

from costmodels.circuits.canned import canned_circuits
from costmodels.circuits.check import check_circuits
from costmodels.circuits.fabric import DemandSpec, FabricSpec, parse_demand_csv
from costmodels.circuits.judge import evaluate_circuits
from costmodels.circuits.plan import CircuitPlan
from costmodels.circuits.plot import plot_circuits
from costmodels.circuits.presets import circuits_presets
from costmodels.circuits.problem import CircuitProblem
from costmodels.circuits.summary import circuits_summary
from costmodels.problem import ProblemKind, SpecField


def _demand_fits_fabric(demand: DemandSpec, loaded: dict[str, Any]) -> None:
    demand.check_against(loaded["fabric"])


KIND = ProblemKind(
    name="circuits",
    summary="allocate optical circuits to a communication period's demand (RFabric)",
    title="Circuit",
    fields=(
        SpecField("fabric", FabricSpec, "fabric spec file or preset", default="fabric-8"),
        SpecField(
            "demand",
            DemandSpec,
            "demand CSV (src,dst,bytes) or preset",
            default="demand-alltoall-8",
            depends=("fabric",),
            check_with=_demand_fits_fabric,
            csv=parse_demand_csv,
            list_key="entries",
        ),
    ),
    problem_type=CircuitProblem,
    build=CircuitProblem,
    plan_type=CircuitPlan,
    evaluate=evaluate_circuits,
    check=check_circuits,
    objective="bottleneck pair time in seconds (OrchestrRL Eq. 7)",
    units="s",
    presets=circuits_presets(),
    summary_table=circuits_summary,
    plot=plot_circuits,
    size=lambda problem: len(problem.pair_demand()),
    size_label="demanded pairs",
    bench_extras={
        "uncovered_pairs": "uncovered_pairs",
        "uncovered_gb": "uncovered_gb",
        "circuits": "circuits",
    },
    primary_key="uncovered_gb",
    canned=canned_circuits,
)
