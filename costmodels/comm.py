"""Alpha-beta communication costs and the bottleneck ring (HetRL Appendix B.2).

A collective over a device set runs on a ring; its time per step is set by the ring's slowest
edge, and HetRL takes the best ring: ``min over rings r of max over edges e in r of
(alpha_e + volume / beta_e)`` (a bottleneck travelling-salesman problem).

:func:`bottleneck_ring` returns that value with a lower bound and says whether it is proven
optimal. Its ring keeps each node's GPUs together and each zone's nodes together, and orders the
zones by an exact search when there are at most :data:`EXACT_ZONE_LIMIT` of them (a greedy order
otherwise). The lower bound is the larger of (a) the bottleneck spanning tree's heaviest edge and
(b) every vertex's second-lightest edge (a Hamiltonian cycle uses two edges at every vertex).
When the two differ the ring problem is solved exactly on the network's hierarchy: GPUs of one
node are interchangeable (their links to everything else are the same), so a Hamiltonian cycle
is a sequence of node visits, and a dynamic programme over "how many GPUs of each node are used
so far" decides, for a threshold, whether a ring with no edge above it exists; a binary search
over the distinct edge weights finds the optimum. That is exact for every network given
hierarchically (nodes in zones, links per zone pair) and runs whenever its state space is small
(at most :data:`EXACT_STATE_LIMIT` states), which covers TP, PP and DP groups and all-gathers
over a few nodes. Beyond it (or with an explicit per-GPU matrix and many GPUs) the contiguous
ring stands with its lower bound, and the breakdown's ``ring_exact`` says so.
Units: seconds, GB, GB/s.
"""

from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass

import numpy as np

from costmodels.cluster import Topology

EXACT_ZONE_LIMIT = 7
EXACT_STATE_LIMIT = 200_000
#: entries a per-topology memo (``Topology.memo``) takes before it stops growing
MEMO_ENTRIES = 200_000


@dataclass(frozen=True)
class RingCost:
    seconds: float
    lower_bound: float

    @property
    def exact(self) -> bool:
        return self.seconds <= self.lower_bound * (1 + 1e-9) + 1e-15


def link_time(topo: Topology, a: int, b: int, volume_gb: float) -> float:
    """alpha + volume / beta for one transfer between devices a and b."""
    if a == b:
        return 0.0
    return float(topo.latency_s[a, b] + volume_gb / topo.bandwidth_gbs[a, b])


def edge_weights(topo: Topology, devices: list[int], volume_gb: float) -> np.ndarray:
    idx = np.asarray(devices)
    lat = topo.latency_s[np.ix_(idx, idx)]
    bw = topo.bandwidth_gbs[np.ix_(idx, idx)]
    with np.errstate(divide="ignore"):
        w = lat + volume_gb / bw
    np.fill_diagonal(w, np.inf)
    return w


def _ring_value(w: np.ndarray, order: list[int]) -> float:
    nxt = order[1:] + order[:1]
    return float(max(w[a, b] for a, b in zip(order, nxt, strict=True)))


def _lower_bound(w: np.ndarray) -> float:
    n = w.shape[0]
    if n <= 2:
        return float(w[0, 1]) if n == 2 else 0.0
    # (b) every vertex needs two ring edges
    second = np.sort(w, axis=1)[:, 1]
    # (a) bottleneck spanning tree (Prim on the dense matrix)
    in_tree = np.zeros(n, dtype=bool)
    in_tree[0] = True
    best = w[0].copy()
    heaviest = 0.0
    for _ in range(n - 1):
        cand = np.where(in_tree, np.inf, best)
        v = int(np.argmin(cand))
        heaviest = max(heaviest, float(cand[v]))
        in_tree[v] = True
        best = np.minimum(best, w[v])
    return max(float(second.max()), heaviest)


def _contiguous_order(topo: Topology, devices: list[int], w: np.ndarray) -> list[int]:
    """Positions 0..n-1 of ``devices`` ordered node-contiguously and zone-contiguously."""
    nodes: dict[str, list[int]] = {}
    zones: dict[str, list[str]] = {}
    for pos, d in enumerate(devices):
        dev = topo.devices[d]
        if dev.node not in nodes:
            nodes[dev.node] = []
            zones.setdefault(dev.zone, []).append(dev.node)
        nodes[dev.node].append(pos)
    blocks = {z: [p for node in ns for p in nodes[node]] for z, ns in zones.items()}
    names = list(blocks)
    if len(names) <= 2:
        return [p for z in names for p in blocks[z]]

    def zone_w(a: str, b: str) -> float:
        # a zone block is entered at its first device and left at its last
        return float(w[blocks[a][-1], blocks[b][0]])

    if len(names) <= EXACT_ZONE_LIMIT:
        first, rest = names[0], names[1:]
        best_order, best_val = None, np.inf
        for perm in itertools.permutations(rest):
            seq = [first, *perm]
            val = max(zone_w(a, b) for a, b in zip(seq, seq[1:] + seq[:1], strict=True))
            if val < best_val:
                best_order, best_val = seq, val
        seq = best_order or names
    else:
        seq = [names[0]]
        left = set(names[1:])
        while left:
            nxt = min(left, key=lambda z: zone_w(seq[-1], z))
            seq.append(nxt)
            left.remove(nxt)
    return [p for z in seq for p in blocks[z]]


