"""SHA-EA: HetRL's hybrid scheduling algorithm (HetRL §3.4, Algorithm 1).

Nested successive halving allocates the search budget: task groupings are the Level-1 arms,
GPU groupings (group sizes, plus idle GPUs) the Level-2 arms of each task grouping; every
(task grouping, GPU grouping) arm runs a steady-state evolutionary algorithm over Levels 3-5
whose state persists across rounds, and after each round the worse half of the arms is dropped
and the budget per arm doubles (lines 14-33).

The EA searches Level 3 (which GPUs form each group; HetRL: randomly initialised medium-grained
assignments) and, for every phenotype, enumerates Level 4 exactly: the Pareto options of each
group's tasks on its composition (``search.placement.group_options``) and their best combination.
Offspring come from mutation (with probability
``fast_gpu_rate``, a GPU of a training group is swapped for a higher-TFLOPS GPU outside every
training group; otherwise a cross-group GPU swap or a new task configuration), then a swap-based
local search greedily raises GPU-group locality (node, zone, region affinity) keeping group
sizes; the offspring enters the population with the better of its own and its improved
phenotype's cost, replacing the worst individual if it is better, and the improved phenotype is
not written back to the genotype (Baldwinian learning, as HetRL describes).

The budget is counted in cost-model evaluations (``evaluations``), which makes a run exactly
reproducible for a seed; with only ``time_limit`` the evaluation budget is estimated from the
measured evaluation rate and the wall clock also stops the search. Evaluations of a batch go
through ``toolbox.map`` (DEAP): in process, on a process pool (``workers > 1``) or on Ray actors
(``executor="ray"``, ``ray_address``), with the same plan for a given budget
(:mod:`heuristics.placement.executors`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from costmodels.placement.problem import PlacementProblem
from costmodels.solving import Deadline, SolverOutput, Status, note_work
from heuristics.placement.arm_ea import ArmEA
from heuristics.placement.evaluator import Evaluator
from heuristics.placement.executors import Executor, evaluation_pool
from heuristics.placement.genome import EXACT_WORK, Individual, PlacementSpace
from heuristics.placement.groupings import gpu_groupings, individual_of, task_groupings, type_splits
from heuristics.placement.streamrl import DEFAULT_CANDIDATES


def successive_halving(
    arms: list[Any],
    budget: float,
    run: Callable[[Any, float], None],
    score: Callable[[Any], float],
    stop: Callable[[], bool],
) -> list[Any]:
    """Algorithm 1's halving loop: ceil(log2 |arms|) rounds, budget B / (|arms_m| * rounds) each."""
    rounds = max(1, math.ceil(math.log2(len(arms)))) if arms else 0
    alive = list(arms)
    for _ in range(rounds):
        if stop() or len(alive) <= 1:
            break
        per_arm = budget / (len(alive) * rounds)
        for arm in alive:
            if stop():
                break
            run(arm, per_arm)
        alive = sorted(alive, key=score)[: max(1, math.ceil(len(alive) / 2))]
    for arm in alive:  # what is left of the budget goes to the survivors
        if stop():
            break
        run(arm, budget / (max(1, len(alive)) * max(1, rounds)))
    return alive


# : the evaluation budget (distinct phenotypes costed) when neither ``evaluations`` nor
# ``time_limit`` is given
DEFAULT_EVALUATIONS = 300
#: phenotypes re-solved exactly at the end (exact on survivors), each in a work box of
#: POLISH_WORK units (4x a search pass's box, ~7 s on the development machine: a pass the search
#: cut short gets one real chance; passes that finished are not repeated)
POLISH = 16
POLISH_WORK = 4 * EXACT_WORK
#: share of a caller's time limit the baseline seeds may use: verl and StreamRL keep the 4.5% and
#: 10.5% they had before the single-type pool seed, which gets 5%
SEED_SHARE = 0.2
#: StreamRL candidates the seed sweep costs without a time limit: the standalone baseline's own
#: default budget, so SHA-EA's default plan is never worse than ``--solver streamrl``'s
SEED_CANDIDATES = DEFAULT_CANDIDATES
#: share of the evaluation budget and of the time limit the GPU-type-split probes may use
PROBE_SHARE = 0.1


