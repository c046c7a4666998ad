"""One RL job, three judges: the rollout judge (``rlplan plan rollout``), the placement judge
(``rlplan plan placement``) and the co-scheduling judge (``rlplan plan cosched``) on the same job,
the same GPUs, the same plan and the same response lengths, stage by stage (``docs/judge.md``,
"How accurate is the judge").

The job: GRPO on Qwen3-32B over 32 H100-SXM in 4 nodes of 8 (400 Gb/s per GPU between nodes),
256 prompts x 8 responses, responses cut at 4 096 tokens, verl's synchronous colocated plan:
generation TP4 (DP8), training and the log-prob pass TP8 (DP4), cuda-graph vLLM. The rollout judge
runs it on its generation simulator with its own prompt pool (seed 0); its training stage is the
one training model (``costmodels.rl_training``: the placement judge's passes, per token at the
pool's lengths, at ``Efficiency.compute``, as for any job that names no efficiency). The placement
judge gets the same lengths: the pool's mean prompt and the histogram of its responses the
rollout judge's training reads (``PromptPool.batch_shape``, 64-token bins), with the share of
their spread a prompt's responses have in common (the share of ln-length's variance the pool's
prompts set, its hard prompts' shift included), on the training model's network. Reward: math
answers checked by rule (verl's GSM8K/DAPO recipes), the rollout job's synchronous rule reward
and the placement workflow's reward stage with the same figures. Per stage: each judge's seconds
and their ratio, and the step time of each. Then RollPacker Table 2's long-cap jobs (16k and 32k
responses, H800), the same way over eight seeds (:func:`long_cap`): there a step's longest
response reaches the cap in some steps only. Each job also goes to the co-scheduling judge
(``rlplan plan cosched``, :func:`cosched_judge`) as RollMux's two phases made from the placement
judge's step, so the one job is costed by the three problems that plan a whole step.

    python -m benchmarks.one_job --out benchmarks/results/one-job
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.fidelity.steps_cases import grid
from benchmarks.publish import command_line
from costmodels.catalog import get_gpu, get_model
from costmodels.decode import Instance
from costmodels.efficiency import Efficiency
from costmodels.generation.engine import simulate
from costmodels.generation.requests import Request
from costmodels.placement.check import check_placement
from costmodels.placement.decode_cost import workflow_replica_lengths
from costmodels.placement.judge import evaluate_placement
from costmodels.placement.plan import PlacementPlan, TaskGroup
from costmodels.placement.problem import CostParams, PlacementProblem
from costmodels.placement.task_cost import task_cost
from costmodels.rl_training import training_cluster
from costmodels.rollout.judge import evaluate_rollout
from costmodels.rollout.problem import JobSpec, RolloutProblem
from costmodels.rollout.space import verl_plan
from costmodels.rollout.workload import PromptPool, RuleReward
from costmodels.workflow import ACTOR_GENERATION, ACTOR_TRAINING, WorkflowSpec

MODEL, GPU, GPUS, PER_NODE = "Qwen3-32B", "H100-SXM", 32, 8
PROMPTS, RESPONSES, CAP, DATASET = 256, 8, 4096, 1024
GEN_TP, TRAIN_TP = 4, 8
RULE = RuleReward()
BIN = 64
#: a catalog GPU without a price -> its priced twin, for the co-scheduling judge's $/h objective
#: (:func:`cosched_judge`)
PRICED_TWIN = {"H100-SXM": "H800"}


def rollout_job(log_prob_pass: bool = True) -> RolloutProblem:
    """The job as a rollout problem; ``log_prob_pass`` false drops the old log-prob pass, which
    :func:`placement_job` carries over as the workflow's ``old_log_prob_pass``."""
    wl = {
        "model": MODEL,
        "gpu": GPU,
        "gpus": GPUS,
        "gpus_per_node": PER_NODE,
        "tp": GEN_TP,
        "prompts_per_step": PROMPTS,
        "responses_per_prompt": RESPONSES,
        "max_response": CAP,
        "dataset_prompts": DATASET,
        "training": {"replica_gpus": TRAIN_TP, "log_prob_pass": log_prob_pass},
        # math answers checked by rule, as verl's GSM8K/DAPO recipes score them
        "reward": {"rule": 1.0, "sandbox": 0.0, "judge": 0.0},
    }
    job = JobSpec.model_validate({"workload": wl, "seed": 0})
    job.check()
    return RolloutProblem(job)


