"""The problems rlplan ships, one descriptor each (``costmodels.problem.ProblemKind``), in the
order the CLI lists them; the first is what ``rlplan plan`` solves when given nothing. Problem
packs outside rlplan add theirs through the planner's plugins (``docs/architecture.md``)."""

from __future__ import annotations

from costmodels.problem import ProblemKind


def builtin_kinds() -> tuple[ProblemKind, ...]:
    from costmodels.broadcast.kind import KIND as BROADCAST
    from costmodels.circuits.kind import KIND as CIRCUITS
    from costmodels.cosched.kind import KIND as COSCHED
    from costmodels.fleet.kind import KIND as FLEET
    from costmodels.job.kind import KIND as JOB
    from costmodels.placement.kind import KIND as PLACEMENT
    from costmodels.replan.kind import KIND as REPLAN
    from costmodels.rollout.kind import KIND as ROLLOUT

    return (PLACEMENT, CIRCUITS, BROADCAST, REPLAN, COSCHED, ROLLOUT, JOB, FLEET)
