"""Instance generators, the benchmark harness, suites, reports and plots."""
