"""Step-level output-length forecasts (OrchestrRL §4.1): "at the beginning of each step, we forecast
this histogram using an ARIMA model trained on output-length statistics from recent steps".

The statistics are the quantiles of log length at fixed levels (``LEVELS``); each quantile's
series over recent steps gets an ARIMA(1, 1, 0) with drift (statsmodels; one difference and a
drift term for the step-to-step drift, one AR term; on the drifting synthetic trace it beats the
last step, a constant mean and ARIMA(1, 0, 0), and is within a point of ARIMA(0, 1, 1) with drift,
which fits 20x slower), its one-step forecast is taken, the forecast quantiles are sorted
(fitted independently they could cross) and the distribution is rebuilt by interpolating the
quantile function. The histogram (256-token bins, counts scaled to the step's batch) follows.
The baseline is the last step's lengths. The error measure is the relative L1 distance of the
binned histograms, sum |h_hat - h| / sum h, next to the error of the total decode work.
"""

from __future__ import annotations

import warnings

import numpy as np

LEVELS = np.array([0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999])


def forecast_quantiles(
    history: list[np.ndarray], order: tuple[int, int, int] = (1, 1, 0), trend: str = "t"
) -> np.ndarray:
    """One-step ARIMA forecast of each log-length quantile (module doc)."""
    from statsmodels.tsa.arima.model import ARIMA

    series = np.array(
        [np.quantile(np.log(np.maximum(h, 1)), LEVELS) for h in history]
    )  # steps x levels
    out = np.empty(len(LEVELS))
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore"
        )  # short series: statsmodels warns about convergence and frequency
        for i in range(len(LEVELS)):
            try:
                out[i] = float(ARIMA(series[:, i], order=order, trend=trend).fit().forecast(1)[0])
            except (ValueError, np.linalg.LinAlgError):
                out[i] = series[-1, i]
    return np.exp(np.maximum.accumulate(out))


def lengths_from_quantiles(
    quantiles: np.ndarray, samples: int = 4096, max_len: int | None = None
) -> np.ndarray:
    """Lengths at evenly spaced probabilities, interpolating the quantile function in log space."""
    p = (np.arange(samples) + 0.5) / samples
    levels = np.concatenate([[0.0], LEVELS, [1.0]])
    logq = np.log(quantiles)
    ends = np.concatenate(
        [[max(0.0, logq[0] - (logq[1] - logq[0]))], logq, [logq[-1] + (logq[-1] - logq[-2])]]
    )
    out = np.rint(np.exp(np.interp(p, levels, ends))).astype(int)
    return np.clip(out, 1, max_len) if max_len else np.maximum(out, 1)


def histogram(
    lengths: np.ndarray, bin_tokens: int = 256, bins: int | None = None, scale: float = 1.0
) -> np.ndarray:
    """Counts per bin of ``bin_tokens`` (bin i holds lengths in (i W, (i + 1) W])."""
    idx = (np.asarray(lengths) - 1) // bin_tokens
    n = int(bins if bins is not None else idx.max() + 1)
    return np.bincount(np.minimum(idx, n - 1), minlength=n) * scale


def relative_error(
    forecast: np.ndarray, actual: np.ndarray, bin_tokens: int = 256
) -> dict[str, float]:
    """L1 histogram error (counts scaled to the actual batch) and total-work error."""
    n = int(max(forecast.max(), actual.max()) - 1) // bin_tokens + 1
    h_hat = histogram(forecast, bin_tokens, n, len(actual) / len(forecast))
    h = histogram(actual, bin_tokens, n)
    return {
        "histogram": float(np.abs(h_hat - h).sum() / h.sum()),
        "work": float(abs(forecast.mean() - actual.mean()) / actual.mean()),
    }


#: the golden-ratio step of :func:`spread_level`'s low-discrepancy sequence
GOLDEN = (5**0.5 - 1) / 2


def conditional_remaining(
    sorted_lengths: np.ndarray, generated: int, level: float, floor: int = 1
) -> int:
    """The ``level`` quantile of L - g given L > g under the forecast lengths, given sorted
    (``heuristics.replan.policies``, "Proactive planning")."""
    tail = sorted_lengths[np.searchsorted(sorted_lengths, generated, side="right") :]
    if not len(tail):  # outlived the forecast: assume it is close to done
        return max(floor, int(0.1 * generated))
    return max(floor, int(tail[min(len(tail) - 1, int(level * len(tail)))]) - generated)


def spread_level(rid: int) -> float:
    """A deterministic level in (0, 1) per request (golden-ratio sequence over ids): over many
    requests the estimates reproduce the conditional distribution, tail included, without any
    request's true length."""
    return (rid * GOLDEN) % 1.0
