"""OrchestrRL re-planning heuristics and online policies."""