def baseline_seeds(
    problem: PlacementProblem,
    deadline: Deadline,
    share: float,
    streamrl_candidates: int = SEED_CANDIDATES,
) -> list[tuple[str, float, Any]]:
    """(name, cost, plan) of the seeds SHA-EA starts from and never returns worse than: the verl
    and StreamRL baselines, and one GPU type's pool alone, colocated or split RLinf's way
    (``heuristics.placement.rlinf.solve_rlinf_pools``: RLinf's auto-placement beat SHA-EA's
    60 s search at 256-1 024 GPUs with such plans, which leave slower GPUs idle and which the
    halving does not reach in a short budget; ``benchmarks/results/scale``). Under a caller's
    time limit they run in ``share`` of it; otherwise on work budgets (verl's whole sweep,
    StreamRL's first ``streamrl_candidates`` candidates, every type pool's profile and
    top-ranked schedules), so the seeds are the same on any machine."""
    from heuristics.placement.colocated import solve_colocated
    from heuristics.placement.rlinf import solve_rlinf_pools
    from heuristics.placement.streamrl import solve_streamrl

    out = []
    limit = deadline.time_limit
    for name, solver, part in (
        ("verl", solve_colocated, 0.225),
        ("RLinf pools", solve_rlinf_pools, 0.25),
        ("StreamRL", solve_streamrl, 0.525),
    ):
        if deadline.expired():
            break
        if limit is None:
            r = solver(
                problem,
                **({"candidates": streamrl_candidates} if solver is solve_streamrl else {}),
            )
        else:
            r = solver(
                problem,
                time_limit=min(max(0.05, share * limit * part), deadline.remaining() or 0.0),
            )
        if r.plan is not None and r.objective is not None:
            out.append((name, float(r.objective), r.plan))
    return out


