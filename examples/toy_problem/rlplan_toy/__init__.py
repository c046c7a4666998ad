"""A complete rlplan problem pack outside the repository: makespan scheduling of jobs on identical
machines (``README.md`` says which module plays which role)."""
