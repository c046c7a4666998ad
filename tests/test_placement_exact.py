"""HetRL placement: ILP optimum = brute-force optimum = cost model of the decoded plan, on instances
small enough to enumerate (HetRL §3.5); every solver's plan validates; seeds reproduce."""

from __future__ import annotations

import json

import pytest

from costmodels.placement.canned import ONE_ZONE, TWO_ZONES, small_cluster, small_workflow
from costmodels.placement.check import check_placement
from costmodels.placement.judge import evaluate_placement
from costmodels.solving import Status
from formulations.placement.bruteforce import count_plans, solve_placement_bruteforce
from formulations.placement.ilp import solve_placement_ilp
from planner import solve
from planner.io import build_problem
from planner.planfile import result_to_dict

THREE_ZONES = small_cluster(
    [("a", "H800", 1, "x"), ("b", "L40S", 1, "y"), ("c", "L4", 1, "z")],
    [("x", "y", 5, 10), ("x", "z", 1, 30), ("y", "z", 3, 20)],
)
# PPO's six tasks on a heterogeneous pair would be 3^6 load-balancing choices too many to enumerate
PAIR = small_cluster([("a", "H800", 1, "x"), ("b", "H800", 1, "y")], [("x", "y", 10, 5)])
#: a long tail under the 512-token cap (RollPacker §2.2's spread)
TAIL = {"distribution": "lognormal", "median": 120, "sigma": 0.9}

INSTANCES = {
    "one-zone-grpo-sync": (ONE_ZONE, small_workflow()),
    "three-zones-grpo-sync": (THREE_ZONES, small_workflow(eta=0.5)),
    "three-zones-grpo-async": (THREE_ZONES, small_workflow(mode="async")),
    "two-zones-grpo-sync": (TWO_ZONES, small_workflow(eta=0.3)),
    "pair-ppo-sync": (PAIR, small_workflow("ppo", decode_batch_size=4)),
    # verl fully_async_policy on a long tail: a rollouter that drains before each sync (the
    # trainer's last local update trails generation) and one that hides the tail (staleness);
    # on one zone their optima differ: co-located (draining), split (streaming)
    "one-zone-grpo-fully-async-draining": (
        ONE_ZONE,
        {
            **small_workflow(mode="fully-async"),
            "response_lengths": TAIL,
            "fully_async": {"staleness": 0, "partial_rollout": False},
        },
    ),
    "one-zone-grpo-fully-async-streaming": (
        ONE_ZONE,
        {
            **small_workflow(mode="fully-async"),
            "response_lengths": TAIL,
            "fully_async": {"staleness": 2},
        },
    ),
    # a CPU reward stage on the trainer's path: a constant in sync mode, and in the overlapping
    # modes it lengthens the trainer against generation
    "three-zones-grpo-sync-reward": (
        THREE_ZONES,
        {**small_workflow(eta=0.5), "reward": {"seconds_per_response": 0.02, "workers": 2}},
    ),
    "three-zones-grpo-async-reward": (
        THREE_ZONES,
        {**small_workflow(mode="async"), "reward": {"seconds_per_response": 0.5}},
    ),
    "one-zone-grpo-fully-async-draining-reward": (
        ONE_ZONE,
        {
            **small_workflow(mode="fully-async"),
            "response_lengths": TAIL,
            "fully_async": {"staleness": 0, "partial_rollout": False},
            "reward": {"seconds_per_response": 0.2},
        },
    ),
    # DAPO under fully_async_policy: no reference pass, training on the rollout's log-probs
    "one-zone-grpo-fully-async-no-reference": (
        ONE_ZONE,
        {
            **small_workflow(mode="fully-async"),
            "response_lengths": TAIL,
            "fully_async": {"staleness": 0.5},
            "reference_pass": False,
        },
    ),
    # verl's main_ppo and one_step_off with the trainer's recompute of the old log-probs: one
    # forward pass more on actor training's own GPUs (with and without the reference's)
    "three-zones-grpo-sync-old-log-prob": (
        THREE_ZONES,
        {**small_workflow(eta=0.5), "old_log_prob_pass": True},
    ),
    "three-zones-grpo-async-old-log-prob-no-reference": (
        THREE_ZONES,
        {**small_workflow(mode="async"), "old_log_prob_pass": True, "reference_pass": False},
    ),
    "pair-ppo-sync-old-log-prob": (
        PAIR,
        {**small_workflow("ppo", decode_batch_size=4), "old_log_prob_pass": True},
    ),
}


