"""Fast solvers, one module per algorithm. Imports costmodels only."""
