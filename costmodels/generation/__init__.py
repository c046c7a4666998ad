"""The request-level generation simulator and rollout length traces (reserved: the engine online policies run on). Length histograms live here today."""
