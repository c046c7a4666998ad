"""Network bill of materials and price per fabric (OrchestrRL §7.2.3, Appendix G / Table 4).

Every GPU has one NIC at the link rate. Switches have ``radix`` ports; an electrical fabric uses
the fewest tiers that reach all GPUs (1 tier up to radix, 2 up to radix^2/2, else 3).

* fat-tree (non-blocking, t tiers): (2t-1)·N switch ports and t·N links;
* fat-tree oversubscribed o:1 at the ToR: N + (2t-2)·N/o ports and N + (t-1)·N/o links;
* rail-optimized: rails are leaf switches joined by a spine with full bisection, which counts
  the same ports and links as the fat-tree (the paper finds its cost similar);
* RFabric (hybrid EPS-OCS, §5.1): static EPS ToRs with N host ports and N uplinks; each uplink
  lands on an OCS-Agg port through a patch panel; a ``core_fraction`` of uplink capacity
  continues from OCS-Agg to OCS-Core on fibre (two OCS ports, a patch-panel port). Circuits are
  optical end to end, so only electrical ends carry transceivers.

Each electrical link has a transceiver at both ends and one fibre. Where our counting differs from
the paper's (which does not publish its component counts): we count transceivers on host links
too, and size the OCS core by ``core_fraction``; the relative ordering is what we compare.
Prices: USD from ``network_prices.csv``.
"""

from __future__ import annotations

from typing import Any

from costmodels.catalog import network_prices

FABRICS = ("fat-tree", "fat-tree-oversubscribed", "rail-optimized", "rfabric")


def tiers(gpus: int, radix: int) -> int:
    if gpus <= radix:
        return 1
    if gpus <= radix * radix // 2:
        return 2
    return 3


def _electrical(nics: float, ports: float, links: float) -> dict[str, float]:
    """An electrical packet-switched fabric's counts: a NIC per GPU, switch ports, and a fiber
    with a transceiver at each end per link."""
    return {
        "nic": nics,
        "electrical_switch_port": ports,
        "transceiver": 2 * links,
        "fiber_cable": links,
    }


def bill_of_materials(
    fabric: str,
    gpus: int,
    radix: int = 64,
    oversubscription: float = 3.0,
    core_fraction: float = 0.5,
) -> dict[str, float]:
    """Component counts of ``fabric`` for ``gpus`` GPUs."""
    n = float(gpus)
    t = tiers(gpus, radix)
    if fabric in ("fat-tree", "rail-optimized"):
        return _electrical(n, ports=(2 * t - 1) * n, links=t * n)
    if fabric == "fat-tree-oversubscribed":
        up = n / oversubscription
        return _electrical(n, ports=n + (2 * t - 2) * up, links=n + (t - 1) * up)
    if fabric == "rfabric":
        core = core_fraction * n
        return {
            "nic": n,
            "electrical_switch_port": 2 * n,
            "transceiver": 2 * n + n,  # host links at both ends; ToR side of each uplink
            "fiber_cable": n + n + core,
            "ocs_port": n + 2 * core,
            "patch_panel_port": n + core,
        }
    raise ValueError(f"unknown fabric {fabric!r}; known: {', '.join(FABRICS)}")


def fabric_cost(fabric: str, gpus: int, link_gbps: int, **kwargs: Any) -> dict[str, Any]:
    """Bill of materials, price per component and total USD of a fabric at ``link_gbps``."""
    prices = network_prices()
    if link_gbps not in prices:
        raise ValueError(f"no prices for {link_gbps} Gbps; known: {sorted(prices)}")
    price = prices[link_gbps]
    bom = bill_of_materials(fabric, gpus, **kwargs)
    unit = {
        "nic": price.nic_usd,
        "electrical_switch_port": price.electrical_switch_port_usd,
        "transceiver": price.transceiver_usd,
        "fiber_cable": price.fiber_cable_usd,
        "ocs_port": price.ocs_port_usd,
        "patch_panel_port": price.patch_panel_port_usd,
    }
    items = {k: {"count": v, "unit_usd": unit[k], "usd": v * unit[k]} for k, v in bom.items()}
    total = sum(i["usd"] for i in items.values())
    return {
        "fabric": fabric,
        "gpus": gpus,
        "link_gbps": link_gbps,
        "items": items,
        "total_usd": total,
        "usd_per_gpu": total / gpus,
    }


def relative_costs(gpus: int, link_gbps: int, **kwargs: Any) -> dict[str, float]:
    """Each fabric's cost relative to the non-blocking fat-tree (OrchestrRL Figure 15)."""
    base = fabric_cost("fat-tree", gpus, link_gbps, **kwargs)["total_usd"]
    return {f: fabric_cost(f, gpus, link_gbps, **kwargs)["total_usd"] / base for f in FABRICS}
