"""Fit a serving engine's per-step CPU time (:class:`~costmodels.profiles.EngineProfile`) to
measured whole-workload times, and the one such measurement the papers publish: OrchestrRL §2.1.

AIConfigurator's database is kernel time only (``costmodels.calibration``); what an engine adds
per step shows only in end-to-end times. OrchestrRL §2.1 measures one: Qwen2.5-14B on 8 GPUs
(H800, the paper's testbed), batch 512, a step's early phase takes 79.2 / 96.3 / 138.7 s at
TP 2 / 4 / 8 and its tail phase 208.4 / 188.3 / 165.1 s. The paper does not publish the two
snapshots' requests; rlplan reconstructs them from its Figure 3 (most responses under 7.5k
tokens, a heavy tail to the 15k cap):

* early: the whole batch at the start, 512 requests with 256-4096 tokens to go after a
  1024-token prompt (uniform);
* tail: what is left late in the step, 32 requests with 4096-14336 tokens to go and 4096 in
  their caches (uniform).

Each phase runs as ``8 / tp`` instances of TP ``tp`` (the requests assigned longest first,
:func:`costmodels.decode.configuration_makespan`) on the fitted kernels (``aic-vllm``), and the
engine's ``layer_us`` and ``sequence_us`` are fitted by least squares on the log of predicted /
measured over the six times and three draws of each snapshot; ``step_ms`` stays at the value
given (one model cannot tell a per-step cost from a per-layer one; kernel launches, what eager
mode adds, are per layer). The tail's TP8 / TP2 = 0.79 is what pins the fixed cost: kernels alone
give 0.58.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from costmodels.catalog import get_gpu, get_model
from costmodels.decode import ServingParams, configuration_makespan
from costmodels.efficiency import Efficiency
from costmodels.profiles import EngineProfile


@dataclass(frozen=True)
class MakespanCase:
    """A measured time: ``requests`` (a named distribution) on ``gpus`` GPUs as TP ``tp``
    instances."""

    name: str
    model: str
    gpu: str
    gpus: int
    tp: int
    requests: str
    seconds: float
    source: str


_EARLY = "uniform:low=256,high=4096,n=512,context=1024"
_TAIL = "uniform:low=4096,high=14336,n=32,context=4096"
_WHERE = "OrchestrRL §2.1 (Qwen2.5-14B, 8 GPUs, batch 512)"
SECTION_21 = tuple(
    MakespanCase(f"{phase} TP{tp}", "Qwen2.5-14B", "H800", 8, tp, reqs, s, _WHERE)
    for phase, reqs, times in (
        ("early", _EARLY, {2: 79.2, 4: 96.3, 8: 138.7}),
        ("tail", _TAIL, {2: 208.4, 4: 188.3, 8: 165.1}),
    )
    for tp, s in times.items()
)
#: draws of each reconstructed snapshot (seeds of the named distribution)
SEEDS = (0, 1, 2)


def predict(case: MakespanCase, efficiency: Efficiency, seeds: tuple[int, ...] = SEEDS) -> float:
    """Mean makespan of the case's requests over ``seeds``, seconds."""
    from costmodels.generation.lengths import parse_distribution

    params = ServingParams(efficiency=efficiency)
    m, g = get_model(case.model), get_gpu(case.gpu)
    return float(
        np.mean(
            [
                configuration_makespan(
                    m,
                    g,
                    case.gpus,
                    case.tp,
                    parse_distribution(case.requests, seed=s).requests(),
                    params,
                )["makespan_s"]
                for s in seeds
            ]
        )
    )


def fit_engine(
    name: str,
    kernels: Efficiency,
    cases: tuple[MakespanCase, ...] = SECTION_21,
    step_ms: float = 0.2,
    seeds: tuple[int, ...] = SEEDS,
) -> EngineProfile:
    """The engine profile (``layer_us``, ``sequence_us``; ``step_ms`` given) that best explains
    ``cases`` on ``kernels`` (module doc), with its residual."""
    from scipy.optimize import least_squares

    measured = np.log([c.seconds for c in cases])

    def engine(x: np.ndarray) -> EngineProfile:
        layer_us, sequence_us = np.exp(x).tolist()
        return EngineProfile(name=name, step_ms=step_ms, sequence_us=sequence_us, layer_us=layer_us)

    def residual(x: np.ndarray) -> np.ndarray:
        eff = kernels.model_copy(update=engine(x).efficiency_update())
        return np.log([predict(c, eff, seeds) for c in cases]) - measured

    result = least_squares(
        residual,
        np.log([50.0, 10.0]),
        bounds=(np.log([1e-3, 1e-3]), np.log([1e4, 1e4])),
        method="trf",
        max_nfev=200,
    )
    if not result.success:
        raise ValueError(f"the engine fit did not converge ({result.message})")
    fitted = engine(result.x)
    source = (
        f"fitted to {cases[0].source} on the aic-vllm kernels, {len(cases)} times x {len(seeds)} "
        "draws of the reconstructed snapshots"
    )
    return fitted.model_copy(
        update={
            "source": source,
            "residuals": {"all": round(float(math.sqrt(np.mean(result.fun**2))), 4)},
        }
    )
