"""Job plans: every decision of one RL job, composed from the problems' own solvers
(``costmodels.job``)."""
