"""HetRL placement's Level 4 (§3.4, §3.5): the Pareto-optimal options of a task subset on a GPU
group, shared by the exact ILP and SHA-EA."""
