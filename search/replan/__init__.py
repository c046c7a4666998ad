"""OrchestrRL compute re-planning (Eq. 1): the incremental instance loads the greedy and the
MILP's packing primal share."""
