"""Level 4's group options (``search.placement.group_options``): merging generation last, each
combination's fastest generation candidate only, found in order of the candidates' floors, gives
the same Pareto front as costing every candidate in every combination."""

from __future__ import annotations

import random

import pytest

from costmodels.placement.space import compositions
from formulations.placement.columns import ColumnPool
from planner.io import build_problem
from search.placement.group_options import GroupOptions
from search.placement.options import Partial

TERMS = ("gen", "inf", "trn", "xfer", "busy")


def _every_candidate(self, states, cands, floors, refine, comp, col_of, capacity, deadline, keep):
    """The reference: every generation candidate costed in every combination."""
    from costmodels.workflow import ACTOR_GENERATION

    return self._extend(states, ACTOR_GENERATION, cands, comp, col_of, capacity, deadline)


def _front(options):
    return sorted(tuple(round(getattr(o, t), 9) for t in TERMS) for o in options)


@pytest.mark.parametrize(
    "cluster,workflow",
    [("small-8", "ppo-sync-qwen3-4b"), ("small-16", "grpo-async-qwen3-8b")],
)
@pytest.mark.parametrize("pruned", [False, True])
@pytest.mark.parametrize("defer", [False, True])
def test_fastest_generation_per_combination_keeps_the_front(
    monkeypatch, cluster, workflow, pruned, defer
):
    """The fastest-candidate merge (explicit decode batches costed up front, or deferred to
    their floors as the ILP's expansions run it) gives the front of costing every candidate
    in every combination, and costs fewer."""
    p = build_problem("placement", {"cluster": cluster, "workflow": workflow})
    pool = ColumnPool(GroupOptions(p))
    rng = random.Random(11)
    pairs = [
        (s, c)
        for c in compositions(pool.builder.cap)
        for s in pool.subsets()
        if "actor_generation" in s and len(s) > 1
    ]
    compared, costed = 0, [0, 0]
    for subset, comp in rng.sample(pairs, 12):
        keep = None
        if pruned:  # a cutoff between the pair's fastest and slowest combinations
            full = GroupOptions(p).options(subset, comp)
            if not full:
                continue
            cut = sorted(o.gen + o.inf + o.trn for o in full)[len(full) // 2]

            def keep(st: Partial, cut=cut) -> bool:
                return sum(st.phases(p.workflow.eta)) <= cut

        builders = GroupOptions(p, defer_explicit=defer), GroupOptions(p)
        fast = builders[0].options(subset, comp, keep)
        with monkeypatch.context() as m:
            m.setattr(GroupOptions, "_extend_fastest", _every_candidate)
            slow = builders[1].options(subset, comp, keep)
        assert _front(fast) == _front(slow), (subset, comp)
        compared += bool(slow)
        costed = [costed[i] + builders[i].evaluations for i in (0, 1)]
    assert compared >= 4
    assert costed[0] < costed[1]  # and it costs fewer generation candidates


@pytest.mark.parametrize(
    "cluster,workflow", [("small-8", "ppo-sync-qwen3-4b"), ("small-16", "grpo-async-qwen3-8b")]
)
def test_relaxed_columns_need_no_explicit_decode_batch(cluster, workflow):
    """Every relaxed column is the same when generation's explicit decode batches are costed
    too: each is slower than its layout's "as many as fit" floor wherever it fits."""
    p = build_problem("placement", {"cluster": cluster, "workflow": workflow})
    lean, full = GroupOptions(p), GroupOptions(p)
    full._bound_candidates = full.candidates  # type: ignore[method-assign]
    pool = ColumnPool(lean)
    for comp in compositions(lean.cap):
        for subset in pool.subsets():
            a, b = lean.bound_option(subset, comp), full.bound_option(subset, comp)
            assert (a is None) == (b is None), (subset, comp)
            if a is not None:
                for term in TERMS:
                    assert getattr(a, term) == pytest.approx(getattr(b, term), rel=1e-12)
    assert lean.evaluations < full.evaluations


@pytest.mark.parametrize("workflow", ["grpo-sync-qwen3-8b", "ppo-async-qwen3-14b"])
def test_prefill_alone_is_the_prefill_of_the_whole_cost(workflow):
    """``cost(prefill_only=True)``, what the generation floor adds its decode bound to, gives
    every replica the prefill and decode batch the full costing gives."""
    from costmodels.placement.decode_cost import GenerationCoster
    from costmodels.placement.memory import task_memory
    from costmodels.placement.space import is_heterogeneous, place_task, task_configs

    p = build_problem("placement", {"cluster": "small-24", "workflow": workflow})
    task = next(t for t in p.tasks if t.name == "actor_generation")
    devs = [d.id for d in p.topology.devices]
    checked = 0
    for gpus in (devs[:8], devs[4:16], devs[:24]):
        for cfg in task_configs(p, task, len(gpus), is_heterogeneous(p, gpus)):
            if cfg.decode_batch is not None:
                continue
            tp_ = place_task(p, task, gpus, cfg)
            mem = {
                d: {"capacity_gb": 40.0, "model_gb": model}
                for d, (model, _) in task_memory(p, task, tp_).items()
            }
            alone = GenerationCoster(p, task, tp_, mem).cost(prefill_only=True)
            full = GenerationCoster(p, task, tp_, mem).cost()
            assert alone["decode_batch"] == full["decode_batch"]
            assert alone["prefill_times_s"] == pytest.approx(full["prefill_times_s"], rel=1e-12)
            checked += 1
    assert checked > 10