def _classes(topo: Topology, devices: list[int]) -> list[list[int]]:
    """Positions of ``devices`` grouped into interchangeable classes: by node on a hierarchical
    network, one class per GPU when an explicit matrix may make every link different."""
    if topo.explicit_matrix:
        return [[p] for p in range(len(devices))]
    groups: dict[str, list[int]] = {}
    for pos, d in enumerate(devices):
        groups.setdefault(topo.devices[d].node, []).append(pos)
    return list(groups.values())


def _hamiltonian_within(w: np.ndarray, classes: list[list[int]], threshold: float) -> bool:
    """Is there a ring over all positions using only edges of weight <= threshold?

    Positions in one class have identical weights to every other class and among themselves, so
    a ring is decided by the order of class visits. DP state: (GPUs used per class, last class);
    the ring starts at a GPU of class 0.
    """
    k = len(classes)
    sizes = [len(c) for c in classes]
    rep = [c[0] for c in classes]
    allowed = [[False] * k for _ in range(k)]
    for a in range(k):
        for b in range(k):
            if a != b:
                allowed[a][b] = bool(w[rep[a], rep[b]] <= threshold)
            elif sizes[a] >= 2:
                allowed[a][a] = bool(w[classes[a][0], classes[a][1]] <= threshold)
    total = sum(sizes)
    seen: set[tuple[tuple[int, ...], int]] = set()
    start = tuple(1 if a == 0 else 0 for a in range(k))
    stack = [(start, 0)]
    while stack:
        used, last = stack.pop()
        if sum(used) == total:
            # close the ring back to the first GPU (class 0); a second GPU of class 0 needs the
            # intra-class edge, a GPU of another class the inter-class edge
            if last == 0 and allowed[0][0] or last != 0 and allowed[last][0]:
                return True
            continue
        for c in range(k):
            if used[c] < sizes[c] and allowed[last][c]:
                nxt = used[:c] + (used[c] + 1,) + used[c + 1 :]
                key = (nxt, c)
                if key not in seen:
                    seen.add(key)
                    stack.append(key)
    return False


def _exact_ring(
    w: np.ndarray, classes: list[list[int]], lower: float, upper: float
) -> float | None:
    states = len(classes)
    for c in classes:
        states *= len(c) + 1
    if states > EXACT_STATE_LIMIT:
        return None
    candidates = np.unique(w[np.isfinite(w)])
    candidates = candidates[(candidates >= lower * (1 - 1e-12)) & (candidates <= upper)]
    lo, hi = 0, len(candidates) - 1
    best = upper
    while lo <= hi:  # feasibility is monotone in the threshold
        mid = (lo + hi) // 2
        if _hamiltonian_within(w, classes, float(candidates[mid])):
            best = float(candidates[mid])
            hi = mid - 1
        else:
            lo = mid + 1
    return best


def bottleneck_ring(topo: Topology, devices: list[int], volume_gb: float) -> RingCost:
    """Best-ring step time for sending ``volume_gb`` between ring neighbours (HetRL B.2).

    Results are memoised per topology on the GPUs' node structure, so the hot loops of the
    search algorithms pay for each distinct group shape once.
    """
    n = len(devices)
    if n <= 1:
        return RingCost(0.0, 0.0)
    if topo.explicit_matrix:
        key = ("dev", tuple(sorted(devices)), volume_gb)
    else:
        # a ring's cost depends only on how many GPUs of which nodes it spans
        counts: dict[str, int] = {}
        for d in devices:
            counts[topo.devices[d].node] = counts.get(topo.devices[d].node, 0) + 1
        key = ("node", tuple(sorted(counts.items())), volume_gb)
    cache = topo.memo.setdefault("ring", {})
    hit = cache.get(key)
    if hit is not None:
        return hit
    w = edge_weights(topo, devices, volume_gb)
    if n == 2:
        v = float(w[0, 1])
        result = RingCost(v, v)
    else:
        heuristic = _ring_value(w, _contiguous_order(topo, devices, w))
        lower = _lower_bound(w)
        result = RingCost(heuristic, lower)
        if not result.exact:
            exact = _exact_ring(w, _classes(topo, devices), lower, heuristic)
            if exact is not None:
                result = RingCost(exact, exact)
    if len(cache) < 100_000:
        cache[key] = result
    return result


def ring_latency(topo: Topology, devices: list[int]) -> float:
    """Largest hop latency on the best ring (the per-step cost of a latency-bound collective)."""
    return bottleneck_ring(topo, devices, 0.0).seconds


