"""Exact solvers of the rollout problem."""
