"""Re-planning a generation cluster mid-step: OrchestrRL's Eq. 1 (§4.1, Appendix A).

During a generation step a pool of N nodes x g GPUs (one GPU type) runs serving instances that
hold pending requests. Re-planning chooses the instances' parallelism Y and the request
assignment X that minimise the remaining makespan, counting what the move costs.

**Notation.**

* Bins b (OrchestrRL §4.1): remaining lengths in bins of W tokens (256); a bin's length is its
  upper bound L_b (conservative), N_b requests fall in it, κ_b is their mean cached context
  (prompt plus tokens generated so far, rounded up), n_kb of them sit on current instance k.
  Explicit requests are binned the same way, so every solver sees bin aggregates.
* Configuration y: TP t on one node's aligned GPUs (EP = t for MoE models), from the candidate
  list. K_y: its KV capacity in tokens (``Instance.kv_capacity_tokens``).
* Plan: per node a *layout* — ``off`` (GPUs idle), ``keep`` (its current instances unchanged),
  uniform TP t (g / t aligned instances), or with ``layouts: mixed`` any mix of candidate TPs on
  aligned slots, idle slots included (``aligned_tilings``: 677 layouts on an 8-GPU node) — and
  x_jb, requests of bin b on new instance j. A new
  instance with the same GPUs and TP as a current one is *kept*: the requests already on it stay
  for free. (OrchestrRL restricts candidates to intra-node TP and whole-node steps, §4.1 "second
  heuristic". Uniform layouts, the default, are the shape of every baseline and of the paper's
  case study, eight TP=2 to two TP=8; mixed layouts are the whole aligned space, which the exact
  solvers search when asked: the MILP grows with it (677 layouts per node), so it suits states of
  a few nodes. Cross-node TP is not offered: every model in the catalog fits a node.)

**T_j, the instance makespan** (chosen so the MILP states it exactly; its error against the
generation simulator is measured in ``benchmarks/replan``). The one decode model's step time is
replaced by the plane through it ``s(B, C) = α_y + β_y B + γ_y C`` (B running sequences holding C
tokens; γ_y the KV read per token, α_y + β_y B the secant of the context-free step between
batch 1 and ``max_num_seqs``). A request of bin b then costs, over its L_b decode steps,
``w_yb = β_y L_b + γ_y (κ_b L_b + L_b (L_b - 1) / 2)`` and the fixed per-step cost α_y is paid
once per step:

    B_yb = min(max_num_seqs, floor(K_y / (κ_b + L_b)))       concurrency of bin b on y
    S_j  = max(max_{b: x_jb > 0} L_b,  Σ_b x_jb L_b / B_yb)   decode steps: the longest request,
                                                              or the tokens over the concurrency
    T_j  = Σ_b x_jb w_yb + α_y S_j

**Costs of the move** (Appendix A, ``costmodels.reconfig``):

* C_mig_j = Σ_b μ_yb (x_jb - ℓ_jb)^+, ℓ_jb = n_kb when j keeps current instance k, else 0;
  μ_yb = min(KV transfer of κ_b tokens over ``migration_gbs``, recomputing them on y).
* C_sw_j = 0 for a kept instance; otherwise re-sharding the weights from the TP its GPUs held
  (a full load when they held none or mixed TPs) plus ``switch_overhead_s``, paid when j holds
  requests.

**Objective (1)**: makespan = max_j (T_j + C_mig_j + C_sw_j).

**Constraints**: (2) KV balance when ``kv_delta`` is given: μ - δ <= Σ_b x_jb (κ_b + L_b) / K_y
<= μ + δ on every instance holding requests (μ: ``kv_target``, default the current pool's
reserved-KV share); (3) GPUs of all instances <= ``gpu_budget``; (4) Σ_j x_jb = N_b; (5) x_jb = 0
when κ_b + L_b > K_y (the request cannot fit); (6) one layout per node, instances on disjoint
aligned GPUs of existing nodes.

Units: seconds, tokens, GB, GB/s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from costmodels.catalog import GPUSpec, ModelSpec, get_gpu, get_model
from costmodels.decode import Instance, ServingParams, feasible_tps
from costmodels.errors import SpecError
from costmodels.reconfig import kv_cache_gb
from costmodels.replan.configs import Bin, Config, step_plane, switch_s
from costmodels.replan.layouts import Layout, Slot, aligned_tilings

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
MAX_GPUS = 65536
MAX_BINS = 4096
MAX_REQUESTS = (
    1_000_000  # the greedy places requests one at a time: beyond this, use wider batches of steps
)


class CurrentInstance(BaseModel):
    """A running instance: TP ``tp`` on GPUs ``gpu .. gpu + tp - 1`` of ``node``, with its pending
    requests as ``[remaining, context]`` pairs and/or a histogram of ``[upper, count, context]``."""

    model_config = _STRICT

    node: int = Field(ge=0)
    gpu: int = Field(default=0, ge=0)
    tp: int = Field(ge=1)
    requests: list[tuple[int, int]] = Field(
        default_factory=list, description="[remaining tokens, cached context tokens]"
    )
    histogram: list[tuple[int, int, int]] = Field(
        default_factory=list, description="[bin upper bound, count, mean context]"
    )


class ReplanSpec(BaseModel):
    """The state of a generation pool mid-step and the re-planning knobs (see module doc)."""

    model_config = _STRICT

    name: str = ""
    description: str = ""
    model: str
    gpu: str
    nodes: int = Field(ge=1)
    gpus_per_node: int = Field(default=8, ge=1)
    gpu_budget: int | None = Field(
        default=None, ge=1, description="G_total, GPUs the plan may use (default: the pool)"
    )
    tps: list[int] | None = Field(
        default=None,
        min_length=1,
        description=(
            "candidate TP degrees (default: the powers of two up to a node that split the model's "
            "heads)"
        ),
    )
    serving: ServingParams = Field(default_factory=ServingParams)
    layouts: Literal["uniform", "mixed"] = Field(
        default="uniform",
        description=(
            "node layouts offered: off, keep and one TP per node (uniform), or any mix of "
            "candidate TPs on aligned slots, idle slots included (mixed)"
        ),
    )
    bin_tokens: int = Field(default=256, ge=1, description="remaining-length bin width W")
    kv_target: float | None = Field(
        default=None,
        gt=0,
        description="μ of constraint (2); default: the current reserved-KV share",
    )
    kv_delta: float | None = Field(
        default=None, gt=0, description="δ of constraint (2); absent: (2) is off"
    )
    migration_gbs: float = Field(
        default=25.0, gt=0, description="KV transfer path between instances, GB/s (a 200 Gbps NIC)"
    )
    switch_gbs: float | None = Field(
        default=None,
        gt=0,
        description=(
            "weight re-sharding bandwidth per GPU, GB/s (default: the GPU's intra-node link)"
        ),
    )
    switch_overhead_s: float = Field(
        default=1.0,
        ge=0,
        description=(
            "engine restart per switched instance (OrchestrRL §6.2.2: ~1.5 s with the transfer)"
        ),
    )
    instances: list[CurrentInstance] = Field(default_factory=list)

    def candidate_tps(self) -> list[int]:
        """The candidate TPs: the given ones, or every power of two up to a node that splits the
        heads."""
        if self.tps is not None:
            return list(self.tps)
        return feasible_tps(get_model(self.model), self.gpus_per_node, self.gpus_per_node)

    def check(self) -> None:
        get_gpu(self.gpu)
        model = get_model(self.model)
        self._check_pool(model)
        # a request must fit one instance of some candidate TP, or no plan exists (constraint (3)
        # would have no configuration for its bin): say which request, not "no plan"
        room = {
            t: Instance(model, get_gpu(self.gpu), t, self.serving).kv_capacity_tokens()
            for t in self.candidate_tps()
        }
        widest = max(room, key=lambda t: room[t])
        used: dict[tuple[int, int], int] = {}
        for i, inst in enumerate(self.instances):
            self._check_instance(i, inst, model, used)
            self._check_pending(i, inst, room, widest)
        total = sum(
            len(inst.requests) + sum(c for _, c, _ in inst.histogram) for inst in self.instances
        )
        if total > MAX_REQUESTS:
            raise SpecError(
                "instances", total, f"at most {MAX_REQUESTS:,} pending requests per re-plan"
            )
        if not any(
            inst.requests or any(c for _, c, _ in inst.histogram) for inst in self.instances
        ):
            raise SpecError("instances", len(self.instances), "no pending requests to re-plan")

    def _check_pool(self, model: ModelSpec) -> None:
        """The pool's size and GPU budget, and the candidate TPs."""
        g = self.gpus_per_node
        if self.nodes * g > MAX_GPUS:
            raise SpecError(
                "nodes", self.nodes, f"at most {MAX_GPUS} GPUs ({self.nodes} x {g} asked)"
            )
        if self.gpu_budget is not None and self.gpu_budget > self.nodes * g:
            raise SpecError(
                "gpu_budget", self.gpu_budget, f"more than the pool's {self.nodes * g} GPUs"
            )
        for i, t in enumerate(self.tps or []):
            if t & (t - 1) or t > g or g % t:
                raise SpecError(
                    f"tps[{i}]",
                    t,
                    f"a candidate TP must be a power of two dividing the node's {g} GPUs",
                )
            if model.query_heads % t or (model.kv_heads % t and t % model.kv_heads):
                raise SpecError(
                    f"tps[{i}]",
                    t,
                    f"{model.name}'s {model.query_heads} query / {model.kv_heads} KV heads do not "
                    f"split {t} ways",
                )
        if self.tps is not None and len(set(self.tps)) != len(self.tps):
            raise SpecError("tps", self.tps, "duplicate TP degrees")

    def _check_instance(
        self, i: int, inst: CurrentInstance, model: ModelSpec, used: dict[tuple[int, int], int]
    ) -> None:
        """Current instance ``i``: on an existing node, aligned GPUs no other instance holds, and
        KV cache left; ``used`` maps each (node, GPU) seen so far to its instance."""
        g = self.gpus_per_node
        where = f"instances[{i}]"
        if inst.node >= self.nodes:
            raise SpecError(f"{where}.node", inst.node, f"the pool has nodes 0..{self.nodes - 1}")
        if inst.tp & (inst.tp - 1) or inst.tp > g or inst.gpu % inst.tp or inst.gpu + inst.tp > g:
            raise SpecError(
                f"{where}.gpu",
                inst.gpu,
                f"TP{inst.tp} must sit on aligned GPUs of one {g}-GPU node",
            )
        for k in range(inst.gpu, inst.gpu + inst.tp):
            if (inst.node, k) in used:
                raise SpecError(
                    f"{where}.gpu",
                    inst.gpu,
                    f"GPU {k} of node {inst.node} already runs instance {used[inst.node, k]}",
                )
            used[inst.node, k] = i
        if Instance(model, get_gpu(self.gpu), inst.tp, self.serving).kv_capacity_tokens() <= 0:
            raise SpecError(
                f"{where}.tp",
                inst.tp,
                f"{model.name} leaves no KV cache on TP{inst.tp} x {self.gpu}",
            )

    def _check_pending(
        self, i: int, inst: CurrentInstance, room: dict[int, int], widest: int
    ) -> None:
        """Current instance ``i``'s pending requests and histogram bins: well formed, and each
        fitting the roomiest candidate instance (TP ``widest``, ``room`` KV tokens per TP)."""
        where = f"instances[{i}]"
        for j, (rem, ctx) in enumerate(inst.requests):
            if rem < 1 or ctx < 0:
                raise SpecError(
                    f"{where}.requests[{j}]", [rem, ctx], "need remaining >= 1 and context >= 0"
                )
            if rem + ctx > room[widest]:
                raise SpecError(
                    f"{where}.requests[{j}]",
                    [rem, ctx],
                    f"needs {rem + ctx:,} KV tokens; the roomiest candidate instance "
                    f"(TP{widest}) holds {room[widest]:,}",
                )
        for j, (upper, count, ctx) in enumerate(inst.histogram):
            if upper < 1 or upper % self.bin_tokens or count < 0 or ctx < 0:
                raise SpecError(
                    f"{where}.histogram[{j}]",
                    [upper, count, ctx],
                    "need a bin upper bound that is a positive multiple of bin_tokens "
                    f"({self.bin_tokens}), count >= 0, context >= 0",
                )
            if count and upper + ctx > room[widest]:
                raise SpecError(
                    f"{where}.histogram[{j}]",
                    [upper, count, ctx],
                    f"needs {upper + ctx:,} KV tokens per request; the roomiest candidate "
                    f"instance (TP{widest}) holds {room[widest]:,}",
                )


