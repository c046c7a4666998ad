"""RFabric's two-tier OCS fabric: PoDs, stage templates, demand aggregation and the Core–Agg
consistency check (OrchestrRL §5.1–5.3, Appendix D).

Each PoD has ``tors`` ToRs with ``tor_ports`` OCS-Agg ports each, and ``uplink_ports`` boundary
ports: on OCS-Agg they form the PoD's uplink endpoint ``POD.up`` (ToR–uplink circuits lift/drop
inter-PoD traffic), on OCS-Core the PoD endpoint ``POD`` (PoD–PoD circuits). Endpoint names:
ToRs ``POD.torI``, uplinks ``POD.up``, PoDs ``POD``. Failed ports are keyed by those names.

Templates (§5.2) decide which pairs are eligible per intent:

* ``train``: high-bisection OCS-Agg inside training PoDs (ToR–ToR and ToR–uplink) plus an
  inter-PoD mesh between training PoDs on OCS-Core (DP all-reduce);
* ``gen``: isolated intra-PoD fabrics inside generation PoDs, and only a small core slice
  (``core_slice`` of the uplink ports) linking generation PoDs to training PoDs;
* ``weight-sync``: the dissemination forest: training -> generation PoD circuits on OCS-Core and
  ToR–uplink / ToR–ToR fan-out circuits on OCS-Agg in every PoD.

AGGREGATEDEMAND (App. D.1) turns ToR-level demand into one OCS-Agg problem per PoD (ToR–ToR for
intra-PoD traffic; ToR -> POD.up and POD.up -> ToR for lift/drop of inter-PoD traffic) and a
PoD-to-PoD OCS-Core problem.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from costmodels.circuits.check import check_circuits
from costmodels.circuits.fabric import DemandEntry, DemandSpec, FabricSpec
from costmodels.circuits.plan import CircuitPlan
from costmodels.circuits.problem import CircuitProblem
from costmodels.errors import SpecError, refuse_repeated_names
from costmodels.violations import Violation

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

INTENTS = ("train", "gen", "weight-sync")


class RPod(BaseModel):
    model_config = _STRICT

    name: str = Field(min_length=1, pattern=r"^[^.]+$")
    role: Literal["train", "gen"]
    tors: int = Field(ge=1)
    tor_ports: int = Field(ge=0, description="OCS-Agg ports per ToR")
    uplink_ports: int = Field(ge=0, description="boundary ports: the PoD's OCS-Core budget d_p")


class RFabricSpec(BaseModel):
    model_config = _STRICT

    name: str = ""
    description: str = ""
    link_gbps: float = Field(gt=0)
    ocs_device: str = "piezo"
    core_slice: float = Field(
        default=0.125,
        gt=0,
        le=1,
        description="gen template: share of uplink ports kept for the core",
    )
    pods: list[RPod] = Field(min_length=1)

    def check(self) -> None:
        refuse_repeated_names((p.name for p in self.pods), "pods[{}].name", "duplicate PoD name")

    def pod(self, name: str) -> RPod:
        return next(p for p in self.pods if p.name == name)

    def tor_names(self, pod: RPod) -> list[str]:
        return [f"{pod.name}.tor{i}" for i in range(pod.tors)]

    def endpoint_ports(self) -> dict[str, int]:
        """Physical ports of every endpoint name (ToRs, uplinks, PoDs on the core)."""
        out: dict[str, int] = {}
        for p in self.pods:
            for t in self.tor_names(p):
                out[t] = p.tor_ports
            out[f"{p.name}.up"] = p.uplink_ports
            out[p.name] = p.uplink_ports
        return out


def pod_of_tor(endpoint: str) -> str:
    return endpoint.split(".", 1)[0]


@dataclass(frozen=True)
class Template:
    """One stage template (§5.2): which pairs are eligible on each tier."""

    intent: str
    agg_rule: Callable[[RPod, str, str], bool]  # (pod, endpoint, endpoint) inside one PoD
    core_rule: Callable[[RPod, RPod], bool]
    core_share: Callable[[RPod], float]


def _is_up(x: str) -> bool:
    return x.endswith(".up")


def template_for(intent: str, spec: RFabricSpec) -> Template:
    if intent == "train":
        return Template(
            intent,
            lambda p, a, b: p.role == "train",
            lambda p, q: p.role == q.role == "train",
            lambda p: 1.0,
        )
    if intent == "gen":
        return Template(
            intent,
            lambda p, a, b: p.role == "gen",
            lambda p, q: {p.role, q.role} == {"gen", "train"},
            lambda p: spec.core_slice,
        )
    if intent == "weight-sync":
        return Template(
            intent,
            lambda p, a, b: True,
            lambda p, q: {p.role, q.role} == {"gen", "train"},
            lambda p: 1.0,
        )
    raise SpecError("intent", intent, f"unknown intent; known: {', '.join(INTENTS)}")


@dataclass
class AggregatedDemand:
    agg: dict[str, dict[tuple[str, str], float]]  # per PoD, ToR-level (incl. POD.up)
    core: dict[tuple[str, str], float]  # PoD -> PoD


def aggregate_demand(spec: RFabricSpec, demand: DemandSpec) -> AggregatedDemand:
    """AGGREGATEDEMAND (App. D.1) from ToR-level demand ``POD.torI -> POD.torJ``."""
    tors = {t for p in spec.pods for t in spec.tor_names(p)}
    agg: dict[str, dict[tuple[str, str], float]] = {p.name: {} for p in spec.pods}
    core: dict[tuple[str, str], float] = {}

    def add(d: dict, key: tuple[str, str], b: float) -> None:
        d[key] = d.get(key, 0.0) + b

    for i, e in enumerate(demand.entries):
        for col in ("src", "dst"):
            if getattr(e, col) not in tors:
                raise SpecError(
                    f"row {i + 2}.{col}", getattr(e, col), "not a ToR of this fabric (POD.torI)"
                )
        ps, pd = pod_of_tor(e.src), pod_of_tor(e.dst)
        if e.src == e.dst or e.bytes <= 0:
            continue  # rack-local traffic stays on the EPS ToR
        if ps == pd:
            add(agg[ps], (e.src, e.dst), e.bytes)
        else:
            add(agg[ps], (e.src, f"{ps}.up"), e.bytes)  # lift
            add(agg[pd], (f"{pd}.up", e.dst), e.bytes)  # drop
            add(core, (ps, pd), e.bytes)
    return AggregatedDemand(agg, core)


def _demand(matrix: dict[tuple[str, str], float]) -> DemandSpec:
    return DemandSpec(
        entries=[
            DemandEntry(src=a, dst=b, bytes=v) for (a, b), v in sorted(matrix.items()) if v > 0
        ]
    )


def agg_problem(
    spec: RFabricSpec,
    tpl: Template,
    pod: RPod,
    demand: dict[tuple[str, str], float],
    failed: dict[str, int],
) -> CircuitProblem:
    """The OCS-Agg allocation problem of one PoD under a template and failed ports."""
    names = [*spec.tor_names(pod), f"{pod.name}.up"]
    ports = spec.endpoint_ports()
    eligible = [
        (a, b) for i, a in enumerate(names) for b in names[i + 1 :] if tpl.agg_rule(pod, a, b)
    ]
    fabric = FabricSpec(
        name=f"{spec.name}:{pod.name}:agg",
        link_gbps=spec.link_gbps,
        ocs_device=spec.ocs_device,
        endpoints=[{"name": n, "ports": ports[n], "pod": pod.name} for n in names],
        eligible=eligible,
        failed_ports={n: min(failed.get(n, 0), ports[n]) for n in names if failed.get(n)},
    )
    return CircuitProblem(
        fabric, _demand({k: v for k, v in demand.items() if tpl.agg_rule(pod, *k)})
    )


def core_problem(
    spec: RFabricSpec,
    tpl: Template,
    demand: dict[tuple[str, str], float],
    failed: dict[str, int],
    access: dict[str, int] | None = None,
) -> CircuitProblem:
    """The OCS-Core problem: PoD endpoints with the template's share of their boundary ports, capped
    by ``access`` (the ToR–uplink circuits each PoD got on OCS-Agg) so that the tiers stay
    coupled."""
    endpoints, reserved, fail = [], {}, {}
    for p in spec.pods:
        usable = int(p.uplink_ports * tpl.core_share(p))
        f = min(failed.get(p.name, 0), p.uplink_ports)
        cap = max(0, usable - f)
        if access is not None:
            cap = min(cap, access.get(p.name, 0))
        endpoints.append({"name": p.name, "ports": p.uplink_ports, "pod": p.name})
        fail[p.name] = f
        reserved[p.name] = p.uplink_ports - f - cap
    eligible = [
        (p.name, q.name)
        for i, p in enumerate(spec.pods)
        for q in spec.pods[i + 1 :]
        if tpl.core_rule(p, q)
    ]
    fabric = FabricSpec(
        name=f"{spec.name}:core",
        link_gbps=spec.link_gbps,
        ocs_device=spec.ocs_device,
        endpoints=endpoints,
        eligible=eligible,
        reserved_ports={k: v for k, v in reserved.items() if v},
        failed_ports={k: v for k, v in fail.items() if v},
    )
    keep = {(a, b): v for (a, b), v in demand.items() if tpl.core_rule(spec.pod(a), spec.pod(b))}
    return CircuitProblem(fabric, _demand(keep))


class MaterializedPlan(BaseModel):
    """One period's circuit plan on both tiers."""

    model_config = _STRICT

    intent: str
    agg: dict[str, CircuitPlan]
    core: CircuitPlan


