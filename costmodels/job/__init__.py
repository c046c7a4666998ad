"""One RL job, every decision of the four papers in one plan (``docs/job.md``).

A job is a cluster and a workflow (the placement problem's inputs). Its plan holds the placement
(HetRL §3: which GPUs run which task, with what parallelism) and, where the job has a long tail
to pack, the rollout knobs of its generation stage (RollPacker §3-§4), chosen on the rollout
problem derived from the placement (:mod:`costmodels.job.derive`). The judge
(:mod:`costmodels.job.judge`) composes one step from both: the placement judge's phases (the
model held to verl's measured steps, ``costmodels.step_error``), generation scaled by what the
knobs change on the rollout judge's replay of the same generation GPUs and TP.

This package is the one place that reads several problems' cost models: it composes them and
defines none of its own (``docs/architecture.md``, "The job plan").
"""
