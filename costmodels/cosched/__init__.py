"""RollMux co-scheduling (file 003): RL jobs on shared rollout and training pools. Data shapes only
so far: no solvers, so the planner refuses the problem at load."""
