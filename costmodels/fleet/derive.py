"""The problems a fleet plan's stages are checked on, derived from the fleet alone
(``costmodels.fleet``'s module doc).

* **A job alone** (:func:`solo_problem`): the placement problem of a cluster of the job's own
  GPUs, ``rollout_gpus`` of the rollout pool's type on ceil(r / g) nodes of zone ``rollout`` and
  ``train_gpus`` of the training pool's on zone ``train`` (nodes filled in order, the last one
  partly), the pools' links between them. With ``phases: worst-case`` every response is at the
  cap (RollMux §4.2's conservative planning; HetRL's constant lengths), else the workflow's
  distribution.
* **Its phases** (:func:`phase_times`): the placement judge's phases of a plan that runs
  generation on the rollout GPUs and every other task on the training GPUs: rollout = generation
  + the workflow's reward stage (RollMux §2: the rollout phase generates the responses and
  "subsequently" scores them; ``costmodels.workflow.RewardStage``, 0 without one); training =
  inference + training + weight transfer (RollMux's Sync phase follows training on the training
  pool, §5, and the co-scheduling model has two phases, so it is counted there). A job alone
  therefore iterates in exactly the placement judge's synchronous step.
* **The co-scheduling problem** (:func:`cosched_problem`): those phase times, the job's SLO and
  host memory, the actor as its model (RollMux Table 2's warm state and the training pool's GPU
  memory rule), and its own training GPUs as the fewest it may train on: its placement was
  planned there, and the co-scheduling model's linear DP scaling below them would hide that
  the training no longer fits (a 32B job's training and reference on one node of H800 do not).
* **A job in its group** (:func:`member_problem`): the job problem (``costmodels.job``) on the
  rollout nodes the job is pinned to (``g<group>-r<node>``, filled to ``rollout_gpus``) and all of
  its group's training nodes (``g<group>-t<node>``: training follows the pool, RollMux footnote 2);
  a co-located group has training nodes only. The workflow's own length distribution: this is
  the step the job runs at.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from costmodels.cluster import ClusterSpec
from costmodels.cosched.plan import Group
from costmodels.cosched.problem import CoscheduleProblem
from costmodels.fleet.problem import FleetProblem, FleetSpec
from costmodels.job.problem import JobProblem
from costmodels.placement.judge import evaluate_placement
from costmodels.placement.kind import KIND as PLACEMENT
from costmodels.placement.plan import PlacementPlan
from costmodels.placement.problem import PlacementProblem
from costmodels.response_lengths import ResponseLengths

ROLLOUT_ZONE, TRAIN_ZONE = "rollout", "train"


def _nodes(prefix: str, gpu: str, per_node: int, gpus: int, zone: str) -> list[dict[str, Any]]:
    count = -(-gpus // per_node)
    return [
        {
            "name": f"{prefix}{k}",
            "gpu": gpu,
            "count": min(per_node, gpus - k * per_node),
            "zone": zone,
        }
        for k in range(count)
    ]


def _cluster(spec: FleetSpec, nodes: list[dict[str, Any]]) -> ClusterSpec:
    net = spec.network
    zones = {n["zone"] for n in nodes}
    network: dict[str, Any] = {"intra_zone": net.intra_pool.model_dump()}
    if len(zones) > 1:
        network["inter_zone"] = [
            {"zones": [ROLLOUT_ZONE, TRAIN_ZONE], **net.between_pools.model_dump()}
        ]
    cluster = ClusterSpec.model_validate({"nodes": nodes, "network": network})
    cluster.check()
    return cluster


def solo_cluster(fp: FleetProblem, name: str) -> ClusterSpec:
    spec = fp.fleet
    job = spec.jobs[fp.index[name]]
    r, t = spec.rollout_pool, spec.train_pool
    return _cluster(
        spec,
        _nodes("r", r.gpu, r.gpus_per_node, job.rollout_gpus, ROLLOUT_ZONE)
        + _nodes("t", t.gpu, t.gpus_per_node, job.train_gpus, TRAIN_ZONE),
    )


def solo_problem(fp: FleetProblem, name: str) -> PlacementProblem:
    """Job ``name`` alone on its own GPUs, timed as the fleet's ``phases`` say (module doc);
    one object per job, so the judge's caches serve the search, the judge and the validator."""
    cache: dict[str, PlacementProblem] = fp.__dict__.setdefault("_solo", {})
    if name not in cache:
        wf = fp.workflows[name]
        if fp.fleet.phases == "worst-case":
            wf = wf.model_copy(update={"response_lengths": ResponseLengths()})
        cache[name] = PLACEMENT.build(solo_cluster(fp, name), wf)
    return cache[name]