class _Search:
    """One SHA-EA run past its baseline seeds (:func:`solve_sha_ea`'s doc): the arms of every task
    grouping, each task grouping's best probe, the task groupings in the halving and the GPU
    groupings ever armed. Every random draw comes from ``rng`` in the order of the steps."""

    def __init__(
        self,
        space: PlacementSpace,
        ev: Evaluator,
        rng: random.Random,
        *,
        by_time: bool,
        budget_total: int,
        population: int,
        fast_gpu_rate: float,
        gpu_groupings_per_arm: int,
        task_grouping_arms: int,
        type_split_probes: int,
    ):
        self.space, self.ev, self.rng, self.deadline = space, ev, rng, ev.deadline
        self.by_time, self.budget_total = by_time, budget_total
        self.population, self.fast_gpu_rate = population, fast_gpu_rate
        self.gpu_groupings_per_arm = gpu_groupings_per_arm
        self.task_grouping_arms = task_grouping_arms
        self.type_split_probes = type_split_probes
        self.tgs_all: list[Any] = []
        self.arms_by_tg: dict[Any, list[ArmEA]] = {}
        self.seeded_tgs: list[Any] = []
        self.probes: dict[Any, float] = {}
        self.ranked: list[Any] = []  # the probed task groupings, best probe first
        self.tgs: list[Any] = []  # the task groupings in the halving
        self.tried: dict[Any, set[Any]] = {}  # GPU groupings ever armed

    def _arm(self, tg: Any, sizes: Any) -> ArmEA:
        return ArmEA(
            self.space,
            tg,
            sizes,
            random.Random(self.rng.random()),
            self.population,
            self.fast_gpu_rate,
        )

    def arm(self, seed_plans: list[tuple[str, float, Any]]) -> dict[Any, ArmEA]:
        """The arms: one per seed plan (seeded with it) and ``gpu_groupings_per_arm`` per task
        grouping. Returns the first GPU-grouping arm of each task grouping (its probe's)."""
        space = self.space
        self.tgs_all = task_groupings(space)
        for *_, plan in seed_plans:
            ind = individual_of(space, plan)
            arm = self._arm(ind.grouping, ind.sizes())
            arm.seeds.append(ind)
            self.arms_by_tg.setdefault(ind.grouping, []).append(arm)
            self.seeded_tgs.append(ind.grouping)
        probe_arm: dict[Any, ArmEA] = {}  # the first GPU-grouping arm of each task grouping
        for tg in self.tgs_all:
            sizes = gpu_groupings(space, tg, self.rng, self.gpu_groupings_per_arm)
            arms = [self._arm(tg, s) for s in sizes]
            self.arms_by_tg.setdefault(tg, []).extend(arms)
            if arms:
                probe_arm[tg] = arms[0]
        return probe_arm

    def probe(self, probe_arm: dict[Any, ArmEA]) -> None:
        """One cheap probe per task grouping (its greedy individual on the first GPU grouping),
        then the GPU-type splits; the ``task_grouping_arms`` best by probe (and the seeds')
        enter the halving."""
        for tg, arm in probe_arm.items():
            if self.ev.exhausted():
                break
            probe = arm.greedy()
            self.ev([probe])
            self.probes[tg] = probe.fitness
            arm.seeds.append(probe)
        self._probe_type_splits(probe_arm)
        self.ranked = sorted(
            (tg for tg in self.tgs_all if tg in self.probes), key=lambda tg: self.probes[tg]
        )
        tgs = list(dict.fromkeys(self.seeded_tgs + self.ranked[: self.task_grouping_arms]))
        self.tgs = [tg for tg in tgs if self.arms_by_tg.get(tg)]
        self.tried = {tg: {a.sizes for a in arms} for tg, arms in self.arms_by_tg.items()}

    def _probe_type_splits(self, probe_arm: dict[Any, ArmEA]) -> None:
        ev, deadline, probes = self.ev, self.deadline, self.probes
        # then GPU-type splits (:func:`type_splits`): each task grouping's closest split to its
        # work shares, closest first, then each one's second, and so on; within PROBE_SHARE of the
        # time limit (from here) and, under an evaluation budget, of the budget. Each split seeds
        # the arm of its group sizes. (Not ordered by the greedy probe: a grouping whose greedy
        # start does not fit can have the best split, as on small-24 PPO.)
        splits = {
            tg: type_splits(self.space, tg, self.rng, self.type_split_probes) for tg in probe_arm
        }
        cap = (
            sum(map(len, splits.values()))
            if self.by_time
            else max(len(probe_arm), int(PROBE_SHARE * self.budget_total))
        )
        probe_stop = ev.used + cap
        probe_end = None if not self.by_time else deadline.elapsed() + PROBE_SHARE * deadline.limit
        chunk = max(1, ev.pool.workers)

        def probing() -> bool:
            over_time = probe_end is not None and deadline.elapsed() >= probe_end
            return not (ev.exhausted() or over_time or ev.used >= probe_stop)

        for depth in range(self.type_split_probes):
            todo = sorted(
                ((tg, splits[tg][depth][1]) for tg in splits if depth < len(splits[tg])),
                key=lambda pair: splits[pair[0]][depth][0],
            )
            at = 0
            while at < len(todo) and probing():
                # never past probe_stop, so the probes do not depend on the number of workers
                part = todo[at : at + min(chunk, probe_stop - ev.used)]
                at += len(part)
                ev([ind for _, ind in part])
                for tg, ind in part:
                    probes[tg] = min(probes.get(tg, math.inf), ind.fitness)
                    self._seed_arm(tg, ind)

    def _seed_arm(self, tg: Any, ind: Individual) -> None:
        """``ind`` seeds the unstarted arm of its group sizes (a new arm when there is none)."""
        sizes = ind.sizes()
        arm = next((a for a in self.arms_by_tg[tg] if a.sizes == sizes and not a.population), None)
        if arm is None:
            arm = self._arm(tg, sizes)
            self.arms_by_tg[tg].append(arm)
        arm.seeds.append(ind)

    def _best_of(self, tg: Any) -> float:
        return min((a.best for a in self.arms_by_tg[tg]), default=math.inf)

    def _run_tg(self, tg: Any, budget: float) -> None:  # Level 2: halving over GPU groupings
        ev = self.ev
        self.arms_by_tg[tg] = successive_halving(
            self.arms_by_tg[tg],
            budget,
            lambda arm, b: arm.run(ev, max(1, int(b))),
            lambda arm: arm.best,
            ev.exhausted,
        )

    def _widen(self) -> bool:
        """Budget or time is left but every arm has converged: the next task groupings by
        probe and new GPU groupings for those in play enter the halving. False when none is
        left."""
        tgs, tried = self.tgs, self.tried
        playing = list(tgs)
        tgs.extend(
            [tg for tg in self.ranked if tg not in playing and self.arms_by_tg.get(tg)][
                : self.task_grouping_arms
            ]
        )
        added = len(tgs) > len(playing)
        for tg in playing:
            fresh = [
                z
                for z in gpu_groupings(
                    self.space, tg, self.rng, self.gpu_groupings_per_arm + len(tried[tg])
                )
                if z not in tried[tg]
            ]
            for z in fresh[: self.gpu_groupings_per_arm]:
                tried[tg].add(z)
                self.arms_by_tg[tg].append(self._arm(tg, z))
                added = True
        return added

    def halve(self) -> bool:
        """Level 1: successive halving over the task groupings in play, again while budget or
        time is left. Returns whether it stopped because every arm converged."""
        ev = self.ev
        budget = float(max(self.budget_total - ev.used, len(self.tgs)))
        box = 2 * self.space.exact_work
        while not ev.exhausted():
            before = ev.used
            successive_halving(self.tgs, budget, self._run_tg, self._best_of, ev.exhausted)
            if (
                self.by_time
            ):  # the best phenotype whose exact pass ran out of its box: again, in twice the box
                ev.polish(1, box)
                box *= 2
            if self.deadline.expired():
                break
            if (
                ev.used == before and not self._widen()
            ):  # every arm has converged and nothing is left to try
                return True
            # budget left (an evaluation budget the converged arms did not use, or a wall-clock
            # limit): run the halving again, with twice the budget under a wall-clock limit; the
            # arms keep their populations, so the search resumes where it stopped
            if self.by_time:
                budget *= 2
                ev.budget = ev.used + int(budget)
            else:
                budget = float(max(1, ev.budget - ev.used))
        return False


