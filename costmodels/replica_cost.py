"""One task's component costs under one placement, replica by replica (HetRL Appendix B.2-B.3):
compute, TP all-reduce, PP hops and bubble for every kind, the DP gradient all-reduce for training,
prefill for generation; memoised on each replica's node-class signature. Generation's decode is
``costmodels.placement.decode_cost``'s; the terms are those of ``costmodels.placement.judge``'s
module doc.

It sits at the top of ``costmodels`` because it is the one model of an RL step's training and
log-prob passes: the placement judge costs every task with it, and the rollout and co-scheduling
problems cost their training stage with it (``costmodels.rl_training``), so one job gets one
training time whichever problem plans it (``docs/architecture.md``, "One step model"). It reads
a problem only through :class:`CostContext` and a task's strategy only through
:class:`Strategy`."""

from __future__ import annotations

import math
from typing import Any, Protocol

from costmodels import comm
from costmodels.cluster import Topology
from costmodels.cost_params import CostParams
from costmodels.layout import batch_shares, layer_split
from costmodels.memory import GB
from costmodels.straggler import straggler_factor
from costmodels.transformer import (
    BYTES_BF16,
    layer_forward_flops,
    layer_forward_flops_mean,
    lm_head_forward_flops,
    stage_params,
)
from costmodels.workflow import (
    ACTOR_TRAINING,
    OLD_LOG_PROB_PASS,
    Task,
    TaskKind,
    WorkflowSpec,
)


class CostContext(Protocol):
    """What a coster reads of a problem (``PlacementProblem`` is one)."""

    @property
    def workflow(self) -> WorkflowSpec: ...
    @property
    def topology(self) -> Topology: ...
    @property
    def params(self) -> CostParams: ...


class Strategy(Protocol):
    """What a coster reads of a task's placement (``TaskPlacement`` is one): TP, PP, DP, the
    devices ``[dp][pp][tp]``, and the optional layer split, batch shares and decode batch."""

    @property
    def tp(self) -> int: ...
    @property
    def pp(self) -> int: ...
    @property
    def dp(self) -> int: ...
    @property
    def devices(self) -> list[list[list[str]]]: ...
    @property
    def layers_per_stage(self) -> list[int] | None: ...
    @property
    def batch_shares(self) -> list[float] | None: ...
    @property
    def decode_batch(self) -> int | None: ...


#: memoise replica costs on their node-class signature (:meth:`TaskCoster._replica_key`); tests
#: switch it off to check that it never changes a value
REPLICA_MEMO = True
# : its size cap (an entry holds a replica's signature and costs: ~1 KB; bounded memory at 1 024
# GPUs)
REPLICA_MEMO_ENTRIES = 50_000


def _node_classes(topo: Any) -> list[int]:
    """Per device: its node's class (GPU type, zone, region, intra-node alpha and beta, read off
    the topology's own matrices), numbered."""
    first: dict[str, int] = {}
    second: dict[str, int] = {}
    for d in topo.devices:
        if d.node not in first:
            first[d.node] = d.index
        elif d.node not in second:
            second[d.node] = d.index
    ids: dict[tuple[Any, ...], int] = {}
    out = []
    for d in topo.devices:
        a, b = first[d.node], second.get(d.node)
        link = (
            (float(topo.latency_s[a, b]), float(topo.bandwidth_gbs[a, b]))
            if b is not None
            else None
        )
        out.append(ids.setdefault((d.gpu.name, d.zone, d.region, link), len(ids)))
    return out