def best_pair(topo: Topology, src: list[int], dst: list[int], volume_gb: float) -> float:
    """min over d in src, d' in dst of alpha + volume / beta (HetRL's PP and p2p terms).

    Memoised per topology on the two stages' devices and the volume: the searches cost the same
    pipeline hops once per candidate configuration and decode width."""
    key = (tuple(src), tuple(dst), volume_gb)
    cache = topo.memo.setdefault("pair", {})
    hit = cache.get(key)
    if hit is not None:
        return hit
    a = np.asarray(src)
    b = np.asarray(dst)
    lat = topo.latency_s[a][:, b]
    bw = topo.bandwidth_gbs[a][:, b]
    with np.errstate(divide="ignore"):
        t = lat + volume_gb / bw
    t[a[:, None] == b[None, :]] = 0.0
    value = float(t.min())
    if len(cache) < MEMO_ENTRIES:
        cache[key] = value
    return value


def _zone_links(topo: Topology) -> dict[tuple[str, str], tuple[float, float]]:
    """(latency s, bandwidth GB/s) between every two zones (links are per zone pair)."""
    cache = topo.memo.setdefault("zone_links", {})
    if not cache:
        first: dict[str, int] = {}
        for d in topo.devices:
            first.setdefault(d.zone, d.index)
        for za, a in first.items():
            for zb, b in first.items():
                if za != zb:
                    cache[(za, zb)] = (float(topo.latency_s[a, b]), float(topo.bandwidth_gbs[a, b]))
    return cache


def _zone_route(topo: Topology, src: str, dst: str, volume_gb: float) -> float:
    """Fastest pipelined route between two zones, relays through any zone allowed:
    min over paths of (sum of latencies + volume / slowest bandwidth on the path). Exact: for
    every bandwidth threshold, the lowest-latency path over links at least that fast (Dijkstra)."""
    links = _zone_links(topo)
    best = math.inf
    for threshold in sorted({bw for _, bw in links.values()}, reverse=True):
        dist = {src: 0.0}
        heap = [(0.0, src)]
        done: set[str] = set()
        while heap:
            lat, z = heapq.heappop(heap)
            if z in done:
                continue
            done.add(z)
            if z == dst:
                best = min(best, lat + volume_gb / threshold)
                break
            for (a, b), (alpha, bw) in links.items():
                if a == z and bw >= threshold and lat + alpha < dist.get(b, math.inf):
                    dist[b] = lat + alpha
                    heapq.heappush(heap, (lat + alpha, b))
    return best


def route_time(topo: Topology, a: int, b: int, volume_gb: float) -> float:
    """Seconds to stream ``volume_gb`` from device a to device b over the topology.

    Inside a zone: the direct link. Across zones of a hierarchical network: the best pipelined
    route over zones (a copy may be relayed through another zone's nodes when that is faster,
    e.g. around a slow direct link). With an explicit per-GPU matrix: the direct link."""
    if a == b:
        return 0.0
    da, db = topo.devices[a], topo.devices[b]
    if topo.explicit_matrix or da.zone == db.zone:
        return link_time(topo, a, b, volume_gb)
    key = (da.zone, db.zone, volume_gb)
    cache = topo.memo.setdefault("route", {})
    if key not in cache:
        cache[key] = _zone_route(topo, da.zone, db.zone, volume_gb)
    return cache[key]


def fastest_route(
    topo: Topology, senders: list[int], receivers: list[int], volume_gb: float
) -> float:
    """min over senders s and receivers r of :func:`route_time` (s, r): the first copy's arrival
    when any sender may serve any receiver (inf with either side empty).

    Exact without visiting every pair. With an explicit per-GPU matrix every route is the direct
    link, so it is :func:`best_pair`. On a hierarchical network a pair's route depends only on
    its two nodes (one node: the node's link; one zone: the zone's network; else the zones'
    route), so one device per node stands for it, and between zones two nodes per zone suffice
    to find a pair on different nodes: O(senders + receivers + zone pairs) where the pairs are
    O(senders x receivers), which at a thousand GPUs a side cost 1.7 s an evaluation."""
    if not senders or not receivers:
        return math.inf
    if topo.explicit_matrix:  # every route is the direct link
        return best_pair(topo, senders, receivers, volume_gb)
    if not set(senders).isdisjoint(receivers):
        return 0.0
    devices = topo.devices
    first_s: dict[str, int] = {}
    first_r: dict[str, int] = {}
    for s in senders:
        first_s.setdefault(devices[s].node, s)
    for r in receivers:
        first_r.setdefault(devices[r].node, r)
    best = min(
        (
            link_time(topo, s, first_r[node], volume_gb)
            for node, s in first_s.items()
            if node in first_r
        ),
        default=math.inf,
    )

    def two_nodes_per_zone(first: dict[str, int]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for node, d in first.items():
            nodes = out.setdefault(devices[d].zone, [])
            if len(nodes) < 2:
                nodes.append(node)
        return out

    zones_r = two_nodes_per_zone(first_r)
    for ns in two_nodes_per_zone(first_s).values():
        for nr in zones_r.values():
            pair = next(((a, b) for a in ns for b in nr if a != b), None)
            if pair is not None:
                best = min(best, route_time(topo, first_s[pair[0]], first_r[pair[1]], volume_gb))
    return best
