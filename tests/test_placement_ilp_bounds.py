"""The lazy placement ILP's relaxation is a relaxation: every bound it uses is at most what the
cost model charges. Decode is not monotone in the decode batch, so the floor
is checked against every dbs it covers; relaxed options against every exact option of the pair."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodels.combinatorics import set_partitions
from costmodels.placement.decode_cost import pipeline_passes
from costmodels.placement.judge import StepShape
from costmodels.placement.memory import memory_floor_gb, task_memory
from costmodels.placement.space import (
    best_colocated,
    colocated_candidates,
    compositions,
    is_heterogeneous,
    place_task,
    placement_keeper,
    task_configs,
)
from costmodels.placement.task_cost import generation_floor, task_cost
from costmodels.solving import Status
from formulations.placement.columns import ColumnPool, LeftoverBounds, option_bound
from formulations.placement.ilp import PlacementILP, solve_placement_ilp
from planner.io import build_problem
from search.placement.group_options import GroupOptions
from search.placement.options import GroupOption


@settings(max_examples=300, deadline=None)
@given(
    pp=st.integers(1, 8),
    max_dbs=st.integers(1, 12),
    data=st.data(),
)
def test_pipeline_passes_bound_every_schedule(pp, max_dbs, data):
    """Any schedule of rounds with 1..dbs sequences each (dbs <= max_dbs) makes at least
    pipeline_passes micro-batch passes, sum_r min(PP, w_r), given its tokens and a lower bound
    on its rounds (the floor's inputs)."""
    dbs = data.draw(st.integers(1, max_dbs))
    widths = data.draw(st.lists(st.integers(1, dbs), min_size=1, max_size=40))
    rounds_lb = data.draw(st.integers(1, len(widths)))
    tokens = sum(widths)
    passes = sum(min(pp, w) for w in widths)
    assert passes >= pipeline_passes(tokens, rounds_lb, max_dbs, pp) - 1e-9


@pytest.mark.parametrize(
    "cluster,workflow,seed,calibrated",
    [
        ("small-16", "grpo-sync-qwen3-8b", 0, False),
        ("small-24", "ppo-async-qwen3-14b", 1, False),
        ("hetrl-multi-country", "grpo-sync-qwen3-4b", 2, False),
        ("small-16", "grpo-sync-qwen3-8b", 3, True),
        ("small-24", "ppo-async-qwen3-14b", 4, True),
        ("small-16", "grpo-sync-qwen3-8b@lognormal", 5, False),
        ("small-24", "ppo-async-qwen3-14b@lognormal", 6, True),
        ("small-16", "grpo-async-qwen3-8b@fully-async", 7, True),
    ],
)
def test_generation_floor_bounds_every_decode_batch_it_covers(cluster, workflow, seed, calibrated):
    """Also on fitted kernels and the eager engine's overheads, whose step has other terms, and
    on long-tailed responses under continuous batching (``costmodels.batching``)."""
    name, _, lengths = workflow.partition("@")
    wf: object = name
    if lengths:
        from costmodels.placement.presets import placement_presets

        wf = {p.name: p for p in placement_presets()}[name].build()
        wf["response_lengths"] = {"distribution": "lognormal", "median": 380, "sigma": 1.0}
        if lengths == "fully-async":  # a rollouter that hides the tail need not wait for it
            wf.update(mode="fully-async", fully_async={"staleness": 0.3})
    p = build_problem("placement", {"cluster": cluster, "workflow": wf})
    if calibrated:
        from costmodels.placement.kind import KIND
        from costmodels.profiles import engine_profiles
        from planner.io import load_profiles

        p = KIND.with_efficiency(
            p,
            {
                "profiles": load_profiles("aic-vllm"),
                **engine_profiles()["eager"].efficiency_update(),
            },
        )
    task = next(t for t in p.tasks if t.kind.value == "generation")
    devs = [d.id for d in p.topology.devices]
    rng = random.Random(seed)
    checked = 0
    for _ in range(4):
        k = rng.choice([2, 4, 8])
        gpus = rng.sample(devs, k)
        cfgs = [
            c for c in task_configs(p, task, k, is_heterogeneous(p, gpus)) if c.decode_batch is None
        ]
        for cfg in rng.sample(cfgs, min(2, len(cfgs))):
            tp_ = place_task(p, task, gpus, cfg)
            mem = {
                d: {
                    "model_gb": mo,
                    "working_gb": 0.0,
                    "capacity_gb": p.topology.devices[d].gpu.memory_gb - p.params.memory_reserve_gb,
                }
                for d, (mo, _) in task_memory(p, task, tp_).items()
            }
            if any(s["model_gb"] > s["capacity_gb"] for s in mem.values()):
                continue
            cost, _ = task_cost(p, task, tp_, mem)
            floor = generation_floor(p, task, tp_, mem)
            top = min(cost["decode_batch"])
            for dbs in sorted({1, 2, 3, top, *range(1, top + 1, max(1, top // 12))}):
                t, _ = task_cost(p, task, tp_.model_copy(update={"decode_batch": dbs}))
                assert t["time_s"] >= floor * (1 - 1e-9), (cfg, dbs, t["time_s"], floor)
                checked += 1
    assert checked > 20


@pytest.mark.parametrize("workflow", ["grpo-async-qwen3-4b", "ppo-sync-qwen3-4b"])
def test_relaxed_options_bound_every_exact_option(workflow):
    """Also PPO: six tasks, where co-located tasks' memory couples their bounds (each task only
    at configurations that fit beside the others' least memory; generation beside their models)."""
    p = build_problem("placement", {"cluster": "small-8", "workflow": workflow})
    builder = GroupOptions(p)
    pool = ColumnPool(builder)
    rng = random.Random(3)
    pairs = [(s, c) for c in compositions(builder.cap) for s in pool.subsets()]
    compared = 0
    for subset, comp in rng.sample(pairs, 40):
        relaxed = builder.bound_option(subset, comp)
        exact = builder.options(subset, comp)
        if relaxed is None:
            assert exact == [], "a pair with options has no relaxed column"
            continue
        for o in exact:
            for term in ("gen", "inf", "trn", "xfer", "busy"):
                assert getattr(relaxed, term) <= getattr(o, term) * (1 + 1e-9) + 1e-12, (
                    subset,
                    comp,
                    term,
                )
            assert relaxed.joint <= (o.inf + o.trn) * (1 + 1e-9) + 1e-12, (subset, comp)
            compared += 1
    assert compared > 10


@pytest.mark.parametrize(
    "cluster,workflow", [("small-8", "ppo-sync-qwen3-4b"), ("small-16", "ppo-async-qwen3-8b")]
)
def test_the_joint_bound_holds_for_every_exact_option_of_a_trainer_group(cluster, workflow):
    """A relaxed group without generation bounds its inference + training together
    (``GroupOptions._joint_bound``): no exact option of the group is below it, and it is at
    least the separate bounds' sum; a group it finds no option for has none."""
    p = build_problem("placement", {"cluster": cluster, "workflow": workflow})
    builder = GroupOptions(p)
    pool = ColumnPool(builder)
    pairs = [
        (s, c)
        for c in compositions(builder.cap)
        for s in pool.subsets()
        if len(s) > 1 and "actor_generation" not in s
    ]
    raised = compared = 0
    for subset, comp in random.Random(5).sample(pairs, 60):
        relaxed = builder.bound_option(subset, comp)
        exact = builder.options(subset, comp)
        if relaxed is None:
            assert exact == [], (subset, comp)
            continue
        assert relaxed.joint >= (relaxed.inf + relaxed.trn) * (1 - 1e-12)
        raised += relaxed.joint > (relaxed.inf + relaxed.trn) * (1 + 1e-9)
        for o in exact:
            assert relaxed.joint <= (o.inf + o.trn) * (1 + 1e-9) + 1e-12, (subset, comp)
            compared += 1
    assert compared > 20 and raised > 0


@pytest.mark.parametrize("workflow", ["grpo-async-qwen3-4b", "ppo-sync-qwen3-4b"])
def test_leftover_bounds_hold_in_every_plan(workflow):
    """(8) of the ILP: in a plan of exact options, what any one option's left-out tasks are
    bounded by on the GPUs it leaves never exceeds the plan's own phases, and no option of a
    feasible plan is ruled out (random plans: task partitions on random disjoint compositions)."""
    p = build_problem("placement", {"cluster": "small-8", "workflow": workflow})
    builder = GroupOptions(p)
    pool = ColumnPool(builder)
    pool.relax_singles()
    leftover = LeftoverBounds(pool, {t.name: memory_floor_gb(p, t) for t in p.tasks})
    # the plans worth checking are those a solver would consider: options of combinations no
    # slower than 1.5x the co-located plan
    cutoff = 1.5 * best_colocated(p)[0]

    def keep(st):
        return (
            option_bound(
                GroupOption((), (), {}, *st.phases(p.workflow.eta), 0.0),
                StepShape.of(p.workflow),
                (0.0, 0.0, 0.0),
            )
            <= cutoff
        )

    rng = random.Random(5)
    # groups of at most three tasks: merging a six-task group's configurations takes minutes
    partitions = [part for part in set_partitions(list(builder.tasks)) if max(map(len, part)) <= 3]
    checked = 0
    for _ in range(2000):
        if checked >= 40:
            break
        part = rng.choice(partitions)
        free, comps = list(builder.cap), []
        for i in range(len(part)):
            # the last group often takes every GPU left (plans that use the whole cluster fit best)
            last = i == len(part) - 1 and rng.random() < 0.5
            comp = tuple(free) if last else tuple(rng.randint(0, f) for f in free)
            if not any(comp):
                break
            comps.append(comp)
            free = [f - c for f, c in zip(free, comp, strict=True)]
        if len(comps) < len(part):
            continue
        chosen = []
        for group, comp in zip(part, comps, strict=True):
            opts = builder.options(tuple(n for n in pool.names if n in group), comp, keep)
            if not opts:
                break
            chosen.append(rng.choice(opts))
        if len(chosen) < len(part):
            continue
        phases = (
            max(o.gen for o in chosen),
            max(o.inf for o in chosen),
            max(o.trn for o in chosen),
        )
        for o in chosen:
            rest = leftover.phases(o)
            assert rest is not None, (part, comps, o.tasks)
            for bound, actual in zip(rest, phases, strict=True):
                assert bound <= actual * (1 + 1e-9) + 1e-12, (part, comps, o.tasks, rest, phases)
        checked += 1
    assert checked > 20


def test_memory_floor_proves_ppo_infeasible_at_once():
    p = build_problem("placement", {"cluster": "small-8", "workflow": "ppo-sync-qwen3-8b"})
    need = sum(memory_floor_gb(p, t) for t in p.tasks)
    assert need > sum(d.gpu.memory_gb - p.params.memory_reserve_gb for d in p.topology.devices)
    out = solve_placement_ilp(p, time_limit=5)
    assert out.status is Status.INFEASIBLE and "GB" in out.message


def test_time_limited_ilp_reports_incumbent_and_bound():
    p = build_problem("placement", {"cluster": "small-16", "workflow": "ppo-sync-qwen3-8b"})
    out = solve_placement_ilp(p, time_limit=8)
    assert out.status in (Status.FEASIBLE, Status.OPTIMAL) and out.plan is not None
    assert (
        out.bound is not None
        and math.isfinite(out.bound)
        and out.bound <= out.objective * (1 + 1e-9)
    )


def test_a_whole_plan_is_expanded_under_a_better_cutoff_than_the_co_located_one():
    """small-16 PPO sync's first master picks a whole plan (every task on every GPU), and two
    promising pairs are in reach. Expanded under the co-located plan's cutoff, the whole plan keeps
    nearly every co-located configuration: about 29 000-34 000 task evaluations on its own. The
    best plan without one comes first and gives the optimum's cutoff, and the solve takes a few
    thousand (a count of work, not a time)."""
    p = build_problem("placement", {"cluster": "small-16", "workflow": "ppo-sync-qwen3-8b"})
    out = solve_placement_ilp(p, workers=1)
    assert out.status is Status.OPTIMAL
    assert out.objective < out.stats["colocated"]
    assert out.stats["task_evaluations"] < 10_000


@pytest.mark.parametrize(
    ("cluster", "workflow"),
    [("small-8", "ppo-async-qwen3-4b"), ("small-16", "ppo-sync-qwen3-8b")],
)
def test_the_exact_columns_master_is_asked_again_only_after_a_better_plan(cluster, workflow):
    """The master over the exact columns alone gives the incumbent after each iteration while
    it keeps improving it, and never a plan the cost model prices otherwise: each call's
    incumbent is at least the optimum, every call but the last found a better plan, and the
    optimum is the one the solve proves."""
    p = build_problem("placement", {"cluster": cluster, "workflow": workflow})
    out = solve_placement_ilp(p, workers=1)
    assert out.status is Status.OPTIMAL
    calls = out.stats["restricted"]
    assert calls
    for _, seconds, before, after in calls[:-1]:
        assert seconds >= 0 and after < before
    for *_, before, after in calls:
        assert after >= out.objective * (1 - 1e-9)
        assert before is None or after <= before


@pytest.mark.parametrize(
    ("cluster", "workflow"),
    [("small-8", "ppo-async-qwen3-4b"), ("small-16", "grpo-async-qwen3-8b")],
)
def test_how_many_promising_pairs_are_expanded_moves_the_path_not_the_optimum(
    monkeypatch, cluster, workflow
):
    """``EXPAND_MORE`` (the relaxed pairs expanded beside a master's picks) only decides which
    pairs are made exact early: none, one and the shipped count prove the same optimum, and
    more of them never take more masters on these instances."""
    import formulations.placement.ilp as ilp

    problem = build_problem("placement", {"cluster": cluster, "workflow": workflow})
    shipped_count = ilp.EXPAND_MORE
    runs = {}
    for more in (0, 1, shipped_count):
        monkeypatch.setattr(ilp, "EXPAND_MORE", more)
        runs[more] = solve_placement_ilp(problem, workers=1)
        assert runs[more].status is Status.OPTIMAL
    shipped = runs[shipped_count]
    for out in runs.values():
        assert out.objective == pytest.approx(shipped.objective, rel=1e-9)
    assert shipped.stats["iterations"] <= runs[0].stats["iterations"]


def test_an_upper_bound_below_every_plan_is_not_a_proof():
    p = build_problem("placement", {"cluster": "small-8", "workflow": "grpo-sync-qwen3-4b"})
    out = solve_placement_ilp(p, upper_bound=1.0)
    assert out.status is not Status.OPTIMAL and "upper_bound" in out.message
    assert solve_placement_ilp(p, upper_bound=1e6).status is Status.OPTIMAL


def test_kin_pairs_swap_tasks_of_one_kind_and_model():
    """The pairs the ILP expands beside a picked one: same composition, same tasks up to swapping
    tasks of one kind and model (PPO's actor and critic training on one model), never itself."""
    p = build_problem("placement", {"cluster": "small-8", "workflow": "ppo-sync-qwen3-4b"})
    pool = ColumnPool(GroupOptions(p))
    comp = next(iter(compositions(pool.builder.cap)))

    def ordered(*names):
        return tuple(n for n in pool.names if n in names)

    kin = pool.kin_pairs((ordered("critic_inference", "critic_training"), comp))
    assert (ordered("critic_inference", "actor_training"), comp) in kin
    assert (ordered("reward_inference", "critic_training"), comp) in kin
    assert (ordered("critic_inference", "critic_training"), comp) not in kin
    kinds = {n: t.kind for n, t in pool.builder.tasks.items()}
    for subset, c in kin:
        assert c == comp and len(subset) == 2
        assert sorted(kinds[n].value for n in subset) == ["inference", "training"]
    assert pool.kin_pairs((ordered("actor_generation"), comp)) == []


def _relaxed_master(problem):
    """The master over every relaxed column of ``problem`` (no pruning), and those columns."""
    from formulations.placement.master import Master

    ilp = PlacementILP(problem)
    pool = ilp.pool
    pool.relax_singles()
    pool.relax_groups()
    columns = pool.columns(lambda o: True)
    m = Master(ilp.builder, ilp.shape, columns, pool.interchangeable(), pool.ranks(columns))
    return m, columns


@pytest.mark.parametrize("workflow", ["grpo-sync-qwen3-8b", "grpo-async-qwen3-8b"])
def test_the_bound_ladder_leaves_the_optimum_where_it_was(monkeypatch, workflow):
    """The master's bound ladder (``formulations.placement.master.Master.solve``) only reorders
    HiGHS's runs: no ladder, the shipped one, and one fed a hint far too high or too low all
    prove the same optimum (the last rung is the incumbent's cutoff)."""
    import formulations.placement.master as master

    problem = build_problem("placement", {"cluster": "small-8", "workflow": workflow})
    shipped = solve_placement_ilp(problem)
    assert shipped.status is Status.OPTIMAL
    original = master.Master.solve

    def skewed(factor):
        def solve(self, backend, time_limit, threads, cutoff=math.inf, hint=None):
            hint = None if hint is None else hint * factor
            return original(self, backend, time_limit, threads, cutoff, hint)

        return solve

    for ladder, factor in (((), 1.0), (master.LADDER, 3.0), (master.LADDER, 0.2)):
        monkeypatch.setattr(master, "LADDER", ladder)
        monkeypatch.setattr(master.Master, "solve", skewed(factor))
        other = solve_placement_ilp(problem)
        assert other.status is Status.OPTIMAL
        assert other.objective == pytest.approx(shipped.objective, rel=1e-9)


def test_a_rung_proven_empty_bounds_a_master_the_limit_stops(monkeypatch):
    """A rung of the bound ladder that closes with no solution below it proves the master's
    optimum at least that rung; when the last rung (the cutoff) then stops on the time limit
    with a weaker dual bound, the master reports the rung's: the ILP's bound under a time limit
    is never weaker for having climbed the ladder."""
    import formulations.placement.master as master
    from formulations.highs import HighsOutcome

    problem = build_problem("placement", {"cluster": "small-8", "workflow": "grpo-sync-qwen3-8b"})
    optimum = solve_placement_ilp(problem).objective
    m, _ = _relaxed_master(problem)
    original = master.Master._run
    cutoff = 10 * optimum

    def stopped_at_the_cutoff(self, a, cols, threads, time_limit, bound, relaxation=False):
        if relaxation or bound < cutoff:
            return original(self, a, cols, threads, time_limit, bound, relaxation)
        return HighsOutcome("time_limit", "Time limit reached", None, None, 0.0, 0)

    monkeypatch.setattr(master.Master, "_run", stopped_at_the_cutoff)
    # rungs below the LP optimum z: both close empty, the higher proves 0.9 z
    monkeypatch.setattr(master, "LADDER", (-0.5, -0.1))
    status, x, _, bound = m.solve("highs", None, None, cutoff)
    assert status == "unknown" and x is None and m.probes == 3
    assert m.lp is not None and bound == pytest.approx(0.9 * m.lp[0]) and bound > 0.0
    monkeypatch.setattr(master.Master, "_run", original)
    _, _, value, _ = m.solve("highs", None, None, cutoff)
    assert bound <= value


@pytest.mark.parametrize("workflow", ["ppo-sync-qwen3-4b", "grpo-async-qwen3-8b"])
def test_a_columns_own_bound_holds_wherever_it_is_used(workflow):
    """The bound ladder drops a column above a rung by its own least objective
    (``Master.own``): every solution of the master's LP relaxation with that column at 1 costs
    at least that much, so no solution below the rung is lost."""
    import numpy as np
    from scipy.sparse import csc_array

    from formulations.highs import solve_highs

    m, columns = _relaxed_master(
        build_problem("placement", {"cluster": "small-8", "workflow": workflow})
    )
    a = csc_array(m._matrix())
    lo = np.array([r[1] for r in m.rows])
    hi = np.array([r[2] for r in m.rows])
    checked = 0
    for i in random.Random(0).sample(range(len(columns)), min(40, len(columns))):
        fixed = np.zeros(m.size)
        fixed[i] = 1.0
        out = solve_highs(m.c, a, lo, hi, fixed, m.upper, None, presolve=False)
        if out.objective is None:  # the column is in no solution of this master
            continue
        assert out.objective >= m.own[i] - 1e-6 * max(1.0, m.own[i])
        checked += 1
    assert checked >= 10
    assert (m.own[len(columns) :] == 0).all()


@pytest.mark.parametrize(
    "cluster,workflow",
    [
        ("small-8", "ppo-sync-qwen3-4b"),
        ("small-16", "grpo-async-qwen3-8b"),
        ("small-24", "ppo-sync-qwen3-8b"),
    ],
)
def test_the_memory_screen_keeps_the_best_colocated_plan(cluster, workflow):
    """best_colocated builds and validates only the plans its memory screen lets through; the
    sweep of every co-located plan through the validator finds the same best one."""
    p = build_problem("placement", {"cluster": cluster, "workflow": workflow})
    keep = placement_keeper(p)
    for plan in colocated_candidates(p):
        keep.offer(plan)
    assert keep.rejected > 0  # the screen has something to skip
    cost, plan = best_colocated(p)
    assert cost == keep.best
    assert plan == keep.plan


def test_an_option_whose_left_out_tasks_cannot_fit_is_dropped_under_any_cutoff():
    """The ILP keeps an option only when some plan may use it: one whose left-out tasks do not
    fit on the GPUs it leaves is dropped even before any incumbent (an infinite cutoff), and its
    least plan cost, taken once per option, is the leftover-raised bound."""
    p = build_problem("placement", {"cluster": "small-16", "workflow": "ppo-sync-qwen3-8b"})
    ilp = PlacementILP(p)
    ilp.pool.relax_singles()
    ilp.phase_lb = ilp._phase_bounds()
    ilp.leftover = LeftoverBounds(ilp.pool, {t.name: memory_floor_gb(p, t) for t in p.tasks})
    assert math.isinf(ilp.cutoff)
    crowded = kept = 0
    for (subset, comp), o in list(ilp.pool.relaxed.items()):
        rest = ilp.leftover.phases(o)
        if rest is None:
            assert not ilp._keep_option(o), (subset, comp)
            crowded += 1
            continue
        lb = tuple(max(a, b) for a, b in zip(ilp.phase_lb, rest, strict=True))
        assert ilp._least_plan(o) == max(
            option_bound(o, ilp.shape, ilp.phase_lb), option_bound(o, ilp.shape, lb)
        )
        assert ilp._keep_option(o)
        kept += 1
    assert crowded and kept


@pytest.mark.parametrize("workflow", ["grpo-sync-qwen3-8b", "ppo-sync-qwen3-4b"])
def test_rungs_run_at_once_give_the_one_by_one_answer(monkeypatch, workflow):
    """The ladder's rungs run two or three at a time (``Master.rung_threads``, HiGHS in
    threads) give what one at a time gives: status, solution, value, bound, the probes counted
    and the highest rung proven empty, under a loose cutoff, a near one, a hint and rungs that
    close empty (below the LP optimum)."""
    import numpy as np

    import formulations.placement.master as master

    problem = build_problem("placement", {"cluster": "small-8", "workflow": workflow})
    optimum = solve_placement_ilp(problem).objective
    m, _ = _relaxed_master(problem)
    cases = [(10 * optimum, None), (optimum * (1 + 1e-7), None), (optimum * 1.01, 0.9 * optimum)]
    seen_empty = False
    for ladder in (master.LADDER, (-0.5, -0.1, 0.0005) + master.LADDER):
        monkeypatch.setattr(master, "LADDER", ladder)
        for cutoff, hint in cases:
            answers = []
            for threads in (1, 2, 3):
                m.rung_threads = threads
                status, x, value, bound = m.solve("highs", None, None, cutoff, hint=hint)
                picked = None if x is None else tuple(np.flatnonzero(x > 0.5))
                answers.append((status, picked, value, bound, m.probes, m.rung_floor))
            assert answers[0] == answers[1] == answers[2]
            seen_empty = seen_empty or answers[0][5] is not None
    assert seen_empty  # some rung closed empty, so a later one ran beside it


def test_a_cancelled_master_run_stops_without_a_proof():
    """``solve_highs(cancel=...)``: a MIP whose event is set stops at HiGHS's first interrupt
    check and says so (``other``), holding no proof; the ladder sets it on the rungs above one
    with a solution below its bound."""
    import threading

    import numpy as np
    from scipy.sparse import csc_array

    problem = build_problem("placement", {"cluster": "small-8", "workflow": "ppo-sync-qwen3-4b"})
    m, _ = _relaxed_master(problem)
    a = csc_array(m._matrix())
    keep = np.arange(m.size)
    event = threading.Event()
    assert m._run(a, keep, None, None, math.inf, cancel=event).stopped == "optimal"
    event.set()
    out = m._run(a, keep, None, None, math.inf, cancel=event)
    assert out.stopped == "other" and "nterrupt" in out.highs_status
