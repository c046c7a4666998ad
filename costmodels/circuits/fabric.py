"""Optical circuit fabrics and traffic demand (OrchestrRL/RFabric Appendix D.1).

A fabric has endpoints (ToRs, PoD uplinks, ...) each with a number of OCS ports, a line rate
B_link, and a set of eligible pairs: given explicitly, or by a template name (``all-pairs``, or
``bipartite`` between two endpoint ``side`` labels). Ports can be reserved or marked failed; what
remains is deg(v) of Eq. 6. Demand is a sparse directed matrix D(u -> v) in bytes, loaded from a
CSV with header ``src,dst,bytes``.
"""

from __future__ import annotations

import itertools
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from costmodels.catalog import ocs_devices
from costmodels.csvtable import read_rows
from costmodels.errors import SpecError, refuse_repeated_names
from costmodels.limits import MAX_BYTES, MAX_LINK_GBPS, MIN_RATE

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

TEMPLATES = ("all-pairs", "bipartite", "intra-pod", "cross-pod")


#: the one representation of an unordered endpoint pair, everywhere in circuits: (min, max) by name
Pair = tuple[str, str]


def pair_key(a: str, b: str) -> Pair:
    """The canonical key of the pair {a, b}: its names in sorted order."""
    return (a, b) if a <= b else (b, a)


class EndpointSpec(BaseModel):
    """One OCS-attached endpoint with ``ports`` physical ports; ``pod`` and ``side`` label it for
    templates."""

    model_config = _STRICT

    name: str = Field(min_length=1)
    ports: int = Field(ge=0, le=4096, description="OCS ports of the endpoint (at most 4 096)")
    pod: str | None = None
    side: str | None = None


class FabricSpec(BaseModel):
    model_config = _STRICT

    name: str = ""
    description: str = ""
    link_gbps: float = Field(
        ge=MIN_RATE, le=MAX_LINK_GBPS, description="line rate of one circuit, Gbit/s"
    )
    endpoints: list[EndpointSpec] = Field(min_length=2, max_length=65536)
    eligible: list[tuple[str, str]] | None = None
    template: Literal["all-pairs", "bipartite", "intra-pod", "cross-pod"] | None = None
    reserved_ports: dict[str, int] = Field(default_factory=dict)
    failed_ports: dict[str, int] = Field(default_factory=dict)
    ocs_device: str = "piezo"

    def check(self) -> None:  # noqa: C901
        refuse_repeated_names(
            (ep.name for ep in self.endpoints), "endpoints[{}].name", "duplicate endpoint name"
        )
        names = {ep.name: i for i, ep in enumerate(self.endpoints)}
        if self.eligible is not None and self.template is not None:
            raise SpecError(
                "template", self.template, "give either eligible pairs or a template, not both"
            )
        for i, (a, b) in enumerate(self.eligible or ()):
            for x in (a, b):
                if x not in names:
                    raise SpecError(f"eligible[{i}]", [a, b], f"unknown endpoint {x!r}")
            if a == b:
                raise SpecError(f"eligible[{i}]", [a, b], "a circuit needs two different endpoints")
        for fname in ("reserved_ports", "failed_ports"):
            for ep_name, k in getattr(self, fname).items():
                if ep_name not in names:
                    raise SpecError(f"{fname}.{ep_name}", k, "unknown endpoint")
                if k < 0:
                    raise SpecError(f"{fname}.{ep_name}", k, "must be >= 0")
        for i, ep in enumerate(self.endpoints):
            used = self.reserved_ports.get(ep.name, 0) + self.failed_ports.get(ep.name, 0)
            if used > ep.ports:
                raise SpecError(
                    f"endpoints[{i}].ports",
                    ep.ports,
                    f"reserved + failed ports ({used}) exceed the endpoint's ports",
                )
        if self.template == "bipartite":
            sides = {ep.side for ep in self.endpoints}
            if None in sides or len(sides) != 2:
                raise SpecError(
                    "template",
                    "bipartite",
                    "every endpoint needs a side label and there must be exactly two sides",
                )
        if self.template in ("intra-pod", "cross-pod") and any(
            ep.pod is None for ep in self.endpoints
        ):
            raise SpecError(
                "template", self.template, "every endpoint needs a pod label for this template"
            )
        if self.ocs_device not in ocs_devices():
            raise SpecError(
                "ocs_device",
                self.ocs_device,
                f"unknown OCS technology; known: {', '.join(ocs_devices())}",
            )

    def degrees(self) -> dict[str, int]:
        """deg(v) of Eq. 6: allocatable ports after reservations and masked failures."""
        return {
            ep.name: ep.ports
            - self.reserved_ports.get(ep.name, 0)
            - self.failed_ports.get(ep.name, 0)
            for ep in self.endpoints
        }

    def eligibility(self):
        """A predicate ``eligible(a, b)`` for the explicit list or the template, O(1) per pair (so
        large fabrics never enumerate all |V|^2 pairs, App. D.1)."""
        if self.eligible is not None:
            listed = {pair_key(*p) for p in self.eligible}
            return lambda a, b: pair_key(a, b) in listed
        by_name = {ep.name: ep for ep in self.endpoints}
        t = self.template or "all-pairs"
        rules = {
            "all-pairs": lambda x, y: True,
            "bipartite": lambda x, y: x.side != y.side,
            "intra-pod": lambda x, y: x.pod == y.pod,
            "cross-pod": lambda x, y: x.pod != y.pod,
        }
        rule = rules[t]
        return lambda a, b: (
            a != b and a in by_name and b in by_name and rule(by_name[a], by_name[b])
        )

    def eligible_pairs(self) -> set[Pair]:
        """Every unordered eligible pair (small fabrics, tests and pictures)."""
        ok = self.eligibility()
        return {
            pair_key(a.name, b.name)
            for a, b in itertools.combinations(self.endpoints, 2)
            if ok(a.name, b.name)
        }