def access_circuits(plan: MaterializedPlan) -> dict[str, int]:
    """ToR–uplink circuits per PoD: the lift/drop capacity behind its core circuits."""
    out: dict[str, int] = {}
    for pod, p in plan.agg.items():
        out[pod] = sum(c.count for c in p.circuits if _is_up(c.a) or _is_up(c.b))
    return out


def check_materialized(
    spec: RFabricSpec, plan: MaterializedPlan, failed: dict[str, int]
) -> list[Violation]:
    """Validate(C, S) of Algorithm 2 against the fabric state ``failed`` at commit time: ports and
    eligibility on every tier, and Core–Agg consistency (App. D)."""
    tpl = template_for(plan.intent, spec)
    out: list[Violation] = []
    for pod_name, p in plan.agg.items():
        pod = spec.pod(pod_name)
        prob = agg_problem(spec, tpl, pod, {}, failed)
        out += [
            Violation(v.constraint, f"OCS-Agg {pod_name}: {v.message}")
            for v in check_circuits(prob, p)
        ]
    core = core_problem(spec, tpl, {}, failed)
    out += [
        Violation(v.constraint, f"OCS-Core: {v.message}") for v in check_circuits(core, plan.core)
    ]
    access = access_circuits(plan)
    used: dict[str, int] = {}
    for c in plan.core.circuits:
        used[c.a] = used.get(c.a, 0) + c.count
        used[c.b] = used.get(c.b, 0) + c.count
    for pod, n in sorted(used.items()):
        if n > access.get(pod, 0):
            out.append(
                Violation(
                    "core-agg",
                    f"PoD {pod}: {n} OCS-Core circuits but only {access.get(pod, 0)} ToR-uplink "
                    "circuits to carry them",
                )
            )
    return out
