"""OrchestrRL compute re-planning (Eq. 1): problem, cost model, validator."""
