"""RollMux's online inter-group scheduler (Algorithm 1, §4.2) and the §7.4-7.5 baselines.

:class:`OnlineScheduler` is what an external cluster manager keeps: ``arrive(job)`` places a job
(group and rollout nodes) and returns the decision with its latency, ``depart(name)`` frees it.
The ``cosched`` solvers replay the job file's arrivals (``arrival_s``, then file order) through
it with one placement rule each:

* ``rollmux`` (Algorithm 1): skip saturated groups (T^load >= T^cycle; line 4, which
  ``skip_saturated=False`` turns off) and full ones; in each
  other group try *direct packing* (the job's k_j least-loaded rollout nodes) and *rollout
  scaling* (m = 1..k_j new nodes plus the k_j - m least-loaded old ones: just enough); drop
  placements that break memory residency or any member's SLO (simulated round-robin); take the
  least marginal cost; else open an isolated group (k_j rollout + n_j training nodes). Linear in
  groups: at most k_j + 1 placements per group.
* ``random`` (§7.5): uniformly at random (seeded) one of the groups with a valid placement or a
  new group, and a random valid placement in the chosen group.
* ``greedy`` (§7.5, most idle): the group with the largest idle share 1 - T^load / T^cycle among
  those with a valid placement, its placement on the least loaded nodes (the cheapest); else a
  new group.

The §7.5 baselines assign a job to a group "that can accommodate it": memory and group size, no
SLO check (the paper attributes their SLO misses to exactly this) and no line 4 (saturated groups
are candidates). So ``random`` and ``greedy`` run that way in ``plan`` and ``simulate`` alike; their
plans are judged by the validator, which says which SLOs they break (``SolverEntry.ignores``).
``random-slo`` and ``greedy-slo`` are the variants that check every member's SLO (valid plans).
* ``solo``: every job alone, 1:1 pools (Solo-D).
* ``colocated``: every job alone on its training GPUs, both phases there (veRL).
"""

from __future__ import annotations

import random as _random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field

from costmodels.cosched.group import (
    CoschedModel,
    GroupState,
    colocated_group,
    cosched_model,
    cycle_and_load,
    group_ok,
    node_loads,
    saturated,
)
from costmodels.cosched.plan import CoschedulePlan
from costmodels.cosched.problem import CoscheduleProblem
from costmodels.solving import Deadline, SolverOutput, Status, note_work, unclocked

RULES = ("rollmux", "random", "greedy", "solo", "colocated")


def placements(m: CoschedModel, g: GroupState, name: str) -> list[tuple[float, GroupState]]:
    """Direct packing and rollout scaling of job ``name`` into ``g`` (module doc): (marginal
    cost, new group state), valid or not."""
    j = m.jobs[name]
    loads = node_loads(m, g)
    order = sorted(range(g.rollout_nodes), key=lambda n: (loads[n], n))
    out = []
    for new in range(0, j.k + 1):
        old = j.k - new
        if old > g.rollout_nodes:
            continue
        pins = tuple(sorted(order[:old])) + tuple(range(g.rollout_nodes, g.rollout_nodes + new))
        h = g.copy()
        h.members.append(name)
        h.pins[name] = pins
        h.rollout_nodes += new
        out.append((new * m.price_r, h))
    return out


def isolated(m: CoschedModel, name: str, colocated: bool = False) -> GroupState:
    """A new group for one job: k_j + n_j nodes, or co-located on the fewest training nodes
    (from n_j up to 8 n_j) that meet its SLO and hold both warm states."""
    j = m.jobs[name]
    if colocated:
        return colocated_group(m, name) or GroupState(j.n, [name], {name: ()}, 0, colocated=True)
    return GroupState(j.n, [name], {name: tuple(range(j.k))}, j.k)