def _output(
    search: _Search,
    seed_plans: list[tuple[str, float, Any]],
    budget_total: int,
    converged: bool,
    polished: int,
) -> SolverOutput:
    """The run's plan: the best found, or the best seed when the search did not beat it."""
    ev, space, deadline = search.ev, search.space, search.deadline
    best_seed = min(seed_plans, key=lambda s: s[1], default=None)
    stats = {
        "polished": polished,
        "evaluations": ev.used,
        "lookups": ev.lookups,
        "exact_level4": space.exact_solves,
        "exact_level4_timeouts": space.exact_timeouts,
        "budget": budget_total,
        "trace": ev.trace.rows(),
        "task_groupings": len(search.probes),
        "seeds": {name: cost for name, cost, _ in seed_plans},
    }
    stopped = "time limit" if deadline.expired() else "converged" if converged else "budget"
    if best_seed is not None and not ev.best < best_seed[1]:
        return SolverOutput(
            Status.FEASIBLE,
            plan=best_seed[2],
            objective=best_seed[1],
            message=(
                f"SHA-EA: the {best_seed[0]} seed was not beaten in {ev.used} evaluations "
                f"({stopped})"
            ),
            stats=stats,
        )
    if ev.best_ind is None or not math.isfinite(ev.best):
        return SolverOutput(
            Status.NO_SOLUTION, message="no valid plan found within the budget", stats=stats
        )
    configs = ev.best_configs
    assert configs is not None
    plan = space.decode_with(ev.best_ind, configs)
    gain = (
        f", {best_seed[1] / ev.best:.2f}x better than its best seed ({best_seed[0]})"
        if best_seed
        else ""
    )
    return SolverOutput(
        Status.FEASIBLE,
        plan=plan,
        objective=ev.best,
        message=f"SHA-EA: best of {ev.used} evaluations ({stopped}){gain}",
        stats=stats,
    )


