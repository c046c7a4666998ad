"""The response-length distribution of an RL job, and what a step's phases read from it.

Real rollouts draw each response's length from a heavy-tailed distribution cut at the job's
maximum (RollPacker §2.2, OrchestrRL Fig. 3a, RollMux Fig. 11; verl's ``fully_async`` document
shows the step's generation deciding by its longest response). HetRL Appendix B gives every
response exactly the maximum; ``constant`` keeps that literal model.

A distribution is one of:

* ``constant``: every response is ``cap`` tokens long (HetRL Appendix B);
* ``lognormal``: L = min(cap, exp(ln median + sigma Z)), Z ~ N(0, 1), median and sigma in log
  space (a ``sigma`` of 0 is a constant ``median``);
* ``histogram``: ``bins`` of ``[length, weight]``, each bin's responses ``length`` tokens long,
  weights relative. A bin above the cap is accepted on purpose and its responses are cut at the
  cap, as a lognormal's tail is: the engine stops a response there, so a histogram measured under
  a larger cap describes the same prompts under a smaller one. Its median bin must be within
  the cap, as a lognormal's median must (``WorkflowSpec.check``).

**Deterministic samples.** The judge never draws: ``n`` responses are the stratified quantiles
L_k = F^-1((k + 1/2) / n), k = 0..n-1, of the capped distribution. The step's longest response,
which a synchronous phase waits for, is instead its expectation over draws
(:meth:`ResponseLengths.longest_of`), with a prompt's responses alike: a step of more responses
waits for a longer one, as a real one does, and a capped tail reaches the cap only as often
as the draws do. A step's expected phase time is near linear in its longest response where
the tail decides it, so the expectation is the statistic the mean step needs. The order a
replica admits them in is a fixed interleaving (:func:`admission_order`), neither shortest
nor longest first, as requests arrive at a serving engine. The placement judge costs each
generation replica as the one that drew the step's longest response
(``costmodels.placement.decode_cost.replica_lengths``).

**Prompts.** A prompt's responses are alike: a hard prompt's are all long (RollPacker §2.2's
synthetic traces split ln-length's spread into a prompt's and a response's part,
``costmodels.generation.request_traces``), and RL frameworks keep a prompt's responses on one
rollout replica (verl hands each rank a chunk of prompts; ROLL sends a prompt with its
``num_return_sequences``). ``prompt_share`` (rho, 0 to 1, 0 by default: every response drawn on
its own; 1: a prompt's responses all equally long, the limit the model reaches continuously)
is the part of a response's normal score its prompt sets. With rho > 0 the replicas of one step
do not hold equal work, and the phase waits for the most loaded
(:meth:`ResponseLengths.slowest_replica`): verl's measured ``gen`` (the slowest rank) is 1.28x
its ``generate_sequences`` (the ranks' mean) where every rank's own longest response already
reaches the cap (``benchmarks/results/fidelity/steps.md``, row A3).
"""

from __future__ import annotations

import functools
import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from costmodels.limits import MAX_TOKENS

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

#: bins a histogram may hold (a 256-token histogram of the longest context is 4 096 bins)
MAX_BINS = 65_536
#: quantiles a phase's expected per-sequence cost is averaged over (training, inference): the
#: quantile rule's error on a smooth cost is O(1/n^2) of its spread
MEAN_POINTS = 256