class DemandEntry(BaseModel):
    model_config = _STRICT

    src: str = Field(min_length=1)
    dst: str = Field(min_length=1)
    bytes: float = Field(ge=0, le=MAX_BYTES)


class DemandSpec(BaseModel):
    """Sparse directed demand D(u -> v) in bytes; repeated (src, dst) rows add up."""

    model_config = _STRICT

    entries: list[DemandEntry] = Field(default_factory=list)

    def check_against(self, fabric: FabricSpec) -> None:
        names = {ep.name for ep in fabric.endpoints}
        for i, e in enumerate(self.entries):
            for col in ("src", "dst"):
                if getattr(e, col) not in names:
                    raise SpecError(
                        f"row {i + 2}.{col}",
                        getattr(e, col),
                        "unknown endpoint (not in the fabric)",
                    )
            if e.src == e.dst:
                raise SpecError(f"row {i + 2}.dst", e.dst, "src and dst must differ")

    def matrix(self) -> dict[tuple[str, str], float]:
        out: dict[tuple[str, str], float] = {}
        for e in self.entries:
            out[(e.src, e.dst)] = out.get((e.src, e.dst), 0.0) + e.bytes
        return out


def parse_demand_csv(text: str) -> DemandSpec:
    """Parse ``src,dst,bytes`` CSV text; errors name the row (1-based, header is row 1)."""
    rows = read_rows(text, ("src", "dst", "bytes"), what="demand CSV")
    entries = []
    for i, row in enumerate(rows):
        raw = row.get("bytes")
        try:
            value = float(raw) if raw is not None else float("nan")
        except ValueError:
            raise SpecError(f"row {i + 2}.bytes", raw, "not a number") from None
        if not 0 <= value <= MAX_BYTES:
            raise SpecError(
                f"row {i + 2}.bytes", raw, f"must be a number in 0..{MAX_BYTES:g} (an exabyte)"
            )
        for col in ("src", "dst"):
            if not (row.get(col) or "").strip():
                raise SpecError(f"row {i + 2}.{col}", row.get(col), "empty endpoint name")
        entries.append(DemandEntry(src=row["src"].strip(), dst=row["dst"].strip(), bytes=value))
    return DemandSpec(entries=entries)
