"""The fully-async benchmark's per-instance run on its smallest instance (small-8, GRPO)."""

from __future__ import annotations

import pytest

from benchmarks.fully_async import SETTINGS, run_instance


@pytest.mark.slow
def test_small8_grpo_fully_async_instance() -> None:
    """Three of the five settings (the others take the unit suite's time for the same facts)."""
    settings = tuple(s for s in SETTINGS if s[0] in ("one-step-off", "drain (s=0)", "s=0.5"))
    rows = run_instance("small-8", "grpo-async-qwen3-4b", settings)
    assert [r["setting"] for r in rows] == [label for label, _ in settings]
    assert all(r["dropped"] == "" and r["status"] == "optimal" for r in rows), rows
    by = {r["setting"]: r["objective_s"] for r in rows}
    # a rollouter that drains also waits for the trainer's last update: never faster than
    # one-step-off; one that runs ahead never slower
    assert by["drain (s=0)"] >= by["one-step-off"] * (1 - 1e-9)
    assert by["one-step-off"] >= by["s=0.5"]
    assert all(r["regret"] >= 1 - 1e-9 for r in rows)
