"""The parallelism planner's rule (RollPacker §4.2): adapt rollout TP step by step from the
preemption counts the serving engine reports.

With p_k the preemptions of step k and t the current TP (allowed TPs: those dividing the model's
heads and the GPUs, inside one server, ``costmodels.decode.feasible_tps``):

* a sudden rise, p_k > ``rise`` · p_{k-1} with p_k > 0 (the paper's 1.05x), doubles TP (the next
  allowed size up);
* ``calm_steps`` consecutive steps without a preemption (the paper's four) halve it (the next
  allowed size down), and the count starts again.

This is the paper's rule as it reads; what it leaves open we chose: p_{k-1} = 0 and p_k > 0 is a
rise; the first step has no predecessor and never triggers. On its own it can lose: when no
setting preempts, only "halve after four calm steps" ever fires and TP falls to the smallest,
whose decode is slowest (§4.2 itself says larger TP pays off in long rounds). The ``guarded``
plan (``costmodels.rollout.rounds.simulate_epoch``) applies a change only when the last round,
replayed at the new TP, runs faster: a latency guard a systems engineer would add. The
artifact has neither: it runs a statically configured second TP for long rounds
(``multi_infer_tp``), a ``fixed`` plan with ``long_tp`` ≠ ``short_tp``. The rule sees only
what a running system shows (the preemption counter), so it lives next to the round simulation
as a mechanism a plan can ask for (``tp_rule: adaptive``); the model-based alternative is to
*search* the TP per round type on the simulator (``heuristics.rollout.search``).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class AdaptiveTP:
    tp: int
    allowed: list[int]
    rise: float = 1.05
    calm_steps: int = 4
    previous: int | None = None
    calm: int = 0
    history: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.tp not in self.allowed:
            raise ValueError(f"starting TP {self.tp} is not one of the allowed {self.allowed}")

    def observe(self, preemptions: int) -> int:
        """Record one step's preemptions; the TP of the next step."""
        self.history.append(self.tp)
        i = self.allowed.index(self.tp)
        rose = (
            self.previous is not None
            and preemptions > 0
            and preemptions > self.rise * self.previous
        )
        self.calm = self.calm + 1 if preemptions == 0 else 0
        if rose and i + 1 < len(self.allowed):
            self.tp = self.allowed[i + 1]
            self.calm = 0
        elif self.calm >= self.calm_steps and i > 0:
            self.tp = self.allowed[i - 1]
            self.calm = 0
        self.previous = preemptions
        return self.tp
