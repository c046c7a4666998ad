"""One serving instance's state in the generation simulator's event core
(``costmodels.generation.engine``'s module doc): its running batch stored relative to its step
counter, its queue, its finish-step heap and its KV blocks, with the closed-form steps to KV
exhaustion."""

from __future__ import annotations

import bisect
import heapq
from collections import deque
from dataclasses import dataclass, field

from costmodels.decode import Instance


@dataclass
class InstanceState:
    """Running batch and queue of one instance.

    Every running request gains one token per decode step, so the batch is kept relative to the
    instance's step counter ``step`` (S): request i is stored as its context offset
    o_i = context - S and its finish step f_i = S + remaining, both fixed while it runs. Then the
    batch's context is ``Σ o_i + n S`` (one running sum), the next completion is the heap's
    smallest f_i, and the KV blocks after t steps are counted from the sorted residues o_i mod B
    (:meth:`blocks`): no per-request work per step or per event."""

    index: int
    inst: Instance
    block: int
    capacity_blocks: int
    clock: float = 0.0
    step: int = 0  # decode steps run so far (S)
    running: dict[int, tuple[int, int, int]] = field(
        default_factory=dict
    )  # id -> (o, f, seq), admission order
    offset_sum: int = 0  # Σ o_i
    floor_sum: int = 0  # Σ floor(o_i / B)
    residues: list[int] = field(default_factory=list)  # sorted o_i mod B
    finish: list[tuple[int, int, int]] = field(
        default_factory=list
    )  # heap of (f, seq, id); stale entries skipped
    seq: int = 0
    waiting: deque[int] = field(default_factory=deque)
    busy_s: float = 0.0
    timeline: list[tuple[float, float, int, int]] = field(
        default_factory=list
    )  # (start, end, batch, KV tokens)
    active: bool = True
    active_since: float = 0.0
    active_s: float = 0.0  # time held before the last release
    kv_ready: set[int] = field(
        default_factory=set
    )  # migrated with their KV: no prefill on admission
    # running requests per shared prompt (group, prompt tokens): a prompt is cached here while
    # one of its requests holds its KV (``ServingParams.share_prompt_prefill``)
    prompt_holders: dict[tuple[int, int], int] = field(default_factory=dict)
    prompt_of: dict[int, tuple[int, int]] = field(default_factory=dict)

    @property
    def context(self) -> int:
        """Tokens in the cache of the running requests."""
        return self.offset_sum + len(self.running) * self.step

    def remaining(self, rid: int) -> int:
        return self.running[rid][1] - self.step

    def holds_prompt(self, prompt: tuple[int, int]) -> bool:
        """Whether a running request holds the KV of ``prompt`` (group, prompt tokens)."""
        return prompt in self.prompt_holders

    def add(
        self, rid: int, context: int, remaining: int, prompt: tuple[int, int] | None = None
    ) -> None:
        if prompt is not None:
            self.prompt_of[rid] = prompt
            self.prompt_holders[prompt] = self.prompt_holders.get(prompt, 0) + 1
        o, f = context - self.step, self.step + remaining
        self.seq += 1
        self.running[rid] = (o, f, self.seq)
        self.offset_sum += o
        self.floor_sum += o // self.block
        bisect.insort(self.residues, o % self.block)
        heapq.heappush(self.finish, (f, self.seq, rid))

    def remove(self, rid: int) -> int:
        """Take a running request out of the batch; its remaining tokens."""
        o, f, _ = self.running.pop(rid)
        prompt = self.prompt_of.pop(rid, None)
        if prompt is not None:
            left = self.prompt_holders[prompt] - 1
            if left:
                self.prompt_holders[prompt] = left
            else:
                del self.prompt_holders[prompt]
        self.offset_sum -= o
        self.floor_sum -= o // self.block
        del self.residues[bisect.bisect_left(self.residues, o % self.block)]
        return f - self.step

    def last_admitted(self) -> int:
        return next(reversed(self.running))

    def next_finish(self) -> int:
        """Steps until the next completion (the batch must not be empty)."""
        heap = self.finish
        while True:
            f, seq, rid = heap[0]
            entry = self.running.get(rid)
            if entry is not None and entry[2] == seq:
                return f - self.step
            heapq.heappop(heap)

    def pop_finished(self) -> list[int]:
        """Remove and return the requests whose last token the current step produced."""
        done, heap = [], self.finish
        while heap and heap[0][0] <= self.step:
            _, seq, rid = heapq.heappop(heap)
            entry = self.running.get(rid)
            if entry is not None and entry[2] == seq:
                self.remove(rid)
                done.append(rid)
        return done

    def blocks(self, extra: int = 0) -> int:
        """KV blocks the running requests hold after ``extra`` more tokens each, in O(log n).

        With o = q B + r and t = S + extra = a B + s, ceil((o + t) / B) = q + a + [r + s >= 1] +
        [r + s >= B + 1]: a sum of two counts over the sorted residues."""
        a, s = divmod(self.step + extra, self.block)
        n, res = len(self.running), self.residues
        return (
            self.floor_sum
            + n * a
            + 2 * n
            - bisect.bisect_left(res, 1 - s)
            - bisect.bisect_left(res, self.block + 1 - s)
        )

    def max_extra(self, capacity: int) -> int:
        """Largest j with ``blocks(j) <= capacity`` (the batch must not be empty), in closed form.

        Write t = S + j = a B + s. At s = 0, blocks = F + n a + #(r >= 1), so the largest block
        boundary is a* = floor((cap - F - #(r >= 1)) / n). For 1 <= s < B, blocks = F + n (a* + 1)
        + #(r >= B + 1 - s), which stays within cap while the (m + 1)-th largest residue is below
        B + 1 - s, m = cap - F - n (a* + 1)."""
        n, big_b, res = len(self.running), self.block, self.residues
        nonzero = n - bisect.bisect_left(res, 1)
        a = (capacity - self.floor_sum - nonzero) // n
        m = capacity - self.floor_sum - n * (a + 1)
        s = 0 if m < 0 else min(big_b - 1, big_b - res[n - m - 1])
        return a * big_b + s - self.step
