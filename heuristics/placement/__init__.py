"""HetRL placement heuristics: SHA-EA, the plain EA, random search and the verl / StreamRL
baselines."""
