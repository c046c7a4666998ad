"""Response-length distributions in the placement judge: the quantile sample, continuous batching
in token rounds against a round-by-round count, and the long tail's physics on a placement."""

from __future__ import annotations

import heapq

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from costmodels.batching import makespan_rounds, occupancy_windows
from costmodels.errors import SpecError
from costmodels.placement.judge import evaluate_placement
from costmodels.placement.presets import placement_presets
from costmodels.response_lengths import ResponseLengths, admission_order
from planner.io import build_problem
from planner.solve import solve


def _round_by_round(lengths, slots, prompt):
    free, starts = [0] * min(slots, len(lengths)), []
    for n in lengths:
        t = heapq.heappop(free)
        starts.append(t)
        heapq.heappush(free, t + n)
    end = max(s + n for s, n in zip(starts, lengths, strict=True))
    rounds = batch = context = 0.0
    for r in range(end):
        flight = [k for k, (s, n) in enumerate(zip(starts, lengths, strict=True)) if s <= r < s + n]
        rounds += 1
        batch += len(flight)
        context += sum(prompt + r - starts[k] + 0.5 for k in flight)
    return rounds, batch, context


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 40), min_size=1, max_size=25),
    st.integers(1, 9),
    st.integers(0, 64),
    st.integers(1, 8),
)
def test_windows_keep_the_rounds_occupancy_and_context_of_the_schedule(
    lengths, slots, prompt, windows
):
    got = occupancy_windows(tuple(lengths), slots, prompt, windows)
    want = _round_by_round(lengths, slots, prompt)
    sums = (
        sum(w.rounds for w in got),
        sum(w.batch_sum for w in got),
        sum(w.context_sum for w in got),
    )
    assert sums == pytest.approx(want, rel=1e-9)
    assert makespan_rounds(tuple(lengths), slots) >= max(lengths)


def test_quantile_sample_is_capped_sorted_and_its_longest_grows_with_n():
    rl = ResponseLengths(distribution="lognormal", median=1000, sigma=1.0)
    small, large = rl.sample(16, 8192), rl.sample(1024, 8192)
    assert list(small) == sorted(small) and large.max() <= 8192
    assert large.max() > small.max()  # more responses, a longer longest
    assert np.median(large) == pytest.approx(1000, rel=0.01)
    assert ResponseLengths().sample(5, 700).tolist() == [700] * 5
    hist = ResponseLengths(distribution="histogram", bins=[(100, 3), (5000, 1)])
    assert hist.sample(8, 4096).tolist() == [100] * 6 + [4096] * 2
    assert sorted(admission_order(13)) == list(range(13))


@pytest.mark.parametrize(
    "fields,words",
    [
        ({"distribution": "lognormal"}, "needs its median"),
        ({"distribution": "constant", "median": 10}, "belong to a lognormal"),
        ({"distribution": "histogram"}, "needs bins"),
        ({"distribution": "histogram", "bins": [[10, 0]]}, "sum to 0"),
        ({"distribution": "lognormal", "median": 10, "bins": [[1, 1]]}, "belong to a histogram"),
    ],
)
def test_contradictory_distributions_are_refused(fields, words):
    with pytest.raises(ValidationError, match=words):
        ResponseLengths.model_validate(fields)


def _workflow(lengths, name="grpo-sync-qwen3-8b", **extra):
    wf = {p.name: p for p in placement_presets()}[name].build()
    wf.update(extra)
    if lengths is not None:
        wf["response_lengths"] = lengths
    return wf


def test_a_median_above_the_cap_names_the_field():
    wf = _workflow({"distribution": "lognormal", "median": 5000, "sigma": 0.5})
    with pytest.raises(SpecError, match="response_lengths.median"):
        build_problem("placement", {"cluster": "small-8", "workflow": wf})


def _colocated(problem):
    result = solve(problem, solver="verl")
    return result.plan


def test_constant_is_hetrls_model_and_the_default():
    a = build_problem("placement", {"cluster": "small-8", "workflow": _workflow(None)})
    b = build_problem(
        "placement",
        {"cluster": "small-8", "workflow": _workflow({"distribution": "constant"})},
    )
    plan = _colocated(a)
    assert evaluate_placement(a, plan).objective == evaluate_placement(b, plan).objective


def _phases(lengths, cluster="small-16", **extra):
    p = build_problem("placement", {"cluster": cluster, "workflow": _workflow(lengths, **extra)})
    ev = evaluate_placement(p, _colocated(p))
    return {k: v["time_s"] for k, v in ev.breakdown["tasks"].items()}, p


