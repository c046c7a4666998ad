"""What verl and ROLL can run: the placement space restricted to one framework (``--target``).

rlplan's space (``costmodels.placement.space``) holds plans no framework runs as planned. With a
target, every solver searches only the plans the framework runs, so the plan returned is the best
runnable one, and the validator rejects the rest. The rules are read from the frameworks' source
(revisions in ``costmodels.placement.verl_export`` and ``roll_export``); each names where it
comes from. They act at three levels of HetRL §3.2, which is where every solver builds its plans:

* **task groupings** (Level 1), :meth:`FrameworkRules.admits_subset`: which tasks may share a GPU
  group;
* **GPU groups** (Levels 2-3), :meth:`FrameworkRules.admits_composition`: what GPU sets a
  framework can ask for;
* **task configurations** (Level 4), :meth:`FrameworkRules.admits_config` for one task and
  :meth:`FrameworkRules.ties` for tasks that must share a parallel layout.

**verl** (0.7.0 and 0.9.1; ``verl.trainer.main_ppo`` and the one-step-off-policy entry point):

* actor, reference and critic run in one resource pool (``global_pool``, or ``trainer_pool``
  under one_step_off; ``main_ppo.py`` ``TaskRunner.init_resource_pool_mgr``): the trainer-side
  tasks share one group. Generation is in that group (``main_ppo``) or alone in the rollout pool
  (one_step_off, which is one-step off-policy, so only for an async workflow; its trainer asserts
  ``not hybrid_engine``). The reward model is in the trainer group or alone in ``reward_pool``;
  under one_step_off only alone (a standalone reward pool).
* a pool is ``[n_gpus_per_node] * nnodes``: a group takes the same GPU count from every node it
  uses;
* vLLM rollout and reward serving have no pipeline parallelism (``RolloutConfig.__post_init__``
  raises ``NotImplementedError`` for PP > 1 with vLLM; ``workers/config/rollout.py``);
* the reference runs in the actor's worker group with the actor's Megatron layout (0.7.0
  ``megatron_workers.py`` initialises the model-parallel groups from ``actor.megatron`` for the
  ``ref`` role; 0.9.1 fuses the reference into ``ActorRolloutRefWorker``): its TP and PP equal
  the actor's. The critic computes values and trains in one worker: critic inference and critic
  training share their layout;
* every task splits its batch and layers evenly (no uneven shares);
* the training DP divides the samples of a mini-batch (``utils/config.py`` ``validate_config``:
  ``ppo_mini_batch_size * rollout.n`` divisible by ``megatron_dp * ppo_micro_batch_size_per_gpu``;
  without a ``mini_batch`` the mini-batch is the iteration).

**ROLL** (``roll/pipeline/rlvr/rlvr_config.py``, ``roll/configs/worker_config.py``; rules in
``costmodels.placement.roll_export``): ``actor_train`` and ``actor_infer`` are on the same GPUs
(co-located; only a synchronous pipeline) or on disjoint ones (async needs them apart); the
reference sits on exactly ``actor_train``'s GPUs; the critic worker both computes values and
trains (one layout); batches and layers split evenly; the training DP divides the rollout batch's
samples.

A target never adds plans: the restricted space is a subset of rlplan's, and the exact solvers'
optimality claim is then over that subset (the result says so).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from costmodels.placement.plan import PlacementPlan
from costmodels.placement.problem import PlacementProblem
from costmodels.violations import Violation
from costmodels.workflow import (
    ACTOR_GENERATION,
    ACTOR_TRAINING,
    CRITIC_INFERENCE,
    CRITIC_TRAINING,
    REFERENCE_INFERENCE,
    REWARD_INFERENCE,
)

#: the frameworks ``--target`` accepts
FRAMEWORKS = ("verl", "roll")

#: tasks verl runs in its trainer pool (actor, reference, critic workers)
VERL_TRAINER_SIDE = (ACTOR_TRAINING, REFERENCE_INFERENCE, CRITIC_INFERENCE, CRITIC_TRAINING)


@dataclass(frozen=True)
class FrameworkRules:
    """One framework's restriction of the placement space (module doc)."""

    framework: str

    # -- Level 1: which tasks may share a GPU group ------------------------------------------

    def admits_subset(self, problem: PlacementProblem, subset: Iterable[str]) -> bool:
        """Whether the tasks ``subset`` may form one GPU group, whatever the other groups are."""
        s = set(subset)
        names = {t.name for t in problem.tasks}
        if self.framework == "verl":
            trainer = {n for n in VERL_TRAINER_SIDE if n in names}
            if s & trainer:
                # the trainer pool is one group; with generation apart (one_step_off) the reward
                # model is served standalone (0.9.1 experimental/separation/utils.py asserts
                # reward_model.nnodes > 0 there)
                # main_ppo (generation on the trainer's GPUs) is synchronous: an off-policy mode
                # needs generation on a pool of its own
                if ACTOR_GENERATION in s and problem.workflow.overlaps:
                    return False
                return trainer <= s and not (REWARD_INFERENCE in s and ACTOR_GENERATION not in s)
            if s == {ACTOR_GENERATION}:
                # generation on a pool of its own: one_step_off or fully_async_policy, off-policy
                return problem.workflow.overlaps
            return s == {REWARD_INFERENCE}  # the reward pool
        # ROLL: reference on actor_train's GPUs; the critic is one worker
        for a, b in ((ACTOR_TRAINING, REFERENCE_INFERENCE), (CRITIC_TRAINING, CRITIC_INFERENCE)):
            if b in names and (a in s) != (b in s):
                return False
        if ACTOR_GENERATION in s and ACTOR_TRAINING in s:
            return not problem.workflow.overlaps  # co-located: sync/on-policy only
        return True

    def admits_grouping(self, problem: PlacementProblem, grouping: Iterable[Iterable[str]]) -> bool:
        """Whether a whole task grouping (a set partition of the tasks) is runnable."""
        return all(self.admits_subset(problem, g) for g in grouping)

    # -- Levels 2-3: which GPU sets a group may take -----------------------------------------

    def admits_composition(self, per_node: Iterable[int]) -> bool:
        """Whether a group taking ``per_node`` GPUs from each node can be asked for: verl's pools
        are ``[n_gpus_per_node] * nnodes`` (the same count on every node used); ROLL maps
        explicit global ranks, so any set."""
        if self.framework != "verl":
            return True
        used = {n for n in per_node if n}
        return len(used) <= 1

    # -- Level 4: parallel layouts -------------------------------------------------------------

    def admits_config(self, problem: PlacementProblem, task: str, cfg: Any) -> bool:
        """Whether one task may run with ``cfg`` (a :class:`~costmodels.placement.space.
        TaskConfig` or a :class:`~costmodels.placement.plan.TaskPlacement`)."""
        if getattr(cfg, "balance", "even") != "even":
            return False  # both frameworks split batches and layers evenly
        serving = task in (ACTOR_GENERATION, REWARD_INFERENCE)
        if self.framework == "verl" and serving and cfg.pp > 1:
            return False  # vLLM serving without pipeline parallelism
        if task in (ACTOR_TRAINING, CRITIC_TRAINING):
            wf = problem.workflow
            if ((wf.mini_batch or wf.global_batch) * wf.responses_per_prompt) % cfg.dp:
                return False  # the training DP divides a mini-batch's samples
            if self.framework == "roll" and task == ACTOR_TRAINING and wf.global_batch % cfg.dp:
                return False  # ROLL: rollout_batch_size (prompts) divisible by actor_train's DP
        return True

    def ties(self, problem: PlacementProblem) -> tuple[tuple[str, str], ...]:
        """(leader, follower) task pairs whose TP and PP must be equal (they share workers and
        therefore one GPU group, which Level 1 guarantees)."""
        names = {t.name for t in problem.tasks}
        pairs = [(CRITIC_TRAINING, CRITIC_INFERENCE)]
        if self.framework == "verl":
            pairs.append((ACTOR_TRAINING, REFERENCE_INFERENCE))
        return tuple((a, b) for a, b in pairs if a in names and b in names)

    def tied_tasks(self, problem: PlacementProblem) -> frozenset[str]:
        return frozenset(n for pair in self.ties(problem) for n in pair)

    # -- the validator -------------------------------------------------------------------------

    def violations(self, problem: PlacementProblem, plan: PlacementPlan) -> list[Violation]:
        """Every rule of this framework the plan breaks (``[]``: the framework runs it)."""
        tag = f"{self.framework}-runnable"
        out: list[Violation] = []
        groups = [g.tasks for g in plan.groups]
        for g in groups:
            if not self.admits_subset(problem, g):
                what = (
                    f"task {g[0]} cannot have a GPU group of its own"
                    if len(g) == 1
                    else f"tasks {', '.join(g)} cannot share a GPU group"
                )
                out.append(Violation(tag, f"{what}: {self._why(problem)}"))
        index = problem.topology.index_of()
        for gi, g in enumerate(plan.groups):
            counts: dict[str, int] = {}
            for d in g.devices:
                node = problem.topology.devices[index[d]].node
                counts[node] = counts.get(node, 0) + 1
            if not self.admits_composition(counts.values()):
                out.append(
                    Violation(
                        tag,
                        f"group {gi} takes {counts} GPUs per node; verl's resource pools take "
                        "the same count on every node ([n_gpus_per_node] * nnodes)",
                    )
                )
        for t in plan.tasks:
            uneven = (
                t.batch_shares is not None and len({round(s, 9) for s in t.batch_shares}) > 1
            ) or (t.layers_per_stage is not None and len(set(t.layers_per_stage)) > 1)
            if uneven:
                out.append(
                    Violation(tag, f"{t.task}: uneven batch or layer split (splits are even)")
                )
            # an uneven split must not hide what else the task's shape breaks (a served task's
            # PP, a DP that divides no mini-batch): the export lists every rule
            if not self.admits_config(problem, t.task, t):
                out.append(
                    Violation(
                        tag,
                        f"{t.task}: TP{t.tp} PP{t.pp} DP{t.dp} {self._config_why(problem, t.task)}",
                    )
                )
        placed = {t.task: t for t in plan.tasks}
        for a, b in self.ties(problem):
            if (
                a in placed
                and b in placed
                and (placed[a].tp, placed[a].pp) != (placed[b].tp, placed[b].pp)
            ):
                out.append(
                    Violation(
                        tag,
                        f"{b} TP{placed[b].tp} PP{placed[b].pp} must equal {a}'s TP{placed[a].tp} "
                        f"PP{placed[a].pp} (they run in one {self.framework} worker)",
                    )
                )
        return out

    def _why(self, problem: PlacementProblem) -> str:
        if self.framework == "verl":
            return (
                "verl runs actor, reference and critic in one pool, generation with them or "
                "alone (one_step_off, async only), the reward model with them or alone"
            )
        return (
            "ROLL puts the reference on actor_train's GPUs, runs the critic as one worker, and "
            "co-locates actor_train with actor_infer only in a synchronous pipeline"
        )

    def _config_why(self, problem: PlacementProblem, task: str) -> str:
        if self.framework == "verl" and task in (ACTOR_GENERATION, REWARD_INFERENCE):
            return "is not servable: verl's vLLM rollout has no pipeline parallelism"
        wf = problem.workflow
        prompts = (
            f" (ROLL: nor the {wf.global_batch} prompts of rollout_batch_size)"
            if self.framework == "roll" and task == ACTOR_TRAINING
            else ""
        )
        per_step = "a mini-batch" if wf.mini_batch else "an iteration"
        return (
            f"does not divide the {(wf.mini_batch or wf.global_batch) * wf.responses_per_prompt} "
            f"samples of {per_step} evenly over the training DP{prompts}"
        )


def rules_of(problem: PlacementProblem) -> FrameworkRules | None:
    """The problem's framework rules, or None when it has no ``--target``."""
    fw = problem.target.framework
    return None if fw is None else FrameworkRules(fw)
