"""HetRL placement (§3): the problem and plan types, the cost model of Appendix B, the independent
validator, the search space exact and heuristic solvers share, and framework exports."""
