"""The independent validator of weight-sync broadcast schedules (OrchestrRL App. E): shards sent
only by endpoints holding them, PoD boundary budgets per wave, and every rank receiving every
shard."""

from __future__ import annotations

from costmodels.broadcast.plan import BroadcastPlan
from costmodels.broadcast.problem import BroadcastProblem, pod_of
from costmodels.violations import Violation


def check_broadcast(problem: BroadcastProblem, plan: BroadcastPlan) -> list[Violation]:  # noqa: C901
    """Budgets per wave, sources that hold what they send, and every gen rank served."""
    s = problem.spec
    pods = {p.name: p for p in s.pods}
    out: list[Violation] = []
    held: dict[str, set[int]] = {h: {i} for i, h in enumerate(s.holders())}
    nshards = len(s.holders())

    def known(ep: str) -> bool:
        pod, _, rank = ep.partition("/")
        return pod in pods and rank.isdigit() and int(rank) < pods[pod].ranks

    for t, wave in enumerate(plan.phase_a):
        load: dict[str, int] = {}
        arrivals: list[tuple[str, int]] = []
        for e in wave.edges:
            where = f"wave {t}: {e.src} -> {e.dst} shard {e.shard}"
            if not (known(e.src) and known(e.dst)):
                out.append(Violation("endpoint", f"{where}: unknown endpoint"))
                continue
            if e.shard >= nshards:
                out.append(Violation("shard", f"{where}: there are only {nshards} shards"))
                continue
            if pod_of(e.src) == pod_of(e.dst):
                out.append(
                    Violation("inter-pod", f"{where}: Phase A edges cross PoDs (POD(u) != POD(v))")
                )
            if e.shard not in held.get(e.src, set()):
                out.append(
                    Violation(
                        "source",
                        f"{where}: the source does not hold the shard at the start of the wave",
                    )
                )
            for p in (pod_of(e.src), pod_of(e.dst)):
                load[p] = load.get(p, 0) + e.circuits
            arrivals.append((e.dst, e.shard))
        for p, n in sorted(load.items()):
            if n > pods[p].budget:
                out.append(
                    Violation(
                        "pod-budget",
                        f"wave {t}: PoD {p} has {n} active inter-PoD circuits, budget d_p = "
                        f"{pods[p].budget}",
                    )
                )
        for ep, shard in arrivals:
            held.setdefault(ep, set()).add(shard)
    served: dict[str, set[int]] = {ep: set(v) for ep, v in held.items()}
    for i, tree in enumerate(plan.phase_b):
        if not known(tree.seed):
            out.append(Violation("endpoint", f"phase_b[{i}]: unknown seed {tree.seed}"))
            continue
        missing = sorted(set(tree.shards) - held.get(tree.seed, set()))
        if missing:
            out.append(
                Violation(
                    "source",
                    f"phase_b[{i}]: seed {tree.seed} fans out shards {missing} it never received",
                )
            )
        pod = pod_of(tree.seed)
        for r in range(pods[pod].ranks):
            served.setdefault(f"{pod}/{r}", set()).update(tree.shards)
    for p in s.pods:
        if p.role != "gen":
            continue
        for r in range(p.ranks):
            lack = nshards - len(served.get(f"{p.name}/{r}", set()) & set(range(nshards)))
            if lack:
                out.append(
                    Violation(
                        "coverage", f"rank {p.name}/{r} never receives {lack} of {nshards} shards"
                    )
                )
                break  # one line per PoD is enough to act on
    return out
