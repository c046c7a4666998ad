"""The master ILP of HetRL placement (§3.5; ``formulations.placement.ilp``'s module doc states
(1)-(9)): its rows over a list of columns, solved on HiGHS (highspy) with reduced-cost fixing
below a cutoff, or on CBC through PuLP."""

from __future__ import annotations

import math
import threading
import time
import warnings
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

import numpy as np
from scipy.sparse import csc_array, csr_array

from costmodels.placement.judge import StepShape
from costmodels.workflow import ACTOR_GENERATION, ACTOR_TRAINING, TaskKind
from formulations.highs import HighsOutcome, solve_highs
from formulations.placement.columns import Column, option_bound
from formulations.pulp_util import variable_factory
from search.placement.group_options import GroupOptions
from search.placement.options import GroupOption

#: relative MIP gap the master is solved to (HiGHS's default 1e-4 would stop short of exact)
MIP_GAP = 1e-9
#: the bound ladder's rungs (:meth:`Master.solve`): objective bounds this far above a lower bound
#: on the master's optimum are tried before the incumbent's cutoff. The slow masters close at the
#: root, whose cut loop runs ~10 s against a loose cutoff and ~1 s against a near one: on
#: small-24 PPO sync the master's HiGHS time falls 67 -> 14 s, same optimum and iterations
#: (benchmarks/results/performance-history.md)
LADDER = (0.005, 0.01, 0.02, 0.04, 0.08)


Row = tuple[dict[int, float], float, float]


def _variables(
    n: int, shape: StepShape, cap: list[int], zone: list[str], routes: dict[tuple[int, int], float]
) -> tuple[list[str], dict[str, int], dict[tuple[str, int, int], int]]:
    """The master's variables: x_o per column, the phase maxima I, R, S, G (sync, or an
    overlapping mode whose trainer trails generation) and M (overlapping modes), and q_zab per
    zone z and route (a, b) into it; their names, the columns of the phase maxima and of the
    q's."""
    phases = ["I", "R", "S"]
    if not shape.overlaps or shape.trailing:
        phases.append("G")
    if shape.overlaps:
        phases.append("M")
    elif shape.reward:
        phases.append("W")  # the reward stage's constant, W >= reward
    names: list[str] = [f"x{i}" for i in range(n)] + phases
    col = {name: i for i, name in enumerate(names)}
    qs: dict[tuple[str, int, int], int] = {}
    for z in sorted(set(zone)):
        for a in range(len(cap)):
            if zone[a] != z:
                continue
            for b in range(len(cap)):
                if (a, b) in routes:
                    qs[(z, a, b)] = len(names)
                    names.append(f"q_{z}_{a}_{b}")
    return names, col, qs


def _phase_rows(
    builder: GroupOptions,
    opts: list[GroupOption],
    floor: list[tuple[float, float, float]],
    col: dict[str, int],
    shape: StepShape,
) -> list[Row]:
    """(3): one row per task and phase, on the options covering the task; (9), in the
    overlapping modes: the same rows on each class's big columns, with the row that picks at
    most one of them."""
    kinds = {task.kind for task in builder.tasks.values()}
    rows: list[Row] = []
    for t in builder.tasks:
        cover = [i for i, o in enumerate(opts) if t in o.tasks]
        rows += _cover_rows(cover, opts, floor, col, shape, kinds)
    for k, nk in enumerate(builder.cap if shape.overlaps else ()):
        big = [i for i, o in enumerate(opts) if 2 * o.comp[k] > nk]
        if len(big) > 1:
            rows.append(({i: 1.0 for i in big}, -np.inf, 1.0))
            rows += _cover_rows(big, opts, floor, col, shape, kinds)
    return rows


