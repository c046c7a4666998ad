"""Search code the exact models and the heuristics of a problem share (one package per problem).
Imports costmodels only; formulations and heuristics import it."""