def test_a_heavier_tail_at_the_same_mean_takes_longer_to_generate():
    """Generation waits for each replica's longest response: at one mean, the spread decides."""
    light = {"distribution": "lognormal", "median": 300, "sigma": 0.3}
    heavy_median = 300 * np.exp((0.3**2 - 1.1**2) / 2)  # the same uncapped mean
    heavy = {"distribution": "lognormal", "median": float(heavy_median), "sigma": 1.1}
    t_light, p_light = _phases(light, global_batch=32)
    t_heavy, p_heavy = _phases(heavy, global_batch=32)
    assert p_heavy.workflow.mean_response_length < 1.1 * p_light.workflow.mean_response_length
    assert t_heavy["actor_generation"] > 1.2 * t_light["actor_generation"]


def test_the_long_tail_caps_what_more_generation_gpus_buy():
    """verl fully_async.md: colocated 64 -> 128 GPUs buys a 7B DAPO step 2.5%, because the
    longest response sets the pace once every replica's responses are all in flight."""
    tail = {"distribution": "lognormal", "median": 120, "sigma": 1.2}
    gains = {}
    for lengths in (None, tail):
        t8, _ = _phases(lengths, cluster="small-8", global_batch=32)
        t16, _ = _phases(lengths, cluster="small-16", global_batch=32)
        gains[lengths is None] = t8["actor_generation"] / t16["actor_generation"]
    assert gains[False] < gains[True]


def test_each_optimizer_step_synchronises_gradients():
    """verl's ppo_mini_batch_size: global_batch / mini_batch optimizer steps, each a DP sync."""
    name = "grpo-sync-qwen3-4b"  # verl's sweep trains it at DP4 on small-8
    p = build_problem("placement", {"cluster": "small-8", "workflow": name})
    wf = _workflow(None, name=name, mini_batch=48)
    q = build_problem("placement", {"cluster": "small-8", "workflow": wf})
    assert q.workflow.optimizer_steps == 8
    plan = _colocated(p)
    a = evaluate_placement(p, plan).breakdown["tasks"]["actor_training"]
    b = evaluate_placement(q, plan).breakdown["tasks"]["actor_training"]
    assert b["dp_s"] == pytest.approx(8 * a["dp_s"]) and a["dp_s"] > 0
    assert b["comp_s"] == a["comp_s"]
    with pytest.raises(SpecError, match="mini_batch"):
        build_problem(
            "placement",
            {"cluster": "small-8", "workflow": _workflow(None, name=name, mini_batch=50)},
        )


