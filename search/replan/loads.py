"""Incremental T_j aggregates of an assignment in progress (:class:`Loads`), shared by the
greedy's LPT and the MILP's packing primal."""

from __future__ import annotations

import numpy as np

from costmodels.replan.layouts import Slot
from costmodels.replan.problem import ReplanProblem


class Loads:
    """Per-instance aggregates of an assignment in progress, kept incrementally: Σ w x, Σ (L/B) x,
    the longest request, the migration paid and whether the instance is used (T_j terms of the
    problem's module doc), so that adding or removing a request is O(1) and the objective term of
    every instance after a hypothetical add is one vectorised expression."""

    def __init__(self, problem: ReplanProblem, chosen: list[Slot]):
        self.problem, self.slots = problem, chosen
        nb, ns = len(problem.bins), len(chosen)
        cfgs = [problem.configs[s.tp] for s in chosen]
        self.L = problem.lengths
        self.alpha = np.array([c.alpha for c in cfgs])
        self.switch = np.array([s.switch_s for s in chosen])
        self.w = np.array([c.work for c in cfgs]).reshape(ns, nb)
        self.fits = np.array([c.concurrency for c in cfgs]).reshape(ns, nb) > 0
        self.t = np.array([c.token_steps for c in cfgs]).reshape(ns, nb)
        self.mu = np.array([c.migrate for c in cfgs]).reshape(ns, nb)
        self.local = np.zeros((ns, nb), dtype=np.int64)
        for j, s in enumerate(chosen):
            if s.kept is not None:
                self.local[j] = problem.resident[s.kept]
        self.x = np.zeros((ns, nb), dtype=np.int64)
        self.work, self.tok, self.lmax, self.mig = (
            np.zeros(ns),
            np.zeros(ns),
            np.zeros(ns),
            np.zeros(ns),
        )
        self.count = np.zeros(ns, dtype=np.int64)

    def totals(self) -> np.ndarray:
        used = self.count > 0
        return np.where(
            used,
            self.work + self.alpha * np.maximum(self.lmax, self.tok) + self.mig + self.switch,
            0.0,
        )

    def add(self, j: int, b: int, n: int = 1) -> None:
        paid = max(0, int(self.x[j, b]) + n - int(self.local[j, b])) - max(
            0, int(self.x[j, b]) - int(self.local[j, b])
        )
        self.x[j, b] += n
        self.count[j] += n
        self.work[j] += n * self.w[j, b]
        self.tok[j] += n * self.t[j, b]
        self.mig[j] += paid * self.mu[j, b]
        self.lmax[j] = max(self.lmax[j], self.L[b])

    def remove(self, j: int, b: int) -> None:
        paid = 1 if self.x[j, b] > self.local[j, b] else 0
        self.x[j, b] -= 1
        self.count[j] -= 1
        self.work[j] -= self.w[j, b]
        self.tok[j] -= self.t[j, b]
        self.mig[j] -= paid * self.mu[j, b]
        if self.x[j, b] == 0 and self.L[b] >= self.lmax[j]:
            present = np.flatnonzero(self.x[j])
            self.lmax[j] = self.L[present[-1]] if len(present) else 0.0

    def after_add(self, b: int) -> np.ndarray:
        """Every instance's objective term if one request of bin b joined it (inf where it does not
        fit)."""
        extra_mig = np.where(self.x[:, b] >= self.local[:, b], self.mu[:, b], 0.0)
        out = (
            self.work
            + self.w[:, b]
            + self.alpha * np.maximum(np.maximum(self.lmax, self.L[b]), self.tok + self.t[:, b])
            + self.mig
            + extra_mig
            + self.switch
        )
        return np.where(self.fits[:, b], out, np.inf)

    def room(self, b: int, level: float) -> np.ndarray:
        """How many more requests of bin b each instance takes while its objective term stays at
        or below ``level`` (0 where the bin does not fit).

        T_j after n more is ``base + n w + μ (n - f)^+ + α max(A, K + n s)`` with base the terms it
        holds (switch included: the instance is, or becomes, used), A = max(longest, L_b), K its
        decode steps so far and f its residents of bin b not yet placed (they add no migration).
        T_j is convex and increasing in n, so the largest n is the floor of the smaller of its two
        linear pieces' roots, first without migration, then with it beyond f."""
        w, s, mu = self.w[:, b], self.t[:, b], self.mu[:, b]
        free = np.maximum(self.local[:, b] - self.x[:, b], 0)
        reach = level - (self.work + self.mig + self.switch) + 1e-9
        top = np.maximum(self.lmax, self.L[b])

        def most(extra: np.ndarray, per: np.ndarray) -> np.ndarray:
            by_longest = (reach + extra - self.alpha * top) / per
            by_tokens = (reach + extra - self.alpha * self.tok) / (per + self.alpha * s)
            return np.floor(np.minimum(by_longest, by_tokens))

        n = most(np.zeros_like(w), w)
        n = np.where(n >= free, most(mu * free, w + mu), n)
        return np.where(self.fits[:, b], np.maximum(n, 0), 0).astype(np.int64)
