"""Topology materialization (OrchestrRL Algorithm 2, §5.3) and the slack rule.

A :class:`Materializer` is the control proxy of one RFabric: per intent it caches the stage
template (populated on first use), aggregates the period's demand, allocates circuits on OCS-Agg
(per PoD) and then on OCS-Core (capped by each PoD's ToR–uplink access circuits, so the tiers are
consistent by construction), validates the result against the fabric state at commit time, and
commits it in the next safe window, or keeps the previous plan:

* validation fails (ports failed since allocation, eligibility, Core–Agg coupling) -> previous plan;
* the next safe window is shorter than the OCS device's reconfiguration delay (§5.3: reconfigure
  only when the window covers it) -> previous plan, retried later.

The allocator is any ``(CircuitProblem) -> counts`` function; Algorithm 3 by default.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from costmodels.catalog import ocs_devices
from costmodels.circuits.fabric import DemandSpec
from costmodels.circuits.judge import evaluate_circuits
from costmodels.circuits.plan import CircuitPlan, plan_from_counts
from costmodels.circuits.problem import CircuitProblem
from costmodels.circuits.rfabric import (
    MaterializedPlan,
    RFabricSpec,
    Template,
    access_circuits,
    agg_problem,
    aggregate_demand,
    check_materialized,
    core_problem,
    template_for,
)
from heuristics.circuits.greedy import allocate_greedy

Allocator = Callable[[CircuitProblem], dict[tuple[str, str], int]]


@dataclass
class Outcome:
    """What one materialization did: ``plan`` is the active plan after it (the new one when
    ``committed``, else the previous one, possibly None)."""

    plan: MaterializedPlan | None
    committed: bool
    reason: str
    candidate: MaterializedPlan | None = None
    violations: list[str] = field(default_factory=list)
    bottleneck_s: dict[str, float] = field(default_factory=dict)


def should_reconfigure(safe_window_s: float | None, ocs_device: str) -> bool:
    """§5.3's slack rule: reconfigure only if the next safe window covers the OCS delay."""
    return (
        safe_window_s is None or safe_window_s >= ocs_devices()[ocs_device].reconfig_delay_ms / 1e3
    )


class Materializer:
    def __init__(self, spec: RFabricSpec, allocator: Allocator = allocate_greedy):
        spec.check()
        self.spec = spec
        self.allocate = allocator
        self.templates: dict[str, Template] = {}
        self.active: MaterializedPlan | None = None

    def template(self, intent: str) -> Template:
        """GETCACHEDTEMPLATE: populate on first use."""
        if intent not in self.templates:
            self.templates[intent] = template_for(intent, self.spec)
        return self.templates[intent]

    def allocate_plan(
        self, demand: DemandSpec, intent: str, failed: dict[str, int]
    ) -> tuple[MaterializedPlan, dict[str, float]]:
        """Lines 3-5: template, aggregated demand, allocation on both tiers (Agg first)."""
        tpl = self.template(intent)
        g = aggregate_demand(self.spec, demand)
        agg: dict[str, CircuitPlan] = {}
        times: dict[str, float] = {}
        for pod in self.spec.pods:
            prob = agg_problem(self.spec, tpl, pod, g.agg[pod.name], failed)
            plan = plan_from_counts(self.allocate(prob))
            agg[pod.name] = plan
            if prob.demand.entries:
                times[f"agg:{pod.name}"] = evaluate_circuits(prob, plan)[0]
        partial = MaterializedPlan(intent=intent, agg=agg, core=CircuitPlan())
        core = core_problem(self.spec, tpl, g.core, failed, access=access_circuits(partial))
        core_plan = plan_from_counts(self.allocate(core))
        if core.demand.entries:
            times["core"] = evaluate_circuits(core, core_plan)[0]
        return MaterializedPlan(intent=intent, agg=agg, core=core_plan), times

    def materialize(
        self,
        demand: DemandSpec,
        intent: str,
        *,
        failed: dict[str, int] | None = None,
        commit_failed: dict[str, int] | None = None,
        safe_window_s: float | None = None,
    ) -> Outcome:
        """Algorithm 2. ``failed`` is the fabric state when allocating, ``commit_failed`` the state
        at commit time (defaults to ``failed``); ``safe_window_s`` the next safe window."""
        failed = dict(failed or {})
        plan, times = self.allocate_plan(demand, intent, failed)
        violations = [
            str(v)
            for v in check_materialized(
                self.spec, plan, commit_failed if commit_failed is not None else failed
            )
        ]
        if violations:  # lines 6-7
            return Outcome(
                self.active,
                False,
                f"validation failed ({len(violations)} violations): keeping the previous plan",
                candidate=plan,
                violations=violations,
                bottleneck_s=times,
            )
        if not should_reconfigure(safe_window_s, self.spec.ocs_device):
            delay = ocs_devices()[self.spec.ocs_device].reconfig_delay_ms
            return Outcome(
                self.active,
                False,
                f"next safe window {safe_window_s * 1e3:.3g} ms < {self.spec.ocs_device} delay "
                f"{delay:g} ms: keeping the current plan",
                candidate=plan,
                bottleneck_s=times,
            )
        self.active = plan  # line 8: commit in the next safe window
        return Outcome(plan, True, "committed", candidate=plan, bottleneck_s=times)
