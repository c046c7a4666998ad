"""The request-level generation simulator (docs/architecture.md, "Online policies on the
generation simulator"): the event engine equals the per-token reference stepper, its closed forms
equal their sums, the analytic T_k stays near it, the OrchestrRL §2.1 crossover holds in it, and
the length traces match their calibration."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from costmodels.catalog import get_gpu, get_model
from costmodels.decode import (
    Instance,
    ServingParams,
    StepCoefficients,
    simulate_instance,
    step_coefficients,
)
from costmodels.errors import SpecError
from costmodels.generation.engine import Engine, simulate
from costmodels.generation.instance_state import InstanceState
from costmodels.generation.reference import reference_run
from costmodels.generation.request_traces import (
    histogram,
    read_plain_csv,
    read_rollpacker_jsonl,
    read_trace,
    read_vidur_csv,
    synthetic_trace,
    write_plain_csv,
    write_rollpacker_jsonl,
    write_vidur_csv,
)
from costmodels.generation.requests import Request

QWEN14, H800 = get_model("Qwen2.5-14B"), get_gpu("H800")


@st.composite
def workloads(draw):
    """A few instances (some with a small KV cache, so requests get preempted) and requests."""
    model = get_model(draw(st.sampled_from(["Qwen3-1.7B", "Qwen3-8B", "Qwen2.5-14B"])))
    gpu = get_gpu(draw(st.sampled_from(["L40S", "H800", "A100-40GB"])))
    n_inst = draw(st.integers(1, 3))
    # responses of one prompt sharing its prefill (vLLM prefix caching), or not
    share = draw(st.booleans())
    instances = []
    for _ in range(n_inst):
        tp = draw(st.sampled_from([1, 2, 4]))
        util = draw(st.floats(0.3, 0.95))
        inst = Instance(
            model,
            gpu,
            tp,
            ServingParams(
                max_num_seqs=draw(st.integers(1, 64)),
                memory_utilization=util,
                share_prompt_prefill=share,
            ),
        )
        if inst.kv_capacity_tokens() < 4096:
            inst = Instance(model, gpu, tp, ServingParams(share_prompt_prefill=share))
        instances.append(inst)
    n = draw(st.integers(1, 60))
    # a group of 4 is one prompt (its length shared) or 4 prompts in one group
    prompts = [draw(st.integers(0, 600)) for _ in range(-(-n // 4))]
    per_group = draw(st.booleans())
    reqs = [
        Request(
            i,
            prompts[i // 4] if per_group else draw(st.integers(0, 600)),
            draw(st.integers(1, 1500)),
            group=i // 4,
            ready=draw(st.sampled_from([0.0, 0.0, draw(st.floats(0, 20))])),
            generated=0,
        )
        for i in range(n)
    ]
    assignment = [draw(st.integers(0, n_inst - 1)) for _ in range(n)]
    return instances, reqs, assignment, draw(st.sampled_from([1, 16]))


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(workloads())
def test_event_engine_equals_the_per_token_stepper(w):
    instances, reqs, assignment, block = w
    # shrink KV caches so preemption happens: capacity just above the longest request
    longest = max(r.prompt + r.output for r in reqs)
    engine = Engine(instances, reqs, assignment, block)
    for st_ in engine.states:
        st_.capacity_blocks = min(
            st_.capacity_blocks, max(-(-longest // block) + 2, st_.capacity_blocks // 1000)
        )
    caps = [s.capacity_blocks for s in engine.states]
    result = engine.run()
    ref = _reference_with_caps(instances, reqs, assignment, block, caps)
    assert set(ref) == {r.id for r in reqs}
    for rid, t in ref.items():
        assert result.records[rid].completed == pytest.approx(t, rel=1e-9, abs=1e-12)


def _reference_with_caps(instances, reqs, assignment, block, caps):
    """The reference stepper on instances whose KV capacity is forced to ``caps`` blocks."""
    from costmodels.generation import reference

    class Capped:
        def __init__(self, inst, cap):
            self._inst, self._cap = inst, cap

        def __getattr__(self, name):
            return getattr(self._inst, name)

        def kv_capacity_tokens(self):
            return self._cap * block

    return reference.reference_run(
        [Capped(i, c) for i, c in zip(instances, caps, strict=True)], reqs, assignment, block
    )


def test_preemption_happens_and_is_counted():
    inst = Instance(QWEN14, get_gpu("L40S"), 1, ServingParams(max_num_seqs=128))
    rng = np.random.default_rng(3)
    reqs = [Request(i, int(rng.integers(10, 1000)), int(rng.integers(1, 3000))) for i in range(150)]
    result = simulate([inst], reqs)
    ref = reference_run([inst], reqs, [0] * len(reqs))
    assert (
        result.preemptions > 0
        and sum(r.preemptions for r in result.records.values()) == result.preemptions
    )
    assert max(abs(result.records[i].completed - t) / t for i, t in ref.items()) < 1e-9


@settings(max_examples=100, deadline=None)
@given(
    m0=st.floats(0, 1),
    m1=st.floats(0, 1e-3),
    c0=st.floats(0, 1),
    c1=st.floats(0, 1e-3),
    rest=st.floats(0, 1e-2),
    start=st.floats(0, 1e5),
    growth=st.integers(1, 512),
    steps=st.integers(0, 300),
)
def test_closed_form_segment_equals_the_sum_of_its_steps(
    m0, m1, c0, c1, rest, start, growth, steps
):
    coef = StepCoefficients(m0, m1, c0, c1, rest)
    direct = sum(coef.at(start + growth * k) for k in range(steps))
    assert coef.total(start, growth, steps) == pytest.approx(direct, rel=1e-9, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(
    block=st.sampled_from([1, 2, 3, 16]),
    step=st.integers(0, 50),
    later=st.integers(0, 20),
    batch=st.lists(st.tuples(st.integers(0, 60), st.integers(1, 100)), min_size=1, max_size=8),
    removed=st.integers(0, 7),
    capacity=st.integers(0, 80),
)
def test_batch_block_count_and_fit_equal_brute_force(block, step, later, batch, removed, capacity):
    """The offset-form batch (step counter, residues, finish heap) against per-request sums."""
    state = InstanceState(0, None, block, capacity)
    state.step = step
    for rid, (context, remaining) in enumerate(batch):
        state.add(rid, context, remaining)
    if removed < len(batch) - 1:
        state.remove(removed)
    state.step += later
    live = {
        rid: (context + later, remaining - later)
        for rid, (context, remaining) in enumerate(batch)
        if rid in state.running
    }

    def blocks(j):
        return sum(-(-(c + j) // block) for c, _ in live.values())

    assert state.context == sum(c for c, _ in live.values())
    assert all(blocks(j) == state.blocks(j) for j in range(0, 40))
    fits = [j for j in range(0, 80 * block + 100) if blocks(j) <= capacity]
    assert max(0, state.max_extra(capacity)) == (max(fits) if fits else 0)
    assert state.next_finish() == min(r for _, r in live.values())


@pytest.mark.parametrize("model", ["Qwen2.5-14B", "Qwen2-57B-A14B"])
def test_step_coefficients_reproduce_the_decode_model(model):
    inst = Instance(get_model(model), H800, 4)
    engine = Engine([inst], [Request(0, 10, 10)], [0])
    for batch in (1, 7, 64, 256):
        for coef in (
            step_coefficients(inst, batch),
            engine.coef(engine.states[0], batch),
        ):  # the engine's table too
            for context in (0, 1000, 123_456, 2_000_000):
                assert coef.at(context) == pytest.approx(
                    inst.decode_step(batch, context)["step_s"], rel=1e-12
                )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_orchestrrl_crossover_in_the_simulator(seed):
    """OrchestrRL §2.1 on 8 H800, Qwen2.5-14B, batch 512: early a small TP finishes first (TP=4
    in our model, the paper measures TP=2), in the long tail TP=8 finishes first."""
    rng = np.random.default_rng(seed)
    early = [Request(i, 1024, int(rng.uniform(256, 4096))) for i in range(512)]
    tail = [Request(i, 8192, int(rng.uniform(4096, 8192))) for i in range(8)]
    e = {
        tp: simulate([Instance(QWEN14, H800, tp)] * (8 // tp), early).makespan_s for tp in (2, 4, 8)
    }
    t = {
        tp: simulate([Instance(QWEN14, H800, tp)] * (8 // tp), tail).makespan_s for tp in (2, 4, 8)
    }
    assert min(e[2], e[4]) < e[8], e
    assert t[8] < t[4] < t[2], t


def test_analytic_makespan_stays_near_the_simulator():
    """T_k of ``costmodels.decode`` (histogram at bin upper bounds, admission reserving the final
    length) against the engine over random workloads: measured median +3 %, p90 |error| 19 %,
    worst 26 %; the bound keeps it from drifting."""
    rng = np.random.default_rng(1)
    errors = []
    for trial in range(12):
        model = get_model(["Qwen3-8B", "Qwen2.5-14B", "Qwen2.5-32B"][trial % 3])
        inst = Instance(
            model,
            H800,
            int(rng.choice([2, 4, 8])),
            ServingParams(max_num_seqs=int(rng.choice([64, 128, 256]))),
        )
        reqs = synthetic_trace(int(rng.integers(8, 40)), 8, 8192, seed=trial)
        sim = simulate([inst], reqs).makespan_s
        ana = simulate_instance(inst, histogram(reqs).requests())["makespan_s"]
        errors.append((ana - sim) / sim)
    e = np.abs(errors)
    assert np.median(e) < 0.15 and e.max() < 0.4, errors


def test_outputs_curve_idle_and_json():
    inst = Instance(QWEN14, H800, 2)
    reqs = synthetic_trace(16, 4, 4096, seed=0)
    res = simulate([inst, inst], reqs)
    times, left = res.remaining_curve()
    assert left[0] == len(reqs) and left[-1] == 0 and np.all(np.diff(times) >= 0)
    assert res.makespan_s == pytest.approx(times[-1])
    assert res.idle_gpu_s >= 0 and res.tokens == sum(r.output for r in reqs)
    doc = res.to_dict()
    assert doc["makespan_s"] == res.makespan_s and len(doc["requests"]) == len(reqs)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_synthetic_trace_matches_its_calibration(seed):
    """RollPacker §2.2: P75 of 755-1.1k tokens at a 16k maximum, some responses at the limit;
    OrchestrRL Fig. 3a: most responses under 7.5k; responses of one prompt correlate."""
    reqs = synthetic_trace(512, 16, 16384, seed=seed)
    lengths = np.array([r.output for r in reqs])
    assert 755 <= np.percentile(lengths, 75) <= 1100
    assert (lengths < 7500).mean() > 0.95 and lengths.max() == 16384
    by_group = lengths.reshape(512, 16)
    within = np.mean([np.std(np.log(g)) for g in by_group])
    assert within < np.std(np.log(lengths))  # a prompt's responses are closer than the whole step's


def test_trace_readers_round_trip():
    reqs = synthetic_trace(8, 4, 4096, seed=5)
    again = read_plain_csv(write_plain_csv(reqs), "t.csv")
    assert [(r.prompt, r.output, r.group) for r in again] == [
        (r.prompt, r.output, r.group) for r in reqs
    ]
    vid = read_vidur_csv(write_vidur_csv(reqs), "v.csv")
    assert [(r.prompt, r.output, r.ready) for r in vid] == [
        (r.prompt, r.output, r.ready) for r in reqs
    ]
    rp = read_rollpacker_jsonl(write_rollpacker_jsonl(reqs), "g.jsonl")
    assert [(r.prompt, r.output, r.group) for r in rp] == [
        (r.prompt, r.output, r.group) for r in reqs
    ]
    assert len(read_trace(write_rollpacker_jsonl(reqs), "g.jsonl")) == len(reqs)
    hist = histogram(reqs)
    assert hist.total == len(reqs) and all(u % 256 == 0 for u in hist.upper)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("prompt_tokens,output_tokens,group\n10,-5,0\n", "row 2.output_tokens"),
        ("prompt_tokens,output_tokens,group,color\n10,5,0,red\n", "header"),
        ('{"response_lengths": []}\n', "line 1.response_lengths"),
        ("num_prefill_tokens,num_decode_tokens\n10,abc\n", "row 2.num_decode_tokens"),
        ("hello\n", "header"),
    ],
)
def test_bad_traces_name_the_row_and_value(text, where):
    with pytest.raises(SpecError) as exc:
        read_trace(text, "bad.trace")
    assert exc.value.field == where and "bad.trace" in str(exc.value)


def test_cli_simulate_generation(tmp_path):
    from tests.conftest import run_cli, run_cli_json

    png = tmp_path / "sim.png"
    pool = ("--instances", "2xTP4", "--lengths", "synthetic:prompts=16,n=8,max=4096")
    doc = run_cli_json("simulate", "generation", *pool, "--json", "--plot", png)
    assert (
        doc["makespan_s"] > 0
        and doc["request_count"] == 128 == len(doc["requests"])
        and "preemptions" in doc
        and "idle_gpu_s" in doc
    )
    assert all(
        r["completed"] is not None and r["admitted"] is not None for r in doc["requests"].values()
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"prompt_length": 10, "response_lengths": [5, 0]}\n')
    bad = run_cli("simulate", "generation", "--lengths", str(trace))
    assert (
        bad.returncode == 2
        and "response_lengths[1]" in bad.stderr
        and "Traceback" not in bad.stderr
    )
    assert run_cli("simulate", "generation", "--instances", "2xTP3x").returncode == 2


class ChaosPolicy:
    """A seeded policy that exercises every action: dispatches the unassigned, migrates running
    requests, aborts queued ones, reconfigures an instance, releases and re-acquires one.
    Reconfigurations are budgeted: each pauses its instance longer than a short tick, so at 5% per
    tick an unbudgeted one keeps an instance paused for ever (hypothesis found it: one instance,
    a 0.05 s tick, every simulated second paying more pause than it has)."""

    #: reconfigurations per run
    RECONFIGURATIONS = 3

    def __init__(self, seed: int, tick: float, n_instances: int):
        self.rng = np.random.default_rng(seed)
        self.tick, self.n = tick, n_instances
        self.released: int | None = None
        self.reconfigurations = self.RECONFIGURATIONS

    def on_start(self, obs):
        return self.on_tick(obs)

    def on_tick(self, obs):
        from costmodels.generation.policy import (
            Abort,
            Acquire,
            Dispatch,
            Migrate,
            Reconfigure,
            Release,
        )

        out = []
        active = [v.index for v in obs.instances if v.active]
        for rid in sorted(
            r.id for r in obs.requests.values() if r.state == "unassigned" and r.ready <= obs.time
        ):
            out.append(Dispatch(rid, active[int(self.rng.integers(len(active)))]))
        running = sorted(r.id for r in obs.requests.values() if r.state == "running")
        if running and self.n > 1 and self.rng.random() < 0.5:
            rid = running[int(self.rng.integers(len(running)))]
            src = obs.requests[rid].instance
            dst = [i for i in active if i != src]
            if dst:
                out.append(
                    Migrate(
                        rid,
                        dst[int(self.rng.integers(len(dst)))],
                        bandwidth_gbs=float(self.rng.choice([0.5, 50.0])),
                    )
                )
        queued = sorted(r.id for r in obs.requests.values() if r.state in ("waiting", "pending"))
        if queued and self.rng.random() < 0.1:
            out.append(Abort(queued[int(self.rng.integers(len(queued)))]))
        if self.rng.random() < 0.05 and self.reconfigurations > 0:
            self.reconfigurations -= 1
            # a restart, or a larger TP (a smaller shard: the KV cache only grows)
            target = obs.instances[active[int(self.rng.integers(len(active)))]]
            out.append(
                Reconfigure(
                    target.index,
                    int(self.rng.choice([target.tp, min(4, 2 * target.tp)])),
                    pause_s=0.5,
                )
            )
        if self.n > 1 and self.released is None and self.rng.random() < 0.05:
            self.released = active[-1]
            out.append(Release(self.released))
        elif self.released is not None and self.rng.random() < 0.2:
            out.append(Acquire(self.released))
            self.released = None
        return out


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    w=workloads(), seed=st.integers(0, 1000), tick=st.floats(0.05, 3.0), unassigned=st.floats(0, 1)
)
def test_event_engine_equals_per_token_engine_under_a_policy(w, seed, tick, unassigned):
    """Same rules, same policy, same actions: the closed forms and searches change nothing,
    with dispatch, migration (transfer or recompute), aborts, reconfiguration and release."""
    instances, reqs, assignment, block = w
    rng = np.random.default_rng(seed)
    assignment = [-1 if rng.random() < unassigned else a for a in assignment]
    runs = []
    for per_token in (False, True):
        engine = Engine(instances, reqs, assignment, block, per_token=per_token)
        runs.append(engine.run([ChaosPolicy(seed, tick, len(instances))]))
    fast, slow = runs
    assert [a["action"] for a in fast.actions] == [a["action"] for a in slow.actions]
    for rid, rec in slow.records.items():
        other = fast.records[rid]
        assert (rec.completed is None) == (other.completed is None) and (rec.aborted is None) == (
            other.aborted is None
        )
        if rec.completed is not None:
            assert other.completed == pytest.approx(rec.completed, rel=1e-9, abs=1e-9)
        assert other.preemptions == rec.preemptions and other.migrations == rec.migrations
    assert fast.preemptions == slow.preemptions


def test_policy_sees_no_true_lengths_and_actions_are_logged():
    from costmodels.generation.policy import Dispatch, RequestView

    assert "output" not in RequestView.__dataclass_fields__
    inst = Instance(QWEN14, H800, 2)
    reqs = synthetic_trace(4, 4, 2048, seed=1)

    class RoundRobin:
        tick = 0.5

        def on_start(self, obs):
            return [Dispatch(r, i % 2) for i, r in enumerate(sorted(obs.requests))]

        def on_tick(self, obs):
            return []

    res = Engine([inst, inst], reqs, [-1] * len(reqs)).run([RoundRobin()])
    assert len(res.actions) == len(reqs) and all(a["action"] == "Dispatch" for a in res.actions)
    assert all(r.completed is not None for r in res.records.values())


def test_a_prompts_responses_share_its_prefill_while_one_holds_its_kv():
    """vLLM prefix caching under n samples per prompt (``ServingParams.share_prompt_prefill``):
    a group of one prompt is prefilled once; a second group, or sharing off, pays per request."""
    one = [Request(i, 2000, 10, group=0) for i in range(8)]
    two = one + [Request(8 + i, 2000, 10, group=1) for i in range(8)]
    for reqs, prompts in ((one, 1), (two, 2)):
        for share, paid in ((True, prompts), (False, len(reqs))):
            inst = Instance(QWEN14, H800, 2, ServingParams(share_prompt_prefill=share))
            result = simulate([inst], reqs)
            start, end, batch, _ = result.timelines[0][0]
            assert batch == len(reqs)
            assert end - start == pytest.approx(inst.prefill_batch([2000] * paid), rel=1e-12)
            ref = reference_run([inst], reqs, [0] * len(reqs))
            assert all(result.records[i].completed == pytest.approx(t) for i, t in ref.items())
    # a prompt whose responses have all finished is no longer held: its next response pays again
    late = [Request(0, 2000, 10, group=0), Request(1, 2000, 10, group=0, ready=100.0)]
    inst = Instance(QWEN14, H800, 2, ServingParams(share_prompt_prefill=True))
    segments = simulate([inst], late).timelines[0]
    prefills = [e - s for s, e, _, kv in segments if kv == 2000 or kv == 4000]
    assert len(prefills) == 2
    assert all(p == pytest.approx(inst.prefill(2000)) for p in prefills)
