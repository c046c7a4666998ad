"""RollMux co-scheduling (RollMux §4.1-§4.3): the group model, Algorithm 1 and the baselines
against brute force, the round-robin cycle of an unsaturated group, the validator and job files."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodels.cosched.canned import tiny_jobs
from costmodels.cosched.check import check_cosched
from costmodels.cosched.group import (
    GroupState,
    coexec_times,
    cosched_model,
    cycle_and_load,
    group_ok,
    saturated,
)
from costmodels.cosched.judge import evaluate_cosched
from costmodels.cosched.plan import CoschedulePlan
from costmodels.cosched.problem import JobsSpec
from costmodels.errors import SpecError
from costmodels.solving import Status
from formulations.cosched.bruteforce import solve_cosched_bruteforce
from heuristics.cosched.online import (
    OnlineScheduler,
    isolated,
    placements,
    solve_colocated,
    solve_greedy,
    solve_greedy_slo,
    solve_random,
    solve_random_slo,
    solve_rollmux,
    solve_solo,
)

HEURISTICS = (solve_rollmux, solve_random_slo, solve_greedy_slo, solve_solo, solve_colocated)
#: RollMux §7.5's baselines: no SLO check, so their plans may break SLOs (and nothing else)
PAPER_BASELINES = (solve_random, solve_greedy)


def _random_jobs(seed: int, n: int):
    rng = np.random.default_rng(seed)
    jobs = [
        (float(rng.integers(20, 300)), float(rng.integers(20, 300)), float(rng.uniform(1.0, 2.0)))
        for _ in range(n)
    ]
    return tiny_jobs(jobs, memory=float(rng.choice([700, 1200, 2048])))


@pytest.mark.parametrize("seed", range(6))
def test_no_heuristic_beats_the_brute_force_optimum_and_all_plans_are_valid(seed):
    problem = _random_jobs(seed, 4)
    best = solve_cosched_bruteforce(problem)
    assert best.status is Status.OPTIMAL and check_cosched(problem, best.plan) == []
    assert evaluate_cosched(problem, best.plan)[0] == pytest.approx(best.objective)
    for heuristic in HEURISTICS:
        out = heuristic(problem, seed=seed)
        assert check_cosched(problem, out.plan) == [], heuristic.__name__
        assert out.objective >= best.objective - 1e-9, heuristic.__name__
    assert solve_rollmux(problem).objective <= solve_solo(problem).objective + 1e-9


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(10, 300), st.integers(10, 300), st.integers(1, 2)),
        min_size=1,
        max_size=5,
    ),
    st.integers(1, 4),
    st.integers(1, 3),
    st.randoms(use_true_random=False),
)
def test_an_unsaturated_round_robin_group_cycles_in_t_cycle(jobs, nodes, train, rnd):
    """Theorem 1's condition: T^load <= T^cycle  =>  the meta-iteration period is T^cycle."""
    problem = tiny_jobs([(float(r), float(t), 2.0) for r, t, _ in jobs], memory=1e9)
    m = cosched_model(problem)
    names = list(m.order)
    pins = {n: tuple(sorted(rnd.sample(range(nodes), min(nodes, m.jobs[n].k)))) for n in names}
    g = GroupState(train, names, pins, nodes)
    cycle, load = cycle_and_load(m, g)
    times = coexec_times(m, g)
    assert all(
        t >= cycle - 1e-9 and t >= load - 1e-9 for t in times.values()
    )  # never below either bound
    if load <= cycle:
        assert all(t == pytest.approx(cycle, rel=1e-9) for t in times.values())


@pytest.mark.parametrize("seed", range(4))
def test_algorithm_1_opens_a_group_only_when_no_cheaper_valid_packing_exists(seed):
    problem = _random_jobs(100 + seed, 12)
    m = cosched_model(problem)
    sched = OnlineScheduler(m, "rollmux")
    for name in m.order:
        before = [g.copy() for g in sched.groups]
        decision = sched.arrive(name)
        if decision["group"] == len(before):  # it opened a new group
            new_cost = m.cost(m.jobs[name].k, m.jobs[name].n)
            for g in before:
                if len(g.members) >= m.spec.max_group_size:
                    continue
                for delta, h in placements(m, g, name):
                    assert not (group_ok(m, h) and delta <= new_cost and not saturated(m, g)), (
                        name,
                        delta,
                    )
    assert check_cosched(problem, sched.plan()) == []


