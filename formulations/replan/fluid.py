"""The re-planning problem's cheap bounds (OrchestrRL §4.1, Eq. 1): what every plan's makespan M
respects, at any size, before any model is built."""

from __future__ import annotations

from costmodels.replan.problem import ReplanProblem


def lower_bound(problem: ReplanProblem) -> float:
    """A bound every plan respects, cheap at any size: the larger of

    * the longest request alone: M >= max_b min_y (α_y L_b + w_yb) over configurations it fits;
    * the pool's fluid work: T_j >= Σ_b x_jb c_yb with c_yb = w_yb + α_y L_b / B_yb (S_j is at
      least the tokens over the concurrency), so M G_total >= Σ_j t_j T_j >= Σ_b N_b min_y t_y
      c_yb."""
    fluid = 0.0
    for b, bn in enumerate(problem.bins):
        per = [c.tp * c.floor[b] for c in problem.configs.values() if c.fits(b)]
        if per:
            fluid += bn.count * min(per)
    return max(longest_alone(problem), fluid / problem.budget)


def longest_alone(problem: ReplanProblem) -> float:
    """Every request runs somewhere: M >= max_b min_y (α_y L_b + w_yb) over configurations it
    fits."""
    best = 0.0
    for b, bn in enumerate(problem.bins):
        # a min over every configuration (a superset of what any node may run) stays a bound
        options = [c.alpha * bn.upper + c.work[b] for c in problem.configs.values() if c.fits(b)]
        if options:
            best = max(best, min(options))
    return best