def rollout_devices(problem: PlacementProblem) -> list[str]:
    """The GPUs of the rollout zone (generation's side of a split plan)."""
    return [d.id for d in problem.topology.devices if d.zone == ROLLOUT_ZONE]


def train_devices(problem: PlacementProblem) -> list[str]:
    return [d.id for d in problem.topology.devices if d.zone == TRAIN_ZONE]


def phases_of(breakdown: Mapping[str, Any]) -> tuple[float, float]:
    """(rollout, training) seconds of a placement judge's breakdown (module doc)."""
    ph = breakdown["phases"]
    rollout = ph["generation_s"] + ph.get("reward_s", 0.0)
    return rollout, ph["inference_s"] + ph["training_s"] + ph["weight_transfer_s"]


def phase_times(fp: FleetProblem, name: str, plan: PlacementPlan) -> tuple[float, float]:
    """Job ``name``'s (rollout, training) phase seconds under its solo ``plan`` (module doc)."""
    return phases_of(evaluate_placement(solo_problem(fp, name), plan).breakdown)


def cosched_problem(
    fp: FleetProblem, phases: Mapping[str, tuple[float, float]]
) -> CoscheduleProblem:
    """The co-scheduling problem of the fleet with these (rollout, training) phase seconds."""
    actors = {name: wf.models.actor for name, wf in fp.workflows.items()}
    return CoscheduleProblem(fp.fleet.cosched_jobs(phases, actors))


def member_cluster(fp: FleetProblem, group_index: int, group: Group, name: str) -> ClusterSpec:
    """Job ``name``'s GPUs in group ``group_index`` (module doc)."""
    spec = fp.fleet
    job = spec.jobs[fp.index[name]]
    r, t = spec.rollout_pool, spec.train_pool
    train = _nodes(
        f"g{group_index}-t", t.gpu, t.gpus_per_node, group.train_nodes * t.gpus_per_node, TRAIN_ZONE
    )
    if group.colocated:
        return _cluster(spec, train)
    pins = next(m.rollout for m in group.jobs if m.name == name)
    left, nodes = job.rollout_gpus, []
    for p in pins:
        count = min(r.gpus_per_node, left)
        if count > 0:
            nodes.append(
                {"name": f"g{group_index}-r{p}", "gpu": r.gpu, "count": count, "zone": ROLLOUT_ZONE}
            )
        left -= count
    return _cluster(spec, nodes + train)


def member_problem(fp: FleetProblem, group_index: int, group: Group, name: str) -> JobProblem:
    """The job problem of ``name`` in its group (module doc), one object per (group, pins)."""
    cache: dict[str, JobProblem] = fp.__dict__.setdefault("_members", {})
    key = f"{name}|{group_index}|{group.model_dump_json()}"
    if key not in cache:
        cluster = member_cluster(fp, group_index, group, name)
        jp = JobProblem(PLACEMENT.build(cluster, fp.workflows[name]))
        # members of one job type derive the same rollout problem: one simulation serves them
        jp.__dict__["_rollout_problems"] = fp.__dict__.setdefault("_rollout_problems", {})
        cache[key] = jp
    return cache[key]