def _one_node_groups(*groups: dict[str, list[int]]) -> CoschedulePlan:
    """A plan of groups of one rollout and one training node, each group given as its jobs'
    rollout node indices."""
    return CoschedulePlan.model_validate(
        {
            "groups": [
                {
                    "rollout_nodes": 1,
                    "train_nodes": 1,
                    "jobs": [{"name": name, "rollout": pins} for name, pins in group.items()],
                }
                for group in groups
            ]
        }
    )


def test_validator_names_each_broken_rule():
    problem = tiny_jobs([(100, 20, 1.5), (20, 100, 1.5)], memory=500)
    good = solve_rollmux(problem).plan.model_dump()
    one = _one_node_groups({"j0": [0]})
    twice = _one_node_groups({"j0": [0], "j1": [0]}, {"j1": [0]})
    badpin = _one_node_groups({"j0": [3]}, {"j1": [0]})
    shared = _one_node_groups({"j0": [0], "j1": [0]})
    for plan, rule in ((one, "jobs"), (twice, "jobs"), (badpin, "placement"), (shared, "memory")):
        names = {v.constraint for v in check_cosched(problem, plan)}
        assert rule in names, (rule, names)
    assert check_cosched(problem, CoschedulePlan.model_validate(good)) == []
    slow = tiny_jobs(
        [(100, 20, 1.0), (100, 20, 1.0)], memory=1e6
    )  # one rollout node: 200 s of rollout per 120 s cycle
    assert "SLO" in {v.constraint for v in check_cosched(slow, shared)}


def test_colocated_pays_slower_rollout_on_training_gpus_and_meets_slo_with_more_nodes():
    problem = tiny_jobs([(200, 50, 1.1)])
    m = cosched_model(problem)
    g = isolated(m, "j0", colocated=True)
    assert g.colocated and group_ok(m, g) and g.train_nodes >= m.jobs["j0"].n
    assert (
        coexec_times(m, GroupState(1, ["j0"], {"j0": ()}, 0, colocated=True))["j0"]
        > m.jobs["j0"].solo_s
    )  # H800 decodes slower than H20


#: a valid job of a jobs file, for the bad-file cases to spoil
JOB_A = {
    "name": "a",
    "rollout_gpus": 8,
    "train_gpus": 8,
    "t_rollout_s": 1,
    "t_train_s": 1,
    "slo": 1.5,
}


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"rollout_pool": {"gpu": "A100-40GB"}}, "rollout_pool.gpu"),
        ({"jobs": [{**JOB_A, "rollout_host_memory_gb": 5000}]}, "jobs[0].rollout_host_memory_gb"),
        ({"jobs": [{**JOB_A, "model": "Nope-1B"}]}, "jobs[0].model"),
    ],
)
def test_bad_job_files_name_the_field(patch, field):
    base = {"jobs": [JOB_A]}
    with pytest.raises(SpecError) as err:
        JobsSpec.model_validate(base | patch).check()
    assert err.value.field == field