@dataclass
class OnlineScheduler:
    """Groups kept across arrivals and departures; one placement rule (module doc)."""

    model: CoschedModel
    rule: str = "rollmux"
    seed: int = 0
    check_slo: bool = True
    skip_saturated: bool = True
    groups: list[GroupState] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"unknown rule {self.rule!r}; known: {', '.join(RULES)}")
        self.rng = _random.Random(self.seed)

    def _open(self, g: GroupState) -> int:
        self.groups.append(g)
        return len(self.groups) - 1

    def arrive(self, name: str) -> dict[str, Any]:
        """Place job ``name``; the decision (group index, rollout nodes, marginal $/h, latency).
        The index is the group's position now: a later departure that empties an earlier group
        closes it and shifts the positions after it (``plan()`` gives the current groups)."""
        t0 = time.perf_counter()
        m = self.model
        if self.rule in ("solo", "colocated"):
            gi, delta = self._open(isolated(m, name, self.rule == "colocated")), None
        else:
            gi, delta = self._choose(name)
        g = self.groups[gi]
        latency = time.perf_counter() - t0
        self.latencies.append(latency)
        return {
            "job": name,
            "group": gi,
            "rollout_nodes": list(g.pins[name]),
            "marginal_cost_per_h": delta
            if delta is not None
            else m.cost(g.rollout_nodes, g.train_nodes),
            "latency_s": latency,
        }

    def _choose(self, name: str) -> tuple[int, float]:
        m = self.model
        best: tuple[float, int, GroupState] | None = None
        valid: list[tuple[float, int, GroupState]] = []
        for gi, g in enumerate(self.groups):
            if (
                g.colocated
                or not g.members
                or len(g.members) >= m.spec.max_group_size
                or (self.skip_saturated and saturated(m, g))
            ):
                continue
            options = placements(m, g, name)
            if self.rule == "rollmux":
                for delta, h in sorted(options, key=lambda o: o[0]):
                    if best is not None and delta >= best[0]:
                        break  # no cheaper option left here
                    if group_ok(m, h, self.check_slo):
                        best = (delta, gi, h)
                        break
            else:
                ok = [(delta, gi, h) for delta, h in options if group_ok(m, h, self.check_slo)]
                if ok:
                    valid.append(
                        min(ok, key=lambda o: o[0])
                        if self.rule == "greedy"
                        else self.rng.choice(ok)
                    )
        new = isolated(m, name)
        new_cost = m.cost(new.rollout_nodes, new.train_nodes)
        if self.rule == "random":
            pick = self.rng.randrange(len(valid) + 1)  # the last choice: a new group
            best = valid[pick] if pick < len(valid) else None
        elif self.rule == "greedy" and valid:

            def busy(v: tuple[float, int, GroupState]) -> float:
                cycle, load = cycle_and_load(m, self.groups[v[1]])
                return load / cycle

            best = min(valid, key=lambda v: (busy(v), v[0]))
        elif (
            self.rule == "rollmux" and best is not None and new_cost < best[0]
        ):  # Algorithm 1 line 16
            best = None
        if best is None:
            return self._open(new), new_cost
        self.groups[best[1]] = best[2]
        return best[1], best[0]

    def depart(self, name: str) -> None:
        """Remove a job (``GroupState.remove``: its unused rollout nodes are released); an emptied
        group is closed."""
        depart_from(self.groups, name)

    def plan(self) -> CoschedulePlan:
        return CoschedulePlan(groups=[g.to_group() for g in self.groups if g.members])


def depart_from(groups: list[GroupState], name: str) -> None:
    """Take job ``name`` out of whichever group holds it; close the group if it empties."""
    for gi, g in enumerate(groups):
        if name in g.members:
            g.remove(name)
            if not g.members:
                del groups[gi]
            return
    raise KeyError(name)