@dataclass(frozen=True, eq=False)
class ReplanProblem:
    spec: ReplanSpec
    kind: str = field(default="replan", init=False)

    def to_inputs(self) -> dict[str, Any]:
        return {"state": self.spec.model_dump(mode="json")}

    @cached_property
    def model(self) -> ModelSpec:
        return get_model(self.spec.model)

    @cached_property
    def gpu(self) -> GPUSpec:
        return get_gpu(self.spec.gpu)

    @property
    def gpus_per_node(self) -> int:
        return self.spec.gpus_per_node

    @property
    def budget(self) -> int:
        return self.spec.gpu_budget or self.spec.nodes * self.spec.gpus_per_node

    @cached_property
    def bins(self) -> list[Bin]:
        """Pool-wide bins, shortest first, with their mean contexts (module doc)."""
        w = self.spec.bin_tokens
        count: dict[int, int] = {}
        ctx: dict[int, int] = {}
        for inst in self.spec.instances:
            for rem, c in inst.requests:
                u = -(-rem // w) * w
                count[u] = count.get(u, 0) + 1
                ctx[u] = ctx.get(u, 0) + c
            for u, n, c in inst.histogram:
                count[u] = count.get(u, 0) + n
                ctx[u] = ctx.get(u, 0) + n * c
        out = [Bin(u, count[u], -(-ctx[u] // count[u])) for u in sorted(count) if count[u] > 0]
        if len(out) > MAX_BINS:
            raise SpecError(
                "bin_tokens", w, f"{len(out)} bins; at most {MAX_BINS} (use wider bins)"
            )
        return out

    @cached_property
    def lengths(self) -> np.ndarray:
        """L_b as floats."""
        return np.array([b.upper for b in self.bins], dtype=float)

    @cached_property
    def demand(self) -> np.ndarray:
        """κ_b + L_b: the KV tokens a request of bin b holds at completion (constraint 2, B_yb)."""
        return np.array([b.context + b.upper for b in self.bins], dtype=float)

    @cached_property
    def resident(self) -> np.ndarray:
        """n_kb: requests of bin b on current instance k."""
        index = {b.upper: i for i, b in enumerate(self.bins)}
        w = self.spec.bin_tokens
        out = np.zeros((len(self.spec.instances), len(self.bins)), dtype=np.int64)
        for k, inst in enumerate(self.spec.instances):
            for rem, _ in inst.requests:
                out[k, index[-(-rem // w) * w]] += 1
            for u, n, _ in inst.histogram:
                if n:
                    out[k, index[u]] += n
        return out

    @cached_property
    def configs(self) -> dict[int, Config]:
        """Candidate configurations that hold the weights, by TP."""
        out = {}
        for tp in sorted(set(self.spec.candidate_tps()) | {i.tp for i in self.spec.instances}):
            inst = Instance(self.model, self.gpu, tp, self.spec.serving)
            cap = inst.kv_capacity_tokens()
            if cap <= 0:
                continue
            alpha, beta, gamma = step_plane(inst)
            L, kappa = self.lengths, self.demand - self.lengths
            work = beta * L + gamma * (kappa * L + L * (L - 1) / 2)
            conc = np.minimum(self.spec.serving.max_num_seqs, cap // self.demand.astype(np.int64))
            recompute = np.array([inst.prefill(int(k)) if k else 0.0 for k in kappa])
            transfer = np.array(
                [kv_cache_gb(inst, int(k)) / self.spec.migration_gbs for k in kappa]
            )
            out[tp] = Config(
                tp,
                inst,
                cap,
                alpha,
                beta,
                gamma,
                work,
                conc,
                np.minimum(recompute, transfer),
                L / np.where(conc > 0, conc, 1),
            )
        return out

    @property
    def candidate_tps(self) -> list[int]:
        return [t for t in sorted(self.spec.candidate_tps()) if t in self.configs]

    @cached_property
    def current(self) -> dict[tuple[int, int, int], int]:
        """(node, first GPU, TP) -> current instance index."""
        return {(i.node, i.gpu, i.tp): k for k, i in enumerate(self.spec.instances)}

    @cached_property
    def _old_tps(self) -> dict[tuple[int, int], int]:
        """(node, GPU) -> the TP of the current instance on it."""
        return {(i.node, k): i.tp for i in self.spec.instances for k in range(i.gpu, i.gpu + i.tp)}

    def old_tp(self, node: int, gpu: int, tp: int) -> int | None:
        """The TP every GPU of (node, gpu .. gpu + tp - 1) ran before, or None (idle or mixed)."""
        tps = {self._old_tps.get((node, k)) for k in range(gpu, gpu + tp)}
        return tps.pop() if len(tps) == 1 and None not in tps else None

    def switch_cost(self, node: int, gpu: int, tp: int) -> float:
        if (node, gpu, tp) in self.current:
            return 0.0
        bw = self.spec.switch_gbs or self.gpu.link_gb_per_s
        return switch_s(
            self.configs[tp].instance, self.old_tp(node, gpu, tp), bw, self.spec.switch_overhead_s
        )

    @cached_property
    def kv_target(self) -> float:
        """μ: the spec's, or the share of the current instances' KV the pending requests reserve."""
        if self.spec.kv_target is not None:
            return self.spec.kv_target
        cap = sum(self.configs[i.tp].kv_tokens for i in self.spec.instances) or 1
        return float(self.demand @ np.array([b.count for b in self.bins], dtype=float)) / cap

    @cached_property
    def current_makespan_s(self) -> float:
        """Obj_cur of Algorithm 1: the makespan if nothing changes."""
        x = self.resident
        return max(
            (
                instance_cost(self, i.node, i.gpu, i.tp, x[k]).total_s
                for k, i in enumerate(self.spec.instances)
            ),
            default=0.0,
        )

    @cached_property
    def slot_table(self) -> list[list[list[Slot]]]:
        """slot_table[n][ℓ]: the instances layout ℓ of node n creates (shared by every solver)."""
        return [
            [
                [
                    Slot(
                        n, li, gpu, tp, self.switch_cost(n, gpu, tp), self.current.get((n, gpu, tp))
                    )
                    for gpu, tp in lay.slots
                ]
                for li, lay in enumerate(self.layouts(n))
            ]
            for n in range(self.spec.nodes)
        ]

    def layouts(self, node: int) -> list[Layout]:
        """The layouts node ``node`` may take: off, keep (when it runs instances), uniform TPs
        (a uniform TP equal to its current layout is the same as keep and is left out)."""
        return self._layouts[node]

    @cached_property
    def _layouts(self) -> list[list[Layout]]:
        return [self._node_layouts(n) for n in range(self.spec.nodes)]

    def _node_layouts(self, node: int) -> list[Layout]:
        g = self.gpus_per_node
        mine = sorted((i.gpu, i.tp) for i in self.spec.instances if i.node == node)
        out = [Layout("off", ())]
        if mine:
            out.append(Layout("keep", tuple(mine)))
        for t in self.candidate_tps:
            slots = tuple((k * t, t) for k in range(g // t))
            if slots != tuple(mine):
                out.append(Layout(f"tp{t}", slots))
        if self.spec.layouts == "mixed":
            seen = {lay.slots for lay in out}
            for slots in aligned_tilings(0, g, set(self.candidate_tps)):
                if slots not in seen:
                    seen.add(slots)
                    out.append(Layout("+".join(f"tp{t}@{gpu}" for gpu, t in slots), slots))
        return out


@dataclass
class InstanceCost:
    """T_j, C_mig_j and C_sw_j of one new instance (module doc)."""

    steps: float
    decode_s: float
    migrate_s: float
    switch_s: float
    kept: int | None  # the current instance it keeps, if any
    requests: int
    kv_share: float
    migrated: int = 0  # requests that come from elsewhere (or are resharded)

    @property
    def total_s(self) -> float:
        return self.decode_s + self.migrate_s + self.switch_s


def instance_cost(
    problem: ReplanProblem, node: int, gpu: int, tp: int, counts: np.ndarray
) -> InstanceCost:
    """T_j + C_mig_j + C_sw_j of one instance running ``counts[b]`` requests of bin b."""
    cfg = problem.configs[tp]
    n = int(counts.sum())
    kept = problem.current.get((node, gpu, tp))
    if n == 0:
        return InstanceCost(0.0, 0.0, 0.0, 0.0, kept, 0, 0.0)
    steps = max(float(problem.lengths[counts > 0].max()), float(counts @ cfg.token_steps))
    decode = float(counts @ cfg.work) + cfg.alpha * steps
    moving = np.maximum(counts - (problem.resident[kept] if kept is not None else 0), 0)
    return InstanceCost(
        steps,
        decode,
        float(moving @ cfg.migrate),
        problem.switch_cost(node, gpu, tp),
        kept,
        n,
        float(counts @ problem.demand) / cfg.kv_tokens,
        int(moving.sum()),
    )