def _replay_period(m, g, rounds=3000):
    """A long plain replay of the round-robin schedule: the average period over its second half."""
    from costmodels.cosched.group import train_time

    node_free, pool_free, last = [0.0] * g.rollout_nodes, 0.0, {n: 0.0 for n in g.members}
    ends = []
    for _ in range(rounds):
        for name in g.members:
            j = m.jobs[name]
            start = max(max(node_free[n] for n in g.pins[name]), last[name])
            for n in g.pins[name]:
                node_free[n] = start + j.roll_s
            pool_free = max(pool_free, start + j.roll_s) + train_time(m, j, g.train_nodes)
            last[name] = pool_free
        ends.append(pool_free)
    half = rounds // 2
    return (ends[-1] - ends[half - 1]) / (rounds - half)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(10, 300), st.integers(10, 300)), min_size=1, max_size=4),
    st.integers(1, 3),
    st.integers(1, 3),
    st.randoms(use_true_random=False),
)
def test_exact_period_equals_a_long_replay(jobs, nodes, train, rnd):
    problem = tiny_jobs([(float(r), float(t), 2.0) for r, t in jobs], memory=1e9)
    m = cosched_model(problem)
    pins = {n: tuple(sorted(rnd.sample(range(nodes), 1))) for n in m.order}
    g = GroupState(train, list(m.order), pins, nodes)
    assert coexec_times(m, g)[m.order[0]] == pytest.approx(_replay_period(m, g), rel=1e-3)


@pytest.mark.parametrize("seed", range(8))
def test_set_partitioning_optimum_equals_brute_force(seed):
    from formulations.cosched.partition import solve_cosched_optimal

    problem = _random_jobs(200 + seed, 5)
    exact, brute = solve_cosched_optimal(problem), solve_cosched_bruteforce(problem)
    assert exact.status is Status.OPTIMAL and brute.status is Status.OPTIMAL
    assert exact.objective == pytest.approx(brute.objective, rel=1e-9)
    assert check_cosched(problem, exact.plan) == [] and evaluate_cosched(problem, exact.plan)[
        0
    ] == pytest.approx(exact.objective)


@pytest.mark.parametrize("seed", range(6))
def test_optimum_with_canonical_pinnings_equals_brute_force_on_mixed_sizes(seed):
    """Jobs of one and two rollout nodes: the canonical pinnings (one per orbit under relabelling
    the nodes) find what the brute force's every-product pinnings find."""
    from formulations.cosched.partition import solve_cosched_optimal

    rng = np.random.default_rng(300 + seed)
    jobs = [
        (float(rng.integers(20, 300)), float(rng.integers(20, 300)), float(rng.uniform(1.0, 2.0)))
        for _ in range(4)
    ]
    sizes = [int(x) for x in rng.permutation([8, 8, 16, 16])]
    problem = tiny_jobs(jobs, memory=float(rng.choice([700, 1200, 2048])), sizes=sizes)
    exact, brute = solve_cosched_optimal(problem), solve_cosched_bruteforce(problem)
    assert exact.status is Status.OPTIMAL and brute.status is Status.OPTIMAL
    assert exact.objective == pytest.approx(brute.objective, rel=1e-9), sizes
    assert check_cosched(problem, exact.plan) == []


@pytest.mark.parametrize("seed", range(4))
def test_the_two_references_bracket_algorithm_1(seed):
    """free optimum <= optimum over what Algorithm 1 can build <= RollMux, and RollMux's groups
    lie in the second space (no co-location, each group's pool its first job's)."""
    from formulations.cosched.partition import solve_cosched_optimal

    problem = _random_jobs(400 + seed, 7)
    free = solve_cosched_optimal(problem)
    online = solve_cosched_optimal(problem, space="algorithm1")
    rollmux = solve_rollmux(problem)
    assert free.status is Status.OPTIMAL and online.status is Status.OPTIMAL
    assert free.objective <= online.objective + 1e-9 <= rollmux.objective + 2e-9
    m = cosched_model(problem)
    for group in rollmux.plan.groups:
        first = min((j.name for j in group.jobs), key=m.order.index)
        assert not group.colocated and group.train_nodes == m.jobs[first].n
    assert all(not g.colocated for g in online.plan.groups)