def _solve(
    problem: CoscheduleProblem,
    rule: str,
    seed: int,
    skip_saturated: bool = True,
    check_slo: bool = True,
    time_limit: float | None = None,
) -> SolverOutput:
    """Every job in arrival order by ``rule``. Past the time limit (or the default cap) the jobs
    still to come each get a group of their own, ``isolated``: a plan that keeps every SLO
    whatever the clock did, as a cluster manager out of time would place them, rather than no
    plan; the result then says the clock decided it."""
    from costmodels.cosched.judge import evaluate_cosched

    deadline = Deadline(time_limit)
    m = cosched_model(problem)
    sched = OnlineScheduler(m, rule, seed, check_slo=check_slo, skip_saturated=skip_saturated)
    placed, out_of_time = 0, False
    for name in m.order:
        out_of_time = out_of_time or deadline.expired()
        if out_of_time:
            sched._open(isolated(m, name, rule == "colocated"))
        else:
            sched.arrive(name)
            placed += 1
    note_work(placed, len(m.order), "jobs")
    plan = sched.plan()
    with unclocked():  # the plan found is judged whatever the clock says
        obj, _ = evaluate_cosched(problem, plan)
    lat = sorted(sched.latencies)
    late = len(m.order) - placed
    return SolverOutput(
        Status.FEASIBLE,
        plan,
        obj,
        message=f"{rule}: {len(plan.groups)} groups"
        + (f"; the last {late} jobs run alone (time limit)" if late else ""),
        stats={
            "max_decision_s": lat[-1] if lat else 0.0,
            "median_decision_s": lat[len(lat) // 2] if lat else 0.0,
        },
    )


def solve_rollmux(
    problem: CoscheduleProblem,
    *,
    time_limit: float | None = None,
    seed: int = 0,
    skip_saturated: Annotated[
        bool,
        Field(
            description="Algorithm 1 line 4: skip saturated groups (the paper's); false tries "
            "them too, which can still meet every SLO and costs less"
        ),
    ] = True,
) -> SolverOutput:
    """Algorithm 1 over the jobs in arrival order (module doc). Line 4 skips a saturated group
    (T^load >= T^cycle) as the paper does; ``skip_saturated=False`` evaluates it like any other,
    since a saturated group's period can still be within every member's SLO."""
    return _solve(problem, "rollmux", seed, skip_saturated, time_limit=time_limit)


def _baseline(
    name: str, rule: str, doc: str, *, check_slo: bool = True, skip_saturated: bool = True
) -> Callable[..., SolverOutput]:
    """The registered solver ``solve_<name>``: jobs placed in arrival order by ``rule``, with no
    options beyond the façade's."""

    def solve(
        problem: CoscheduleProblem, *, time_limit: float | None = None, seed: int = 0
    ) -> SolverOutput:
        return _solve(
            problem,
            rule,
            seed,
            skip_saturated=skip_saturated,
            check_slo=check_slo,
            time_limit=time_limit,
        )

    solve.__name__ = solve.__qualname__ = f"solve_{name}"
    solve.__doc__ = doc
    return solve


# §7.5's baselines neither check SLOs nor skip saturated groups (Algorithm 1 line 4)
solve_random = _baseline(
    "random",
    "random",
    "§7.5's random baseline: no SLO check, no line 4 (module doc).",
    check_slo=False,
    skip_saturated=False,
)
solve_greedy = _baseline(
    "greedy",
    "greedy",
    "§7.5's greedy (most idle) baseline: no SLO check, no line 4 (module doc).",
    check_slo=False,
    skip_saturated=False,
)
solve_random_slo = _baseline(
    "random_slo",
    "random",
    "``random`` that admits a job only where every member keeps its SLO.",
    skip_saturated=False,
)
solve_greedy_slo = _baseline(
    "greedy_slo",
    "greedy",
    "``greedy`` that admits a job only where every member keeps its SLO.",
    skip_saturated=False,
)
solve_solo = _baseline("solo", "solo", "Solo-D: every job alone on 1:1 pools (§7.4).")
solve_colocated = _baseline(
    "colocated", "colocated", "veRL-style: every job alone, both phases on training GPUs (§7.4)."
)
