"""Cluster specs: GPU nodes and the network between any two GPUs (HetRL §3.1, Appendix B.1).

The network is given hierarchically, the way operators describe it:

* intra-node links come from the GPU catalog, one direction (``GPUSpec.link_gb_per_s``: a ring
  step sends one way, so the spec sheet's both-directions sum would double it), with the
  project's one hop latency (``costmodels.efficiency``), unless the node or the network section
  overrides them;
* GPUs in different nodes of one zone talk over ``intra_zone``;
* GPUs in two different zones talk over the ``inter_zone`` entry for that zone pair; every pair of
  zones that hold GPUs must have one;
* ``matrix`` optionally overrides everything with explicit N x N bandwidth/latency matrices over
  the GPUs in declaration order.

:func:`build_topology` turns a spec into the device list and the alpha (latency, s) and beta
(bandwidth, GB/s) matrices of HetRL Appendix B.1.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from costmodels.catalog import GPUSpec, get_gpu
from costmodels.efficiency import INTRA_NODE_HOP_LATENCY_MS
from costmodels.errors import SpecError, refuse_repeated_names
from costmodels.limits import MAX_LINK_GBPS, MIN_RATE
from costmodels.profiles import HardwareProfile

#: Latency of an intra-node hop when nothing else is said: the project's one NVLink/PCIe hop
DEFAULT_INTRA_NODE_LATENCY_MS = INTRA_NODE_HOP_LATENCY_MS

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class LinkSpec(BaseModel):
    """A link class: bandwidth in Gbit/s in one direction (NIC and WAN rates are quoted per
    direction, full duplex) and one-way latency in milliseconds."""

    model_config = _STRICT

    bandwidth_gbps: float = Field(ge=MIN_RATE, le=MAX_LINK_GBPS)
    latency_ms: float = Field(ge=0, le=1e6)


class InterZoneLink(LinkSpec):
    """The link between GPUs of two different zones."""

    zones: tuple[str, str]


class MatrixOverride(BaseModel):
    """Explicit N x N matrices over the cluster's GPUs in declaration order (diagonal ignored)."""

    model_config = _STRICT

    bandwidth_gbps: list[list[float]]
    latency_ms: list[list[float]]


class NetworkSpec(BaseModel):
    model_config = _STRICT

    intra_node: LinkSpec | None = None
    intra_zone: LinkSpec
    inter_zone: list[InterZoneLink] = Field(default_factory=list)
    matrix: MatrixOverride | None = None


#: the largest cluster a placement problem may have (pairwise bandwidth and latency matrices are
#: GPUs^2 floats: 8 192 GPUs is 0.5 GB each, 10^6 would be 7 TiB)
MAX_CLUSTER_GPUS = 8192


class NodeSpec(BaseModel):
    """A machine: ``count`` GPUs of one type in one zone (region defaults to the zone)."""

    model_config = _STRICT

    name: str = Field(min_length=1)
    gpu: str = Field(min_length=1)
    count: int = Field(gt=0, le=64, description="GPUs in the node (at most 64)")
    zone: str = Field(min_length=1)
    region: str | None = None
    intra_node: LinkSpec | None = None


