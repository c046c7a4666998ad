"""The fleet plan's validator (``costmodels.fleet``'s module doc): each stage on the problem the
fleet derives for it (``costmodels.fleet.derive``), each violation named ``<stage>:<rule>``.

1. ``phases``: a solo placement for every job, valid on its solo cluster
   (``costmodels.placement.check``), generation alone on the rollout GPUs and nothing else there,
   and the recorded phase seconds the judge's for it (relative tolerance :data:`PHASE_RTOL`);
2. ``cosched``: the groups, valid on the co-scheduling problem of the judged phases
   (``costmodels.cosched.check``);
3. ``job <name>``: a job plan for every job, valid on its group's GPUs (``costmodels.job.check``).

A stage is checked only when the stages before it hold (each derives its problem from them).
"""

from __future__ import annotations

from costmodels.cosched.check import check_cosched
from costmodels.fleet.derive import (
    cosched_problem,
    member_problem,
    phases_of,
    rollout_devices,
    solo_problem,
)
from costmodels.fleet.plan import FleetPlan
from costmodels.fleet.problem import FleetProblem
from costmodels.job.check import check_job
from costmodels.placement.check import check_placement
from costmodels.placement.judge import evaluate_placement
from costmodels.violations import Violation
from costmodels.workflow import ACTOR_GENERATION

#: recorded phase seconds may differ from the judge's by this much (a plan file's JSON floats)
PHASE_RTOL = 1e-6


def _phase_violations(fp: FleetProblem, plan: FleetPlan) -> list[Violation]:
    out: list[Violation] = []
    names = set(fp.index)
    for extra in sorted(set(plan.phases) - names):
        out.append(Violation("phases:jobs", f"phases of unknown job {extra!r}"))
    for name in fp.index:
        rec = plan.phases.get(name)
        if rec is None:
            out.append(Violation("phases:jobs", f"job {name} has no solo placement"))
            continue
        problem = solo_problem(fp, name)
        bad = check_placement(problem, rec.placement)
        if bad:
            out += [Violation(f"phases:{v.constraint}", f"job {name}: {v.message}") for v in bad]
            continue
        rollout = set(rollout_devices(problem))
        gen = set(rec.placement.task(ACTOR_GENERATION).all_devices())
        others = {
            d for t in rec.placement.tasks if t.task != ACTOR_GENERATION for d in t.all_devices()
        }
        if gen != rollout or others & rollout:
            out.append(
                Violation(
                    "phases:split",
                    f"job {name}: generation must run on the rollout pool's GPUs and nothing "
                    "else there",
                )
            )
            continue
        roll, train = phases_of(evaluate_placement(problem, rec.placement).breakdown)
        for label, recorded, judged in (
            ("rollout_s", rec.rollout_s, roll),
            ("train_s", rec.train_s, train),
        ):
            if abs(recorded - judged) > PHASE_RTOL * max(1.0, judged):
                out.append(
                    Violation(
                        "phases:times",
                        f"job {name}: {label} is {recorded:g}, the judge gives {judged:g}",
                    )
                )
    return out


def check_fleet(fp: FleetProblem, plan: FleetPlan) -> list[Violation]:
    """Every stage in order (module doc)."""
    out = _phase_violations(fp, plan)
    if out:
        return out
    phases = {n: (p.rollout_s, p.train_s) for n, p in plan.phases.items()}
    out = [
        Violation(f"cosched:{v.constraint}", v.message)
        for v in check_cosched(cosched_problem(fp, phases), plan.cosched)
    ]
    if out:
        return out
    for extra in sorted(set(plan.jobs) - set(fp.index)):
        out.append(Violation("jobs", f"a job plan for unknown job {extra!r}"))
    for gi, group in enumerate(plan.cosched.groups):
        for member in group.jobs:
            name = member.name
            if name not in plan.jobs:
                out.append(Violation(f"job {name}:plan", f"job {name} has no plan in its group"))
                continue
            jp = member_problem(fp, gi, group, name)
            out += [
                Violation(f"job {name}:{v.constraint}", v.message)
                for v in check_job(jp, plan.jobs[name])
            ]
    return out
