"""verl's published RL steps as placement problems and the fixed plans verl ran.

Measured rows: ``benchmarks/fidelity/data/verl_published_steps.csv`` (a copy of the public-source
table: verl ``docs/advance/one_step_off.md`` rows A1-A4, ``docs/advance/fully_async.md`` rows
B1-B11, both at volcengine/verl@b178a3cd; configurations read from the recipe scripts
``recipe/one_step_off_policy/dapo_7b_math_*.sh`` at @503ea75f and
``recipe/fully_async_policy/shell/dapo_7b_math_fsdp2_*.sh`` at @b25bb7d4f).

What each case assumes (the ``steps.md`` output repeats it):

* **Model**: Qwen2.5-Math-7B is costed as the catalog's Qwen2.5-7B (same architecture: 28
  layers, hidden 3584, GQA 28/4 heads, FFN 18944).
* **Cluster**: N H20 in nodes of 8 (NVLink inside a node, the catalog's figure); between nodes
  :data:`NETWORK`: one 400 Gb/s RDMA NIC per GPU, 5 us, the HGX 8-GPU reference design's
  8 x ConnectX-7 (verl's documents do not state the network).
* **Workflow**: GRPO (DAPO: GRPO advantages, no KL, rule-based reward, so no reward model), 512
  prompts, the row's responses per prompt, ``response_length`` = the row's max response length.
  No KL, so no reference pass (``reference_pass: false``); verl's ``old_log_prob`` is the
  trainer's forward pass of the actor over the batch on its own GPUs and layout
  (``old_log_prob_pass: true``), charged to actor training, so stages map gen <->
  actor_generation, old_log_prob <-> actor training's ``log_prob_s``, update_actor <-> the rest
  of actor training.
* **Prompt length**: :data:`PROMPT_TOKENS`. verl packs sequences without padding
  (``use_remove_padding``, dynamic batch size), so a phase costs the prompt's real tokens, not the
  2048-token cap ``max_prompt_length``; rlplan's workflow has one ``prompt_length`` for both.
  DAPO-Math-17k's prompt is a fixed instruction (about 50 tokens) around one competition
  problem; 256 tokens is our estimate, no published statistic was found (``steps.md`` shows the
  cap's result too).
* **Engine**: every row ran vLLM with ``enforce_eager: True``
  (``verl/trainer/config/rollout/rollout.yaml``; no script overrides it): ``--engine eager``.
  Rows A at @503ea75f (July 2025). Rows B were run from the fully-async recipe's development
  branch, whose experiment scripts (``recipe/fully_async_policy/exp/``) were committed from
  2025-08-25 to 2025-09-10 (@7a41993 ... @547d68f), every commit of it with
  ``enforce_eager: True``: the branch predates main's switch to CUDA graphs (2025-08-08,
  ff6978c14); the recipe merged as @b25bb7d4f (2025-10-17), where the default is ``False``.
  Until 2026-11-28 rows B were costed on ``cuda-graph`` from that merge commit. Kernels: the
  default profile (``aic-vllm``), as ``rlplan plan placement`` judges. ``max_num_seqs`` 1024 at
  every one of these commits: the workflow's ``decode_batch_size``.
* **Plans**: colocated rows put every task on all N GPUs; generation TP as the run's script, DP =
  N/TP: 2 for A1 and A3 (``recipe/one_step_off_policy``), 4 for B1, B3 and B5, whose experiments'
  own scripts set ``gen_tp=4``
  (``recipe/fully_async_policy/exp/qwen2-7B-math_{32,64,128}/fsdp2_colocate*/*.sh``, the
  experiments ``dapo_qwen2-7B-math_28k_fsdp2_colocate_{32,64,128}_mbs32``: 28K responses,
  mini-batch 32, 400 steps, as the table; until 2026-11-28 these rows took the recipe's generic
  colocate script's 2). Every FSDP2 script runs Ulysses sequence parallelism of 4
  (``ulysses_sequence_parallel_size=4``): each sequence is split over 4 GPUs, so a data-parallel
  rank is 4 GPUs and holds a quarter of the mini-batch's sequences per GPU that plain FSDP would.
  rlplan has no sequence parallelism; its nearest strategy is TP4 (each sequence's compute split
  over the 4 GPUs of a node's NVLink, all-reduces instead of Ulysses' all-to-alls), used for
  training and the log-prob pass alike, DP = N/4. This decides how long a mini-batch waits for its
  slowest rank (``costmodels.straggler``). rlplan's memory model keeps BF16 weights and FP32
  gradients per TP shard and shards only optimizer states, and has no CPU offload; every plan
  fits. Megatron rows use the scripts' TP2 PP2 for training (and so the log-prob pass),
  micro-batch 2.
* **One-step-off** (A2, A4; the ``*_4_12.sh`` scripts): 2 rollout GPUs per node (generation TP2,
  DP2) and the other 12 training (FSDP: TP4 DP3; Megatron: TP2 PP2).
* **Fully async** (B2, B4, B6-B9): rollout.nnodes whole nodes (generation TP4), the trainer on
  the rest. DAPO takes no KL and ``fully_async_policy`` trains on the rollout's log-probs (it
  recomputes them only for its rollout-correction modes, which these scripts do not set), so
  the workflow has no forward pass before training (``old_log_prob_pass: false``): the trainer
  runs update_actor only, as measured.
* **Measured generation**: synchronous rows' ``gen`` (the whole phase, with the engine's wake-up
  and weight load: ``generate_sequences`` alone is 77% of it in A1/A3); one-step-off rows'
  ``generate_sequences``, which the step hides behind training.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from costmodels.cluster import ClusterSpec
from costmodels.efficiency import Efficiency
from costmodels.placement.plan import PlacementPlan, TaskGroup, TaskPlacement
from costmodels.placement.problem import CostParams, PlacementProblem
from costmodels.workflow import (
    ACTOR_GENERATION,
    ACTOR_TRAINING,
    WorkflowSpec,
)
from planner.efficiency_choice import efficiency_update

DATA = Path(__file__).parent / "data" / "verl_published_steps.csv"

#: between nodes: one 400 Gb/s RDMA NIC per GPU, 5 us (assumed; HGX 8-GPU reference design)
NETWORK = {"intra_zone": {"bandwidth_gbps": 400.0, "latency_ms": 0.005}}
#: real prompt tokens of a DAPO-Math-17k prompt (estimate, module doc)
PROMPT_TOKENS = 256
#: verl's ``rollout.max_num_seqs`` at @503ea75f and @b25bb7d4f
MAX_NUM_SEQS = 1024
MODEL = "Qwen2.5-7B"

#: split of the synchronous and one-step-off rows: calibrate on B3 only, test on the rest. B3 is
#: the one colocated run whose published 100-step windows are stationary (within 1%:
#: ``steps_windows``), so its per-stage means describe one length regime; B1, the row used
#: before, averages two (its last 100 steps took 2.3x its first)
CALIBRATION = ("B3",)


@dataclass(frozen=True)
class CaseSpec:
    """How one measured row is costed: None ``plan`` means not modelled (``reason`` says why)."""

    id: str
    mode: str  # "sync", "one-step-off", "fully-async", "multi-turn"
    gpus: int = 0
    responses_per_prompt: int = 0
    max_response: int = 0
    engine: str = "cuda-graph"
    gen_tp: int = 2
    rollout_gpus: int = 0  # one-step-off and fully-async: rollout GPUs (the rest train)
    staleness: float = 0.0  # fully-async: staleness_threshold
    partial_rollout: bool = True  # fully-async: partial_rollout
    train: tuple[int, int] = (1, 1)  # (tp, pp); dp fills the training GPUs
    micro_batch: int = 1
    reason: str = ""
    note: str = ""


#: verl's ``actor_rollout_ref.actor.ppo_mini_batch_size`` in the recipes' scripts (prompts)
MINI_BATCH = 32
#: FSDP2 with Ulysses SP=4 (every FSDP script): each sequence split over 4 GPUs, as TP4 (module doc)
FSDP = {"train": (4, 1), "micro_batch": 1}
MEGATRON = {"train": (2, 2), "micro_batch": 2}
#: fully_async_policy's ``trigger_parameter_sync_step`` in the 7B scripts (4 local updates of
#: require_batches 4 x 32 prompts per weight sync: the step's 512 prompts)
UPDATES_PER_SYNC = 4
#: fully_async_policy's 7B scripts: rollout TP 4, FSDP2 training, eager vLLM (module doc)
FULLY_ASYNC = {**FSDP, "gen_tp": 4, "engine": "eager"}
#: the colocated 28K experiments' scripts (B1, B3, B5): rollout TP 4, FSDP2 training, eager vLLM
#: (module doc)
COLOCATED_28K = {**FSDP, "gen_tp": 4, "engine": "eager"}

SPECS: dict[str, CaseSpec] = {
    s.id: s
    for s in (
        CaseSpec("A1", "sync", 16, 12, 20480, "eager", **FSDP),
        CaseSpec(
            "A3",
            "sync",
            16,
            16,
            8192,
            "eager",
            **MEGATRON,
            note="responses per prompt 16 from the colocate script (the 4_12 script: 12)",
        ),
        CaseSpec("B1", "sync", 32, 16, 28672, **COLOCATED_28K),
        CaseSpec("B3", "sync", 64, 16, 28672, **COLOCATED_28K),
        CaseSpec("B5", "sync", 128, 16, 28672, **COLOCATED_28K),
        CaseSpec(
            "A2",
            "one-step-off",
            16,
            12,
            20480,
            "eager",
            rollout_gpus=4,
            **FSDP,
        ),
        CaseSpec("A4", "one-step-off", 16, 12, 8192, "eager", rollout_gpus=4, **MEGATRON),
        CaseSpec(
            "B10",
            "multi-turn",
            reason=(
                "multi-turn tool calls (up to 16 turns, sandbox latency inside gen) with "
                "Qwen2.5-7B-Instruct: the workflow has no tool latency or turns"
            ),
        ),
        CaseSpec("B2", "fully-async", 32, 16, 28672, rollout_gpus=16, staleness=0.5, **FULLY_ASYNC),
        CaseSpec("B4", "fully-async", 64, 16, 28672, rollout_gpus=32, staleness=0.5, **FULLY_ASYNC),
        CaseSpec(
            "B6", "fully-async", 128, 16, 28672, rollout_gpus=64, staleness=0.5, **FULLY_ASYNC
        ),
        CaseSpec(
            "B7",
            "fully-async",
            128,
            16,
            28672,
            rollout_gpus=64,
            staleness=0.0,
            partial_rollout=False,
            **FULLY_ASYNC,
        ),
        CaseSpec(
            "B8", "fully-async", 128, 16, 28672, rollout_gpus=64, staleness=0.1, **FULLY_ASYNC
        ),
        CaseSpec(
            "B9", "fully-async", 128, 16, 28672, rollout_gpus=64, staleness=0.3, **FULLY_ASYNC
        ),
        CaseSpec(
            "B11",
            "multi-turn",
            reason=(
                "multi-turn tool calls, fully async (up to 16 turns, sandbox latency inside "
                "generation): the workflow has no tool latency or turns"
            ),
        ),
    )
}


def read_rows(path: Path = DATA) -> dict[str, dict[str, Any]]:
    """The measured rows by id, with ``step_s`` and ``stages`` (stage name -> seconds) parsed."""
    out = {}
    with path.open(newline="") as fh:
        for row in csv.DictReader(fh):
            stages = {}
            for part in row["stage_breakdown_s"].split(";"):
                m = re.match(r"\s*([\w()]+)\s*=\s*([\d.]+)", part)
                if m:
                    stages[m.group(1)] = float(m.group(2))
            out[row["id"]] = {**row, "step_s": float(row["value"]), "stages": stages}
    return out


def split_of(case_id: str) -> str:
    """``calibration``, ``test`` or ``not modelled``."""
    if SPECS[case_id].reason:
        return "not modelled"
    return "calibration" if case_id in CALIBRATION else "test"


def measured_stages(spec: CaseSpec, row: dict[str, Any]) -> dict[str, float | None]:
    """The row's step and stages on rlplan's names; one-step-off rows' generation is
    ``generate_sequences`` (overlapped with training), synchronous rows' the whole ``gen``.
    Fully-async rows publish the trainer's wait, not generation, and run no ``old_log_prob``
    (the rollout's log-probs are used): step and training only."""
    st = row["stages"]
    if spec.mode == "fully-async":
        return {
            "step": row["step_s"],
            "generation": None,
            "inference": None,
            "training": st.get("update_actor"),
        }
    gen_key = "generate_sequences" if spec.mode == "one-step-off" else "gen"
    return {
        "step": row["step_s"],
        "generation": st.get(gen_key),
        "inference": st.get("old_log_prob"),
        "training": st.get("update_actor"),
    }


def cluster(gpus: int) -> ClusterSpec:
    nodes = [{"name": f"h20-{k}", "gpu": "H20", "count": 8, "zone": "dc"} for k in range(gpus // 8)]
    spec = ClusterSpec.model_validate({"nodes": nodes, "network": NETWORK})
    spec.check()
    return spec


def workflow(spec: CaseSpec, lengths: dict[str, Any], prompt: int = PROMPT_TOKENS) -> WorkflowSpec:
    wf = WorkflowSpec.model_validate(
        {
            "name": f"verl-{spec.id}",
            "algorithm": "grpo",
            "mode": {"one-step-off": "async", "fully-async": "fully-async"}.get(spec.mode, "sync"),
            **(
                {
                    "fully_async": {
                        "staleness": spec.staleness,
                        "partial_rollout": spec.partial_rollout,
                        "updates_per_sync": UPDATES_PER_SYNC,
                    }
                }
                if spec.mode == "fully-async"
                else {}
            ),
            "models": {"actor": MODEL},
            "global_batch": 512,
            "responses_per_prompt": spec.responses_per_prompt,
            "prompt_length": prompt,
            "response_length": spec.max_response,
            "response_lengths": lengths,
            "micro_batch_size": spec.micro_batch,
            # ppo_mini_batch_size 32 prompts in every script (one_step_off.md, fully_async.md):
            # 16 optimizer steps per RL step
            "mini_batch": MINI_BATCH,
            "decode_batch_size": MAX_NUM_SEQS,
            # DAPO takes no KL: no reference; fully_async_policy trains on the rollout's
            # log-probs, the other modes' trainers recompute them (old_log_prob)
            "reference_pass": False,
            "old_log_prob_pass": spec.mode != "fully-async",
        }
    )
    wf.check()
    return wf


def problem(
    spec: CaseSpec,
    lengths: dict[str, Any],
    prompt: int = PROMPT_TOKENS,
    efficiency: dict[str, Any] | None = None,
) -> PlacementProblem:
    """The row's placement problem, judged with the default kernels and the row's engine
    (``efficiency``: further :class:`Efficiency` fields, for a sensitivity run)."""
    eff = Efficiency(**{**efficiency_update(None, spec.engine), **(efficiency or {})})
    return PlacementProblem(
        cluster(spec.gpus), workflow(spec, lengths, prompt), CostParams(efficiency=eff)
    )


def grid(devices: list[str], tp: int, pp: int, task: str) -> TaskPlacement:
    """``task`` on ``devices`` in consecutive TP x PP replicas (DP fills them)."""
    per = tp * pp
    dp = len(devices) // per
    replicas = [
        [devices[i * per + j * tp : i * per + (j + 1) * tp] for j in range(pp)] for i in range(dp)
    ]
    return TaskPlacement(task=task, tp=tp, pp=pp, dp=dp, devices=replicas)


def plan(spec: CaseSpec, prob: PlacementProblem) -> PlacementPlan:
    """The plan verl ran (module doc): colocated on all GPUs, or one-step-off's split with
    ``rollout_gpus`` spread evenly over the nodes (the 4_12 scripts: 2 per node)."""
    devices = [d.id for d in prob.topology.devices]
    if spec.rollout_gpus:
        per_node = spec.rollout_gpus // (spec.gpus // 8)
        rollout = [d for d in devices if int(d.split(":")[1]) < per_node]
        if spec.mode == "fully-async":  # rollout.nnodes whole nodes, then trainer.nnodes
            rollout = devices[: spec.rollout_gpus]
        train = [d for d in devices if d not in rollout]
        groups = [
            TaskGroup(tasks=[ACTOR_GENERATION], devices=rollout),
            TaskGroup(
                tasks=[t.name for t in prob.tasks if t.name != ACTOR_GENERATION], devices=train
            ),
        ]
    else:
        rollout = train = devices
        groups = [TaskGroup(tasks=[t.name for t in prob.tasks], devices=devices)]
    tasks = [
        grid(rollout, spec.gen_tp, 1, ACTOR_GENERATION),
        grid(train, *spec.train, ACTOR_TRAINING),
    ]
    return PlacementPlan(groups=groups, tasks=tasks)


def modelled() -> list[CaseSpec]:
    return [s for s in SPECS.values() if not s.reason]


def lognormal(
    median: float, sigma: float, source: str, prompt_share: float = 0.0
) -> dict[str, Any]:
    return {
        "distribution": "lognormal",
        "median": median,
        "sigma": sigma,
        "prompt_share": prompt_share,
        "source": source,
    }
