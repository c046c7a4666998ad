"""RollPacker rollout policies on the generation simulator (issue 15)."""
