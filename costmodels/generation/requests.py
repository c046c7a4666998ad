"""What the generation simulator runs and what it reports per request (docs/architecture.md,
"Online policies on the generation simulator").

* :class:`Request`: one generation request (prompt length, true output length, group id, ready
  time, tokens already generated). The true output length is the simulator's to know: policies
  (``costmodels.generation.policy``) never read it.
* :class:`RequestRecord`: what happened to a request: first admission, completion, preemptions,
  migrations, abort.
* :func:`balanced_assignment`: the default request-to-instance map of
  ``costmodels.generation.engine.simulate``, round-robin in ready order (it sees no true lengths
  either); :func:`chunked_assignment`: verl's contiguous chunks.

Units: seconds, tokens.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Request:
    """One generation request. ``output`` is the true output length: policies never read it."""

    id: int
    prompt: int
    output: int
    group: int = 0
    ready: float = 0.0
    generated: int = 0

    def __post_init__(self) -> None:
        if (
            self.prompt < 0
            or self.output <= 0
            or self.generated < 0
            or self.generated >= self.output
        ):
            raise ValueError(
                f"request {self.id}: need prompt >= 0, output > 0 and 0 <= generated < output"
            )


@dataclass
class RequestRecord:
    """What happened to a request: first admission, preemptions, completion (seconds)."""

    id: int
    instance: int
    admitted: float | None = None
    completed: float | None = None
    preemptions: int = 0
    migrations: int = 0
    aborted: float | None = None


def arrival_order(requests: list[Request]) -> list[int]:
    """Indices of ``requests`` by ready time, ties by id: the order a dispatcher sees them."""
    return sorted(range(len(requests)), key=lambda i: (requests[i].ready, requests[i].id))


def chunked_assignment(requests: list[Request], instances: int) -> list[int]:
    """verl's dispatch: the batch, in its order (a prompt's responses side by side, as
    ``rollout.n`` repeats them), cut into ``instances`` contiguous chunks of near-equal size,
    chunk i to instance i (``DataProto.chunk`` over the rollout's data-parallel ranks). A prompt's
    responses share an instance, so a hard prompt's long tail lands on one instance: the
    imbalance OrchestrRL's balancer (§4.2) exists to fix."""
    out = [0] * len(requests)
    for k, i in enumerate(arrival_order(requests)):
        out[i] = k * instances // len(requests)
    return out


def balanced_assignment(requests: list[Request], instances: int) -> list[int]:
    """Round-robin by arrival: the dispatcher sees no true lengths (policies never do)."""
    out = [0] * len(requests)
    for k, i in enumerate(arrival_order(requests)):
        out[i] = k % instances
    return out


def group_assignment(requests: list[Request], instances: int) -> list[int]:
    """Whole groups round-robin in order of their first arrival: a prompt's responses on one
    instance, as RL frameworks send them (verl hands each rollout worker a contiguous chunk of
    prompts and vLLM samples ``n`` per prompt; ROLL sends a prompt with
    ``num_return_sequences``), so they can share its prefill
    (``ServingParams.share_prompt_prefill``). Blind to lengths, as :func:`balanced_assignment`."""
    out = [0] * len(requests)
    slot: dict[int, int] = {}
    for i in arrival_order(requests):
        g = requests[i].group
        if g not in slot:
            slot[g] = len(slot) % instances
        out[i] = slot[g]
    return out
