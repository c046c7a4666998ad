"""Benchmark suites: instances x solvers x seeds x time limits, each one command away
(``rlplan bench --suite NAME --out DIR``).

* ``smoke``: every problem x every registered solver x its canned instances, built from the
  registry, and curated circuits and placement instances; the tests run it.
* ``placement``: HetRL §5.4-style: the ILP against SHA-EA and the plain EA at two time budgets,
  random search and the verl / StreamRL baselines, on the small clusters (GRPO and PPO, sync and
  async) and random heterogeneous ones (GRPO sync, Qwen3-8B).
* ``scenarios``: HetRL §5.2: SHA-EA against the baselines and the plain EA on the four 64-GPU
  testbed scenarios, GRPO and PPO, sync and async.
* ``scale``: placement at 128-1 024 GPUs (four GPU types, four zones): SHA-EA against the
  baselines and the plain EA, wall time and peak memory per run.
* ``broadcast``: OrchestrRL App. E: the two-level weight-sync broadcast against naive one-to-all.
* ``replan``: OrchestrRL Eq. 1: the MILP against greedy and the §6 baselines on random mid-step
  states, and its solve time from 64 to 1024 GPUs (App. F).
* ``cosched``: RollMux §7.5: Algorithm 1 and the Random / Greedy / Solo-D / co-located baselines
  against the proven offline optimum on Table 6 mixed job sets (SLO ~ U(1, 2), max group 5), and
  the optimum's solve time against the number of jobs.
* ``rollout``: RollPacker Table 2's jobs: the searched plan against the paper's settings and veRL.
* ``circuits``: OrchestrRL App. D/I: greedy (sorted events) against its plain transcription at
  scale,
  greedy and uniform against the exact optimum on 100 random instances where every pair can get a
  circuit and on 100 port-starved ones where it cannot (coverage decides), the exact models' solve
  time against size on HiGHS and CP-SAT, traffic-aware against uniform on collective shapes.

A suite also names the side-by-side comparisons its report prints (``Comparison``): the ratio of
one solver's metric to another's on the same instance.
"""

from __future__ import annotations

from benchmarks.harness import InstanceRef, RunSpec
from benchmarks.instances import DEMAND_SHAPES
from benchmarks.placement_suites import placement, scale, scenarios
from benchmarks.suite_parts import (
    Comparison,
    Suite,
    _circ,
    _once,
    _ratios_to,
    _runs,
)


def canned_runs(suite: str, plugins: tuple[str, ...] = ()) -> list[RunSpec]:
    """Every problem the registry holds (the plugins' included) x each of its canned instances x
    every solver registered for it, seed 0, on each solver's own work budget (no time limit: the
    instances are tiny, about 25 s of solving in all on one core). Built from the registry, so a
    problem or a solver is benchmarked the day it registers."""
    from planner.registry import build_registry

    reg = build_registry(plugins)
    return [
        RunSpec(
            suite,
            InstanceRef(f"{kind.name}/{canned.name}", kind.name, canned=canned.name),
            info.name,
            {},
            0,
            None,
            plugins,
        )
        for kind in reg.solvable()
        for canned in (kind.canned() if kind.canned else [])
        for info in reg.solvers(kind.name)
    ]


def smoke(plugins: tuple[str, ...] = ()) -> Suite:
    """Every problem and solver on the canned instances (:func:`canned_runs`), and a few curated
    instances: circuits on three generated demand shapes, placement on a 4-GPU cluster under
    small work budgets (the anytime plot's searches)."""
    circ = [
        _circ("tiny-sparse-5", endpoints=5, ports=2, shape="sparse", pairs=6, seed=0),
        _circ("alltoall-8", endpoints=8, ports=None, shape="all-to-all", spare=2, seed=1),
        _circ("m2n-10", endpoints=10, ports=None, shape="m2n", spare=1, seed=2),
    ]
    runs = _runs(
        "smoke",
        circ,
        _once("greedy", "greedy-reference", "milp", "cpsat", "uniform", limit=30.0),
        plugins,
    )
    runs += _runs("smoke", circ[:1], _once("bruteforce", limit=30.0), plugins, with_plugins=False)
    place = [
        InstanceRef(
            "small-4/grpo-4b",
            "placement",
            fields={"cluster": "small-4", "workflow": "grpo-sync-qwen3-4b"},
        )
    ]
    runs += _runs(
        "smoke",
        place,
        [
            *_once("ilp", limit=60.0),
            ("sha-ea", {"evaluations": 60}, None, (0,)),
            ("ea", {"evaluations": 64}, None, (0,)),
            ("random", {"evaluations": 40}, None, (0,)),
            *_once("verl"),
        ],
        plugins,
    )
    # broadcast and rollout: their canned instances (the tiny sync and job) are the whole test
    runs += canned_runs("smoke", plugins)
    return Suite(
        "smoke",
        "every problem and solver on tiny instances (tests)",
        runs,
        [
            Comparison("uniform / greedy bottleneck", "uniform", "greedy", "objective"),
            Comparison("naive / two-level weight-sync time", "naive", "two-level", "objective"),
        ],
        anytime=("sha-ea", "ea", "ilp"),
    )