@pytest.mark.parametrize("name", list(INSTANCES))
def test_ilp_equals_brute_force_equals_cost_model(name):
    cluster, wf = INSTANCES[name]
    problem = build_problem("placement", {"cluster": cluster, "workflow": wf})
    assert count_plans(problem) < 20_000
    brute = solve_placement_bruteforce(problem)
    ilp = solve_placement_ilp(problem)
    assert brute.status is Status.OPTIMAL and ilp.status is Status.OPTIMAL
    assert check_placement(problem, ilp.plan) == []
    decoded = evaluate_placement(problem, ilp.plan).objective
    assert ilp.objective == pytest.approx(brute.objective, rel=1e-6)
    assert decoded == pytest.approx(ilp.objective, rel=1e-6)
    # and through the façade: objective is the cost model's, the exact solver agrees with it
    r = solve(problem, "ilp")
    assert (
        r.status is Status.OPTIMAL
        and "objective_mismatch" not in r.stats
        and r.gap == pytest.approx(0, abs=1e-9)
    )


def test_cbc_backend_agrees():
    problem = build_problem("placement", {"cluster": THREE_ZONES, "workflow": small_workflow()})
    assert solve_placement_ilp(problem, backend="cbc").objective == pytest.approx(
        solve_placement_ilp(problem).objective, rel=1e-6
    )


@pytest.mark.parametrize(
    "solver,options",
    [
        ("sha-ea", {"evaluations": 150}),
        ("ea", {"evaluations": 300}),
        ("random", {"evaluations": 300}),
        ("verl", {}),
        ("streamrl", {}),
        ("rlinf", {}),
        ("real", {"evaluations": 600}),
        ("ilp", {}),
    ],
)
def test_every_solver_returns_valid_plans_on_the_small_preset(solver, options):
    problem = build_problem("placement", {"cluster": "small-8", "workflow": "grpo-sync-qwen3-8b"})
    r = solve(problem, solver, seed=3, **options)
    if solver in ("ea", "random") and r.status is Status.NO_SOLUTION:
        # the plain baselines may find nothing that fits in a small budget; never an invalid plan
        return
    assert r.status in (Status.OPTIMAL, Status.FEASIBLE), r.message
    assert check_placement(problem, r.plan) == []  # includes C3: no GPU overflows
    assert r.objective == pytest.approx(evaluate_placement(problem, r.plan).objective)


@pytest.mark.parametrize(
    "solver,options",
    [
        ("sha-ea", {"evaluations": 150}),
        ("ea", {"evaluations": 300}),
        ("random", {"evaluations": 300}),
        ("real", {"evaluations": 600}),
    ],
)
def test_same_seed_same_plan(solver, options):
    problem = build_problem("placement", {"cluster": "small-8", "workflow": "grpo-async-qwen3-8b"})
    a = result_to_dict(solve(problem, solver, seed=11, **options))
    b = result_to_dict(solve(problem, solver, seed=11, **options))
    assert json.dumps(a["plan"], sort_keys=True) == json.dumps(b["plan"], sort_keys=True)
    assert a["objective"] == b["objective"]


def test_sha_ea_reaches_the_ilp_optimum_on_small_8():
    problem = build_problem("placement", {"cluster": "small-8", "workflow": "grpo-sync-qwen3-8b"})
    opt = solve(problem, "ilp").objective
    assert solve(problem, "sha-ea", evaluations=300, seed=0).objective <= opt * 1.01


@pytest.mark.slow
def test_sha_ea_widens_a_converged_search_to_the_ilp_optimum_on_ppo():
    """PPO async on small-8: the optimum's task grouping ranks low by its greedy probe, so the
    first arms converge on a 9% worse plan; widening (more task groupings, new GPU groupings)
    with budget left finds the optimum, where SHA-EA used to stop."""
    problem = build_problem("placement", {"cluster": "small-8", "workflow": "ppo-async-qwen3-4b"})
    ilp = solve(problem, "ilp")
    assert ilp.status.value == "optimal"
    ours = solve(problem, "sha-ea", evaluations=10_000, seed=0)
    assert ours.violations == [] and ours.objective <= ilp.objective * (1 + 1e-9)