class ClusterSpec(BaseModel):
    """A heterogeneous cluster. ``gpus`` adds user-defined GPU types to the shipped catalog."""

    model_config = _STRICT

    name: str = ""
    description: str = ""
    gpus: list[GPUSpec] = Field(default_factory=list)
    nodes: list[NodeSpec] = Field(min_length=1)
    network: NetworkSpec
    profiles: list[HardwareProfile] = Field(
        default_factory=list,
        max_length=256,
        description=(
            "fitted kernel profiles of this cluster's GPU types (the `profiles:` entries `rlplan "
            "calibrate` writes); they "
            "replace the shipped profile of their GPU type, a custom GPU type gets calibrated "
            "kernels, and --profile FILE "
            "overrides them per GPU type"
        ),
    )

    def check(self) -> None:
        """Cross-field checks pydantic cannot express; raises SpecError with the field path.

        In order: the cluster's size, GPU and node names, each node's GPU type, the profiles,
        the inter-zone links, then the GPU matrix when given, else a link for every zone pair."""
        self._check_size()
        self._check_gpu_types()
        self._check_profiles()
        zones = self.zones()
        links = self._inter_zone_links(zones)
        if self.network.matrix is not None:
            self._check_matrix()
        else:
            self._check_zone_pairs(zones, links)

    def _check_size(self) -> None:
        """At most MAX_CLUSTER_GPUS GPUs."""
        total = sum(n.count for n in self.nodes)
        if total > MAX_CLUSTER_GPUS:
            raise SpecError(
                "nodes",
                f"{total} GPUs",
                f"rlplan plans clusters of up to {MAX_CLUSTER_GPUS:,} GPUs (its GPU-pair matrices "
                "grow as the square)",
            )

    def _check_gpu_types(self) -> None:
        """Custom GPU and node names are unique and every node's GPU type is known."""
        refuse_repeated_names(
            (g.name for g in self.gpus),
            "gpus[{}].name",
            "a second custom GPU of that name (which one would a node get?)",
        )
        custom = self.custom_gpus()
        refuse_repeated_names((n.name for n in self.nodes), "nodes[{}].name", "duplicate node name")
        for i, node in enumerate(self.nodes):
            try:
                get_gpu(node.gpu, custom)
            except SpecError as exc:
                raise SpecError(f"nodes[{i}].gpu", node.gpu, exc.reason) from None

    def _check_profiles(self) -> None:
        """At most one profile per GPU type, each of a type some node has."""
        known = {node.gpu for node in self.nodes}
        profiled: set[str] = set()
        for i, prof in enumerate(self.profiles):
            if prof.gpu in profiled:
                raise SpecError(f"profiles[{i}].gpu", prof.gpu, "a second profile of this GPU type")
            if prof.gpu not in known:
                raise SpecError(
                    f"profiles[{i}].gpu",
                    prof.gpu,
                    f"no node has this GPU type (nodes: {', '.join(sorted(known))})",
                )
            profiled.add(prof.gpu)

    def _inter_zone_links(self, zones: set[str]) -> dict[frozenset[str], int]:
        """Each inter-zone link joins two different zones that have nodes, one link per pair;
        the index of each pair's link."""
        links: dict[frozenset[str], int] = {}
        for i, link in enumerate(self.network.inter_zone):
            a, b = link.zones
            if a == b:
                raise SpecError(
                    f"network.inter_zone[{i}].zones",
                    list(link.zones),
                    "an inter-zone link needs two different zones",
                )
            for z in (a, b):
                if z not in zones:
                    raise SpecError(
                        f"network.inter_zone[{i}].zones",
                        list(link.zones),
                        f"zone {z!r} has no nodes; zones: {', '.join(sorted(zones))}",
                    )
            key = frozenset((a, b))
            if key in links:
                raise SpecError(
                    f"network.inter_zone[{i}].zones",
                    list(link.zones),
                    f"duplicate link for this zone pair (also inter_zone[{links[key]}])",
                )
            links[key] = i
        return links

    def _check_matrix(self) -> None:
        """The bandwidth and latency matrices are n x n, bandwidth > 0 and latency >= 0 off the
        diagonal."""
        n = self.num_gpus
        for fname in ("bandwidth_gbps", "latency_ms"):
            m = getattr(self.network.matrix, fname)
            if len(m) != n or any(len(row) != n for row in m):
                raise SpecError(
                    f"network.matrix.{fname}",
                    f"{len(m)} rows",
                    f"must be {n} x {n} (one row and column per GPU)",
                )
            for r, row in enumerate(m):
                for c, v in enumerate(row):
                    if r == c:
                        continue
                    if (fname == "bandwidth_gbps" and v <= 0) or (fname == "latency_ms" and v < 0):
                        raise SpecError(
                            f"network.matrix.{fname}[{r}][{c}]",
                            v,
                            "bandwidth must be > 0 and latency >= 0",
                        )

    def _check_zone_pairs(self, zones: set[str], links: dict[frozenset[str], int]) -> None:
        """Without a matrix, every pair of zones has an inter-zone link."""
        for a, b in itertools.combinations(sorted(zones), 2):
            if frozenset((a, b)) not in links:
                raise SpecError(
                    "network.inter_zone",
                    [a, b],
                    "no link between these zones; add an inter_zone entry for the pair",
                )

    def custom_gpus(self) -> dict[str, GPUSpec]:
        return {g.name: g for g in self.gpus}

    def zones(self) -> set[str]:
        return {node.zone for node in self.nodes}

    @property
    def num_gpus(self) -> int:
        return sum(node.count for node in self.nodes)


@dataclass(frozen=True)
class Device:
    """One GPU of a cluster. ``id`` is ``<node>:<local index>`` and is what plans refer to."""

    index: int
    id: str
    node: str
    local_index: int
    gpu: GPUSpec
    zone: str
    region: str


@dataclass(frozen=True, eq=False)
class Topology:
    """Resolved device graph G_D of HetRL Appendix B.1.

    ``latency_s[i, j]`` is alpha in seconds and ``bandwidth_gbs[i, j]`` is beta in GB/s (bytes,
    not bits). Diagonals are 0 and +inf: a GPU talking to itself costs nothing. ``memo`` holds
    per-topology memoised results of pure functions of it (ring costs); it never changes a value.
    """

    devices: tuple[Device, ...]
    latency_s: np.ndarray
    bandwidth_gbs: np.ndarray
    explicit_matrix: bool
    memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def n(self) -> int:
        return len(self.devices)

    def index_of(self) -> dict[str, int]:
        """Device id -> index, built once per topology (cost-model inner loops ask for it per
        tasklet; callers must not mutate it)."""
        index = self.memo.get("index_of")
        if index is None:
            index = self.memo["index_of"] = {d.id: d.index for d in self.devices}
        return index

    def gpu_of(self) -> dict[str, Any]:
        """Device id -> its GPU type, built once per topology (``index_of``'s kind of memo;
        callers must not mutate it)."""
        gpus = self.memo.get("gpu_of")
        if gpus is None:
            gpus = self.memo["gpu_of"] = {d.id: d.gpu for d in self.devices}
        return gpus

    def node_of(self) -> np.ndarray:
        names = {name: i for i, name in enumerate(dict.fromkeys(d.node for d in self.devices))}
        return np.array([names[d.node] for d in self.devices])

    def zone_of(self) -> np.ndarray:
        names = {name: i for i, name in enumerate(dict.fromkeys(d.zone for d in self.devices))}
        return np.array([names[d.zone] for d in self.devices])

    def link(self, i: int, j: int) -> tuple[float, float]:
        """(alpha seconds, beta GB/s) between devices i and j."""
        return float(self.latency_s[i, j]), float(self.bandwidth_gbs[i, j])


