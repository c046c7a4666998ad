"""The policy API of the generation simulator: what an online policy sees and what it may do
(docs/architecture.md, "Online policies on the generation simulator").

A :class:`Policy` is online code: it lives in ``heuristics/<problem>/`` and the planner passes it
in. ``Engine.run(policies)`` (``costmodels.generation.engine``) calls every policy's ``on_start``
at time 0 and its ``on_tick`` every ``tick`` seconds of simulated time (the smallest tick of the
policies given). Each call receives an :class:`Observation`:

* per instance an :class:`InstanceView`: TP, GPU, clock, the ids of its running, waiting
  (arrived) and pending (not yet arrived) requests, KV blocks used of those it has, and whether
  its GPUs are held;
* per request a :class:`RequestView`: group, prompt, tokens generated so far, ready time,
  instance and state. Never the true output length: a policy knows what has been generated, not
  what is still to come.

and returns a list of actions, carried out in order at that time and logged in
``SimResult.actions``:

* :class:`Dispatch` an unassigned request to an instance's queue;
* :class:`Migrate` a queued or running request to another instance, paying the cheaper of KV
  transfer and recomputation (OrchestrRL Appendix A, ``costmodels.reconfig.migration_cost``);
* :class:`Abort` a request (speculative rollouts);
* :class:`Reconfigure` an instance to another TP: its running requests are recomputed later, and
  it pays the weight re-sharding (``costmodels.reconfig.switch_cost``) plus a pause;
* :class:`Release` an instance's GPUs to other work (its requests become unassigned) and
  :class:`Acquire` them back.

Views and actions are frozen dataclasses and :class:`Policy` is a protocol: this module imports
nothing of the engine, so a policy depends on this API alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class InstanceView:
    """One instance as a policy sees it."""

    index: int
    tp: int
    gpu: str
    clock: float
    running: tuple[int, ...]
    waiting: tuple[int, ...]
    pending: tuple[int, ...]
    kv_blocks_used: int
    kv_blocks: int
    active: bool


@dataclass(frozen=True)
class RequestView:
    """One request as a policy sees it: tokens done so far, never the true output length."""

    id: int
    group: int
    prompt: int
    generated: int
    ready: float
    instance: int
    state: str  # unassigned, pending, waiting, running, done, aborted


@dataclass(frozen=True)
class Observation:
    """What a policy sees at ``time``: every instance and every request, in request order.
    ``changed``: the requests whose view differs from the engine's previous observation (a policy
    that sees every observation can follow the run from these alone)."""

    time: float
    instances: tuple[InstanceView, ...]
    requests: dict[int, RequestView]
    changed: tuple[int, ...] = ()


@dataclass(frozen=True)
class Dispatch:
    """Send an unassigned request to an instance's queue."""

    request: int
    instance: int


@dataclass(frozen=True)
class Migrate:
    """Move a request (queued or running) to another instance, paying the cheaper of KV transfer
    over ``bandwidth_gbs`` and recomputation (OrchestrRL Appendix A, ``costmodels.reconfig``)."""

    request: int
    instance: int
    bandwidth_gbs: float = 25.0


@dataclass(frozen=True)
class Abort:
    """Drop a request (speculative rollouts)."""

    request: int


@dataclass(frozen=True)
class Reconfigure:
    """Restart an instance with another TP (its running requests are recomputed later), paying the
    weight re-sharding (``costmodels.reconfig.switch_cost``) plus ``pause_s``."""

    instance: int
    tp: int
    bandwidth_gbs: float = 25.0
    pause_s: float = 0.0


@dataclass(frozen=True)
class Release:
    """Give an instance's GPUs to other work; its requests become unassigned."""

    instance: int


@dataclass(frozen=True)
class Acquire:
    """Take a released instance's GPUs back."""

    instance: int


Action = Dispatch | Migrate | Abort | Reconfigure | Release | Acquire


class Policy(Protocol):
    """Online policy code (it lives in ``heuristics``; the planner passes it in).

    A policy may set ``watches_progress = False`` when it never reads a running request's token
    count: the engine then does not refresh running requests' views every tick (they show the
    tokens of their last move), which makes an observation cost the requests that moved or
    finished rather than all that run. Absent, it is true."""

    tick: float

    def on_start(self, obs: Observation) -> list[Action]: ...

    def on_tick(self, obs: Observation) -> list[Action]: ...
