"""RL workflow specs and the task graph derived from the algorithm (HetRL §2.1, Appendix B.4).

PPO has six tasks: actor generation (G^1), reward, reference and critic inference (G^2..G^4, in
parallel) and actor and critic training (G^5, G^6). GRPO drops the critic: generation, reward and
reference inference, actor training. A workflow without a reward model (rule-based reward, as for
GSM8k-style verifiable rewards) has no reward-inference task.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from costmodels.catalog import ModelSpec, get_model
from costmodels.errors import SpecError, refuse_repeated_names
from costmodels.limits import MAX_GLOBAL_BATCH, MAX_NUM_SEQS, MAX_RESPONSES_PER_PROMPT, MAX_TOKENS
from costmodels.response_lengths import ResponseLengths

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class TaskKind(StrEnum):
    GENERATION = "generation"
    INFERENCE = "inference"
    TRAINING = "training"


class RoleModels(BaseModel):
    """The model of each role. ``reference`` defaults to the actor's model; no ``reward`` means
    a rule-based reward with no inference task; ``critic`` is required by PPO only."""

    model_config = _STRICT

    actor: str = Field(min_length=1)
    critic: str | None = None
    reference: str | None = None
    reward: str | None = None


#: most a fully asynchronous rollouter may run ahead of training, in RL steps (verl's
#: ``staleness_threshold``; its documented runs use 0-1)
MAX_STALENESS = 16.0


class FullyAsync(BaseModel):
    """verl ``fully_async_policy``'s knobs (``docs/advance/fully_async.md``; AReaL's, named
    differently): a rollouter streams samples to a trainer on other GPUs without waiting for a
    step boundary.

    An RL step is ``global_batch`` prompts: ``updates_per_sync`` local updates (verl's
    ``trigger_parameter_sync_step``) of global_batch / updates_per_sync prompts each (verl's
    ``require_batches`` x ``ppo_mini_batch_size``), then one weight sync. ``staleness`` is how
    many steps' samples the rollouter may generate ahead with old weights (verl's
    ``staleness_threshold``); ``partial_rollout`` lets a sync interrupt responses in flight and
    resume them under the new weights instead of draining them."""

    model_config = _STRICT

    staleness: float = Field(
        default=0.1,
        ge=0,
        le=MAX_STALENESS,
        description="RL steps of samples the rollouter may generate ahead (staleness_threshold)",
    )
    partial_rollout: bool = Field(
        default=True, description="a weight sync interrupts responses in flight and resumes them"
    )
    updates_per_sync: int = Field(
        default=1,
        gt=0,
        le=MAX_GLOBAL_BATCH,
        description="local updates per weight sync (trigger_parameter_sync_step)",
    )

    @property
    def hides_tail(self) -> bool:
        """Whether the rollouter keeps generating through a step's long tail: it may run ahead
        (staleness > 0) and need not drain responses in flight before a sync."""
        return self.staleness > 0 and self.partial_rollout


class RewardStage(BaseModel):
    """The step's reward stage when no GPU model scores the responses: rule checks, a sandbox or
    a remote judge, ``seconds_per_response`` each on ``workers`` concurrent scorers, after
    generation and before the log-prob pass. Its time, samples x seconds_per_response / workers,
    is on the trainer's path in every mode (the trainer scores the batch it takes before its first
    pass) and occupies no GPU. It is the rollout problem's synchronous rule reward
    (``costmodels.rollout.workload.RuleReward``: 0.014 s on one scorer, fitted to RollPacker
    Table 1's 5% math reward), so one job gets one reward stage whichever problem plans it; HetRL
    Appendix B has none (the default)."""

    model_config = _STRICT

    seconds_per_response: float = Field(
        ge=0, le=3600, description="seconds to score one response on one scorer"
    )
    workers: int = Field(default=1, gt=0, le=1_000_000, description="concurrent scorers")
    source: str = Field(default="", max_length=500, description="where the figures come from")

    def seconds(self, samples: int) -> float:
        """The stage's seconds for ``samples`` responses."""
        return samples * self.seconds_per_response / self.workers


class WorkflowSpec(BaseModel):
    """One RL post-training job as HetRL §4.1 receives it.

    ``global_batch`` is prompts per iteration; each prompt gets ``responses_per_prompt`` responses.
    ``eta`` is the task-parallelism coefficient of HetRL §3.3 (0 sequential, 1 fully parallel).
    """

    model_config = _STRICT

    name: str = ""
    description: str = ""
    algorithm: Literal["ppo", "grpo"]
    mode: Literal["sync", "async", "fully-async"] = Field(
        description=(
            "sync: generation, inference, training in turn; async: one step off-policy (verl "
            "one_step_off_policy); fully-async: a streaming rollouter (verl fully_async_policy)"
        )
    )
    fully_async: FullyAsync | None = Field(
        default=None, description="fully-async's knobs (mode: fully-async only)"
    )
    models: RoleModels
    custom_models: list[ModelSpec] = Field(default_factory=list)
    global_batch: int = Field(gt=0, le=MAX_GLOBAL_BATCH)
    responses_per_prompt: int = Field(gt=0, le=MAX_RESPONSES_PER_PROMPT)
    prompt_length: int = Field(gt=0, le=MAX_TOKENS)
    response_length: int = Field(
        gt=0, le=MAX_TOKENS, description="longest response, tokens (every response is cut here)"
    )
    response_lengths: ResponseLengths = Field(
        default_factory=ResponseLengths,
        description=(
            "how long responses are, cut at response_length; constant (the default) gives every "
            "response the maximum, as HetRL Appendix B does"
        ),
    )
    eta: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description=(
            "task parallelism among tasks sharing a GPU group: 0 one after another, 1 fully "
            "overlapped"
        ),
    )
    micro_batch_size: int = Field(
        default=1,
        gt=0,
        le=MAX_GLOBAL_BATCH,
        description="sequences per training/inference micro-batch",
    )
    decode_batch_size: int = Field(
        default=256,
        gt=0,
        le=MAX_NUM_SEQS,
        description="max concurrent sequences per serving engine (dbs)",
    )
    recompute: bool = Field(default=True, description="activation recomputation in training")
    reference_pass: bool = Field(
        default=True,
        description=(
            "the reference model's forward pass over the batch before training (its "
            "log-probs for the KL term: HetRL's reference inference task); false: no KL"
        ),
    )
    old_log_prob_pass: bool | None = Field(
        default=None,
        description=(
            "the actor's own forward pass over the batch before training, on its training "
            "GPUs and layout, recomputing the old policy's log-probs (verl's old_log_prob, "
            "ROLL's enable_old_logprobs_recompute), charged to actor training; false (HetRL's "
            "DAG): the trainer takes the rollout's log-probs as the old policy's (verl's "
            "rollout_correction bypass mode or fully_async_policy, ROLL's "
            "force_disable_old_logprobs_recompute: the exports set them when it has no "
            "reference pass either); unset: as the target framework runs it by default "
            "(recompute_by_default), decided when the problem is built"
        ),
    )
    reward: RewardStage | None = Field(
        default=None,
        description=(
            "a reward stage on CPU or a service between generation and the log-prob pass; none: "
            "no reward stage (HetRL Appendix B; a PPO/GRPO reward model is a task)"
        ),
    )
    mini_batch: int | None = Field(
        default=None,
        gt=0,
        le=MAX_GLOBAL_BATCH,
        description=(
            "prompts per optimizer step (verl's ppo_mini_batch_size): global_batch / mini_batch "
            "optimizer steps per RL step, each synchronising gradients; none: one (HetRL B.3)"
        ),
    )

    def check(self) -> None:
        """Cross-field checks; raises SpecError with the field path."""
        refuse_repeated_names(
            (m.name for m in self.custom_models),
            "custom_models[{}].name",
            "a second custom model of that name (which one would a role get?)",
        )
        custom = {m.name: m for m in self.custom_models}
        for role in ("actor", "critic", "reference", "reward"):
            name = getattr(self.models, role)
            if name is None:
                continue
            try:
                get_model(name, custom)
            except SpecError as exc:
                raise SpecError(f"models.{role}", name, exc.reason) from None
        if self.mini_batch is not None and self.global_batch % self.mini_batch:
            raise SpecError(
                "mini_batch",
                self.mini_batch,
                f"does not divide global_batch ({self.global_batch} prompts): every optimizer "
                "step takes a whole mini-batch (verl refuses it too)",
            )
        self._check_fully_async()
        lengths = self.response_lengths
        median = lengths.uncapped_median()
        if median is not None and median > self.response_length:
            # bins above the cap are cut to it on purpose (a histogram measured under a larger
            # cap), but half the responses past it is a unit or field mix-up, as for a lognormal
            histogram = lengths.distribution == "histogram"
            raise SpecError(
                "response_lengths.bins" if histogram else "response_lengths.median",
                f"median {median:g}" if histogram else median,
                f"above response_length ({self.response_length} tokens): the median response "
                "cannot be longer than the cap every response is cut at",
            )
        if self.algorithm == "ppo" and self.models.critic is None:
            raise SpecError("models.critic", None, "PPO needs a critic model")
        if self.algorithm == "grpo" and self.models.critic is not None:
            raise SpecError(
                "models.critic",
                self.models.critic,
                "GRPO has no critic; remove it or use algorithm: ppo",
            )

    def _check_fully_async(self) -> None:
        if self.fully_async is not None and self.mode != "fully-async":
            raise SpecError(
                "fully_async",
                self.fully_async.model_dump(),
                f"only mode: fully-async uses these knobs (mode is {self.mode})",
            )
        updates = self.asynchrony.updates_per_sync
        if self.global_batch % updates:
            raise SpecError(
                "fully_async.updates_per_sync",
                updates,
                f"does not divide global_batch ({self.global_batch} prompts): every local "
                "update takes the same number of prompts",
            )
        if self.mini_batch is not None and (self.global_batch // updates) % self.mini_batch:
            raise SpecError(
                "fully_async.updates_per_sync",
                updates,
                f"leaves {self.global_batch // updates} prompts per local update, not a "
                f"multiple of mini_batch ({self.mini_batch}; verl's require_batches is whole)",
            )

    @property
    def overlaps(self) -> bool:
        """Whether generation runs beside inference and training (async and fully-async)
        rather than before them (sync)."""
        return self.mode != "sync"

    @property
    def asynchrony(self) -> FullyAsync:
        """fully-async's knobs (their defaults when none are given); inert in other modes."""
        return self.fully_async or FullyAsync()

    @property
    def trailing_share(self) -> float:
        """The share of inference + training that follows a step's last sample instead of
        overlapping generation: 1 / updates_per_sync when a fully-async rollouter drains
        before each sync (``costmodels.placement.judge.overlapped_step``), else 0."""
        if self.mode != "fully-async" or self.asynchrony.hides_tail:
            return 0.0
        return 1.0 / self.asynchrony.updates_per_sync

    @property
    def reward_s(self) -> float:
        """Seconds of the step's reward stage (:class:`RewardStage`; 0 without one)."""
        return self.reward.seconds(self.samples) if self.reward is not None else 0.0

    @property
    def staleness_hiding_tail(self) -> float | None:
        """The staleness a fully-async rollouter fills a step's long tail with, or None when
        generation waits for the tail (sync, async, a draining rollouter)."""
        if self.mode != "fully-async" or not self.asynchrony.hides_tail:
            return None
        return self.asynchrony.staleness

    def model(self, role: str) -> ModelSpec:
        """The model a role runs (the reference defaults to the actor's), resolved once."""
        if role not in self._models:
            raise KeyError(f"workflow has no {role} model")
        return self._models[role]

    @functools.cached_property
    def _models(self) -> dict[str, ModelSpec]:
        # derived once per spec (frozen): cost sweeps look roles up thousands of times
        custom = {m.name: m for m in self.custom_models}
        out = {}
        for role in ("actor", "critic", "reference", "reward"):
            name = getattr(self.models, role)
            if role == "reference" and name is None:
                name = self.models.actor
            if name is not None:
                out[role] = get_model(name, custom)
        return out

    @property
    def samples(self) -> int:
        """Sequences per iteration: prompts x responses per prompt."""
        return self.global_batch * self.responses_per_prompt

    @property
    def optimizer_steps(self) -> int:
        """Optimizer steps per RL step: global_batch / mini_batch; without a mini-batch, one per
        local update: a fully-async trainer's ``updates_per_sync`` (the verl export's
        ``ppo_mini_batch_size`` is then the local update's prompts), else 1."""
        if self.mini_batch:
            return self.global_batch // self.mini_batch
        return self.asynchrony.updates_per_sync if self.mode == "fully-async" else 1

    @property
    def mean_response_length(self) -> float:
        """E[min(L, response_length)], tokens (``costmodels.response_lengths``)."""
        return self._sequence_moments[0] - self.prompt_length

    @property
    def sequence_moments(self) -> tuple[float, float]:
        """(E[s], E[s^2]) of a training sequence s = prompt + response, tokens: what a phase that
        packs sequences (dynamic batch size) costs per sequence; exact for the constant model."""
        return self._sequence_moments

    @functools.cached_property
    def _sequence_moments(self) -> tuple[float, float]:
        if self.response_lengths.is_constant:
            s = float(self.prompt_length + self.response_length)
            return s, s * s
        from costmodels.response_lengths import MEAN_POINTS

        seq = self.prompt_length + self.response_lengths.sample(MEAN_POINTS, self.response_length)
        return float(seq.mean()), float((seq * seq).mean())

    def tasks(self) -> tuple[Task, ...]:
        """The task DAG (derived once per spec)."""
        return self._tasks

    @functools.cached_property
    def _tasks(self) -> tuple[Task, ...]:
        return derive_tasks(self)


def recompute_by_default(wf: WorkflowSpec, framework: str | None) -> bool:
    """Whether ``framework``'s trainer recomputes the old policy's log-probs for ``wf`` unless
    told otherwise (``WorkflowSpec.old_log_prob_pass`` unset). ROLL (``RLVRConfig.
    set_old_logprobs_status``): only when a step makes several optimizer updates or PPO puts KL in
    the reward. verl, and any framework when none is named: in sync mode (``main_ppo``
    recomputes unless in bypass mode, as OpenRLHF's and NeMo RL's synchronous trainers do), not
    in the overlapping ones (verl's one-step-off recipe config and fully_async_policy train on
    the rollout's log-probs by default, verl >= 0.7; its July 2025 one-step-off recipe still
    recomputed them, ``benchmarks/fidelity`` rows A2 and A4)."""
    if framework == "roll":
        return wf.optimizer_steps > 1 or (wf.algorithm == "ppo" and wf.reference_pass)
    return wf.mode == "sync"


def with_framework_passes(wf: WorkflowSpec, framework: str | None) -> WorkflowSpec:
    """``wf`` with ``old_log_prob_pass`` decided: its own when set, else
    :func:`recompute_by_default` (a copy; ``wf`` itself when nothing is left to decide)."""
    if wf.old_log_prob_pass is not None:
        return wf
    return wf.model_copy(update={"old_log_prob_pass": recompute_by_default(wf, framework)})


#: task names of the RL workflow DAG (HetRL §3.3): use these, never string literals
ACTOR_GENERATION = "actor_generation"
REWARD_INFERENCE = "reward_inference"
REFERENCE_INFERENCE = "reference_inference"
CRITIC_INFERENCE = "critic_inference"
ACTOR_TRAINING = "actor_training"
CRITIC_TRAINING = "critic_training"


@dataclass(frozen=True)
class Task:
    """One RL task G^t: what it runs, on which role's model, after which tasks."""

    name: str
    kind: TaskKind
    role: str
    depends_on: tuple[str, ...]

    @property
    def trains(self) -> bool:
        return self.kind is TaskKind.TRAINING


#: the actor's forward pass over the batch before it trains, to recompute the old policy's
#: log-probs (verl's ``old_log_prob``; ``WorkflowSpec.old_log_prob_pass``): not a task of HetRL's
#: DAG, costed as an inference pass on actor training's own GPUs and layout, where the
#: frameworks run it, and charged to actor training (``costmodels.replica_cost``)
OLD_LOG_PROB_PASS = Task("old_log_prob", TaskKind.INFERENCE, "actor", ())


def derive_tasks(spec: WorkflowSpec) -> tuple[Task, ...]:
    """The task DAG of HetRL §3.3 / Appendix B.4 for the spec's algorithm; without a reference
    pass (``reference_pass: false``, DAPO under verl's fully_async_policy) GRPO trains straight
    on generation's output."""
    gen = Task(ACTOR_GENERATION, TaskKind.GENERATION, "actor", ())
    inference: list[Task] = []
    if spec.models.reward is not None:
        inference.append(Task(REWARD_INFERENCE, TaskKind.INFERENCE, "reward", (gen.name,)))
    if spec.reference_pass:
        inference.append(Task(REFERENCE_INFERENCE, TaskKind.INFERENCE, "reference", (gen.name,)))
    if spec.algorithm == "ppo":
        inference.append(Task(CRITIC_INFERENCE, TaskKind.INFERENCE, "critic", (gen.name,)))
    after = tuple(t.name for t in inference) or (gen.name,)
    training = [Task(ACTOR_TRAINING, TaskKind.TRAINING, "actor", after)]
    if spec.algorithm == "ppo":
        training.append(Task(CRITIC_TRAINING, TaskKind.TRAINING, "critic", after))
    return (gen, *inference, *training)