class ResponseLengths(BaseModel):
    """How long the responses of one step are (module doc); ``cap`` is the job's maximum."""

    model_config = _STRICT

    distribution: Literal["constant", "lognormal", "histogram"] = Field(
        default="constant",
        description="constant (HetRL's every response at the maximum), lognormal or histogram",
    )
    median: float | None = Field(
        default=None, gt=0, le=MAX_TOKENS, description="lognormal: median response, tokens"
    )
    sigma: float = Field(default=0.0, ge=0, le=5, description="lognormal: spread of ln(length)")
    bins: tuple[tuple[float, float], ...] | None = Field(
        default=None,
        max_length=MAX_BINS,
        description=(
            "histogram: [length tokens, relative weight] per bin; a length above the workflow's "
            "response_length is cut to it"
        ),
    )
    prompt_share: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description=(
            "share of a response's spread (in normal scores) common to its prompt's responses, "
            "0 to 1: 0 draws each response on its own; above 0 the slowest generation replica "
            "holds the hardest prompts; 1 makes a prompt's responses equally long"
        ),
    )
    source: str = Field(default="", description="where these statistics come from")

    @model_validator(mode="after")
    def _fields_of_the_kind(self) -> ResponseLengths:
        kind = self.distribution
        if kind == "lognormal" and self.median is None:
            raise ValueError("a lognormal distribution needs its median (tokens)")
        if kind != "lognormal" and (self.median is not None or self.sigma):
            raise ValueError(f"median and sigma belong to a lognormal, not to {kind}")
        if kind == "histogram":
            if not self.bins:
                raise ValueError("a histogram needs bins: [[length, weight], ...]")
            for length, weight in self.bins:
                if not (0 < length <= MAX_TOKENS) or weight < 0:
                    raise ValueError(
                        f"bin [{length:g}, {weight:g}]: need 0 < length <= {MAX_TOKENS:,} "
                        "and weight >= 0"
                    )
            if sum(w for _, w in self.bins) <= 0:
                raise ValueError("the histogram's weights sum to 0")
        elif self.bins is not None:
            raise ValueError(f"bins belong to a histogram, not to {kind}")
        if kind == "constant" and self.prompt_share:
            raise ValueError("prompt_share belongs to a lognormal or a histogram, not to constant")
        return self

    @property
    def is_constant(self) -> bool:
        return self.distribution == "constant"

    def uncapped_median(self) -> float | None:
        """The median length before the cap (tokens): a lognormal's ``median``, a histogram's
        weighted median bin (the length :meth:`quantile` gives at u = 0.5); None for
        ``constant``, which is the cap itself."""
        if self.distribution == "lognormal":
            return self.median
        if self.distribution != "histogram" or not self.bins:
            return None
        bins = sorted(self.bins)
        total, seen = sum(w for _, w in bins), 0.0
        for length, weight in bins:
            seen += weight
            if seen / total > 0.5:
                return float(length)
        return float(bins[-1][0])

    def quantile(self, u: np.ndarray, cap: int) -> np.ndarray:
        """F^-1(u) of the capped distribution, in tokens (at least 1)."""
        if self.distribution == "constant":
            out = np.full(u.shape, float(cap))
        elif self.distribution == "lognormal":
            from scipy.special import ndtri

            assert self.median is not None
            out = self.median * np.exp(self.sigma * ndtri(u))
        else:
            assert self.bins is not None
            bins = sorted(self.bins)
            lengths = np.array([b[0] for b in bins])
            cdf = np.cumsum([b[1] for b in bins])
            cdf = cdf / cdf[-1]
            out = lengths[np.minimum(np.searchsorted(cdf, u, side="right"), len(lengths) - 1)]
        return np.clip(np.round(out), 1, cap)

    def sample(self, n: int, cap: int) -> np.ndarray:
        """The ``n`` stratified quantiles of the module doc, ascending (tokens)."""
        return _sample(self, n, cap)

    def slowest_replica(
        self, n: int, per_prompt: int, replicas: int, cap: int, step: int = 0
    ) -> np.ndarray:
        """The ``n`` responses (ascending, tokens) of the most loaded of ``replicas`` replicas
        that each hold n responses of prompts of ``per_prompt`` (module doc, "Prompts"), and,
        given ``step`` (the step's responses), the prompt of the step's longest response.

        Without a ``prompt_share`` (or with one replica) these are :meth:`sample`'s. With
        rho = ``prompt_share``, a response's normal score is sqrt(rho) A + sqrt(1 - rho) E with
        A its prompt's and E its own, both N(0, 1); the replica's g = ceil(n / per_prompt)
        prompts are the stratified quantiles of A shifted up by z(R) / sqrt(g), the expected
        largest mean of g prompts over R replicas (:func:`expected_max_normal`), and each
        prompt's responses the stratified quantiles of E; the length of a score s is
        F^-1(Phi(s)), capped. The replica that holds the step's longest response holds that
        response's prompt, whose other responses are long too: the replica's top prompt's A is
        raised, where that is higher, to its expectation given that the prompt's longest score
        is E[M], M the step's largest (:meth:`longest_of`, :func:`_prompt_of_longest`)."""
        if self.prompt_share == 0:  # always so for constant (the validator refuses a share)
            return self.sample(n, cap)
        return _slowest_replica(self, n, max(1, per_prompt), max(1, replicas), cap, step)

    def longest_of(self, n: int, cap: int, per_prompt: int = 1) -> int:
        """The expected longest of ``n`` responses, E[min(cap, max L)], tokens: of n drawn on
        their own (``per_prompt`` 1), or of prompts of ``per_prompt`` alike responses
        (module doc, "Prompts"), whose longest is shorter: a step's responses come from fewer
        independent prompts (:func:`_longest_law`)."""
        if self.distribution == "constant":
            return cap
        return _step_longest(self, n, per_prompt, cap)[0]

    def mean(self, cap: int) -> float:
        """E[min(L, cap)], tokens."""
        return float(self.sample(MEAN_POINTS, cap).mean())

    def describe(self, cap: int) -> str:
        """One line for summaries: the kind, its parameters and the mean it gives."""
        if self.distribution == "constant":
            return f"constant {cap} tokens (HetRL's literal model)"
        q = self.sample(MEAN_POINTS, cap)
        head = (
            f"lognormal median {self.median:g}, sigma {self.sigma:g}"
            if self.distribution == "lognormal"
            else f"histogram of {len(self.bins or [])} bins"
        )
        if self.prompt_share:
            head += f", prompt share {self.prompt_share:g}"
        return f"{head}, cap {cap}: mean {q.mean():.0f}, P99 {np.quantile(q, 0.99):.0f} tokens"


