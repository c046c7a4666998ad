"""A rollout plan (RollPacker §3-§4). Its judge (``costmodels.rollout.judge``) replays it on the
generation simulator for one epoch (``costmodels.rollout.replay``) and times every step.

**The plan** is RollPacker's knobs:

======================  ==========================================================================
``eta_prompts`` η_P      short rounds launch ⌈η_P P0⌉ prompts (ROLL: ``max_prompts_ratio``)
``eta_responses`` η_R    ... with ⌈η_R R0⌉ responses each (ROLL: ``max_num_return_sequences``)
``short_tp``, ``long_tp``  rollout TP of short and long rounds (fixed per round type)
``tp_rule``              ``fixed`` (a static second TP for long rounds is the artifact's
                         ``multi_infer_tp``), ``adaptive`` (the §4.2 preemption rule from
                         ``short_tp``) or ``guarded`` (the rule, applied only when the round time
                         projected at the new TP improves)
``race``                 ``scored`` (a prompt is done when R0 responses are scored, the
                         artifact's, under async reward) or ``generated``
``reward``               ``sync`` (score after rollout) or ``async`` (score as responses complete)
``timeout``              sandbox timeout ``fixed`` (T_max) or ``adaptive`` with ``timeout_lambda``
``scale``                stream trainer: ``off``, ``adaptive`` (milestones 20-50% + KV check) or
                         ``fixed`` at ``scale_at``; frees ``scale_fraction`` of the instances
``fetch``                ``stream`` (train on prompts as they are ready) or ``once`` (Table 4's
                         baseline as the artifact runs it: after rollout, the first ``fetch_cap``
                         of the prompts on the freed GPUs, then the rest on all)
======================  ==========================================================================
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class RolloutPlan(BaseModel):
    """RollPacker's knobs for one job (module doc)."""

    model_config = _STRICT

    eta_prompts: float = Field(
        default=1.0, ge=1, le=4, description="η_P: prompt speculation factor"
    )
    eta_responses: float = Field(
        default=1.0, ge=1, le=4, description="η_R: response speculation factor"
    )
    short_tp: int = Field(
        gt=0, description="rollout TP of short (and plain) rounds; the start of the adaptive rule"
    )
    long_tp: int = Field(gt=0, description="rollout TP of long rounds")
    tp_rule: Literal["fixed", "adaptive", "guarded"] = "fixed"
    reward: Literal["sync", "async"] = "sync"
    race: Literal["scored", "generated"] = Field(
        default="scored",
        description="a short round's prompt is done when R0 responses are scored (the artifact, "
        "under async reward) or when they finish generating",
    )
    timeout: Literal["fixed", "adaptive"] = "fixed"
    timeout_lambda: float = Field(
        default=1.5, ge=1, le=100, description="λ of the adaptive timeout"
    )
    scale: Literal["off", "adaptive", "fixed"] = "off"
    scale_at: float = Field(
        default=0.4, gt=0, lt=1, description="completion share a fixed trigger scales at"
    )
    scale_fraction: float = Field(
        default=0.5, gt=0, lt=1, description="share of rollout instances the stream trainer frees"
    )
    fetch: Literal["stream", "once"] = "stream"
    fetch_cap: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="fetch-once: share of the round's prompts trained on the freed GPUs first",
    )

    def rollout_key(self) -> tuple[Any, ...]:
        """The knobs the rollout simulation depends on (the rest only re-time reward and
        training)."""
        scale = (
            self.scale,
            self.scale_at if self.scale == "fixed" else None,
            self.scale_fraction if self.scale != "off" else None,
        )
        tps = (self.short_tp,) if self.tp_rule != "fixed" else (self.short_tp, self.long_tp)
        # scored inline, the reward knobs time the race itself
        inline = (
            (self.timeout, self.timeout_lambda if self.timeout == "adaptive" else None)
            if self.scores_inline()
            else None
        )
        return (self.eta_prompts, self.eta_responses, self.tp_rule, tps, scale, inline)

    def scores_inline(self) -> bool:
        """Whether short rounds race on scored responses (``race: scored`` under asynchronous
        reward with speculation; ``costmodels.rollout.rounds``)."""
        speculative = self.eta_prompts > 1 or self.eta_responses > 1
        return speculative and self.reward == "async" and self.race == "scored"
