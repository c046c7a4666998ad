"""RollPacker rollout policies on the generation simulator (RollPacker §3-§4)."""