@functools.lru_cache(maxsize=4096)
def _sample(lengths: ResponseLengths, n: int, cap: int) -> np.ndarray:
    u = (np.arange(n) + 0.5) / n
    out = lengths.quantile(u, cap)
    out.setflags(write=False)
    return out


def expected_max_normal(ranks: int) -> float:
    """Blom's approximation of E[max of ``ranks`` standard normals] (0 for one rank): how far
    above the mean the largest of ``ranks`` equal parts lies, in their standard deviations
    (``costmodels.straggler`` for training's ranks, :meth:`ResponseLengths.slowest_replica` for
    generation's)."""
    if ranks <= 1:
        return 0.0
    from scipy.special import ndtri

    return float(ndtri((ranks - 0.375) / (ranks + 0.25)))


#: normal scores the expected longest is integrated over (the longest of 10^9 standard normals
#: exceeds 8.5 with probability below 1e-8) and the grid's points: its error on E[max] is below
#: 0.1% of the cap (``tests/test_response_lengths.py`` holds it to a draw)
_SCORE_SPAN, _SCORE_POINTS = 8.5, 1701
#: a prompt's normal scores A the conditional law of its responses is averaged over (beyond 6
#: standard deviations lies 2e-9 of A's mass) and their points, 0.05 apart
_PROMPT_SPAN, _PROMPT_POINTS = 6.0, 241


def _step_longest(lengths: ResponseLengths, n: int, per_prompt: int, cap: int) -> tuple[int, float]:
    """:func:`_longest_law` of a step of ``n`` responses in prompts of ``per_prompt`` (at least
    one of each, a prompt no larger than the step)."""
    n = max(1, n)
    return _longest_law(lengths, n, max(1, min(per_prompt, n)), cap)