def _cover_rows(
    cover: list[int],
    opts: list[GroupOption],
    floor: list[tuple[float, float, float]],
    col: dict[str, int],
    shape: StepShape,
    kinds: set[TaskKind],
) -> list[Row]:
    """Each phase at least its term in the one option of ``cover`` a plan uses: a task's cover
    (3), or a class's big columns (9), of which a plan uses at most one."""
    rows: list[Row] = []
    if TaskKind.INFERENCE in kinds:
        rows.append(
            ({col["I"]: 1.0, **{i: -floor[i][1] for i in cover if floor[i][1]}}, 0.0, np.inf)
        )
    if TaskKind.TRAINING in kinds:
        rows.append(
            ({col["R"]: 1.0, **{i: -floor[i][2] for i in cover if floor[i][2]}}, 0.0, np.inf)
        )
    if "G" in col:
        rows.append(
            ({col["G"]: 1.0, **{i: -floor[i][0] for i in cover if floor[i][0]}}, 0.0, np.inf)
        )
    if not shape.overlaps:
        rows.append(
            (
                {
                    col["G"]: 1.0,
                    col["I"]: 1.0,
                    col["R"]: 1.0,
                    **{i: -sum(floor[i]) for i in cover if sum(floor[i])},
                },
                0.0,
                np.inf,
            )
        )
    else:  # M covers generation's busy GPUs, and the inference then training phases
        whole = {
            i: max(opts[i].busy, floor[i][0], floor[i][1] + floor[i][2], opts[i].joint)
            for i in cover
        }
        rows.append(({col["M"]: 1.0, **{i: -v for i, v in whole.items() if v}}, 0.0, np.inf))
    return rows


def _sync_rows(
    opts: list[GroupOption],
    cap: list[int],
    zone: list[str],
    routes: dict[tuple[int, int], float],
    qs: dict[tuple[str, int, int], int],
    col: dict[str, int],
) -> list[Row]:
    """(4)-(6): per zone, the route its weights arrive by, from a training class to a
    generation class of the zone, and S over its arrival plus fan-out."""
    rows: list[Row] = []
    gen_apart = [
        i
        for i, o in enumerate(opts)
        if ACTOR_GENERATION in o.tasks and ACTOR_TRAINING not in o.tasks
    ]
    train_apart = [
        i
        for i, o in enumerate(opts)
        if ACTOR_TRAINING in o.tasks and ACTOR_GENERATION not in o.tasks
    ]
    for z in sorted(set(zone)):
        members = [a for a in range(len(cap)) if zone[a] == z]
        q = {(a, b): v for (zz, a, b), v in qs.items() if zz == z}
        fed = {i: -1.0 for i in gen_apart if any(opts[i].comp[a] for a in members)}
        rows.append(({**{v: 1.0 for v in q.values()}, **fed}, 0.0, 0.0))  # (4)
        for (a, b), v in q.items():  # (5)
            rows.append(({v: 1.0, **{i: -1.0 for i in gen_apart if opts[i].comp[a]}}, -np.inf, 0.0))
            rows.append(
                ({v: 1.0, **{i: -1.0 for i in train_apart if opts[i].comp[b]}}, -np.inf, 0.0)
            )
        fan = {i: -o.fanout[z] for i, o in enumerate(opts) if o.fanout and o.fanout.get(z)}
        rows.append(
            ({col["S"]: 1.0, **{v: -routes[ab] for ab, v in q.items()}, **fan}, 0.0, np.inf)
        )  # (6)
    return rows


def _symmetry_rows(
    opts: list[GroupOption], symmetry: list[tuple[str, str]], ranks: list[int] | None
) -> list[Row]:
    """(7) symmetry: of interchangeable tasks a < b, a sits in the group of lower or equal rank
    (ranks and the column pool are invariant under renaming them, so one of every set of
    mirror-image plans stays)."""
    rows: list[Row] = []
    for a, b in symmetry if ranks else ():
        coef: dict[int, float] = {}
        for i, o in enumerate(opts):
            coef[i] = (
                coef.get(i, 0.0)
                + (ranks[i] if a in o.tasks else 0.0)
                - (ranks[i] if b in o.tasks else 0.0)
            )
        rows.append(({i: v for i, v in coef.items() if v}, -np.inf, 0.0))
    return rows


