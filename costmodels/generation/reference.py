"""The per-token reference stepper of the generation simulator (docs/architecture.md, "Online
policies on the generation simulator").

:func:`reference_run` follows the rules of ``costmodels.generation.engine`` (first come first
served admission at step boundaries under ``max_num_seqs`` and the KV cache, the running requests'
next token first; prefill of the admitted; recompute preemption of the most recently admitted
when the next step needs a block the cache does not have; completion at the true output length;
a prompt's prefill shared by its group under ``share_prompt_prefill``),
written plainly: one decode step at a time, ``Instance.decode_step`` called per step, no closed
forms, heaps or binary searches, and no code shared with the engine's event core. The tests hold
the engine's completion times to it; ``benchmarks/generation_speed.py`` times the two. It takes no
policies (``Engine(per_token=True)`` is the per-step run under policies). Units: seconds, tokens.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from costmodels.decode import Instance
from costmodels.generation.requests import Request


def _blocks(running: list[list[Any]], block_size: int, extra: int = 0) -> int:
    return sum(-(-(c + extra) // block_size) for _, c, _ in running)


def _reference_instance(
    inst: Instance, mine: list[Request], block_size: int, out: dict[int, float]
) -> None:
    cap = inst.kv_capacity_tokens() // block_size
    pending = deque(
        Request(r.id, r.prompt, r.output, r.group, r.ready, r.generated)
        for r in sorted(mine, key=lambda r: (r.ready, r.id))
    )
    waiting: deque[Request] = deque()
    running: list[list[Any]] = []  # [request, ctx, rem] in admission order
    t = 0.0
    while pending or waiting or running:
        while pending and pending[0].ready <= t + 1e-12:
            waiting.append(pending.popleft())
        used = _blocks(running, block_size, 1)  # running requests' next token first
        admitted = []
        while waiting and len(running) + len(admitted) < inst.params.max_num_seqs:
            r = waiting[0]
            need = -(-(r.prompt + r.generated + 1) // block_size)
            if used + need > cap:
                break
            used += need
            admitted.append(waiting.popleft())
        if admitted:
            tokens, cached = [], []
            held = {(x.group, x.prompt) for x, _, _ in running}
            for r in admitted:
                if inst.params.share_prompt_prefill and (r.group, r.prompt) in held:
                    if r.generated:  # the prompt's KV is cached: only its own tokens
                        tokens.append(r.generated)
                        cached.append(r.prompt)
                else:
                    tokens.append(r.prompt + r.generated)
                    cached.append(0)
                    held.add((r.group, r.prompt))
            t += inst.prefill_batch(tokens, cached) if any(tokens) else 0.0
            running.extend([r, r.prompt + r.generated, r.output - r.generated] for r in admitted)
        if not running:
            if pending:
                t = max(t, pending[0].ready)
            continue
        if _blocks(running, block_size, 1) > cap:  # preempt the last admitted (recompute)
            r, _, rem = running.pop()
            r.generated = r.output - rem
            waiting.appendleft(r)
            continue
        t += inst.decode_step(len(running), float(sum(c for _, c, _ in running)))["step_s"]
        for item in running:
            item[1] += 1
            item[2] -= 1
        for item in running:
            if item[2] == 0:
                out[item[0].id] = t
        running = [x for x in running if x[2] > 0]


def reference_run(
    instances: list[Instance], requests: list[Request], assignment: list[int], block_size: int = 16
) -> dict[int, float]:
    """The plain per-token stepper with the engine's rules: completion time per request id."""
    out: dict[int, float] = {}
    for i, inst in enumerate(instances):
        _reference_instance(
            inst, [r for r, a in zip(requests, assignment, strict=True) if a == i], block_size, out
        )
    return out
