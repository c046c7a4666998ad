"""Shipped circuit-allocation examples: OCS fabrics with all-to-all demands (fabric-8:
port-starved; fabric-moe-16: skewed MoE traffic, every pair coverable)."""

from __future__ import annotations

from typing import Any

from costmodels.problem import Preset


def fabric_8() -> dict[str, Any]:
    return {
        "name": "fabric-8",
        "description": "8 ToRs with 4 OCS ports each at 400 Gbps, any pair eligible",
        "link_gbps": 400,
        "endpoints": [{"name": f"tor{i}", "ports": 4, "pod": f"pod{i // 4}"} for i in range(8)],
        "template": "all-pairs",
    }


def demand_alltoall_8() -> list[dict[str, Any]]:
    return [
        {"src": f"tor{i}", "dst": f"tor{j}", "bytes": 1e9 * (1 + (i + j) % 3)}
        for i in range(8)
        for j in range(8)
        if i != j
    ]


def fabric_moe_16() -> dict[str, Any]:
    return {
        "name": "fabric-moe-16",
        "description": "16 ToRs in 2 PoDs with 32 OCS ports each at 400 Gbps, any pair eligible",
        "link_gbps": 400,
        "endpoints": [
            {"name": f"tor{i:02d}", "ports": 32, "pod": f"pod{i // 8}"} for i in range(16)
        ],
        "template": "all-pairs",
    }


def ocs_h100_32() -> dict[str, Any]:
    return {
        "name": "ocs-h100-32",
        "description": (
            "an OCS between the 4 nodes of h100-32: 8 ports a node (one per GPU's 400 Gb/s NIC, "
            "the HGX reference design), any pair eligible"
        ),
        "link_gbps": 400,
        "endpoints": [{"name": f"h100-{i}", "ports": 8} for i in range(4)],
        "template": "all-pairs",
    }


def demand_moe_16() -> list[dict[str, Any]]:
    # EP all-to-all with hot experts: ToR i's load factor cycles 1, 1.5, 2, 3 (App. I, Figure 23)
    load = [(1.0, 1.5, 2.0, 3.0)[(i * 3) % 4] for i in range(16)]
    return [
        {"src": f"tor{i:02d}", "dst": f"tor{j:02d}", "bytes": 1e9 * load[i] * load[j]}
        for i in range(16)
        for j in range(16)
        if i != j
    ]


def demand_csv(rows: list[dict[str, Any]]) -> str:
    """A demand as the CSV ``parse_demand_csv`` reads."""
    return "src,dst,bytes\n" + "".join(f"{r['src']},{r['dst']},{r['bytes']:.0f}\n" for r in rows)


def circuits_presets() -> tuple[Preset, ...]:
    return (
        Preset(
            "fabric-8", "fabric", "8 ToRs x 4 OCS ports, 400 Gbps, all pairs eligible", fabric_8
        ),
        Preset(
            "demand-alltoall-8",
            "demand",
            "all-to-all demand between the 8 ToRs of fabric-8 (1-3 GB per pair)",
            demand_alltoall_8,
            demand_csv,
        ),
        Preset(
            "fabric-moe-16",
            "fabric",
            "16 ToRs x 32 OCS ports in 2 PoDs, 400 Gbps, all pairs eligible",
            fabric_moe_16,
        ),
        Preset(
            "demand-moe-16",
            "demand",
            "skewed MoE all-to-all between the 16 ToRs of fabric-moe-16 (1-9 GB per pair)",
            demand_moe_16,
            demand_csv,
        ),
        Preset(
            "ocs-h100-32",
            "fabric",
            "OCS between h100-32's 4 nodes, 8 x 400 Gbps ports each (a job's --fabric)",
            ocs_h100_32,
        ),
        Preset(
            "circuits-example",
            "problem",
            "circuits: fabric-8 under all-to-all demand",
            lambda: {"problem": "circuits", "fabric": "fabric-8", "demand": "demand-alltoall-8"},
        ),
        Preset(
            "circuits-moe",
            "problem",
            "circuits: skewed MoE all-to-all on fabric-moe-16 (every pair can be covered)",
            lambda: {"problem": "circuits", "fabric": "fabric-moe-16", "demand": "demand-moe-16"},
        ),
    )