def _holds_below(out: HighsOutcome, u: float) -> bool:
    """Whether a rung's run holds a solution below its bound ``u`` (:meth:`Master.solve`)."""
    return (
        out.stopped == "optimal"
        and out.x is not None
        and out.objective is not None
        and (out.objective < u)
    )


class Master:
    """The master ILP (1)-(9) over a list of columns, as sparse rows for HiGHS (highspy) or CBC."""

    def __init__(
        self,
        builder: GroupOptions,
        shape: StepShape,
        columns: list[Column],
        symmetry: list[tuple[str, str]] = (),
        ranks: list[int] | None = None,
        leftover: list[tuple[float, float, float]] | None = None,
        rung_threads: int = 1,
    ):
        opts = [c.option for c in columns]
        n = len(opts)
        # per column, the least (generation, inference, training) phases of any plan using it:
        # its own terms, raised by what the tasks it leaves out cost on the GPUs it leaves (8)
        floor = [
            (max(o.gen, lg), max(o.inf, li), max(o.trn, lr))
            for o, (lg, li, lr) in zip(opts, leftover or [(0.0, 0.0, 0.0)] * n, strict=True)
        ]
        cap = builder.cap
        routes = builder.routes()
        zone = builder.zone_of_class()
        names, col, qs = _variables(n, shape, cap, zone, routes)
        self.size = len(names)
        rows: list[Row] = []
        for t in builder.tasks:  # (1)
            rows.append(({i: 1.0 for i, o in enumerate(opts) if t in o.tasks}, 1.0, 1.0))
        for k, nk in enumerate(cap):  # (2)
            rows.append(
                ({i: float(o.comp[k]) for i, o in enumerate(opts) if o.comp[k]}, -np.inf, float(nk))
            )
        rows += _phase_rows(builder, opts, floor, col, shape)
        rows += _sync_rows(opts, cap, zone, routes, qs, col)
        rows += _symmetry_rows(opts, symmetry, ranks)
        c = np.zeros(self.size)
        for i, o in enumerate(opts):
            c[i] = o.xfer
        c[col["S"]] = 1.0
        if not shape.overlaps:
            c[col["G"]] = c[col["I"]] = c[col["R"]] = 1.0
            if shape.reward:  # G + reward + I + R
                c[col["W"]] = 1.0
                rows.append(({col["W"]: 1.0}, shape.reward, np.inf))
        else:  # M >= reward + I + R and, when the trainer trails, M >= G + w (reward + I + R):
            # overlapped_step with the reward stage on the trainer's path
            c[col["M"]] = 1.0
            rd = shape.reward
            rows.append(({col["M"]: 1.0, col["I"]: -1.0, col["R"]: -1.0}, rd, np.inf))
            if shape.trailing:
                w = shape.trailing
                rows.append(
                    ({col["M"]: 1.0, col["G"]: -1.0, col["I"]: -w, col["R"]: -w}, w * rd, np.inf)
                )
        self.c, self.rows, self.names = c, rows, names
        #: per variable, the least objective of any solution with it at 1: a column's own
        #: phases at their floors (the rows (3) force them when x_o = 1), its transfer and the
        #: reward stage; 0 for the continuous variables (:meth:`_ladder` drops columns above a
        #: rung with it)
        self.own = np.zeros(self.size)
        self.own[:n] = [option_bound(o, shape, lo) for o, lo in zip(opts, floor, strict=True)]
        #: (z, d) of the LP relaxation: its optimum and the reduced costs, once solved
        self.lp: tuple[float, np.ndarray] | None = None
        self.probes = 0  # HiGHS MIP runs of the last solve (the ladder's rungs)
        #: the ladder's rungs run this many at a time (:meth:`_ladder`); the answer is the same
        self.rung_threads = rung_threads
        self.rung_floor: float | None = None
        self.integrality = np.array([1] * n + [0] * (self.size - n))
        self.upper = np.array([1.0] * n + [np.inf] * (self.size - n - len(qs)) + [1.0] * len(qs))

    def solve(
        self,
        backend: str,
        time_limit: float | None,
        threads: int | None,
        cutoff: float = math.inf,
        hint: float | None = None,
    ) -> tuple[str, np.ndarray | None, float | None, float | None]:
        """(status, x, objective, bound): status optimal, feasible (out of time), infeasible or
        unknown. ``cutoff``: plans costing at least this are of no interest; a master with none
        below it reports infeasible.

        **Bound ladder.** Below a finite cutoff HiGHS is first run with objective bounds
        u = max(hint, z) (1 + s) for s in :data:`LADDER` below the cutoff, z the LP optimum and
        ``hint`` a lower bound on this master's optimum (the previous master's, since expanding
        relaxed columns only raises it; z alone on the first master), each with reduced-cost
        fixing against u and without the columns whose own least objective (:attr:`own`)
        exceeds u. The first rung that returns a
        solution below u holds the master's optimum (every solution at or above u is all it
        excluded); a rung with none moves to the next. The last rung is the cutoff itself, so
        the answer is the one without the ladder, and a wrong hint only costs probes. A rung
        counts only with a solution below its bound: HiGHS may say optimal with one above. A
        rung that closes with none proves the master's optimum at least its bound, so when the
        last rung stops on the time limit, the bound returned is the larger of HiGHS's and the
        highest such rung's."""
        if backend == "cbc":
            return self._cbc(time_limit, threads)
        if backend != "highs":
            raise ValueError(f"unknown backend {backend!r}; use highs or cbc")
        a = csc_array(self._matrix())
        keep = np.arange(self.size)
        self.lp, self.probes = None, 0  # this solve's own LP, never an earlier one's
        self.rung_floor: float | None = None  # the highest rung proven empty (_ladder)
        if math.isfinite(cutoff):
            # reduced-cost fixing: a column whose LP reduced cost d_j lifts the LP bound z past the
            # cutoff, z + d_j > cutoff, is in no plan below the cutoff; dropping it before the MIP
            # shrinks the root's cut loop
            t0 = time.perf_counter()
            lp = self._run(a, keep, threads, time_limit, cutoff, relaxation=True)
            if time_limit is not None:
                time_limit -= time.perf_counter() - t0
            if lp.stopped == "infeasible" or (lp.objective is not None and lp.objective >= cutoff):
                return "infeasible", None, None, None
            if lp.objective is not None and lp.col_dual is not None:
                z, dj = lp.objective, lp.col_dual
                self.lp = (z, dj)
                slack = 1e-7 * max(1.0, abs(cutoff))
                keep = np.flatnonzero((self.integrality == 0) | (z + dj <= cutoff + slack))
        out, keep = self._ladder(a, keep, threads, time_limit, cutoff, hint)
        x = out.x
        if x is not None:
            full = np.zeros(self.size)
            full[keep] = x
            x = full
        if out.stopped == "optimal" and x is not None:
            return "optimal", x, out.objective, out.objective
        # infeasible, cut off, or optimal with no solution below the cutoff
        if out.stopped in ("infeasible", "objective_bound", "optimal"):
            return "infeasible", None, None, None
        bound = max((b for b in (out.dual_bound, self.rung_floor) if b is not None), default=None)
        if x is not None:
            return "feasible", x, out.objective, bound
        return "unknown", None, None, bound

    def _ladder(
        self,
        a: csc_array,
        keep: np.ndarray,
        threads: int | None,
        time_limit: float | None,
        cutoff: float,
        hint: float | None,
    ) -> tuple[HighsOutcome, np.ndarray]:
        """The MIP over the rungs (:meth:`solve`, "Bound ladder"): the first rung's outcome with a
        solution below its bound, else the cutoff's; and the columns it ran on.

        With :attr:`rung_threads` > 1 the rungs run that many at a time, in order, each started
        as a thread frees (HiGHS releases the GIL; the column workers idle while a master is
        solved). A rung's verdict is taken only once every rung below it has one, and a rung
        with a solution below its bound interrupts the rungs above it, so the answer, the
        probes and the floor are those of running them one by one; only the wall time
        differs (small-24 PPO sync: its last master's empty rungs 0.23 and 0.22 s run beside
        each other and the cutoff's)."""
        rungs = [cutoff]
        if math.isfinite(cutoff) and self.lp is not None:
            # the LP optimum alone is a lower bound too: the first master, with no hint and the
            # co-located plan's loose cutoff, is the slowest without a rung
            base = self.lp[0] if hint is None else max(hint, self.lp[0])
            rungs = [u for u in (base * (1 + s) for s in LADDER) if u < cutoff] + [cutoff]
        if self.rung_threads > 1 and len(rungs) > 1:
            return self._rungs_at_once(a, keep, rungs, threads, time_limit, cutoff)
        for u in rungs:
            t0 = time.perf_counter()
            c = self._rung_columns(keep, u, cutoff)
            out = self._run(a, c, threads, time_limit, u)
            if time_limit is not None:
                time_limit -= time.perf_counter() - t0
            if not self._rung_empty(out, u, cutoff):
                return out, c
        raise AssertionError("the last rung is the cutoff, which always returns")

    def _rungs_at_once(
        self,
        a: csc_array,
        keep: np.ndarray,
        rungs: list[float],
        threads: int | None,
        time_limit: float | None,
        cutoff: float,
    ) -> tuple[HighsOutcome, np.ndarray]:
        """:meth:`_ladder`'s rungs, :attr:`rung_threads` at a time (its doc says why the answer
        is the one-by-one answer)."""
        start = time.perf_counter()
        cancel = [threading.Event() for _ in rungs]
        running: dict[Future, int] = {}
        done: dict[int, HighsOutcome] = {}
        cols: dict[int, np.ndarray] = {}  # per rung started, the columns it runs on
        below = len(rungs)  # the lowest rung known to hold a solution below its bound
        with ThreadPoolExecutor(self.rung_threads) as pool:

            def launch(j: int) -> None:
                left = None if time_limit is None else time_limit - (time.perf_counter() - start)
                cols[j] = self._rung_columns(keep, rungs[j], cutoff)
                job = pool.submit(self._run, a, cols[j], threads, left, rungs[j], cancel=cancel[j])
                running[job] = j

            try:
                nxt = 0
                for k, u in enumerate(rungs):
                    while k not in done:
                        while nxt < below and len(running) < self.rung_threads:
                            launch(nxt)
                            nxt += 1
                        finished, _ = wait(running, return_when=FIRST_COMPLETED)
                        for job in finished:
                            j = running.pop(job)
                            done[j] = job.result()
                            if j < below and _holds_below(done[j], rungs[j]):
                                below = j  # the rungs above it are not needed
                                for e in cancel[j + 1 :]:
                                    e.set()
                    if not self._rung_empty(done[k], u, cutoff):
                        return done[k], cols[k]
            finally:
                for e in cancel:  # the answer, or an exception: nothing left is needed
                    e.set()
        raise AssertionError("the last rung is the cutoff, which always returns")

    def _rung_columns(self, keep: np.ndarray, u: float, cutoff: float) -> np.ndarray:
        """The columns rung ``u`` runs on: below the cutoff, reduced-cost fixing against u and
        no column whose own least objective exceeds u. The LP's reduced costs alone keep every
        column of its solution (d_j = 0), however slow: the LP then averages a task's phase over
        columns no solution below u may use (testbed PPO async's first master: its hardest rung
        keeps 8 077 of 12 671 columns and closes in half the time)."""
        if u >= cutoff or self.lp is None:
            return keep
        z, dj = self.lp
        slack = 1e-7 * max(1.0, abs(u))
        return np.flatnonzero(
            (self.integrality == 0) | ((z + dj <= u + slack) & (self.own <= u + slack))
        )

    def _rung_empty(self, out: HighsOutcome, u: float, cutoff: float) -> bool:
        """Count rung ``u``'s run; whether it proved nothing lies below u (below the cutoff),
        so the ladder goes on, the master's optimum at least u (:attr:`rung_floor`). A rung
        counts only with a solution below its bound: HiGHS may say optimal with one above."""
        self.probes += 1
        closed = out.stopped in ("infeasible", "objective_bound", "optimal")
        if u < cutoff and closed and not _holds_below(out, u):
            self.rung_floor = u
            return True
        return False

    def _run(
        self,
        a: csc_array,
        cols: np.ndarray,
        threads: int | None,
        time_limit: float | None,
        cutoff: float,
        relaxation: bool = False,
        cancel: threading.Event | None = None,
    ) -> HighsOutcome:
        """HiGHS on the master restricted to columns ``cols``, or with ``relaxation`` on its LP
        relaxation (whose optimum and reduced costs, ``col_dual``, come back when it has one);
        ``cancel`` interrupts it from another thread."""
        sub = a[:, cols] if len(cols) < self.size else a
        return solve_highs(
            self.c[cols],
            sub,
            np.array([r[1] for r in self.rows]),
            np.array([r[2] for r in self.rows]),
            np.zeros(len(cols)),
            self.upper[cols],
            None if relaxation else self.integrality[cols].astype(bool),
            time_limit=None if time_limit is None else max(time_limit, 1e-3),
            mip_gap=MIP_GAP,
            threads=threads,
            objective_bound=None if relaxation else cutoff,
            # its dominated-column pass takes seconds on thousands of columns; the LP
            # does not need it
            presolve=False,
            # the sub-MIP heuristics hunt for plans the cutoff (the incumbent) and the
            # expansions already supply; off, a PPO master's root takes ~15% less
            sub_mip_heuristics=False,
            cancel=cancel,
        )

    def _matrix(self) -> csr_array:
        # CSR straight from the rows (a row's columns are a dict's keys: no duplicates)
        data: list[float] = []
        ci: list[int] = []
        indptr = [0]
        for coef, _, _ in self.rows:
            ci.extend(coef)
            data.extend(coef.values())
            indptr.append(len(ci))
        return csr_array(
            (np.array(data, dtype=float), np.array(ci, dtype=np.int64), np.array(indptr)),
            shape=(len(self.rows), self.size),
        )

    def _cbc(
        self, time_limit: float | None, threads: int | None
    ) -> tuple[str, np.ndarray | None, float | None, float | None]:
        import pulp

        prob = pulp.LpProblem("hetrl_placement", pulp.LpMinimize)
        var = variable_factory(prob)
        v = [
            var(
                name,
                lowBound=0,
                upBound=None if math.isinf(ub) else float(ub),
                cat="Binary" if integ else "Continuous",
            )
            for name, ub, integ in zip(self.names, self.upper, self.integrality, strict=True)
        ]
        prob += pulp.lpSum(float(ci) * v[j] for j, ci in enumerate(self.c) if ci)
        for r, (coef, lb, ub) in enumerate(self.rows):
            expr = pulp.lpSum(val * v[j] for j, val in coef.items())
            if lb == ub:
                prob += expr == lb, f"r{r}"
            else:
                if math.isfinite(lb):
                    prob += expr >= lb, f"r{r}_lo"
                if math.isfinite(ub):
                    prob += expr <= ub, f"r{r}_hi"
        with (
            warnings.catch_warnings()
        ):  # PuLP 3.x marks its bundled CBC deprecated; it still ships it
            warnings.simplefilter("ignore", DeprecationWarning)
            solver = pulp.PULP_CBC_CMD(
                msg=False, timeLimit=time_limit, threads=threads, gapRel=MIP_GAP
            )
        prob.solve(solver)
        if prob.status == pulp.LpStatusInfeasible:
            return "infeasible", None, None, None
        x = np.array([var.value() or 0.0 for var in v])
        if prob.sol_status == pulp.LpSolutionOptimal:
            obj = float(pulp.value(prob.objective))
            return "optimal", x, obj, obj
        if prob.sol_status in (pulp.LpSolutionIntegerFeasible,):
            return "feasible", x, float(pulp.value(prob.objective)), None
        return "unknown", None, None, None