def test_histogram_bins_above_the_cap_are_cut_to_it():
    """A bin longer than response_length is accepted on purpose (module doc): its responses stop
    at the cap, so the step costs what the same bin at the cap costs."""
    cap = _workflow(None)["response_length"]
    above = {"distribution": "histogram", "bins": [[cap // 4, 3], [2 * cap, 1]]}
    at_cap = {"distribution": "histogram", "bins": [[cap // 4, 3], [cap, 1]]}
    t_above, p = _phases(above, cluster="small-8", global_batch=32)
    t_at_cap, _ = _phases(at_cap, cluster="small-8", global_batch=32)
    assert p.workflow.response_lengths.sample(8, cap).tolist() == [cap // 4] * 6 + [cap] * 2
    assert t_above == t_at_cap


def test_prompt_share_takes_0_to_1_as_the_docs_say():
    """1 is the model's continuous limit (a prompt's responses equally long), not a degenerate
    case: the slowest replica's lengths approach it from below."""
    fields = {"distribution": "lognormal", "median": 400, "sigma": 0.9}
    one = ResponseLengths(**fields, prompt_share=1).slowest_replica(64, 8, 4, 4096)
    near = ResponseLengths(**fields, prompt_share=0.999).slowest_replica(64, 8, 4, 4096)
    assert one.mean() == pytest.approx(near.mean(), rel=1e-3)
    assert len(set(one.tolist())) <= 64 // 8  # each prompt's 8 responses equally long
    wf = _workflow({**fields, "prompt_share": 1.01})
    with pytest.raises(SpecError, match=r"response_lengths\.prompt_share.*1\.01"):
        build_problem("placement", {"cluster": "small-8", "workflow": wf})


def test_a_histogram_whose_median_is_past_the_cap_is_refused_as_a_lognormals_is():
    """Bins above the cap are cut to it on purpose, but half the responses past the cap is a
    mix-up: refused naming the bins and their median, as a lognormal's median is."""
    cap = _workflow(None)["response_length"]
    hist = ResponseLengths(distribution="histogram", bins=((cap // 4, 1), (2 * cap, 3)))
    assert hist.uncapped_median() == 2 * cap
    with pytest.raises(SpecError, match=rf"response_lengths\.bins.*median {2 * cap}"):
        build_problem(
            "placement",
            {"cluster": "small-8", "workflow": _workflow(hist.model_dump(exclude_none=True))},
        )
    even = ResponseLengths(distribution="histogram", bins=((100, 1), (200, 1), (400, 2)))
    assert even.uncapped_median() == 400  # the length quantile(0.5) gives
    assert even.quantile(np.array([0.5]), 4096)[0] == 400


def _drawn_longest(rl, n, per_prompt, cap, draws=4000, seed=0):
    """The mean over ``draws`` steps of the longest of ``n`` responses drawn by the module's
    model: prompts of ``per_prompt`` responses sharing sqrt(rho) A of their normal scores."""
    from scipy.special import ndtr

    rng = np.random.default_rng(seed)
    rho, g = rl.prompt_share, -(-n // per_prompt)
    a = rng.standard_normal((draws, g, 1))
    e = rng.standard_normal((draws, g, per_prompt))
    score = (np.sqrt(rho) * a + np.sqrt(1 - rho) * e).reshape(draws, -1)[:, :n]
    return float(rl.quantile(ndtr(score.max(axis=1)), cap).mean())


@pytest.mark.parametrize(
    "fields,n,per_prompt,cap",
    [
        ({"median": 420, "sigma": 0.93}, 1024, 1, 32768),  # RollPacker §2.2's tail, 32k cap
        ({"median": 420, "sigma": 0.93, "prompt_share": 0.65}, 1024, 8, 32768),
        ({"median": 420, "sigma": 0.93, "prompt_share": 0.65}, 100, 8, 32768),  # a part prompt
        ({"median": 1000, "sigma": 0.5, "prompt_share": 0.9}, 256, 16, 4096),
        ({"median": 800, "sigma": 1.2, "prompt_share": 1.0}, 512, 8, 16384),
    ],
)
def test_the_longest_response_is_the_expected_longest_of_the_draws(fields, n, per_prompt, cap):
    """``longest_of`` is E[min(cap, max L)] of the step's draws, prompts' responses alike,
    held to 4 000 drawn steps (the draws' standard error is about 0.5%)."""
    rl = ResponseLengths(distribution="lognormal", **fields)
    drawn = _drawn_longest(rl, n, per_prompt, cap)
    assert rl.longest_of(n, cap, per_prompt) == pytest.approx(drawn, rel=0.02)


def test_a_capped_tail_reaches_the_cap_only_as_often_as_its_draws_do():
    """The top stratified quantile F^-1(1 - 1/(2n)) sits at the cap whenever the cap holds
    more than 1/(2n) of the responses; the expected longest does not, and alike responses
    (fewer independent prompts) give a shorter one."""
    cap, n = 32768, 1024
    # a thousandth of the responses run to the cap: a step of 1 024 reaches it 64% of the time
    bins = ((400, 600), (2000, 350), (20000, 49), (40000, 1))
    rl = ResponseLengths(distribution="histogram", bins=bins)
    shared = rl.model_copy(update={"prompt_share": 0.65})
    top = int(rl.quantile(np.array([1 - 0.5 / n]), cap)[0])
    assert top == cap
    assert shared.longest_of(n, cap, 8) < rl.longest_of(n, cap) < cap
    assert rl.longest_of(n, cap) == shared.longest_of(n, cap, 1)  # one per prompt: independent
    assert ResponseLengths().longest_of(n, 700) == 700  # HetRL's constant
    assert rl.longest_of(4 * n, cap) > rl.longest_of(n, cap)  # more responses, a longer one


def test_the_longest_responses_prompt_is_as_hard_as_the_draws_say():
    """The prompt that holds a step's longest response is a hard one: its A (the score its
    responses share) from the regression the judge uses (``_prompt_of_longest`` at the expected
    largest score) against the mean A of that prompt over 4 000 drawn steps."""
    from costmodels.response_lengths import _longest_law, _prompt_of_longest

    rho, n, m = 0.7, 1024, 8
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4000, n // m, 1))
    score = np.sqrt(rho) * a + np.sqrt(1 - rho) * rng.standard_normal((4000, n // m, m))
    top = score.max(axis=2).argmax(axis=1)
    drawn = a[np.arange(4000), top, 0].mean()
    rl = ResponseLengths(distribution="lognormal", median=400, sigma=0.9, prompt_share=rho)
    assert _prompt_of_longest(rho, m, _longest_law(rl, n, m, 1 << 20)[1]) == pytest.approx(
        drawn, abs=0.1
    )