def test_a_time_capped_optimum_returns_a_plan_and_a_bound():
    """Cut short (a work-free cap of a few milliseconds), the optimum still returns at least the
    plan its warm start reached within the limit (Algorithm 1, its later jobs alone once the
    limit passed: never dearer than every job alone), with a valid lower bound, never
    no_solution."""
    from formulations.cosched.partition import resource_lower_bound, solve_cosched_optimal
    from heuristics.cosched.online import solve_solo

    problem = _random_jobs(7, 12)
    out = solve_cosched_optimal(problem, time_limit=1e-3, warm_start=solve_rollmux)
    assert out.status in (Status.FEASIBLE, Status.OPTIMAL) and out.plan is not None
    assert check_cosched(problem, out.plan) == []
    assert out.objective <= solve_solo(problem).objective + 1e-9
    best = solve_cosched_optimal(problem)
    floor = resource_lower_bound(cosched_model(problem))
    assert out.bound is not None and floor - 1e-9 <= out.bound <= best.objective + 1e-9


def test_a_training_pool_too_small_for_a_jobs_training_state_is_refused():
    """Qwen2.5-72B's weights, gradients and Adam states (18 B per parameter, fully sharded) need
    164 GB per GPU on one 8-GPU node: the validator refuses the plan, naming the job and the
    memory; on three nodes (55 GB) it fits."""
    from costmodels.cosched.group import train_state_gb_per_gpu

    spec = {
        "rollout_pool": {"gpu": "H20"},
        "train_pool": {"gpu": "H800"},
        "jobs": [
            {
                "name": "big",
                "model": "Qwen2.5-72B",
                "rollout_gpus": 8,
                "train_gpus": 24,
                "t_rollout_s": 100.0,
                "t_train_s": 100.0,
                "slo": 2.0,
            },
        ],
    }
    js = JobsSpec.model_validate(spec)
    js.check()
    from costmodels.cosched.problem import CoscheduleProblem

    problem = CoscheduleProblem(js)
    m = cosched_model(problem)
    assert train_state_gb_per_gpu(m, m.jobs["big"], 1) == pytest.approx(
        72.7e9 * 18 / 8 / 1e9, rel=0.05
    )
    one = {
        "groups": [
            {"rollout_nodes": 1, "train_nodes": 1, "jobs": [{"name": "big", "rollout": [0]}]}
        ]
    }
    found = check_cosched(problem, CoschedulePlan.model_validate(one))
    gpu = [v for v in found if v.constraint == "gpu-memory"]
    assert len(gpu) == 1 and "big" in gpu[0].message and "163.6 GB per GPU" in gpu[0].message
    three = {
        "groups": [
            {"rollout_nodes": 1, "train_nodes": 3, "jobs": [{"name": "big", "rollout": [0]}]}
        ]
    }
    found = check_cosched(problem, CoschedulePlan.model_validate(three))
    assert "gpu-memory" not in {v.constraint for v in found}
    out = solve_rollmux(problem)
    assert check_cosched(problem, out.plan) == []


@pytest.mark.parametrize("seed", range(6))
def test_the_paper_baselines_break_only_slos_and_skip_no_saturated_group(seed):
    """§7.5's random and greedy check memory and group size only: whatever they return breaks
    no rule but SLOs; with the SLO check (the -slo variants) nothing at all."""
    problem = _random_jobs(500 + seed, 9)
    for baseline in PAPER_BASELINES:
        broken = {v.constraint for v in check_cosched(problem, baseline(problem, seed=seed).plan)}
        assert broken <= {"SLO"}, (baseline.__name__, broken)


@pytest.mark.parametrize("solver", ["rollmux", "greedy-slo", "optimal"])
def test_a_limit_that_runs_out_leaves_the_later_jobs_alone_in_a_valid_plan(solver):
    """Past the time limit the jobs still to come get groups of their own: a plan that keeps
    every SLO, judged in full, and a result that says the clock decided it (a limit of a
    microsecond has passed before the first arrival on any machine)."""
    from planner import solve
    from planner.io import build_problem

    problem = build_problem("cosched", {"jobs": "rollmux-mixed"})
    r = solve(problem, solver, time_limit=1e-6)
    assert r.success and not r.violations, r.message
    assert not r.deterministic and "depends on machine speed" in r.clock
    jobs = len(problem.jobs.jobs)
    assert len(r.plan.groups) == jobs  # every job alone
    if solver != "optimal":
        assert f"the last {jobs} jobs run alone" in r.message
