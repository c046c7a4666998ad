"""Canned fleets for the contract test: the ``fleet-two-small`` preset's two small jobs, timed
worst-case and expected. No fleet solver is exact, so each is held to a floor: every plan pays
for at least the training nodes of its largest job (a group, co-located or not, has at least the
training nodes of every member)."""

from __future__ import annotations

from costmodels.catalog import get_gpu
from costmodels.fleet.presets import two_small_jobs
from costmodels.fleet.problem import FleetProblem, FleetSpec
from costmodels.problem import Canned


def _spec(phases: str) -> FleetSpec:
    spec = FleetSpec.model_validate(two_small_jobs(phases))
    spec.check()
    return spec


def _floor(spec: FleetSpec) -> float:
    t = spec.train_pool
    price = (get_gpu(t.gpu).usd_per_hour or 0.0) * t.gpus_per_node
    return price * max(-(-j.train_gpus // t.gpus_per_node) for j in spec.jobs)


def canned_fleets() -> list[Canned]:
    out = []
    for phases in ("worst-case", "expected"):
        spec = _spec(phases)
        out.append(
            Canned(
                f"two-small-jobs-{phases}",
                lambda spec=spec: FleetProblem(spec),
                lower_bound=_floor(spec),
            )
        )
    return out
