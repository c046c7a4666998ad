"""RFabric weight-sync broadcast (OrchestrRL App. E): the two-level broadcast spec, plan, evaluator
and validator."""
