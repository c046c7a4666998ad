"""RollMux online scheduling and baselines."""