def _random_circuits(
    prefix: str, *, smallest: int, first_seed: int, port_args
) -> list[InstanceRef]:
    """100 random instances cycling the demand shapes: ``smallest`` to ``smallest + 12``
    endpoints, three pairs per endpoint, seeds from ``first_seed``; ``port_args(i)`` gives the i-th
    instance's port arguments (a fixed port count, or every pair coverable with spare ports)."""
    out = []
    for i in range(100):
        shape = DEMAND_SHAPES[i % len(DEMAND_SHAPES)]
        endpoints = smallest + i % 13
        args = {"endpoints": endpoints, "ports": None, **port_args(i)}
        args.update(shape=shape, seed=first_seed + i, pairs=3 * endpoints)
        out.append(_circ(f"{prefix}{i:03d}-{shape}", **args))
    return out


def circuits(plugins: tuple[str, ...] = ()) -> Suite:
    runs: list[RunSpec] = []
    # (a) greedy (sorted events) vs the plain transcription of Algorithm 3, growing to 1024
    # endpoints / 64 ports / 1e4 pairs
    scale = [
        _circ(f"scale-{n}x{p}-{k}", endpoints=n, ports=p, shape="sparse", pairs=k, seed=0)
        for n, p, k in ((128, 16, 1250), (256, 32, 2500), (512, 48, 5000), (1024, 64, 10000))
    ]
    runs += _runs(
        "circuits",
        scale,
        _once("greedy", "greedy-reference"),
        plugins,
        with_plugins=False,
    )
    # (b) quality: 100 random instances, every pair coverable, greedy/uniform vs the exact optimum
    quality = _random_circuits(
        "q", smallest=12, first_seed=1000, port_args=lambda i: {"spare": i % 4}
    )
    runs += _runs(
        "circuits", quality, _once("greedy", "uniform", "cpsat", "milp", limit=60.0), plugins
    )
    # (b') port-starved: not every pair can get a circuit, so coverage (the first key) decides
    starved = _random_circuits(
        "p", smallest=10, first_seed=2000, port_args=lambda i: {"ports": 2 + i % 3}
    )
    runs += _runs(
        "circuits", starved, _once("greedy", "uniform", "cpsat", "milp", limit=60.0), plugins
    )
    # (c) exact solve time vs size, both backends, on skewed all-to-all and sparse demand
    sizes = [
        _circ(
            f"size-{shape}-{n}",
            endpoints=n,
            ports=None,
            spare=n // 4,
            shape=shape,
            seed=7,
            pairs=4 * n,
        )
        for shape in ("all-to-all", "sparse")
        for n in (8, 16, 32, 64, 128)
    ]
    runs += _runs(
        "circuits",
        sizes,
        _once("greedy", "uniform", "milp", "cpsat", limit=120.0),
        plugins,
    )
    # (d) traffic-aware vs uniform on the paper's collectives (App. I): all-to-all and all-reduce
    collectives = [
        _circ(f"coll-{shape}-{n}-s{s}", endpoints=n, ports=None, spare=n // 2, shape=shape, seed=s)
        for shape in ("all-to-all", "all-reduce")
        for n in (16, 32, 64)
        for s in range(3)
    ]
    runs += _runs(
        "circuits",
        collectives,
        _once("greedy", "uniform"),
        plugins,
        with_plugins=False,
    )
    return Suite(
        "circuits",
        "OrchestrRL App. D/I: greedy vs reference vs exact vs uniform over sizes",
        runs,
        [
            Comparison(
                "speed-up of greedy (sorted events) over the plain Algorithm 3 transcription",
                "greedy-reference",
                "greedy",
                "wall_time_s",
            ),
            Comparison("greedy / exact optimum bottleneck", "greedy", "cpsat", "objective"),
            Comparison(
                "uniform / greedy bottleneck (communication time)", "uniform", "greedy", "objective"
            ),
            Comparison("HiGHS / CP-SAT solve time", "milp", "cpsat", "wall_time_s"),
        ],
    )


def broadcast(plugins: tuple[str, ...] = ()) -> Suite:
    """App. E: two-level broadcast against naive one-to-all as generation PoDs and budgets grow."""
    instances = []
    for pods in (2, 4, 8, 16):
        for budget in (2, 8):
            sync = {
                "weights_gb": 64,
                "link_gbps": 400,
                "intra_gbps": 400,
                "seeds_per_pod": 2,
                "pods": [
                    {
                        "name": "train0",
                        "role": "train",
                        "ranks": 32,
                        "budget": 2 * budget,
                        "holders": 16,
                    },
                    *(
                        {"name": f"gen{i}", "role": "gen", "ranks": 32, "budget": budget}
                        for i in range(pods)
                    ),
                ],
            }
            instances.append(
                InstanceRef(f"gen{pods}-d{budget}", "broadcast", fields={"sync": sync})
            )
    solvers = [
        *_once("two-level"),
        ("two-level", {"relay": False}, None, (0,)),
        *_once("naive"),
    ]
    return Suite(
        "broadcast",
        "OrchestrRL App. E: two-level weight-sync broadcast vs naive one-to-all",
        _runs("broadcast", instances, solvers, plugins),
        [Comparison("naive / two-level weight-sync time", "naive", "two-level", "objective")],
    )


def replan(plugins: tuple[str, ...] = ()) -> Suite:
    """OrchestrRL §4.1 / App. F: the Eq. 1 MILP against greedy and the §6 baselines on random
    mid-step states (ratios to the MILP, optimal or with its gap), and solve time against pool
    size at 16 requests per GPU (Qwen2-57B-A14B, the paper's Figure 20 setting), every solver on
    its default work budget (no time limit: the same plans on any machine)."""
    quality = [
        InstanceRef(
            f"q-{nodes * 8}gpu-tp{tp}-p{progress}-s{seed}",
            "replan",
            generator="replan_state",
            args={"nodes": nodes, "tp": tp, "per_gpu": 8, "progress": progress, "seed": seed},
        )
        for nodes in (1, 2)
        for tp in (1, 2)
        for progress in (0, 1024)
        for seed in range(2)
    ]
    runs = _runs(
        "replan",
        quality,
        _once("milp", "greedy", "verl-to", "verl-lo", "keep"),
        plugins,
    )
    scale = [
        InstanceRef(
            f"scale-{nodes * 8}gpu",
            "replan",
            generator="replan_state",
            args={"nodes": nodes, "tp": 4, "per_gpu": 16, "progress": 0, "model": "Qwen2-57B-A14B"},
        )
        for nodes in (8, 16, 32, 64, 128)
    ]
    runs += _runs(
        "replan",
        scale,
        _once("milp", "greedy", "verl-to"),
        plugins,
        with_plugins=False,
    )
    return Suite(
        "replan",
        "OrchestrRL Eq. 1: MILP vs greedy vs veRL-TO / veRL-LO / keep; solve time to 1024 GPUs",
        runs,
        [
            *_ratios_to(
                "milp",
                "MILP makespan",
                {"greedy": "greedy", "verl-to": "veRL-TO", "verl-lo": "veRL-LO", "keep": "keep"},
            ),
            Comparison("MILP / greedy solve time", "milp", "greedy", "wall_time_s"),
        ],
    )


def cosched(plugins: tuple[str, ...] = ()) -> Suite:
    """RollMux §7.5: Algorithm 1 and the baselines against the set-partitioning optimum on Table 6
    mixed job sets of 9 to 50 jobs, three seeds each (cost ratios to the optimum, and its solve
    time; the trace simulation and long-tail migration have their own scripts)."""
    sets = [
        InstanceRef(
            f"table6-{jobs}-s{seed}",
            "cosched",
            generator="table6_problem",
            args={"jobs": jobs, "seed": seed},
        )
        for jobs in (9, 20, 30, 50)
        for seed in range(3)
    ]
    runs = _runs(
        "cosched",
        sets,
        [
            *_once("optimal", limit=60.0),
            *_once("rollmux", "random", "greedy", "random-slo", "greedy-slo", "solo", "colocated"),
        ],
        plugins,
    )
    return Suite(
        "cosched",
        "RollMux: Algorithm 1 vs Random / Greedy (§7.5: no SLO check, so their plans are invalid "
        "rows) and their SLO-checked variants / Solo-D / co-located vs the proven offline optimum "
        "(free space; the optimum over what Algorithm 1 can build is python -m "
        "benchmarks.cosched_quality)",
        runs,
        [
            *_ratios_to(
                "optimal",
                "optimal cost",
                {
                    "rollmux": "RollMux",
                    "random-slo": "Random-slo",
                    "greedy-slo": "Greedy-slo",
                    "solo": "Solo-D",
                    "colocated": "co-located",
                },
            ),
            Comparison("optimal / RollMux solve time", "optimal", "rollmux", "wall_time_s"),
        ],
    )


def rollout(plugins: tuple[str, ...] = ()) -> Suite:
    """RollPacker Table 2 settings (7B/8k on 16 H800, 14B/16k on 32, 32B/32k on 64; P0 = 128,
    R0 = 8): the searched plan against RollPacker's own settings and veRL's synchronous rollout,
    mean step time over a simulated epoch of ten steps. The Table 2 breakdown, the η sensitivity
    and the stream-trainer tables are ``python -m benchmarks.rollout_breakdown``."""
    jobs = [
        InstanceRef(
            f"{name}-s{seed}",
            "rollout",
            generator="rollout_problem",
            args={"name": name, "seed": seed},
        )
        for name in ("rollout-7b-8k", "rollout-14b-16k", "rollout-32b-32k")
        for seed in (0,)
    ]
    runs = _runs(
        "rollout",
        jobs,
        # the search on its default work budget (72 rollout settings), not a time limit, so the
        # published rows are the same on any machine
        _once("search", "paper", "verl"),
        plugins,
    )
    return Suite(
        "rollout",
        "RollPacker: searched rollout plans vs the paper's settings vs veRL",
        runs,
        [
            Comparison("veRL / search step time", "verl", "search", "objective"),
            Comparison("veRL / paper step time", "verl", "paper", "objective"),
            Comparison("paper / search step time", "paper", "search", "objective"),
        ],
        anytime=("search",),
    )


def custom(
    problems: list[str],
    solvers: list[str] | None = None,
    time_limits: list[float | None] | None = None,
    seeds: int = 1,
    plugins: tuple[str, ...] = (),
) -> Suite:
    """An ad-hoc suite over the user's own problem files or preset names: every named solver (by
    default every solver registered for each problem's kind, brute force excepted) at every time
    limit, ``seeds`` seeds each."""
    from planner.io import load_problem
    from planner.registry import build_registry

    registry = build_registry(plugins)
    runs: list[RunSpec] = []
    for ref in problems:
        kind = load_problem(ref).kind  # a bad file fails here, before any run starts
        names = solvers or [s.name for s in registry.solvers(kind) if s.name != "bruteforce"]
        for name in names:
            registry.get(kind, name)
            for limit in time_limits or [None]:
                runs.extend(
                    RunSpec(
                        "custom",
                        InstanceRef(ref, kind, problem=ref),
                        name,
                        {},
                        seed,
                        limit,
                        plugins,
                    )
                    for seed in range(seeds)
                )
    return Suite(
        "custom",
        f"{len(problems)} problem(s) from the command line",
        runs,
        anytime=("sha-ea", "ea", "ilp"),
    )


SUITES = {
    "smoke": smoke,
    "placement": placement,
    "circuits": circuits,
    "scenarios": scenarios,
    "scale": scale,
    "broadcast": broadcast,
    "replan": replan,
    "cosched": cosched,
    "rollout": rollout,
}


def get_suite(name: str, plugins: tuple[str, ...] = ()) -> Suite:
    if name not in SUITES:
        raise KeyError(f"unknown suite {name!r}; known: {', '.join(SUITES)}")
    return SUITES[name](plugins)
