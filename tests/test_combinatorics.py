"""The shared set-partition generators (costmodels.combinatorics): every partition exactly once,
as many as the Bell and Stirling numbers say, in one fixed order."""

from __future__ import annotations

import math

from hypothesis import given
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
