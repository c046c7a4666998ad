"""RFabric circuit allocation (OrchestrRL App. D): fabric and demand specs, the plan, the Eq. 7
evaluator and validator, and the PoD fabric templates of the materializer."""
