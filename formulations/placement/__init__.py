"""Exact models of HetRL placement: the ILP (§3.5) and brute force."""
