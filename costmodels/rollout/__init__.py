"""RollPacker rollout planning (RollPacker §3-§4): the workload and its cost model."""
