"""Exact co-scheduling models (RollMux offline optimum)."""
