"""A fleet of RL jobs on shared rollout and training pools, every decision of the four papers in
one plan (``docs/job.md``, "A fleet of jobs").

A fleet is two pools of GPU nodes (RollMux §4.1: a cheap rollout pool, a training pool, a slow
link between them) and RL jobs described as jobs: each a workflow (the placement problem's
language: models, algorithm, batch, lengths), the GPUs it asks of each pool and an SLO. Its plan
holds three stages, each checked by its own problem's validator:

* **phases** (RollMux §4.2 from HetRL's judge): each job alone on its own GPUs of both pools,
  generation on the rollout pool and every other task on the training pool
  (:mod:`costmodels.fleet.derive`), its rollout and training phase times;
* **co-scheduling** (RollMux §4.1-4.3): the co-execution groups of the co-scheduling problem those
  phase times make;
* **each job in its group** (:mod:`costmodels.job`): its placement on the rollout nodes it is
  pinned to and its group's training nodes, and RollPacker's generation knobs there.

The judge (:mod:`costmodels.fleet.judge`) is the co-scheduling judge's provisioning cost in $/h
on the phase times it recomputes from the plan's solo placements; per job it adds the step its
deployed plan is predicted to run at. This package composes the job plan and the co-scheduling
problem and defines no cost model of its own (``docs/architecture.md``, "The job plan").
"""