class TaskCoster:
    """Component costs of one task under one placement (HetRL Appendix B.2): compute, TP, PP,
    bubble and DP; generation's decode is ``decode_cost.GenerationCoster``'s."""

    def __init__(
        self,
        problem: CostContext,
        task: Task,
        tp_: Strategy,
        mem: dict[int, dict[str, float]] | None,
    ):
        self.problem, self.task, self.tp_ = problem, task, tp_
        self.wf = problem.workflow
        self.topo = problem.topology
        self.m = self.wf.model(task.role)
        index = self.topo.index_of()
        self.idx = [[[index[d] for d in stage] for stage in replica] for replica in tp_.devices]
        self.split = layer_split(self.m.layers, tp_.pp, tp_.layers_per_stage)
        self.shares = batch_shares(tp_.dp, tp_.batch_shares)
        self.mem = mem
        self.exact = True
        self._dbs: tuple[int, ...] | None = None

    def _context(self) -> int:
        """The problem's parameters and workflow, numbered per topology for memo keys (by
        identity; the entry keeps them alive, so an id is never reused for another)."""
        contexts = self.topo.memo.setdefault("replica_context", {})
        params, wf = self.problem.params, self.wf
        return contexts.setdefault((id(params), id(wf)), (params, wf, len(contexts)))[2]

    def _ring(self, devices: list[int], volume_gb: float) -> float:
        r = comm.bottleneck_ring(self.topo, devices, volume_gb)
        self.exact = self.exact and r.exact
        return r.seconds

    def _gpus(self, stage: list[int]) -> list[Any]:
        """Distinct GPU types of a stage (a mixed TP group runs at its slowest member's pace)."""
        return self._stage_types(stage)[0]

    def _stage_types(self, stage: list[int]) -> tuple[list[Any], tuple[str, ...]]:
        """A stage's distinct GPU types, in the order its GPUs first show them, and their names;
        memoised per topology on the stage's devices (every costing reads them per stage)."""
        cache = self.topo.memo.setdefault("stage_gpus", {})
        key = tuple(stage)
        out = cache.get(key)
        if out is None:
            seen: dict[str, Any] = {}
            for d in stage:
                g = self.topo.devices[d].gpu
                seen.setdefault(g.name, g)
            out = (list(seen.values()), tuple(seen))
            if len(cache) < comm.MEMO_ENTRIES:
                cache[key] = out
        return out

    def cost(self, prefill_only: bool = False) -> dict[str, Any]:
        """The task's time and its components. ``prefill_only`` (generation): every replica's
        decode left out, its ``decode_batch`` still read, memoised apart; what a bound on
        decode (``costmodels.placement.task_cost.generation_floor``) adds to."""
        kind = self.task.kind
        wf, m, tp = self.wf, self.m, self.tp_.tp
        params = self.problem.params
        gen = kind is TaskKind.GENERATION
        # prefill covers the prompt; training and inference the whole sequence, packed (dynamic
        # batch size, as verl and ROLL run): per sequence, the expected cost over the response
        # lengths (``costmodels.response_lengths``), exact for the constant model
        seq_comp: float = wf.prompt_length
        layer_flops = layer_forward_flops(m, wf.prompt_length)
        if not gen and wf.response_lengths.is_constant:
            seq_comp = wf.prompt_length + wf.response_length
            layer_flops = layer_forward_flops(m, int(seq_comp))
        elif not gen:
            seq_comp, square = wf.sequence_moments
            layer_flops = layer_forward_flops_mean(m, seq_comp, square)
        train = kind is TaskKind.TRAINING
        comp_mult = (4 if wf.recompute else 3) if train else 1
        tp_mult = (6 if wf.recompute else 4) if train else 2
        pp_mult = 2 if train else 1
        head_flops = lm_head_forward_flops(m, seq_comp)
        cv_tp = BYTES_BF16 * wf.micro_batch_size * seq_comp * m.hidden * 2 * (tp - 1) / tp / GB
        cv_pp = BYTES_BF16 * wf.micro_batch_size * seq_comp * m.hidden / GB
        literal = params.decode_model == "hetrl"
        per_replica, prefill = [], []
        totals = {"comp_s": 0.0, "tp_s": 0.0, "pp_s": 0.0, "bubble_s": 0.0, "decode_s": 0.0}
        decode_detail: dict[str, float] = {}
        decode_batches = []
        consts = (
            gen,
            train,
            literal,
            comp_mult,
            tp_mult,
            pp_mult,
            layer_flops,
            head_flops,
            cv_tp,
            cv_pp,
        )
        cache = (
            self.topo.memo.setdefault("replica", {})
            if REPLICA_MEMO and not self.topo.explicit_matrix
            else None
        )
        if cache is not None:
            # everything else a replica's cost reads: the parameters and workflow, the
            # constants, and whether its decode is left out; with what :meth:`_replica_key`
            # takes of the task and layout, numbered once per call (hashing the nested tuple
            # again for every replica was most of a many-replica config's key time)
            contexts = self.topo.memo.setdefault("replica_key_prefix", {})
            # the task enters only through its kind (``consts``) and model: tasks of one kind
            # and model share entries (the old log-prob pass and a reference of the actor's
            # model on the same layout, PPO's inference tasks on one model)
            prefix = (
                self._context(),
                consts,
                prefill_only,
                self.m.name,
                self.tp_.tp,
                tuple(self.split),
                self.tp_.decode_batch,
            )
            context = contexts.setdefault(prefix, len(contexts))
        # prefill alone does not read dbs (it only sets HetRL's literal decode steps): those
        # entries are keyed without it, so residents that change a replica's dbs share them
        blind = prefill_only and not literal
        # replicas of one key repeat a replica already taken in this call: its time and
        # prefill (and its dbs, unless the replica reads its own); every component is a
        # maximum over replicas, which a repeat leaves as it is
        repeats: dict[Any, tuple[float, float, int | None]] = {}
        for i, replica in enumerate(self.idx):
            dbs = self._resident_dbs(i)
            keyed = None if blind else dbs
            key = (context, *self._replica_key(i, replica), keyed) if cache is not None else None
            if key is not None and key in repeats:
                total, pre, hit_dbs = repeats[key]
                per_replica.append(total)
                prefill.append(pre)
                if gen:
                    decode_batches.append(hit_dbs if dbs is None else dbs)
                continue
            hit = self._memo_replica(i, replica, consts, dbs, prefill_only, cache, key)
            total, pre, comp_s, tp_s, pp_s, bubble, decode, detail, hit_dbs = hit
            if dbs is None:  # else the replica's own (a blind entry holds another's)
                dbs = hit_dbs
            if not gen and not wf.response_lengths.is_constant:
                # outside the memo: the factor reads the replica count, which its key does not
                wait = total * (self._straggler(i) - 1.0)
                total, pre = total + wait, pre + wait
                totals["straggler_s"] = max(totals.get("straggler_s", 0.0), wait)
            if gen:
                decode_batches.append(dbs)
            for k, v in detail.items():
                decode_detail[k] = max(decode_detail.get(k, 0.0), v)
            per_replica.append(total)
            prefill.append(pre)
            if key is not None:
                repeats[key] = (total, pre, hit_dbs)
            for name, v in (
                ("comp_s", comp_s),
                ("tp_s", tp_s),
                ("pp_s", pp_s),
                ("bubble_s", bubble),
                ("decode_s", decode),
            ):
                totals[name] = max(totals[name], v)
        # every optimizer step synchronises the gradients (verl: one per ppo mini-batch)
        dp_s = self._dp_cost() * wf.optimizer_steps if train else 0.0
        out: dict[str, Any] = {"time_s": max(per_replica) + dp_s, **totals, "dp_s": dp_s}
        self._add_old_log_prob_pass(out)
        out["replica_times_s"] = per_replica
        out["prefill_times_s"] = prefill
        if decode_batches:
            out["decode_batch"] = decode_batches
        if decode_detail:
            out["decode"] = decode_detail
        return out

    def _add_old_log_prob_pass(self, out: dict[str, Any]) -> None:
        """Actor training's recompute of the old policy's log-probs, when the workflow has it
        (``WorkflowSpec.old_log_prob_pass``, verl's ``old_log_prob``), into ``out``: its trainer
        runs it on its own GPUs and layout before it trains, so it is an inference pass of the
        actor's model under this strategy (``log_prob_s``, part of ``time_s``)."""
        if self.task.name != ACTOR_TRAINING or not self.wf.old_log_prob_pass:
            return
        coster = TaskCoster(self.problem, OLD_LOG_PROB_PASS, self.tp_, self.mem)
        out["log_prob_s"] = coster.cost()["time_s"]
        out["time_s"] += out["log_prob_s"]
        self.exact = self.exact and coster.exact

    def _memo_replica(
        self,
        i: int,
        replica: list[list[int]],
        consts: tuple[Any, ...],
        dbs: int | None,
        prefill_only: bool,
        cache: dict[Any, Any] | None,
        key: Any,
    ) -> tuple[Any, ...]:
        """:meth:`_replica`'s result for replica ``i``, from the memo ``cache`` under ``key``
        when it holds it (None: no memo); whether its rings were exact joins :attr:`exact`."""
        hit = cache.get(key) if cache is not None else None
        if hit is None:
            before, self.exact = self.exact, True
            hit = (*self._replica(i, replica, consts, dbs, prefill_only), self.exact)
            self.exact = before
            if cache is not None and len(cache) < REPLICA_MEMO_ENTRIES:
                cache[key] = hit
        self.exact = self.exact and hit[-1]
        return hit[:-1]

    def _replica(
        self,
        i: int,
        replica: list[list[int]],
        consts: tuple[Any, ...],
        dbs: int | None = None,
        prefill_only: bool = False,
    ) -> tuple[Any, ...]:
        """One replica's (time, time without decode, comp, TP, PP, bubble, decode, decode detail,
        dbs); ``dbs``, when given, is :meth:`_decode_batch`'s for this replica (the only thing
        it reads of the memory map)."""
        gen, train, literal, comp_mult, tp_mult, pp_mult, layer_flops, head_flops, cv_tp, cv_pp = (
            consts
        )
        wf, m, tp, pp = self.wf, self.m, self.tp_.tp, self.tp_.pp
        params = self.problem.params
        eff = params.efficiency
        # generation's prefill runs on the serving engine's kernels; the other passes are the
        # trainer's (``Efficiency.training_flops``: equal to ``flops`` unless fitted)
        rate = eff.flops if gen else eff.training_flops
        detail: dict[str, float] = {}
        samples = wf.samples * self.shares[i]
        # prefill: one forward pass per prompt when the responses of a prompt share it
        forward = (
            samples / wf.responses_per_prompt if gen and params.share_prompt_prefill else samples
        )
        nm = forward / wf.micro_batch_size
        steps = 0.0
        if not gen:
            dbs = 0
        else:
            if dbs is None:
                dbs = self._decode_batch(replica)
            if literal:
                steps = wf.response_length * math.ceil(samples / dbs) if samples > 0 else 0.0
        comp, tpc, ppc, hbm = [], [], [], []
        for j, stage in enumerate(replica):
            last = j == pp - 1
            flops = forward * (self.split[j] * layer_flops + (head_flops if last else 0.0))
            comp.append(max(comp_mult * flops / (rate(g) * tp) for g in self._gpus(stage)))
            t = 0.0
            if tp > 1:
                t = tp_mult * nm * self.split[j] * self._ring(stage, cv_tp)
                if steps:
                    t += steps * 2 * self.split[j] * comm.ring_latency(self.topo, stage)
            tpc.append(t)
            p = 0.0
            if not last:
                p = pp_mult * nm * comm.best_pair(self.topo, stage, replica[j + 1], cv_pp)
                if steps:
                    p += steps * comm.best_pair(self.topo, stage, replica[j + 1], 0.0)
            ppc.append(p)
            if steps:
                weights = BYTES_BF16 * stage_params(m, self.split[j], j == 0, last) / tp / GB
                hbm.append(max(steps * weights / eff.hbm_gbs(g) for g in self._gpus(stage)))
            else:
                hbm.append(0.0)
        decode = max(hbm) if literal else 0.0
        if gen and not literal and samples > 0 and not prefill_only:
            detail = self._decode_physical(replica, math.ceil(samples - 1e-9), dbs)
            decode = detail["decode_s"]
        if train:
            core = max(c + t + p for c, t, p in zip(comp, tpc, ppc, strict=True))
            bubble = sum(comp[j] + tpc[j] + ppc[j] for j in range(1, pp)) / nm if nm > 0 else 0.0
            total = core + bubble
        else:
            bubble = 0.0
            total = max(c + t for c, t in zip(comp, tpc, strict=True)) + max(ppc) + decode
        return total, total - decode, max(comp), max(tpc), max(ppc), bubble, decode, detail, dbs

    def _straggler(self, i: int) -> float:
        """How much longer replica ``i`` takes than its expected share because the pass waits
        for its slowest rank (``costmodels.straggler``): training synchronises every
        mini-batch, inference only at the end of its balanced pass."""
        wf = self.wf
        train = self.task.kind is TaskKind.TRAINING
        per_pass = wf.samples // wf.optimizer_steps if train else wf.samples
        return straggler_factor(
            self.m,
            wf.response_lengths,
            wf.prompt_length,
            wf.response_length,
            per_pass * self.shares[i],
            self.tp_.dp,
            per_pass,
            not train,
        )

    def _replica_key(self, i: int, replica: list[list[int]]) -> tuple[Any, ...]:
        """What a replica's cost depends on besides :meth:`cost`'s context, up to renaming
        nodes: the task, model, TP, layer split and ``decode_batch`` (numbered with the context
        once per call, :meth:`cost`), and the replica's batch share and GPU pattern. On a
        hierarchical network a link is fixed by whether its ends share a node (that node's
        intra-node link) or a zone (the zone's link, or the zone pair's), so replicas whose GPUs
        sit on nodes of the same class (GPU type, zone, intra-node link) in the same pattern
        cost the same. Generation "as many as fit" also reads each GPU's resident memory, but
        only through the replica's dbs (:meth:`_resident_dbs`), which :meth:`cost` adds to the
        key."""
        return (self.shares[i], self._pattern(replica))

    def _pattern(self, replica: list[list[int]]) -> tuple[Any, ...]:
        """A replica's GPUs as :meth:`_replica_key` tells them apart: per stage, how many GPUs it
        takes from each (node, node class), nodes numbered in order of first use; memoised per
        topology on the replica's devices (a function of them and the topology alone)."""
        cache = self.topo.memo.setdefault("replica_pattern", {})
        key = tuple(map(tuple, replica))
        hit = cache.get(key)
        if hit is not None:
            return hit
        classes = self.topo.memo.get("node_class")
        if classes is None:
            classes = self.topo.memo["node_class"] = _node_classes(self.topo)
        devices = self.topo.devices
        local: dict[str, int] = {}
        stages = []
        for stage in replica:  # a stage is costed as a set of GPUs: (local node, class) -> count
            counts: dict[tuple[int, int], int] = {}
            for d in stage:
                k = (local.setdefault(devices[d].node, len(local)), classes[d])
                counts[k] = counts.get(k, 0) + 1
            stages.append(tuple(sorted(counts.items())))
        out = tuple(stages)
        if len(cache) < comm.MEMO_ENTRIES:
            cache[key] = out
        return out

    def _resident_dbs(self, i: int) -> int | None:
        """Replica ``i``'s dbs when it is read off the memory map (generation "as many as fit"),
        else None (none, or the plan's ``decode_batch``, already in the key). A replica's cost
        reads the memory map only through this dbs (:meth:`_replica`), so keying the memo on it
        in place of the GPUs' resident and usable GB is exact and lets replicas whose residents
        differ but leave room for as many sequences share an entry."""
        if (
            self.task.kind is TaskKind.GENERATION
            and self.tp_.decode_batch is None
            and self.mem is not None
        ):
            return self.replica_dbs()[i]
        return None

    def replica_dbs(self) -> tuple[int, ...]:
        """Every replica's dbs (:meth:`_decode_batch`), read off the memory map once per coster:
        the search keys its memo on them and then costs the same coster
        (``search.placement.candidates``), which reads them again."""
        if self._dbs is None:
            self._dbs = tuple(self._decode_batch(replica) for replica in self.idx)
        return self._dbs

    def reside(self, mem: dict[int, dict[str, float]]) -> None:
        """Read ``mem`` as the memory map from now on (its dbs are taken again): a search that
        bounds one layout beside many resident sets keeps one coster and the parts of its cost
        that do not read them (``costmodels.placement.task_cost.FloorKernel``)."""
        self.mem, self._dbs = mem, None

    def _dp_cost(self) -> float:
        dp, tp = self.tp_.dp, self.tp_.tp
        if dp == 1:
            return 0.0
        worst = 0.0
        for j in range(self.tp_.pp):
            params = stage_params(self.m, self.split[j], j == 0, j == self.tp_.pp - 1) / tp
            cv = self.problem.params.grad_bytes_per_param * params * 2 * (dp - 1) / dp / GB
            for k in range(tp):
                devices = [self.idx[i][j][k] for i in range(dp)]
                worst = max(worst, self._ring(devices, cv))
        return worst

    def _decode_batch(self, replica: list[list[int]]) -> int:
        """dbs of a generation replica (``decode_cost.GenerationCoster``)."""
        raise NotImplementedError("decode is costed by GenerationCoster")

    def _decode_physical(
        self, replica: list[list[int]], sequences: int, dbs: int
    ) -> dict[str, float]:
        """Decode time of a generation replica (``decode_cost.GenerationCoster``)."""
        raise NotImplementedError("decode is costed by GenerationCoster")
