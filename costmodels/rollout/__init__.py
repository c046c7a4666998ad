"""RollPacker rollout planning (issue 15): the workload and its cost model."""
