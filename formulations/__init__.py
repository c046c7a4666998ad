"""Exact models (MILP/ILP/CP-SAT), one module per problem. Imports costmodels only."""