def build_topology(spec: ClusterSpec) -> Topology:
    """Expand a cluster spec into devices and alpha/beta matrices (units: s and GB/s)."""
    custom = spec.custom_gpus()
    devices: list[Device] = []
    for node in spec.nodes:
        gpu = get_gpu(node.gpu, custom)
        for k in range(node.count):
            devices.append(
                Device(
                    len(devices),
                    f"{node.name}:{k}",
                    node.name,
                    k,
                    gpu,
                    node.zone,
                    node.region or node.zone,
                )
            )
    matrix = spec.network.matrix
    if matrix is not None:
        lat = np.asarray(matrix.latency_ms, dtype=float) / 1e3
        bw = np.asarray(matrix.bandwidth_gbps, dtype=float) / 8.0
        np.fill_diagonal(lat, 0.0)
        np.fill_diagonal(bw, np.inf)
        return Topology(tuple(devices), lat, bw, True)
    lat, bw = _hierarchical_links(spec)
    return Topology(tuple(devices), lat, bw, False)


def _hierarchical_links(spec: ClusterSpec) -> tuple[np.ndarray, np.ndarray]:
    """The alpha (s) and beta (GB/s) matrices of a hierarchical network (module doc), by blocks
    rather than pairs: a pair's link is its node's own, its zone's network or its two zones'
    link, so a node-by-node matrix expanded to GPUs gives every entry (a Python loop over pairs
    took 2.5 s at 2 048 GPUs and grows with their square; this is numpy's repeat at 8 192)."""
    nodes = [node for node in spec.nodes if node.count]
    zones = list(dict.fromkeys(node.zone for node in nodes))
    zone_lat = np.zeros((len(zones), len(zones)))
    zone_bw = np.full((len(zones), len(zones)), np.inf)
    for link in spec.network.inter_zone:
        if not set(link.zones) <= set(zones):  # a link between zones that hold no GPU
            continue
        a, b = (zones.index(z) for z in link.zones)
        zone_lat[a, b] = zone_lat[b, a] = link.latency_ms / 1e3
        zone_bw[a, b] = zone_bw[b, a] = link.bandwidth_gbps / 8.0
    zone_ms, zone_gbs = intra_zone_link(spec)
    np.fill_diagonal(zone_lat, zone_ms / 1e3)
    np.fill_diagonal(zone_bw, zone_gbs)
    zone_of = np.array([zones.index(node.zone) for node in nodes], dtype=np.intp)
    node_lat = zone_lat[np.ix_(zone_of, zone_of)]
    node_bw = zone_bw[np.ix_(zone_of, zone_of)]
    for i, node in enumerate(nodes):
        ms, gbs = intra_node_link(spec, node)
        node_lat[i, i], node_bw[i, i] = ms / 1e3, gbs
    counts = np.array([node.count for node in nodes])
    lat = np.repeat(np.repeat(node_lat, counts, axis=0), counts, axis=1)
    bw = np.repeat(np.repeat(node_bw, counts, axis=0), counts, axis=1)
    np.fill_diagonal(lat, 0.0)
    np.fill_diagonal(bw, np.inf)
    return lat, bw


def intra_node_link(spec: ClusterSpec, node: NodeSpec) -> tuple[float, float]:
    """(latency ms, bandwidth GB/s) between two GPUs of ``node``: the node's or the network's
    override, else the GPU catalog's link (``GPUSpec.link_gb_per_s``) at the NVLink hop."""
    override = node.intra_node or spec.network.intra_node
    if override is not None:
        return override.latency_ms, override.bandwidth_gbps / 8.0
    gpu = get_gpu(node.gpu, spec.custom_gpus())
    return DEFAULT_INTRA_NODE_LATENCY_MS, gpu.link_gb_per_s


def intra_zone_link(spec: ClusterSpec) -> tuple[float, float]:
    """(latency ms, bandwidth GB/s) between GPUs of different nodes in one zone."""
    zone = spec.network.intra_zone
    return zone.latency_ms, zone.bandwidth_gbps / 8.0


def describe(spec: ClusterSpec) -> dict[str, Any]:
    """A short summary (GPU counts per type and zone) for tables and listings."""
    by_type: dict[str, int] = {}
    for node in spec.nodes:
        by_type[node.gpu] = by_type.get(node.gpu, 0) + node.count
    return {"gpus": spec.num_gpus, "by_type": by_type, "zones": sorted(spec.zones())}
