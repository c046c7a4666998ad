"""Benchmark suites: instances x solvers x seeds x time limits, each one command away
(``rlplan bench --suite NAME --out DIR``).

* ``smoke``: a taste of every problem and solver, under a minute on two cores; the tests run it.
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

import functools
from dataclasses import dataclass, field

from benchmarks.harness import InstanceRef, RunSpec
from benchmarks.instances import DEMAND_SHAPES
from costmodels.broadcast.canned import TINY_SYNC
from costmodels.rollout.canned import tiny_workload


@dataclass(frozen=True)
class Comparison:
    """Per instance, ``numerator``'s ``metric`` over ``denominator``'s (same seed where both have
    one), summarised by median / min / max in the report."""

    title: str
    numerator: str
    denominator: str
    metric: str  # objective or wall_time_s


def _ratios_to(denominator: str, what: str, titles: dict[str, str]) -> list[Comparison]:
    """The objective of each solver in ``titles`` (solver: its title) over ``denominator``'s,
    titled ``"<its title> / <what>"``."""
    return [
        Comparison(f"{title} / {what}", solver, denominator, "objective")
        for solver, title in titles.items()
    ]


@dataclass
class Suite:
    name: str
    description: str
    runs: list[RunSpec]
    comparisons: list[Comparison] = field(default_factory=list)
    anytime: tuple[str, ...] = ()  # solvers whose traces make the anytime plot


def _circ(name: str, **args) -> InstanceRef:
    return InstanceRef(name=name, kind="circuits", generator="circuits_instance", args=args)


@functools.cache
def plugin_solvers(plugins: tuple[str, ...], kind: str) -> list[str]:
    """Solvers of ``kind`` that the plugins add: a suite runs them next to the built-ins."""
    if not plugins:
        return []
    from planner.registry import build_registry

    builtin = {s.name for s in build_registry().solvers(kind)}
    return [s.name for s in build_registry(plugins).solvers(kind) if s.name not in builtin]


def _once(*solvers: str, limit: float | None = None) -> list[tuple]:
    """Each of ``solvers`` once: default options, seed 0, under ``limit`` (None: its own work
    budget)."""
    return [(s, {}, limit, (0,)) for s in solvers]


def _runs(
    suite: str,
    instances: list[InstanceRef],
    solvers: list[tuple[str, dict, float | None, tuple[int, ...]]],
    plugins: tuple[str, ...] = (),
    with_plugins: bool = True,
) -> list[RunSpec]:
    out = []
    kinds = {inst.kind for inst in instances}
    extra = (
        [(name, {}, None, (0,)) for kind in sorted(kinds) for name in plugin_solvers(plugins, kind)]
        if with_plugins
        else []
    )
    for inst in instances:
        for solver, options, limit, seeds in [*solvers, *extra]:
            out.extend(
                RunSpec(suite, inst, solver, dict(options), seed, limit, plugins) for seed in seeds
            )
    return out


def smoke(plugins: tuple[str, ...] = ()) -> Suite:
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
    sync = [InstanceRef("tiny-sync", "broadcast", fields={"sync": TINY_SYNC})]
    runs += _runs("smoke", sync, _once("two-level", "naive"), plugins)
    roll = [InstanceRef("tiny-rollout", "rollout", fields={"job": {"workload": tiny_workload()}})]
    # the default work budgets, not a time limit: the tiny job's whole space (144 groups) is
    # enumerated on any machine, so local and Ray runs agree (docs/architecture.md, "Solver
    # plumbing")
    runs += _runs(
        "smoke",
        roll,
        _once("exhaustive", "search", "paper", "verl"),
        plugins,
    )
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


#: the placement suite's workflows on each small cluster: PPO on Qwen3-8B needs 360.8 GB of model
#: memory and small-8 has 344 GB, so small-8 runs PPO on Qwen3-4B
PLACEMENT_WORKFLOWS = {
    c: [
        "grpo-sync-qwen3-8b",
        "grpo-async-qwen3-8b",
        *(f"ppo-{m}-qwen3-{'4b' if c == 'small-8' else '8b'}" for m in ("sync", "async")),
    ]
    for c in ("small-8", "small-16", "small-24")
}


def placement(plugins: tuple[str, ...] = ()) -> Suite:
    instances = [
        InstanceRef(f"{c}/{wf}", "placement", fields={"cluster": c, "workflow": wf})
        for c, wfs in PLACEMENT_WORKFLOWS.items()
        for wf in wfs
    ]
    wf = "grpo-sync-qwen3-8b"
    instances += [
        InstanceRef(
            f"random-16-s{s}/{wf}",
            "placement",
            generator="random_cluster",
            generates="cluster",
            args={"gpus": 16, "seed": s},
            fields={"workflow": wf},
        )
        for s in range(3)
    ]
    solvers = [
        *_once("ilp", limit=600.0),
        ("sha-ea", {}, 10.0, (0, 1)),
        *_once("sha-ea", limit=60.0),
        *_once("ea", limit=10.0),
        *_once("ea", limit=60.0),
        *_once("random", limit=10.0),
        *_once("verl", "streamrl"),
    ]
    return Suite(
        "placement",
        "HetRL §5.4: ILP vs SHA-EA vs EA vs baselines over time budgets",
        _runs("placement", instances, solvers, plugins),
        [
            Comparison("SHA-EA / ILP iteration time", "sha-ea", "ilp", "objective"),
            Comparison("EA / ILP iteration time", "ea", "ilp", "objective"),
            Comparison("verl / SHA-EA iteration time", "verl", "sha-ea", "objective"),
            Comparison("StreamRL / SHA-EA iteration time", "streamrl", "sha-ea", "objective"),
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


def _sha_ea_against_baselines(
    name: str, description: str, instances: list[InstanceRef], plugins: tuple[str, ...]
) -> Suite:
    """SHA-EA, the verl and StreamRL baselines and the plain EA on ``instances``, each once under
    the same 60 s limit, compared as iteration-time ratios to SHA-EA."""
    return Suite(
        name,
        description,
        _runs(name, instances, _once("sha-ea", "verl", "streamrl", "ea", limit=60.0), plugins),
        _ratios_to(
            "sha-ea",
            "SHA-EA iteration time",
            {"verl": "verl", "streamrl": "StreamRL", "ea": "plain EA"},
        ),
        anytime=("sha-ea", "ea"),
    )


def scenarios(plugins: tuple[str, ...] = ()) -> Suite:
    """HetRL §5.2: the four testbed network scenarios, SHA-EA against the verl and StreamRL
    baselines (64 GPUs: too large for the ILP to finish, so ratios are between solvers)."""
    instances = [
        InstanceRef(f"{c}/{wf}", "placement", fields={"cluster": f"hetrl-{c}", "workflow": wf})
        for c in ("single-region", "multi-region-hybrid", "multi-country", "multi-continent")
        for wf in (
            "grpo-sync-qwen3-8b",
            "ppo-sync-qwen3-8b",
            "grpo-async-qwen3-8b",
            "ppo-async-qwen3-8b",
        )
    ]
    # the baselines' sweeps grow with the number of node classes (eight zones here): same 60 s cap
    return _sha_ea_against_baselines(
        "scenarios",
        "HetRL §5.2 testbed scenarios: SHA-EA vs verl / StreamRL baselines",
        instances,
        plugins,
    )


def scale(plugins: tuple[str, ...] = ()) -> Suite:
    """Placement at 128 to 1 024 GPUs: random clusters of four GPU types in four zones (8-GPU
    nodes), GRPO on Qwen3-8B and PPO on Qwen3-14B; SHA-EA against the baselines and the plain EA,
    every solver under the same 60 s limit (wall time and peak memory are in each row)."""
    instances = [
        InstanceRef(
            f"random-{n}-4types/{tag}",
            "placement",
            generator="random_cluster",
            generates="cluster",
            args={"gpus": n, "seed": 0, "zones": 4, "per_node": 8, "types": 4},
            fields={"workflow": wf},
        )
        for n in (128, 256, 512, 1024)
        for tag, wf in (("grpo-8b", "grpo-sync-qwen3-8b"), ("ppo-14b", "ppo-sync-qwen3-14b"))
    ]
    return _sha_ea_against_baselines(
        "scale",
        "placement at 128-1 024 GPUs: SHA-EA vs verl / StreamRL / plain EA, 60 s each",
        instances,
        plugins,
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