def test_type_splits_give_each_gpu_type_to_one_group_or_the_slowest_to_none():
    import random

    from heuristics.placement.genome import PlacementSpace
    from heuristics.placement.groupings import group_work, type_splits

    problem = build_problem("placement", {"cluster": "small-24", "workflow": "ppo-sync-qwen3-8b"})
    space = PlacementSpace(problem)
    names = [t.name for t in problem.tasks]
    grouping = (tuple(names[:4]), tuple(names[4:]))
    splits = type_splits(space, grouping, random.Random(0), 10)
    # surjections of 3 GPU types onto 2 groups (6), and of the 2 faster ones with the L4 idle (2)
    assert len(splits) == 8
    work = group_work(space, grouping)
    idle_types = set()
    for distance, ind in splits:
        assert {0, 1} <= set(ind.assign) <= {-1, 0, 1}
        owner = {}
        for gpu_type, group in zip(space.gpu_type, ind.assign, strict=True):
            assert owner.setdefault(gpu_type, group) == group  # a type's whole pool in one group
        idle_types |= {t for t, g in owner.items() if g == -1}
        sizes = [ind.assign.count(g) for g in (0, 1)]
        assert distance == pytest.approx(
            sum(abs(s / sum(sizes) - w / sum(work)) for s, w in zip(sizes, work, strict=True))
        )
    assert idle_types == {"L4"}  # only the slowest type is ever left idle
    # alternating every type in use / the L4 idle, each kind closest to the work shares first
    kinds = [-1 in ind.assign for _, ind in splits]
    assert kinds == [False, True, False, True, False, False, False, False]
    for idle in (False, True):
        part = [d for (d, _), k in zip(splits, kinds, strict=True) if k is idle]
        assert part == sorted(part)
    assert (
        type_splits(space, tuple((n,) for n in names), random.Random(0), 10) == []
    )  # 6 groups > 3 types


@pytest.mark.slow
def test_type_split_probes_find_the_split_by_gpu_type_on_small_24_ppo():
    """small-24 PPO sync: the best plan known (the ILP's incumbent) puts the critic on the L40S
    and the other tasks on the A100 and L4. Its grouping's greedy start does not fit, so without
    the GPU-type-split probes SHA-EA settles on a >10% worse three-group plan."""
    problem = build_problem("placement", {"cluster": "small-24", "workflow": "ppo-sync-qwen3-8b"})
    without = solve(problem, "sha-ea", evaluations=300, seed=0, type_split_probes=0)
    ours = solve(problem, "sha-ea", evaluations=300, seed=0)
    assert ours.violations == [] and ours.objective < without.objective / 1.10
    kinds = [{d.split("-")[0] for d in g.devices} for g in ours.plan.groups]
    assert sorted(map(sorted, kinds)) == [["a100", "l4"], ["l40s"]]


def test_ilp_time_limit_returns_an_incumbent_or_nothing_but_never_an_invalid_plan():
    problem = build_problem("placement", {"cluster": "small-16", "workflow": "grpo-sync-qwen3-8b"})
    r = solve(problem, "ilp", time_limit=0.5)
    assert r.status in (Status.FEASIBLE, Status.NO_SOLUTION, Status.OPTIMAL)
    if r.plan is not None:
        assert check_placement(problem, r.plan) == []


def test_out_of_memory_instances_are_infeasible_not_invalid():
    problem = build_problem("placement", {"cluster": "small-4", "workflow": "ppo-sync-qwen3-14b"})
    for solver in ("ilp", "verl", "streamrl"):
        r = solve(problem, solver)
        assert r.status in (Status.INFEASIBLE, Status.NO_SOLUTION), (solver, r.status)


def test_cli_export_snippets(tmp_path):
    from tests.conftest import run_cli

    out = tmp_path / "p.json"
    proc = run_cli(
        "plan",
        "placement",
        "--cluster",
        "small-8",
        "--workflow",
        "grpo-sync-qwen3-4b",
        "--solver",
        "ilp",
        "-o",
        str(out),
        "--export",
        "verl",
        "--export",
        "roll",
    )
    assert proc.returncode == 0, proc.stderr
    import yaml

    verl = yaml.safe_load((tmp_path / "p.verl.yaml").read_text())
    roll = yaml.safe_load((tmp_path / "p.roll.yaml").read_text())
    assert (
        verl["framework"] == "verl"
        and verl["release"] == "0.9.1"
        and verl["resource_pools"]
        and "not_expressible" in verl
    )
    # the ROLL file is the RLVR config itself: its workers at the top level
    assert all(roll[w]["device_mapping"] for w in ("actor_infer", "actor_train", "reference"))
    assert run_cli("validate", str(out)).returncode == 0


