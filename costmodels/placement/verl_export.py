"""A verl run of a placement plan: the command, its Hydra overrides, and what verl cannot run.

Tested against verl's own config files (``tests/test_framework_exports.py`` composes every export
with hydra-core in struct mode against the wheels of the releases in :data:`VERL_RELEASES`).
Read in verl's source at those releases (file names relative to the ``verl`` package):

* **Entry points.** ``trainer/main_ppo.py`` (``@hydra.main(config_name="ppo_trainer")``) runs
  every role in one ``global_pool`` of ``[trainer.n_gpus_per_node] * trainer.nnodes`` GPUs
  (``TaskRunner.init_resource_pool_mgr``); the reward model alone may get a ``reward_pool``.
  Generation apart from training needs the one-step-off-policy entry point
  (0.9.1 ``experimental/one_step_off_policy/main_ppo.py``; 0.7.0 ``recipe/one_step_off_policy``
  in a source checkout, not in the wheel) with ``rollout.nnodes``/``rollout.n_gpus_per_node``, and
  its trainer asserts ``not actor_rollout_ref.hybrid_engine`` (``ray_trainer.py``). A fully-async
  workflow runs ``fully_async_policy`` instead (0.9.1 ``experimental/fully_async_policy/
  fully_async_main.py``; 0.7.0 ``recipe/fully_async_policy``): the same pools, one prompt at a
  time into the rollouter, :func:`_fully_async_overrides`. The Megatron
  configs are chosen with ``--config-name ppo_megatron_trainer`` /
  ``one_step_off_ppo_megatron_trainer``: without it Hydra refuses the ``megatron.*`` overrides.
* **The workflow.** ``algorithm.adv_estimator`` (``grpo``, or ``gae`` for PPO, which builds the
  critic: ``trainer/ppo/utils.py`` ``need_critic``); the reference exists only when
  ``actor.use_kl_loss`` or ``algorithm.use_kl_in_reward`` is set (``need_reference_policy``):
  a workflow with its reference pass (the default) gets GRPO's KL loss or PPO's in-reward KL
  penalty, the usual choice of each; one without (``reference_pass: false``) neither, and
  trains on the rollout's log-probs: fully_async_policy's ``use_rollout_log_probs``, else the
  trainer's bypass mode (``algorithm.rollout_correction.bypass_mode`` with
  ``rollout.calculate_log_probs``; ``trainer/ppo/ray_trainer.py`` then skips the
  ``old_log_prob`` forward pass, ``rollout_corr_helper.apply_bypass_mode``; 0.7.0's one-step-off
  recipe sets it by default). ``data.train_batch_size`` prompts,
  ``rollout.n`` responses each, ``data.max_prompt_length`` / ``max_response_length``.
* **Batch sizes.** ``ppo_mini_batch_size`` is the workflow's ``mini_batch`` (prompts per
  optimizer step), or the whole batch: one optimizer step per iteration, HetRL Appendix B.3.
  ``utils/config.py`` ``validate_config`` asserts ``train_batch_size * rollout.n`` divisible by
  ``megatron_dp * ppo_micro_batch_size_per_gpu``; the Megatron worker divides
  ``ppo_mini_batch_size * n`` by its DP; ``log_prob_micro_batch_size_per_gpu`` must be set for
  the rollout and the reference. The micro-batch is the workflow's, lowered to the largest
  divisor of the per-rank samples of a mini-batch.
* **Layouts.** ``actor_rollout_ref.rollout.tensor_model_parallel_size`` and ``.max_num_seqs``;
  vLLM rollout has no pipeline parallelism (``workers/config/rollout.py``,
  ``RolloutConfig.__post_init__`` raises); Megatron's ``<role>.megatron.tensor_model_parallel_size``
  / ``pipeline_model_parallel_size`` for actor, reference and critic; the reference runs with
  the actor's layout (``costmodels.placement.frameworks``). The reward model is served by vLLM:
  0.7.0 ``reward_model.rollout.*``, 0.9.1 ``reward.reward_model.rollout.*`` (the key moved).

What the plan does that verl cannot do is listed under ``not_expressible``; the framework rules it
breaks (``costmodels.placement.frameworks``) also under ``rule_violations``: plan with
``--target verl`` and there are none.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from costmodels.placement.export_common import balance_notes, node_counts, pool_notes
from costmodels.placement.frameworks import FrameworkRules
from costmodels.placement.plan import PlacementPlan
from costmodels.placement.problem import PlacementProblem
from costmodels.workflow import (
    ACTOR_GENERATION,
    ACTOR_TRAINING,
    CRITIC_INFERENCE,
    CRITIC_TRAINING,
    REFERENCE_INFERENCE,
    REWARD_INFERENCE,
)


@dataclass(frozen=True)
class VerlRelease:
    """Where one verl release keeps what an export sets."""

    version: str
    revision: str
    one_step_off_module: str
    one_step_off_note: str
    reward_prefix: str
    reward_model_path: str
    fully_async_module: str
    fully_async_note: str
    #: where the release reads "train on the rollout's log-probs" (no old_log_prob pass)
    rollout_log_probs_key: str


#: 0.9.1's one-step-off and fully-async Megatron configs find the trainer's through a file path
_FILE_SEARCHPATH_NOTE = (
    "run from the directory holding verl/trainer/config (a source checkout, or the one above "
    "the installed verl package): the config's searchpath is file://verl/trainer/config"
)

#: the releases exports are composed against (newest first; ``--export verl`` is the first)
VERL_RELEASES = {
    "0.9.1": VerlRelease(
        "0.9.1",
        "PyPI verl 0.9.1 (2026-09)",
        "verl.experimental.one_step_off_policy.main_ppo",
        _FILE_SEARCHPATH_NOTE,
        "reward.reward_model",
        "reward.reward_model.model_path",
        "verl.experimental.fully_async_policy.fully_async_main",
        _FILE_SEARCHPATH_NOTE,
        "actor_rollout_ref.actor.use_rollout_log_probs",
    ),
    "0.7.0": VerlRelease(
        "0.7.0",
        "PyPI verl 0.7.0, git tag v0.7.0 (f9c855f7)",
        "recipe.one_step_off_policy.main_ppo",
        "run from a verl v0.7.0 source checkout: the recipe is not in the wheel",
        "reward_model",
        "reward_model.model.path",
        "recipe.fully_async_policy.fully_async_main",
        "run from a verl v0.7.0 source checkout: the recipe is not in the wheel",
        "async_training.use_rollout_log_probs",
    ),
}

#: Megatron keys of the tasks verl trains or infers with Megatron
MEGATRON_PREFIX = {
    ACTOR_TRAINING: "actor_rollout_ref.actor",
    REFERENCE_INFERENCE: "actor_rollout_ref.ref",
    CRITIC_TRAINING: "critic",
}


def largest_divisor_at_most(n: int, cap: int) -> int:
    """The largest d <= cap dividing n (1 when n < 1)."""
    for d in range(min(cap, n), 0, -1):
        if n % d == 0:
            return d
    return 1


def _micro_batch(problem: PlacementProblem, dp: int, what: str, notes: list[str]) -> int:
    """A per-GPU micro-batch that verl's divisibility checks accept for a DP of ``dp``: training
    ranks split each mini-batch (``ppo_mini_batch_size`` prompts x n)."""
    wf = problem.workflow
    samples = (wf.mini_batch or wf.global_batch) * wf.responses_per_prompt
    if samples % dp:
        notes.append(
            f"{what}: DP{dp} does not divide the {samples} samples of a mini-batch (verl's "
            "validate_config asserts it); plan with --target verl"
        )
        return 1
    micro = largest_divisor_at_most(samples // dp, wf.micro_batch_size)
    if micro != wf.micro_batch_size:
        notes.append(
            f"{what}: micro-batch {micro} per GPU, not the workflow's {wf.micro_batch_size}, so "
            f"it divides the {samples // dp} samples per DP rank"
        )
    return micro


def _workflow_overrides(
    problem: PlacementProblem, plan: PlacementPlan, notes: list[str]
) -> dict[str, Any]:
    """The workflow's meaning: estimator, KL (the reference), batch, group size, lengths."""
    wf = problem.workflow
    names = {t.name for t in problem.tasks}
    ppo = wf.algorithm == "ppo"
    ov: dict[str, Any] = {
        "algorithm.adv_estimator": "gae" if ppo else "grpo",
        "critic.enable": ppo,
        # verl builds the reference only when KL is used: with the reference pass, GRPO's KL
        # loss or PPO's in-reward penalty; without it, no KL
        "actor_rollout_ref.actor.use_kl_loss": not ppo and wf.reference_pass,
        "algorithm.use_kl_in_reward": ppo and wf.reference_pass,
        "data.train_batch_size": wf.global_batch,
        "data.max_prompt_length": wf.prompt_length,
        "data.max_response_length": wf.response_length,
        "actor_rollout_ref.rollout.n": wf.responses_per_prompt,
        "actor_rollout_ref.actor.ppo_mini_batch_size": wf.mini_batch or wf.global_batch,
        "actor_rollout_ref.actor.ppo_epochs": 1,
    }
    if wf.old_log_prob_pass:
        # the trainer recomputes the old policy's log-probs, as judged: main_ppo's default,
        # while the off-policy entry points' configs default to bypass mode
        ov["algorithm.rollout_correction.bypass_mode"] = False
    elif not wf.reference_pass and wf.mode != "fully-async":
        # no forward pass before training: the rollout's log-probs stand for the old policy's
        # (bypass mode; fully_async_policy has its own key, _fully_async_overrides)
        ov["algorithm.rollout_correction.bypass_mode"] = True
        ov["actor_rollout_ref.rollout.calculate_log_probs"] = True
    actor = plan.task(ACTOR_TRAINING)
    micro = _micro_batch(problem, actor.dp, "actor_training", notes)
    ov["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"] = micro
    ov["actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"] = micro
    if REFERENCE_INFERENCE in names:
        ref = plan.task(REFERENCE_INFERENCE)
        ov["actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu"] = largest_divisor_at_most(
            max(1, wf.global_batch * wf.responses_per_prompt // ref.dp), wf.micro_batch_size
        )
    if CRITIC_TRAINING in names:
        critic = plan.task(CRITIC_TRAINING)
        ov["critic.ppo_mini_batch_size"] = wf.mini_batch or wf.global_batch
        ov["critic.ppo_epochs"] = 1
        ov["critic.ppo_micro_batch_size_per_gpu"] = _micro_batch(
            problem, critic.dp, "critic_training", notes
        )
    return ov


def _layout_overrides(
    problem: PlacementProblem, plan: PlacementPlan, notes: list[str]
) -> dict[str, Any]:
    """Parallel layouts: vLLM for generation, Megatron for actor, reference and critic."""
    names = {t.name for t in problem.tasks}
    gen = plan.task(ACTOR_GENERATION)
    ov: dict[str, Any] = {
        "actor_rollout_ref.rollout.name": "vllm",
        "actor_rollout_ref.rollout.tensor_model_parallel_size": gen.tp,
        "actor_rollout_ref.rollout.pipeline_model_parallel_size": gen.pp,
        "actor_rollout_ref.rollout.max_num_seqs": gen.decode_batch
        or problem.workflow.decode_batch_size,
    }
    for task, prefix in MEGATRON_PREFIX.items():
        if task in names:
            t = plan.task(task)
            ov[f"{prefix}.strategy"] = "megatron"
            ov[f"{prefix}.megatron.tensor_model_parallel_size"] = t.tp
            ov[f"{prefix}.megatron.pipeline_model_parallel_size"] = t.pp
    if CRITIC_INFERENCE in names:
        ci, ct = plan.task(CRITIC_INFERENCE), plan.task(CRITIC_TRAINING)
        groups = plan.group_of()
        if (ci.tp, ci.pp, ci.dp) != (ct.tp, ct.pp, ct.dp) or groups[CRITIC_INFERENCE] != groups[
            CRITIC_TRAINING
        ]:
            notes.append(
                f"critic_inference TP{ci.tp} PP{ci.pp} DP{ci.dp} in group "
                f"{groups[CRITIC_INFERENCE]}: verl computes values with the critic worker "
                f"(TP{ct.tp} PP{ct.pp} DP{ct.dp}, group {groups[CRITIC_TRAINING]})"
            )
    return ov


def _model_paths(problem: PlacementProblem, release: VerlRelease) -> dict[str, str]:
    """The checkpoints each role loads: rlplan knows the model by name only, so these are the
    values to replace with paths (listed under ``set_before_running``)."""
    wf = problem.workflow
    out = {"actor_rollout_ref.model.path": wf.model("actor").name}
    if wf.algorithm == "ppo":
        out["critic.model.path"] = wf.model("critic").name
    if REWARD_INFERENCE in {t.name for t in problem.tasks}:
        out[release.reward_model_path] = wf.model("reward").name
    return out


def export_verl(
    problem: PlacementProblem, plan: PlacementPlan, version: str = "0.9.1"
) -> dict[str, Any]:
    """The verl run of ``plan`` on ``version`` (module doc): the command line with every
    override, the overrides as a mapping, the resource pools, and what verl cannot run."""
    release = VERL_RELEASES[version]
    notes = balance_notes(plan)
    groups = plan.group_of()
    names = {t.name for t in problem.tasks}
    disaggregated = groups[ACTOR_GENERATION] != groups[ACTOR_TRAINING]
    module, config, ov, pools = _pool_overrides(problem, plan, release, notes)
    ov.update(_workflow_overrides(problem, plan, notes))
    ov.update(_layout_overrides(problem, plan, notes))
    fully_async = config.startswith("fully_async")
    if fully_async:
        ov.update(_fully_async_overrides(problem, release))
    if REWARD_INFERENCE in names:
        _reward_overrides(problem, plan, release, ov, pools, notes)
    paths = _model_paths(problem, release)
    ov.update(paths)
    if (
        len(node_counts(problem, [d.id for d in problem.topology.devices])) > 1
        and len({d.gpu.name for d in problem.topology.devices}) > 1
    ):
        notes.append(
            "heterogeneous cluster: verl asks Ray for each pool's GPU counts, and Ray, not the "
            "plan, picks the nodes; pin them (e.g. one Ray cluster per pool, or node resources "
            "in trainer.* / ray_kwargs) so each pool gets the GPU types planned"
        )
    violations = [str(v) for v in FrameworkRules("verl").violations(problem, plan)]
    entry = f"python -m {module}"
    command = " ".join(
        [entry, f"--config-name {config}"]
        + [shlex.quote(f"{k}={_hydra_value(v)}") for k, v in ov.items()]
    )
    return {
        "framework": "verl",
        "release": release.version,
        "tested_against": release.revision,
        "entrypoint": entry,
        "config_name": config,
        "command": command,
        "resource_pools": pools,
        "overrides": ov,
        "set_before_running": {
            **{k: f"path of {v}" for k, v in paths.items()},
            "data.train_files": "your training data",
            "data.val_files": "your validation data",
            **(
                {"rollout.total_rollout_steps": "prompts to train on (here 100 steps' worth)"}
                if fully_async
                else {}
            ),
        },
        "notes": _release_notes(release, disaggregated, fully_async)
        + _log_prob_notes(problem, disaggregated),
        "rule_violations": violations,
        "not_expressible": notes + violations,
    }


def _pool_overrides(
    problem: PlacementProblem, plan: PlacementPlan, release: VerlRelease, notes: list[str]
) -> tuple[str, str, dict[str, Any], dict[str, dict[str, int]]]:
    """The entry module, its config name, the pool overrides and the resource pools: one global
    pool when generation shares training's GPUs, else one_step_off's trainer and rollout
    pools."""
    groups = plan.group_of()
    train_group = groups[ACTOR_TRAINING]
    disaggregated = groups[ACTOR_GENERATION] != train_group
    trainer_devices = plan.groups[train_group].devices
    nnodes, per_node = pool_notes(problem, trainer_devices, "trainer pool", notes)
    ov: dict[str, Any] = {"trainer.nnodes": nnodes, "trainer.n_gpus_per_node": per_node}
    pools: dict[str, dict[str, int]]
    if disaggregated:
        module, config = release.one_step_off_module, "one_step_off_ppo_megatron_trainer"
        if problem.workflow.mode == "fully-async":
            module, config = release.fully_async_module, "fully_async_ppo_megatron_trainer"
        if problem.workflow.mode == "sync":
            notes.append(
                "generation apart from training: verl's only entry point for that "
                "(one_step_off_policy) is one-step off-policy, not synchronous"
            )
        r_nodes, r_per = pool_notes(
            problem, plan.groups[groups[ACTOR_GENERATION]].devices, "rollout pool", notes
        )
        ov["rollout.nnodes"], ov["rollout.n_gpus_per_node"] = r_nodes, r_per
        ov["actor_rollout_ref.hybrid_engine"] = False  # one_step_off's trainer asserts it
        pools = {
            "trainer_pool": {"nnodes": nnodes, "n_gpus_per_node": per_node},
            "rollout_pool": {"nnodes": r_nodes, "n_gpus_per_node": r_per},
        }
    else:
        module, config = "verl.trainer.main_ppo", "ppo_megatron_trainer"
        pools = {"global_pool": {"nnodes": nnodes, "n_gpus_per_node": per_node}}
        if problem.workflow.overlaps:
            notes.append(
                f"mode {problem.workflow.mode} with generation on training's GPUs: verl's "
                "off-policy entry points put generation on a pool of its own, so this runs "
                "synchronously (verl.trainer.main_ppo)"
            )
    return module, config, ov, pools


def _fully_async_overrides(problem: PlacementProblem, release: VerlRelease) -> dict[str, Any]:
    """fully_async_policy's keys (``fully_async_rollouter.py``/``fully_async_trainer.py`` at both
    releases): the trainer takes require_batches x ppo_mini_batch_size prompts per local update
    and syncs every trigger_parameter_sync_step updates, so one rlplan step (global_batch
    prompts) is one sync; the rollouter takes one prompt at a time (``data.gen_batch_size`` 1,
    ``data.train_batch_size`` 0, both asserted) and trains on the rollout's log-probs."""
    wf = problem.workflow
    knobs = wf.asynchrony
    per_update = wf.global_batch // knobs.updates_per_sync
    mini = wf.mini_batch or per_update
    return {
        "data.train_batch_size": 0,
        "data.gen_batch_size": 1,
        "actor_rollout_ref.actor.ppo_mini_batch_size": mini,
        "actor_rollout_ref.rollout.mode": "async",
        "actor_rollout_ref.rollout.calculate_log_probs": True,
        # the rollout's log-probs as the old policy's, unless the trainer recomputes them
        release.rollout_log_probs_key: not wf.old_log_prob_pass,
        # prompts over the whole run: 100 steps here (listed under set_before_running)
        "rollout.total_rollout_steps": 100 * wf.global_batch,
        "async_training.staleness_threshold": knobs.staleness,
        "async_training.trigger_parameter_sync_step": knobs.updates_per_sync,
        "async_training.require_batches": per_update // mini,
        "async_training.partial_rollout": knobs.partial_rollout,
    }


def _reward_overrides(
    problem: PlacementProblem,
    plan: PlacementPlan,
    release: VerlRelease,
    ov: dict[str, Any],
    pools: dict[str, dict[str, int]],
    notes: list[str],
) -> None:
    """The reward model's rollout (TP only), in a pool of its own when it is apart from
    training."""
    groups = plan.group_of()
    rw, prefix = plan.task(REWARD_INFERENCE), release.reward_prefix
    ov[f"{prefix}.enable"] = True
    ov[f"{prefix}.rollout.name"] = "vllm"
    # TP only: 0.7.0's reward rollout has no PP key, and PP > 1 is a rule violation
    ov[f"{prefix}.rollout.tensor_model_parallel_size"] = rw.tp
    if groups[REWARD_INFERENCE] != groups[ACTOR_TRAINING]:
        rn, rp = pool_notes(
            problem, plan.groups[groups[REWARD_INFERENCE]].devices, "reward pool", notes
        )
        ov[f"{prefix}.enable_resource_pool"] = True
        ov[f"{prefix}.nnodes"], ov[f"{prefix}.n_gpus_per_node"] = rn, rp
        pools["reward_pool"] = {"nnodes": rn, "n_gpus_per_node": rp}


def _release_notes(release: VerlRelease, disaggregated: bool, fully_async: bool) -> list[str]:
    """How to run the chosen entry point of ``release``."""
    if not disaggregated:
        return []
    note = release.fully_async_note if fully_async else release.one_step_off_note
    return [note] if note else []


#: what a synchronous plan with the reference pass and without the old log-prob pass runs
#: beyond the judged step
OLD_LOG_PROB_NOTE = (
    "old log-probs: main_ppo recomputes them (the old_log_prob pass) beside the reference's, "
    "one more forward pass over the batch than the plan was judged with; the workflow's "
    "old_log_prob_pass: true judges it, or algorithm.rollout_correction.bypass_mode=true with "
    "actor_rollout_ref.rollout.calculate_log_probs=true runs it as judged (the rollout's "
    "log-probs stand for the old policy's, as the one-step-off recipe sets by default)"
)

#: what fully_async_policy adds to a recomputed old log-prob pass, which the judge does not
FULLY_ASYNC_LOG_PROB_NOTE = (
    "old log-probs in fully_async_policy: the trainer recomputes them with the parameters "
    "of a sync's first local update, copied to host memory then and swapped back in around "
    "each later update's pass (fully_async_trainer._compute_old_log_prob, 0.9.1), copies the "
    "judge does not charge"
)


def _log_prob_notes(problem: PlacementProblem, disaggregated: bool) -> list[str]:
    """Where verl's forward passes before training differ from the judged ones: main_ppo's
    trainer recomputes the old policy's log-probs unless in bypass mode
    (``trainer/ppo/ray_trainer.py`` at both releases), which the judge charges only with
    ``old_log_prob_pass``; one_step_off's recipe config and fully_async_policy use the
    rollout's log-probs unless told otherwise (:func:`_workflow_overrides`,
    :func:`_fully_async_overrides`), and fully_async_policy's recompute copies parameters."""
    wf = problem.workflow
    if wf.reference_pass and not wf.old_log_prob_pass and not disaggregated:
        return [OLD_LOG_PROB_NOTE]
    if wf.old_log_prob_pass and wf.mode == "fully-async":
        return [FULLY_ASYNC_LOG_PROB_NOTE]
    return []


def _hydra_value(v: Any) -> str:
    """A Python value as Hydra's override grammar reads it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
