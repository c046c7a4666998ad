"""Exact re-planning models (OrchestrRL Eq. 1)."""
