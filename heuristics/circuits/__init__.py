"""Circuit allocators (Algorithm 3 greedy, its transcription, uniform) and the RFabric materializer
(Algorithm 2)."""
