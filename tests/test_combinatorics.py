"""The shared grouping generators (costmodels.combinatorics): every partition exactly once, as
many as the Bell and Stirling numbers say, in one fixed order; every pinning orbit exactly once."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodels.combinatorics import restricted_growth_strings, set_partitions

BELL = [1, 1, 2, 5, 15, 52, 203, 877]


def stirling2(n: int, k: int) -> int:
    return sum((-1) ** i * math.comb(k, i) * (k - i) ** n for i in range(k + 1)) // math.factorial(
        k
    )


@given(st.integers(0, 7))
def test_set_partitions_are_every_partition_once(n):
    items = list(range(n))
    parts = list(set_partitions(items))
    assert len(parts) == BELL[n]
    canon = {frozenset(frozenset(b) for b in p) for p in parts}
    assert len(canon) == len(parts)
    assert all(sorted(x for b in p for x in b) == items and all(b for b in p) for p in parts)
    assert parts == list(set_partitions(items)), "deterministic order"


@given(st.integers(1, 8), st.integers(1, 8))
def test_restricted_growth_strings_count_stirling_numbers(n, k):
    strings = list(restricted_growth_strings(n, k))
    assert len(strings) == (stirling2(n, k) if k <= n else 0)
    assert strings == sorted(strings) and len({tuple(s) for s in strings}) == len(strings)
    for s in strings:
        assert s[0] == 0 and max(s) == k - 1 and all(s[i] <= max(s[:i]) + 1 for i in range(1, n))


def _orbit(pins, bins):
    """A pinning up to relabelling the bins: the multiset of bin columns (which items use it)."""
    return tuple(sorted(tuple(b in p for p in pins) for b in range(bins)))


@pytest.mark.parametrize(
    "sizes", [[1, 1, 1], [2, 1], [2, 2, 2], [3, 2, 1], [1, 2, 2, 1], [3, 3, 2]]
)
def test_canonical_pinnings_hold_each_orbit_once(sizes):
    from costmodels.combinatorics import canonical_pinnings

    for bins in range(max(sizes), sum(sizes) + 1):
        every = {
            _orbit(p, bins)
            for p in itertools.product(*(itertools.combinations(range(bins), k) for k in sizes))
            if len(set().union(*map(set, p))) == bins
        }
        found = [_orbit(p, bins) for p in canonical_pinnings(sizes, bins)]
        assert len(found) == len(set(found)) and set(found) == every, (sizes, bins)


def test_canonical_pinnings_are_restricted_growth_strings_for_single_pins():
    from costmodels.combinatorics import canonical_pinnings, restricted_growth_strings

    for n in range(1, 7):
        for bins in range(1, n + 1):
            found = [[p[0] for p in pins] for pins in canonical_pinnings([1] * n, bins)]
            assert found == list(restricted_growth_strings(n, bins))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 3), min_size=1, max_size=4),
    st.lists(st.floats(0.0, 5.0), min_size=4, max_size=4),
    st.floats(1.0, 12.0),
)
def test_capacity_pruning_keeps_exactly_the_orbits_that_fit(sizes, loads, cap):
    from costmodels.combinatorics import canonical_pinnings

    weights = [(loads[i],) for i in range(len(sizes))]
    for bins in range(max(sizes), sum(sizes) + 1):
        pruned = {_orbit(p, bins) for p in canonical_pinnings(sizes, bins, weights, (cap,))}
        kept = {
            _orbit(p, bins)
            for p in canonical_pinnings(sizes, bins)
            if all(
                sum(w[0] for w, pin in zip(weights, p, strict=True) if b in pin)
                <= cap * (1 + 1e-9) + 1e-9
                for b in range(bins)
            )
        }
        assert pruned == kept