@functools.lru_cache(maxsize=4096)
def _longest_law(lengths: ResponseLengths, n: int, per_prompt: int, cap: int) -> tuple[int, float]:
    """(E[F^-1(Phi(M))] capped, in tokens, and E[M]), M the largest normal score of ``n``
    responses in prompts of ``per_prompt`` (module doc). With rho = ``prompt_share`` and a
    prompt's responses sharing its A ~ N(0, 1), P(a prompt's m scores <= s) =
    E_A[Phi((s - sqrt(rho) A) / sqrt(1 - rho))^m] (Phi(s)^m at rho = 0, Phi(s) at rho = 1);
    q = n // m whole prompts and one of the r = n mod m left give P(M <= s) = P_m(s)^q P_r(s).
    Each expectation sums its value at each grid cell of s against the cell's mass of M's law
    (the length is nondecreasing in s).

    This replaces the top stratified quantile F^-1(1 - 1/(2n)), which a capped tail pins at the
    cap whenever the cap holds more than 1/(2n) of the responses, though most steps' longest
    response stops short of it: on RollPacker's 32k job (64 H800) the step's longest averaged
    23k tokens over 400 draws of the rollout pool, and only 30% reached the 32k cap."""
    from scipy.special import log_ndtr, ndtr

    s = np.linspace(-_SCORE_SPAN, _SCORE_SPAN, _SCORE_POINTS)
    rho = lengths.prompt_share
    q, r = divmod(n, per_prompt)

    def log_p(m: int) -> np.ndarray:
        """ln P(the largest score of one prompt's m responses <= s)."""
        if rho == 0 or m == 1:
            return m * log_ndtr(s)
        if rho >= 1:
            return log_ndtr(s)
        a = np.linspace(-_PROMPT_SPAN, _PROMPT_SPAN, _PROMPT_POINTS)
        w = np.exp(-0.5 * a * a)
        z = (s[:, None] - math.sqrt(rho) * a[None, :]) / math.sqrt(1 - rho)
        inner = np.exp(m * log_ndtr(z)) @ (w / w.sum())
        return np.log(np.maximum(inner, 1e-300))

    f = np.exp(q * log_p(per_prompt) + (log_p(r) if r else 0.0))
    # M's mass: below the grid, in each cell, above it
    mass = np.concatenate(([f[0]], np.diff(f), [1 - f[-1]]))

    def expect(v: np.ndarray) -> float:
        """E[v(M)] of a v sampled on the grid (each cell at its midpoint)."""
        return float(mass @ np.concatenate(([v[0]], 0.5 * (v[1:] + v[:-1]), [v[-1]])))

    mean = expect(lengths.quantile(ndtr(s), cap))
    return int(min(cap, max(1, round(mean)))), expect(s)


def _prompt_of_longest(rho: float, m: int, x: float) -> float:
    """E[A | X = x], X = sqrt(rho) A + sqrt(1 - rho) max(E_1..E_m) the longest score of a
    prompt of m responses: sqrt(rho) (x - sqrt(1 - rho) mu_m) / (rho + (1 - rho) var_m), the
    linear regression of A on X, mu_m and var_m the mean and variance of the largest of m
    standard normals (by quadrature of its density m phi Phi^(m-1))."""
    from scipy.special import log_ndtr

    if m <= 1:
        mu, var = 0.0, 1.0
    else:
        z = np.linspace(-_SCORE_SPAN, _SCORE_SPAN, _SCORE_POINTS)
        density = m * np.exp(-0.5 * z * z + (m - 1) * log_ndtr(z))
        density /= density.sum()
        mu = float((z * density).sum())
        var = float(((z - mu) ** 2 * density).sum())
    return math.sqrt(rho) * (x - math.sqrt(1 - rho) * mu) / (rho + (1 - rho) * var)


@functools.lru_cache(maxsize=512)  # arrays of a replica's size: costmodels.placement.decode_cost
def _slowest_replica(
    lengths: ResponseLengths, n: int, per_prompt: int, replicas: int, cap: int, step: int
) -> np.ndarray:
    from scipy.special import ndtr, ndtri

    g = -(-n // per_prompt)
    rho = lengths.prompt_share
    prompts = ndtri((np.arange(g) + 0.5) / g) + expected_max_normal(replicas) / math.sqrt(g)
    if step:  # the prompt of the step's longest response (ascending: the last)
        longest_score = _step_longest(lengths, step, per_prompt, cap)[1]
        prompts[-1] = max(prompts[-1], _prompt_of_longest(rho, per_prompt, longest_score))
    own = ndtri((np.arange(per_prompt) + 0.5) / per_prompt)
    score = math.sqrt(rho) * prompts[:, None] + math.sqrt(1 - rho) * own[None, :]
    out = np.sort(lengths.quantile(ndtr(score.ravel()), cap))
    if len(out) > n:  # a last prompt only partly on this replica: keep n spread over the range
        out = out[np.round(np.linspace(0, len(out) - 1, n)).astype(int)]
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=512)  # as _slowest_replica
def admission_order(n: int) -> tuple[int, ...]:
    """A fixed interleaving of 0..n-1 (the bit-reversal permutation of the next power of two,
    restricted to n): every prefix holds short and long responses alike, as a serving engine's
    queue does, and the result depends on n only."""
    if n <= 1:
        return tuple(range(n))
    bits = math.ceil(math.log2(n))
    order = []
    for k in range(1 << bits):
        r = int(format(k, f"0{bits}b")[::-1], 2)
        if r < n:
            order.append(r)
    return tuple(order)
