"""Tail batching (RollPacker §3) on the generation simulator: the epoch's bookkeeping, the
race to completion, and the paper's facts over several seeds."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from costmodels.catalog import get_gpu, get_model
from costmodels.decode import Instance
from costmodels.generation.engine import simulate
from costmodels.generation.requests import Request, group_assignment
from costmodels.rollout.rounds import run_round, simulate_epoch
from costmodels.rollout.workload import PromptPool
from tests.conftest import small_rollout_workload


def test_without_speculation_it_is_plain_synchronous_rollout():
    """η = 1 for prompts and responses: every round is the plain synchronous step of P0 prompts
    in dataset order, timed exactly as the engine times those requests on their own (a prompt's
    responses on one instance, sharing its prefill)."""
    wl = small_rollout_workload()
    pool = PromptPool(wl, seed=3)
    epoch = simulate_epoch(wl, eta_prompts=1.0, eta_responses=1.0, seed=3)
    assert [r.kind for r in epoch.rounds] == ["plain"] * 5
    instances = [Instance(get_model(wl.model), get_gpu(wl.gpu), 1, wl.serving()) for _ in range(8)]
    for step, r in enumerate(epoch.rounds):
        prompts = list(range(16 * step, 16 * (step + 1)))
        assert r.kept == prompts and not r.deferred
        requests = [
            Request(i, pool.prompt_length(p), length, group=p)
            for i, (p, length) in enumerate(
                (p, n) for p in prompts for n in pool.responses(p, 4, 0)
            )
        ]
        plain = simulate(instances, requests, group_assignment(requests, len(instances)))
        assert r.time_s == pytest.approx(plain.makespan_s, rel=1e-12)
        assert r.max_response == max(q.output for q in requests)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    eta_p=st.sampled_from([1.0, 1.125, 1.25, 1.5, 2.0]),
    eta_r=st.sampled_from([1.0, 1.25, 1.5]),
    dataset=st.integers(17, 90),
)
def test_every_prompt_is_trained_exactly_once_per_epoch(seed, eta_p, eta_r, dataset):
    """No prompt is lost or trained twice, whatever the speculation and however the epoch's size
    falls against P0; every short round keeps exactly P0 x R0 responses unless the dataset ran
    out; every long round runs with speculation off."""
    wl = small_rollout_workload(dataset_prompts=dataset)
    epoch = simulate_epoch(wl, eta_prompts=eta_p, eta_responses=eta_r, seed=seed)
    assert epoch.lost(dataset) == [] and epoch.repeated() == []
    assert sorted(epoch.trained) == list(range(dataset))
    for r in epoch.rounds:
        if r.kind == "short" and len(r.launched) >= 16:
            assert len(r.kept) == 16 and r.responses_kept == 16 * 4
        assert r.responses_kept == 4 * len(r.kept)
        if r.kind == "long":
            assert not r.deferred and len(r.kept) <= 16


def test_a_short_round_keeps_the_first_prompts_to_complete():
    """Race to completion, checked against the same requests run to the end: with no surplus
    responses nothing is aborted before the round ends, so the kept prompts must be the P0 whose
    R0-th response finished first in the full run, and the round must end at the P0-th of those."""
    wl = small_rollout_workload()
    pool = PromptPool(wl, seed=1)
    prompts = list(range(20))
    r = run_round(pool, prompts, 4, tp=1, keep_prompts=16, keep_responses=4, tick=0.05)
    requests = [
        Request(i, pool.prompt_length(p), n, group=p)
        for i, (p, n) in enumerate((p, n) for p in prompts for n in pool.responses(p, 4, 0))
    ]
    instances = [Instance(get_model(wl.model), get_gpu(wl.gpu), 1, wl.serving()) for _ in range(8)]
    full = simulate(instances, requests, group_assignment(requests, len(instances)))
    done = {p: max(full.records[q.id].completed for q in requests if q.group == p) for p in prompts}
    first = sorted(prompts, key=lambda p: (done[p], p))[:16]
    assert sorted(r.kept) == sorted(first) and set(r.deferred) == set(prompts) - set(first)
    assert r.time_s == pytest.approx(max(done[p] for p in first), rel=1e-12)
    assert r.time_s < full.makespan_s


def test_long_rounds_come_once_the_queue_fills():
    """η_P = 1.25 defers a quarter of P0 per short round: four short rounds, then a long one
    (the paper's period of five steps)."""
    epoch = simulate_epoch(
        small_rollout_workload(dataset_prompts=100), eta_prompts=1.25, eta_responses=1.25, seed=0
    )
    # 100 prompts, 20 launched per short round: 4 short, the long round of 16, one more short
    # round, and the epoch's last 4 deferred prompts flushed as a final long round
    assert [r.kind for r in epoch.rounds] == ["short"] * 4 + ["long", "short", "long"]
    assert len(epoch.rounds[4].kept) == 16 and len(epoch.rounds[-1].kept) == 4


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tail_batching_shortens_rollout_and_its_short_rounds(seed):
    """RollPacker §3 (Fig. 4a, Table 2): short rounds are far shorter than plain steps (the paper
    cuts the maximum response length by up to 8.9x) and an epoch's rollout takes less time."""
    wl = small_rollout_workload(
        gpus=16, prompts_per_step=32, responses_per_prompt=8, dataset_prompts=160, max_response=8192
    )
    plain = simulate_epoch(wl, eta_prompts=1.0, eta_responses=1.0, seed=seed)
    tail = simulate_epoch(wl, eta_prompts=1.25, eta_responses=1.25, seed=seed)
    shorts = [r for r in tail.rounds if r.kind == "short"]
    assert max(r.max_response for r in shorts) * 2 < max(r.max_response for r in plain.rounds)
    assert sum(r.time_s for r in shorts) / len(shorts) * 2 < sum(
        r.time_s for r in plain.rounds
    ) / len(plain.rounds)
    assert tail.time_s < plain.time_s


def test_speculation_factors_below_one_are_refused():
    with pytest.raises(ValueError, match="speculation"):
        simulate_epoch(small_rollout_workload(), eta_prompts=0.9)
    with pytest.raises(ValueError, match="TP"):
        simulate_epoch(small_rollout_workload(), tp=3)


def test_the_race_reads_the_same_observations_without_running_token_counts(monkeypatch):
    """The race declares ``watches_progress = False`` (it reads a request's tokens only once it
    is done), so the engine skips refreshing running requests each tick: the epoch must come out
    exactly as with every observation refreshed."""
    from costmodels.rollout.judge import evaluate_rollout
    from costmodels.rollout.problem import JobSpec, RolloutProblem
    from costmodels.rollout.rounds import RaceToCompletion
    from costmodels.rollout.space import verl_plan

    def judged():
        job = JobSpec.model_validate({"workload": small_rollout_workload(), "seed": 0})
        problem = RolloutProblem(job)
        plan = verl_plan(problem.workload).model_copy(
            update={"eta_prompts": 1.25, "eta_responses": 1.5}
        )
        return evaluate_rollout(problem, plan)

    fast = judged()
    monkeypatch.setattr(RaceToCompletion, "watches_progress", True)
    assert judged() == fast
