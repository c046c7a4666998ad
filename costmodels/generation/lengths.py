"""Remaining-length distributions for generation estimates (OrchestrRL §4.1).

A histogram file is CSV with columns ``remaining,count`` and optionally ``context`` (tokens
already cached). A named distribution is ``NAME:key=value,...``:

* ``uniform:low=256,high=4096,n=512,context=1024``
* ``lognormal:median=3000,sigma=0.7,n=512,context=1024,max=16384``
* ``constant:length=2048,n=16,context=8192``

Samples are drawn with a seeded generator and binned into ``bin``-token bins (default 256),
each bin's upper bound standing for its requests' length, as OrchestrRL does.
"""

from __future__ import annotations

import math

import numpy as np

from costmodels.csvtable import read_rows
from costmodels.decode import LengthHistogram
from costmodels.errors import SpecError
from costmodels.key_values import Kind, parse_key_values
from costmodels.limits import MAX_TOKENS, REQUEST_BYTES, check_memory

#: each distribution's arguments and their kinds (``costmodels.key_values``): token counts are
#: numbers (a lognormal's median need not be whole), ``n`` counts requests
DISTRIBUTIONS: dict[str, dict[str, Kind]] = {
    "uniform": {"low": float, "high": float, "n": int, "context": float},
    "lognormal": {"median": float, "sigma": float, "n": int, "context": float, "max": float},
    "constant": {"length": float, "n": int, "context": float},
}


def bin_lengths(lengths: np.ndarray, contexts: np.ndarray, bin_tokens: int) -> LengthHistogram:
    upper = np.maximum(bin_tokens, np.ceil(lengths / bin_tokens) * bin_tokens).astype(int)
    keys: dict[tuple[int, int], int] = {}
    for u, c in zip(upper.tolist(), contexts.astype(int).tolist(), strict=True):
        keys[(u, c)] = keys.get((u, c), 0) + 1
    items = sorted(keys.items())
    return LengthHistogram(
        upper=[k[0] for k, _ in items],
        counts=[v for _, v in items],
        context=[k[1] for k, _ in items],
    )


def _distribution_args(name: str, rest: str) -> dict[str, float]:
    """The ``key=value`` arguments of distribution ``name`` (``costmodels.key_values``: each
    given once, ``n`` an integer, every value a finite number), token counts in range."""
    args = parse_key_values(rest, DISTRIBUTIONS[name], field="lengths", name=name)
    for key, value in args.items():
        if key not in ("n", "sigma") and not 0 <= value <= MAX_TOKENS:
            raise SpecError(f"lengths.{key}", value, f"a token count in 0..{MAX_TOKENS:,}")
    return args  # type: ignore[return-value]  # every kind here is a number


def parse_distribution(text: str, seed: int = 0, bin_tokens: int = 256) -> LengthHistogram:
    """A histogram from ``NAME:key=value,...`` (see module doc)."""
    name, _, rest = text.partition(":")
    if name not in DISTRIBUTIONS:
        raise SpecError(
            "lengths",
            text,
            f"unknown distribution {name!r}; known: {', '.join(DISTRIBUTIONS)} (or a histogram "
            "CSV file)",
        )
    args = _distribution_args(name, rest)
    if args.get("sigma", 0) > 10:
        raise SpecError(
            "lengths.sigma",
            args["sigma"],
            "a lognormal spread above 10 draws lengths past any float",
        )
    n = int(args.get("n", 512))
    if n <= 0:
        raise SpecError("lengths.n", n, "must be > 0")
    check_memory("lengths.n", n, n, REQUEST_BYTES, "requests")
    context = np.full(n, args.get("context", 0.0))
    rng = np.random.default_rng(seed)
    if name == "uniform":
        low, high = args.get("low", 256), args.get("high", 4096)
        if not 0 < low <= high:
            raise SpecError("lengths.low", low, "need 0 < low <= high")
        lengths = rng.uniform(low, high, n)
    elif name == "lognormal":
        median, sigma = args.get("median", 2048), args.get("sigma", 0.7)
        if median <= 0:
            raise SpecError("lengths.median", median, "must be > 0")
        if sigma < 0:
            raise SpecError("lengths.sigma", sigma, "must be >= 0")
        lengths = np.minimum(rng.lognormal(math.log(median), sigma, n), args.get("max", 32768))
    else:
        length = args.get("length", 1024)
        if length <= 0:
            raise SpecError("lengths.length", length, "must be > 0")
        lengths = np.full(n, length)
    return bin_lengths(lengths, context, bin_tokens)


def parse_histogram_csv(text: str, source: str) -> LengthHistogram:
    """A histogram from CSV text with ``remaining,count[,context]`` columns."""
    rows = read_rows(text, ("remaining", "count"), ("context",), source, "histogram CSV")
    upper, counts, ctx = [], [], []
    for i, row in enumerate(rows):
        try:
            values = [
                float(row["remaining"]),
                float(row["count"]),
                float(row.get("context") or 0),
            ]
        except (TypeError, ValueError):
            raise SpecError(
                f"row {i + 2}", dict(row), "remaining, count and context must be numbers", source
            ) from None
        for column, value in zip(("remaining", "count", "context"), values, strict=True):
            # a fraction would be cut to an integer silently (1.5 requests read as 1)
            if not math.isfinite(value) or value != int(value):
                raise SpecError(
                    f"row {i + 2}.{column}", row.get(column), "must be a whole number", source
                )
        u, c, x = (int(v) for v in values)
        if u <= 0 or c < 0 or x < 0:
            raise SpecError(
                f"row {i + 2}", dict(row), "need remaining > 0, count >= 0, context >= 0", source
            )
        upper.append(u)
        counts.append(c)
        ctx.append(x)
    if not upper or sum(counts) == 0:
        raise SpecError("", source, "the histogram holds no requests", source)
    # every counted request becomes one object, as a distribution's n does: size the total first
    total = sum(counts)
    try:
        check_memory("count", f"{total} in total", total, REQUEST_BYTES, "requests")
    except SpecError as exc:
        raise exc.with_source(source) from None
    return LengthHistogram(upper=upper, counts=counts, context=ctx)