def solve_sha_ea(
    problem: PlacementProblem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    evaluations: Annotated[
        int | None,
        Field(
            ge=1,
            description=(
                "budget of distinct plans costed: same seed and budget, same plan (when the "
                "baseline seeds finish their sweeps)"
            ),
        ),
    ] = None,
    population: Annotated[int, Field(ge=2, description="EA population per arm")] = 6,
    gpu_groupings_per_arm: Annotated[
        int,
        Field(ge=1, description="GPU groupings tried per task grouping (successive-halving arms)"),
    ] = 6,
    task_grouping_arms: Annotated[
        int,
        Field(ge=1, description="task groupings kept for the halving after one cheap probe each"),
    ] = 12,
    type_split_probes: Annotated[
        int,
        Field(
            ge=0,
            description=(
                "GPU-type splits (each GPU type's pool to one group) probed per task grouping"
            ),
        ),
    ] = 4,
    fast_gpu_rate: Annotated[
        float, Field(ge=0, le=1, description="probability of HetRL's fast-GPU mutation")
    ] = 0.3,
    exact_margin: Annotated[
        float,
        Field(
            ge=0,
            description=(
                "re-solve Level 4 exactly for individuals within this share of the incumbent"
            ),
        ),
    ] = 0.05,
    seeds: Annotated[
        bool,
        Field(
            description=(
                "start from the verl and StreamRL baselines' plans and the best single-type "
                "pool plan"
            )
        ),
    ] = True,
    workers: Annotated[
        int | None,
        Field(
            ge=1,
            le=1024,
            description=(
                "processes (local, at most 64) or Ray actors (at most 1024) evaluating "
                "candidates in parallel; default 1 locally, one per CPU of the Ray cluster "
                "with executor=ray"
            ),
        ),
    ] = None,
    executor: Annotated[
        Executor,
        Field(
            description=(
                "where evaluations run: local (in process, or a process pool with workers > 1) or "
                "ray"
            )
        ),
    ] = "local",
    ray_address: Annotated[
        str | None,
        Field(
            description=(
                "Ray cluster to run the evaluations on, e.g. auto or ray://head:10001 (implies "
                "executor=ray; without it executor=ray starts a local Ray)"
            )
        ),
    ] = None,
    seed_candidates: Annotated[
        int,
        Field(
            ge=1,
            le=10**6,
            description="StreamRL candidates the seed sweep costs (without a time limit)",
        ),
    ] = SEED_CANDIDATES,
    polish: Annotated[
        int,
        Field(
            ge=0,
            le=1000,
            description="best phenotypes re-solved exactly at the end (exact on survivors)",
        ),
    ] = POLISH,
    progress: Callable[[int, int, float], None] | None = None,
) -> SolverOutput:
    """Run SHA-EA.

    Set-up is bounded: the seeds (verl, RLinf pools, StreamRL; :func:`baseline_seeds`) run in
    :data:`SEED_SHARE` of the limit and seed the incumbent and the arms of their groupings; each
    task grouping (symmetry classes only) gets one cheap probe (its fastest-first greedy start),
    then up to ``type_split_probes`` GPU-type splits (:func:`type_splits`, within
    :data:`PROBE_SHARE`), and the ``task_grouping_arms`` best by their best probe enter the
    halving. The budget is
    ``evaluations`` distinct plans; with only ``time_limit`` the halving restarts with a doubled
    budget until the limit (arms keep their populations); with neither it is 300, stopped by the
    default cap if the run has one. The result is never worse than the best seed.

    Over 80 lines for its typed option declarations; the body is set-up and three calls on
    :class:`_Search`."""
    rng = random.Random(seed)
    deadline = Deadline(time_limit)
    space = PlacementSpace(problem, deadline)
    space.exact_margin = exact_margin
    seed_plans = baseline_seeds(problem, deadline, SEED_SHARE, seed_candidates) if seeds else []
    best_seed = min(seed_plans, key=lambda s: s[1], default=None)
    if best_seed is not None:
        space.incumbent = best_seed[1]
    by_time = evaluations is None and time_limit is not None
    budget_total = evaluations if evaluations is not None else DEFAULT_EVALUATIONS
    ev = Evaluator(
        space,
        budget_total,
        deadline,
        evaluation_pool(space, workers, executor, ray_address),
        progress,
    )
    search = _Search(
        space,
        ev,
        rng,
        by_time=by_time,
        budget_total=budget_total,
        population=population,
        fast_gpu_rate=fast_gpu_rate,
        gpu_groupings_per_arm=gpu_groupings_per_arm,
        task_grouping_arms=task_grouping_arms,
        type_split_probes=type_split_probes,
    )
    # from here on the evaluation pool's workers (processes, Ray actors) are released at the end
    try:
        if (
            progress is not None
        ):  # set-up is over: say so before the first batch (which may be slow)
            progress(0, budget_total, best_seed[1] if best_seed else math.inf)
        search.probe(search.arm(seed_plans))
        converged = search.halve()
        polished = ev.polish(polish, POLISH_WORK)
    finally:
        ev.close()
    note_work(ev.used, ev.budget, "evaluations")
    return _output(search, seed_plans, budget_total, converged, polished)