def lengths_of(problem: RolloutProblem) -> tuple[int, dict[str, Any]]:
    """The rollout pool's mean prompt (tokens) and the histogram of its responses the rollout
    judge's training model reads (``PromptPool.batch_shape``), with the share of their spread a
    prompt's responses have in common."""
    shape = PromptPool(problem.job.workload, problem.seed).batch_shape
    # the share of ln-length's variance a prompt sets, from the pool's own parameters (not
    # fitted): its difficulty N(0, sigma_prompt) plus the hard prompts' shift, a Bernoulli(p)
    # of hard_shift (variance p (1 - p) shift^2), against its responses' own sigma_response
    lp = problem.job.workload.lengths
    prompt_var = lp.sigma_prompt**2 + lp.p_hard * (1 - lp.p_hard) * lp.hard_shift**2
    share = prompt_var / (prompt_var + lp.sigma_response**2)
    return shape.prompt, {**shape.lengths.model_dump(), "prompt_share": share}


def placement_job(problem: RolloutProblem) -> tuple[PlacementProblem, PlacementPlan]:
    """The rollout job as a placement problem on the same GPUs, with verl's colocated plan:
    generation at the job's TP, training and the log-prob pass at its ``replica_gpus`` (TP up
    to a node, PP across nodes), every task on every GPU."""
    w = problem.job.workload
    prompt, hist = lengths_of(problem)
    # the training model's nodes and network, so both judges cost the same links
    cluster = training_cluster(w.gpu, w.gpus, w.gpus_per_node)
    cluster.check()
    wf = WorkflowSpec.model_validate(
        {
            "algorithm": "grpo",
            "mode": "sync",
            "models": {"actor": w.model},
            "global_batch": w.prompts_per_step,
            "responses_per_prompt": w.responses_per_prompt,
            "prompt_length": prompt,
            "response_length": w.max_response,
            "response_lengths": hist,
            "decode_batch_size": w.serving().max_num_seqs,
            # the trainer's recompute of the old log-probs, or none, in both judges; no KL
            "reference_pass": False,
            "old_log_prob_pass": w.training.log_prob_pass,
            # the rollout job's synchronous rule reward (``RuleReward``'s defaults): the same
            # reward stage in both judges
            "reward": {
                "seconds_per_response": RULE.seconds,
                "workers": RULE.sync_workers,
                "source": "costmodels.rollout.workload.RuleReward (RollPacker Table 1's fit)",
            },
        }
    )
    wf.check()
    # the rollout job's training efficiency (a preset's fitted MFU, else the judge's default)
    mfu = w.training.mfu
    efficiency = Efficiency(training_mfu={w.gpu: mfu}) if mfu else Efficiency()
    problem_ = PlacementProblem(cluster, wf, CostParams(efficiency=efficiency))
    devices = [d.id for d in problem_.topology.devices]
    train_tp = min(w.training.replica_gpus, w.gpus_per_node)
    train_pp = max(1, w.training.replica_gpus // train_tp)
    tasks = [
        grid(devices, w.tp, 1, t.name)
        if t.name == ACTOR_GENERATION
        else grid(devices, train_tp, train_pp, t.name)
        for t in problem_.tasks
    ]
    plan = PlacementPlan(
        groups=[TaskGroup(tasks=[t.name for t in problem_.tasks], devices=devices)], tasks=tasks
    )
    return problem_, plan


def same_lengths(
    rp: RolloutProblem, pp: PlacementProblem, plan: PlacementPlan, dbs: int
) -> dict[str, Any]:
    """Both generation engines on the same requests: the placement judge's slowest replica's
    responses (its stratified quantiles with the step's longest) as one rollout instance's
    prompts of ``responses_per_prompt`` (sharing each prompt's prefill), at the same batch
    limit ``dbs`` (the placement judge's). What differs between the judges beyond this is the
    draw: which responses a step holds and how they fall on the instances."""
    w, wf = rp.job.workload, pp.workflow
    gen = plan.task(ACTOR_GENERATION)
    lengths = workflow_replica_lengths(wf, wf.samples // gen.dp)
    serving = w.serving().model_copy(update={"max_num_seqs": dbs})
    inst = Instance(get_model(w.model), get_gpu(w.gpu), w.tp, serving)
    per_prompt = w.responses_per_prompt
    requests = [
        Request(i, wf.prompt_length, n, group=i // per_prompt) for i, n in enumerate(lengths)
    ]
    task = next(t for t in pp.tasks if t.name == ACTOR_GENERATION)
    one = gen.model_copy(update={"decode_batch": dbs})
    return {
        "decode_batch": dbs,
        "rollout_engine_s": simulate([inst], requests).makespan_s,
        "placement_replica_s": task_cost(pp, task, one)[0]["time_s"],
    }


def both_judges(rp: RolloutProblem, worst_case: bool = False) -> dict[str, Any]:
    """Each judge's stages on the job: the rollout judge's mean over its epoch's steps, the
    placement judge's expected step (``costmodels.response_lengths``), and the co-scheduling
    judge's from the placement judge's phases (:func:`cosched_judge`, ``worst_case`` passed on)."""
    _, rb = evaluate_rollout(rp, verl_plan(rp.job.workload))
    steps = rb["steps"]
    pp, plan = placement_job(rp)
    assert check_placement(pp, plan) == [], check_placement(pp, plan)
    ev = evaluate_placement(pp, plan)
    phases = ev.breakdown["phases"]
    rollout = {
        "generation": float(np.mean([s["rollout_s"] for s in steps])),
        "reward": float(np.mean([s["reward_s"] for s in steps])),
        "log-prob + training": float(np.mean([s["train_s"] for s in steps])),
        "step": float(np.mean([s["step_s"] for s in steps])),
    }
    placement = {
        "generation": phases["generation_s"],
        "reward": phases.get("reward_s", 0.0),
        "log-prob + training": phases["inference_s"]
        + phases["training_s"]
        + phases["weight_transfer_s"],
        "step": ev.objective,
    }
    return {
        "rollout_judge": rollout,
        "placement_judge": placement,
        "cosched_judge": cosched_judge(rp, pp, ev.breakdown, worst_case),
        "rollout_steps": len(steps),
        "evaluation": ev,
        "problem": pp,
        "plan": plan,
    }


def cosched_judge(
    rp: RolloutProblem, pp: PlacementProblem, breakdown: dict[str, Any], worst_case: bool = False
) -> dict[str, Any]:
    """The job as RollMux's co-scheduling problem plans it (``rlplan plan cosched``): its two
    phases from the placement judge's step (``costmodels.fleet.derive.phases_of``: rollout =
    generation + reward, training = log-prob + training + weight sync), the job alone in a
    colocated group on its own nodes and alone in a disaggregated one (as many rollout nodes
    again, of the same GPU), each through the co-scheduling judge; with ``worst_case``, for
    scale, the rollout phase RollMux's conservative planning would give it (every response at
    the cap, ``costmodels.cosched.phases.worst_case_rollout_s``).

    The co-scheduling judge reads a pool's GPU for its price (its objective is $/h), HBM
    bandwidth (rollout on training GPUs) and memory only; the catalog prices RollMux Table 1's
    GPUs alone, so an H100-SXM pool is costed as :data:`PRICED_TWIN`'s H800, its export twin
    (the same 989 TFLOPS, 3 350 GB/s and 80 GB; only NVLink differs, which that judge does not
    read)."""
    from costmodels.cosched.judge import evaluate_cosched
    from costmodels.cosched.phases import worst_case_rollout_s
    from costmodels.cosched.plan import CoschedulePlan, Group, Member
    from costmodels.cosched.problem import CoscheduleProblem, JobsSpec
    from costmodels.fleet.derive import phases_of

    w = rp.job.workload
    roll, train = phases_of(breakdown)
    nodes = -(-w.gpus // w.gpus_per_node)
    pool = {"gpu": PRICED_TWIN.get(w.gpu, w.gpu), "gpus_per_node": w.gpus_per_node}
    spec = JobsSpec.model_validate(
        {
            "rollout_pool": pool,
            "train_pool": pool,
            "jobs": [
                {
                    "name": "job",
                    "model": w.model,
                    "rollout_gpus": w.gpus,
                    "train_gpus": w.gpus,
                    "t_rollout_s": roll,
                    "t_train_s": train,
                    "slo": 1.0,
                }
            ],
        }
    )
    spec.check()
    problem = CoscheduleProblem(spec)
    alone = {}
    for label, colocated in (("colocated", True), ("disaggregated", False)):
        group = Group(
            rollout_nodes=0 if colocated else nodes,
            train_nodes=nodes,
            colocated=colocated,
            jobs=[Member(name="job", rollout=[] if colocated else list(range(nodes)))],
        )
        _, b = evaluate_cosched(problem, CoschedulePlan(groups=[group]))
        alone[label] = b["jobs"]["job"]["coexec_s"]
    out: dict[str, Any] = {
        "rollout_phase_s": roll,
        "training_phase_s": train,
        "iteration_alone_s": alone,
        "step": alone["colocated"],
    }
    if worst_case:
        out["worst_case_rollout_s"] = worst_case_rollout_s(
            w.model,
            w.gpu,
            w.gpus,
            w.prompts_per_step * w.responses_per_prompt,
            w.max_response,
            prompt=round(pp.workflow.prompt_length),
        )
    return out


def run() -> dict[str, Any]:
    rp = rollout_job()
    judged = both_judges(rp, worst_case=True)
    pp, plan, ev = judged["problem"], judged["plan"], judged["evaluation"]
    rollout, placement = judged["rollout_judge"], judged["placement_judge"]
    tasks = ev.breakdown["tasks"]
    return {
        "job": {
            "model": MODEL,
            "gpus": f"{GPUS} x {GPU}",
            "prompts": PROMPTS,
            "responses": RESPONSES,
            "cap": CAP,
            "generation_tp": GEN_TP,
            "training_tp": TRAIN_TP,
            "mean_prompt": pp.workflow.prompt_length,
            "mean_response": pp.workflow.mean_response_length,
        },
        "rollout_judge": rollout,
        "placement_judge": placement,
        "ratio_rollout_over_placement": {
            k: (rollout[k] / placement[k] if placement[k] else None) for k in rollout
        },
        "placement_training_detail": {
            k: v for k, v in tasks[ACTOR_TRAINING].items() if isinstance(v, float)
        },
        "rollout_steps": judged["rollout_steps"],
        "cosched_judge": judged["cosched_judge"],
        "same_lengths": same_lengths(rp, pp, plan, max(tasks[ACTOR_GENERATION]["decode_batch"])),
    }


#: RollPacker Table 2's long-cap jobs (``rlplan presets show``), whose step's longest response
#: reaches the cap in only some steps: the judges are compared over seeds, not one epoch
LONG_CAP_JOBS = ("rollout-14b-16k", "rollout-32b-32k")
#: seeds (prompt pools) the long-cap comparison averages: each is one epoch of 10 steps
LONG_CAP_SEEDS = 8


def long_cap(name: str, seeds: int = LONG_CAP_SEEDS) -> dict[str, Any]:
    """The two judges on a long-cap preset over ``seeds`` prompt pools, math answers checked by
    rule as above: each judge's mean step and generation, and the rollout judge's standard
    error over its seeds' epochs (a step's longest response varies a lot from step to step)."""
    from costmodels.rollout.presets import table2_job

    rows = []
    for seed in range(seeds):
        spec = table2_job(name, seed=seed)
        # math answers checked by rule, as the short job: the reward stage is then the same
        wl = {**spec["workload"], "reward": {"rule": 1.0, "sandbox": 0.0, "judge": 0.0}}
        job = JobSpec.model_validate({"workload": wl, "seed": seed})
        job.check()
        rows.append(both_judges(RolloutProblem(job)))
    out: dict[str, Any] = {
        "job": name,
        "seeds": seeds,
        "steps": sum(r["rollout_steps"] for r in rows),
    }
    for stage in ("generation", "step"):
        r = np.array([x["rollout_judge"][stage] for x in rows])
        p = np.array([x["placement_judge"][stage] for x in rows])
        out[stage] = {
            "rollout_s": float(r.mean()),
            "rollout_standard_error_s": float(r.std(ddof=1) / np.sqrt(len(r))),
            "placement_s": float(p.mean()),
            "ratio": float(r.mean() / p.mean()),
        }
    cosched = np.array([x["cosched_judge"]["step"] for x in rows])
    out["step"]["cosched_s"] = float(cosched.mean())
    return out


def markdown(result: dict[str, Any], command: str) -> str:
    j = result["job"]
    lines = [
        "# One RL job, three judges",
        "",
        f"Made by `{command}` (`benchmarks/one_job.py`, whose docstring states the job). GRPO on "
        f"{j['model']}, {j['gpus']}, {j['prompts']} prompts x {j['responses']} responses, cap "
        f"{j['cap']} tokens (pool mean prompt {j['mean_prompt']}, mean response "
        f"{j['mean_response']:.0f}), verl's colocated plan: generation TP{j['generation_tp']}, "
        f"training TP{j['training_tp']}. Rollout judge: mean over its "
        f"{result['rollout_steps']} steps of one epoch.",
        "",
        "| stage | rollout judge s | placement judge s | rollout / placement |",
        "|---|---:|---:|---:|",
    ]
    for k in result["rollout_judge"]:
        r, p = result["rollout_judge"][k], result["placement_judge"][k]
        ratio = result["ratio_rollout_over_placement"][k]
        lines.append(f"| {k} | {r:.1f} | {p:.1f} | {'-' if ratio is None else f'{ratio:.2f}'} |")
    ratio = result["ratio_rollout_over_placement"]
    same = result["same_lengths"]
    engines = same["rollout_engine_s"] / same["placement_replica_s"]
    lines += [
        "",
        f"Generation agrees to {abs(ratio['generation'] - 1):.1%} on the same length "
        "distribution. On the same requests (the placement judge's slowest replica's "
        f"{result['job']['responses']}-response prompts at dbs {same['decode_batch']}) the two "
        f"engines agree to {abs(engines - 1):.1%} ({same['rollout_engine_s']:.1f} s "
        f"request-level, {same['placement_replica_s']:.1f} s replica-level windows); the rest "
        "is the draw. Both keep a prompt's responses together (ROLL's and verl's dispatch), so "
        "the slowest replica holds more than its share of the hard prompts' long responses: "
        "the rollout judge draws its prompts, the placement judge takes the most loaded of "
        "its replicas in expectation (`ResponseLengths.prompt_share`, here the share of the "
        "pool's ln-length variance its prompts set, hard prompts included) beside the step's "
        "expected longest response and its prompt. Log-prob and training "
        "agree to "
        f"{abs(ratio['log-prob + training'] - 1):.1%}: both are the one training model "
        "(`costmodels/replica_cost.py` per strategy at `Efficiency.compute`; the rollout judge "
        "adds the optimizer step and the weight sync after the last gradient). Reward is the "
        "same stage in both (a rule check per response on verl's one scorer, "
        "`costmodels.workflow.RewardStage`). The step agrees to "
        f"{abs(ratio['step'] - 1):.1%}: generation's gap is what is left.",
    ]
    co = result["cosched_judge"]
    alone = co["iteration_alone_s"]
    lines += [
        "",
        "**The same job co-scheduled** (`rlplan plan cosched`, RollMux's problem; "
        "`cosched_judge`). The placement judge's phases make RollMux's two: rollout "
        f"(generation + reward) {co['rollout_phase_s']:.1f} s, training (log-prob, training "
        f"and the weight sync) {co['training_phase_s']:.1f} s. Alone, the co-scheduling judge "
        f"runs the job in {alone['colocated']:.1f} s a step in a colocated group and "
        f"{alone['disaggregated']:.1f} s in a disaggregated one: the placement judge's step "
        f"(ratio {alone['colocated'] / result['placement_judge']['step']:.3f}), the rollout "
        f"judge's to {abs(result['rollout_judge']['step'] / alone['colocated'] - 1):.1%}. "
        "RollMux's conservative planning (every response at the cap) would give the rollout "
        f"phase {co['worst_case_rollout_s']:.1f} s, "
        f"{co['worst_case_rollout_s'] / result['placement_judge']['generation']:.1f}x the "
        "expected generation: a co-scheduling job whose phases are not given is planned on "
        "that worst case (`costmodels.cosched.phases`), a fleet's on the expected phases "
        "(`phases: expected`) or the worst case.",
    ]
    if result.get("long_cap"):
        lines += [
            "",
            "## Long caps, over seeds",
            "",
            "RollPacker Table 2's long-cap jobs (`rlplan presets show NAME`, rule reward as "
            "above), each judge's mean over "
            f"{result['long_cap'][0]['seeds']} prompt pools (seeds), the rollout judge's epoch "
            "of 10 steps each: a step's longest response reaches the cap in some steps only, "
            "so one epoch's mean is a draw. The placement judge takes the step's expected "
            "longest response (`ResponseLengths.longest_of`).",
            "",
            "| job | stage | rollout judge s (standard error) | placement judge s | "
            "rollout / placement | co-scheduling judge s |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for job in result["long_cap"]:
            for stage in ("generation", "step"):
                x = job[stage]
                co = f"{x['cosched_s']:.1f}" if "cosched_s" in x else "-"
                lines.append(
                    f"| {job['job']} | {stage} | {x['rollout_s']:.1f} "
                    f"({x['rollout_standard_error_s']:.1f}) | {x['placement_s']:.1f} | "
                    f"{x['ratio']:.3f} | {co} |"
                )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/one-job"))
    args = ap.parse_args(argv)
    result = run()
    result["long_cap"] = [long_cap(name) for name in LONG_CAP_JOBS]
    args.out.mkdir(parents=True, exist_ok=True)
    command = command_line("benchmarks.one_job", argv)
    (args.out / "results.json").write_text(
        json.dumps({"command": command, **result}, indent=1) + "\n"
    )
    (args.out / "README.md").write_text(markdown(result, command))
    print(markdown(result, command))


if __name__ == "__main__":
    main()