def test_sha_ea_returns_at_its_time_limit_on_a_large_ppo_instance():
    # six co-located PPO tasks on 64 GPUs make single Level-4 enumerations run for minutes; the
    # enumeration checks the deadline, so the solver stops and returns its best valid plan
    problem = build_problem(
        "placement", {"cluster": "hetrl-single-region", "workflow": "ppo-sync-qwen3-8b"}
    )
    r = solve(problem, "sha-ea", time_limit=5)
    assert r.status is Status.FEASIBLE and r.plan is not None
    assert check_placement(problem, r.plan) == []
    assert r.wall_time_s < 5 + 60  # a contract on deadlines, not a performance figure


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("workflow", ["grpo-sync-qwen3-8b", "ppo-async-qwen3-4b"])
def test_sha_ea_is_never_worse_than_any_baseline_on_random_clusters(seed, workflow):
    """SHA-EA starts from the baselines' plans, so on every cluster its plan is at least as
    good as verl's and StreamRL's (each run to the end of its sweep here), and valid."""
    from benchmarks.instances import random_cluster

    problem = build_problem(
        "placement", {"cluster": random_cluster(16, seed=seed, zones=2), "workflow": workflow}
    )
    baselines = {s: solve(problem, s) for s in ("verl", "streamrl")}
    ours = solve(problem, "sha-ea", seed=seed, evaluations=40)
    assert ours.status is Status.FEASIBLE and check_placement(problem, ours.plan) == []
    for name, r in baselines.items():
        if r.objective is not None:
            assert ours.objective <= r.objective * (1 + 1e-9), (name, r.objective, ours.objective)


@pytest.mark.parametrize("framework", ["verl", "roll"])
@pytest.mark.parametrize(
    "name", ["one-zone-grpo-sync", "three-zones-grpo-async", "pair-ppo-sync", "pair-ppo-async"]
)
def test_ilp_equals_brute_force_under_a_framework_target(name, framework):
    """--target restricts the ILP's space and brute force's alike (costmodels.placement.
    frameworks): the two optima agree, both plans pass the validator with the framework's rules,
    SHA-EA's plan does too, and no restricted optimum beats the unrestricted one."""
    cluster, wf = (
        (PAIR, small_workflow("ppo", mode="async", decode_batch_size=4))
        if name == "pair-ppo-async"
        else (INSTANCES[name])
    )
    fields = {"cluster": cluster, "workflow": wf}
    problem = build_problem("placement", {**fields, "target": {"framework": framework}})
    brute = solve_placement_bruteforce(problem)
    ilp = solve_placement_ilp(problem)
    assert brute.status is Status.OPTIMAL and ilp.status is Status.OPTIMAL
    assert ilp.objective == pytest.approx(brute.objective, rel=1e-6)
    assert framework in ilp.message and check_placement(problem, ilp.plan) == []
    assert check_placement(problem, brute.plan) == []
    heuristic = solve(problem, "sha-ea")
    assert heuristic.success and heuristic.objective >= ilp.objective * (1 - 1e-9)
    free = solve_placement_ilp(build_problem("placement", fields))
    assert ilp.objective >= free.objective * (1 - 1e-9)


def test_a_reward_stage_shifts_a_sync_step_and_can_move_an_async_plan():
    """The reward stage (``costmodels.workflow.RewardStage``) is a constant on the trainer's
    path: in sync mode every plan pays it, so the optimum moves by exactly samples x seconds /
    workers; one step off it lengthens the trainer against generation, and a trainer that no
    longer trails generation stops being worth its own GPUs."""

    def optimum(mode: str, seconds: float):
        wf = small_workflow(mode=mode) if mode == "async" else small_workflow(eta=0.5)
        if seconds:
            wf = {**wf, "reward": {"seconds_per_response": seconds}}
        problem = build_problem(
            "placement", {"cluster": INSTANCES["three-zones-grpo-sync"][0], "workflow": wf}
        )
        out = solve_placement_bruteforce(problem)
        return (
            problem.workflow.reward_s,
            out.objective,
            sorted(len(g.tasks) for g in out.plan.groups),
        )

    _, base, _ = optimum("sync", 0)
    reward, shifted, _ = optimum("sync", 0.5)
    assert reward == pytest.approx(32.0) and shifted == pytest.approx(base + reward, rel=1e-9)
    _, _, split = optimum("async", 0)
    _, _, together = optimum("async", 0.5)
    assert split == [1, 2] and together == [3]
