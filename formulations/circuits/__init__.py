"""Exact circuit-allocation models (lexicographic MILP on HiGHS, CP-SAT) and brute force."""
