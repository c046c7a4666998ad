"""Where SHA-EA's Level-4 evaluations run: in the calling process, on a local process pool, or
on Ray (HetRL §3.4 evaluates each batch of offspring independently, so a batch parallelises).

Every executor gives the search a DEAP-style pair ``(map, evaluate)`` with
``map(evaluate, individuals)`` returning ``[(cost, configs), ...]`` in the individuals' order, so
a run's plan does not depend on the executor or on the number of workers for a given evaluation
budget (results are consumed in order; each worker's memo only changes how fast it answers).

* ``local``, one worker: the search's own :class:`PlacementSpace` (memo shared with the search).
* ``local``, ``workers`` > 1: a :class:`~concurrent.futures.ProcessPoolExecutor` whose processes
  each build one :class:`PlacementSpace` of the problem, once.
* ``ray``: ``workers`` Ray actors (default: one per CPU of the Ray cluster), each holding a
  :class:`PlacementSpace` built once from the problem (shipped once with ``ray.put``), fed by a
  ``ray.util.ActorPool``. With ``ray_address`` the actors run on that cluster, whose nodes need
  rlplan installed; without it a local Ray is started with ``workers`` CPUs and shut down at the
  end. A Ray the caller already initialised is used as it is and left running. Starting a local
  Ray takes a few seconds, which count against the solver's time limit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from costmodels.placement.problem import PlacementProblem
from costmodels.solving import LOCAL_WORKERS
from heuristics.placement.genome import Individual, PlacementSpace

Executor = Literal["local", "ray"]

_WORKER_SPACE: PlacementSpace | None = None


def _init_worker(problem: PlacementProblem) -> None:
    global _WORKER_SPACE  # one space per worker process, built once
    _WORKER_SPACE = PlacementSpace(problem)


def _worker_eval(ind: Individual) -> tuple[float, Any]:
    assert _WORKER_SPACE is not None
    return _WORKER_SPACE.best_configs(ind)


class _SpaceActor:
    """A Ray actor holding one PlacementSpace (and its memo) for the whole run."""

    def __init__(self, problem: PlacementProblem):
        self.space = PlacementSpace(problem)

    def evaluate(self, ind: Individual) -> tuple[float, Any]:
        return self.space.best_configs(ind)


@dataclass
class EvaluationPool:
    """``map(evaluate, individuals)`` on the chosen executor; :meth:`close` releases its workers."""

    map: Callable[[Callable[..., Any], Iterable[Individual]], Iterable[tuple[float, Any]]]
    evaluate: Callable[..., Any]
    workers: int
    executor: Executor
    _close: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        while self._close:
            self._close.pop()()


def evaluation_pool(
    space: PlacementSpace,
    workers: int | None = None,
    executor: Executor = "local",
    ray_address: str | None = None,
) -> EvaluationPool:
    """The evaluation pool for ``space``'s problem (module doc); ``ray_address`` implies Ray."""
    if (
        executor == "ray" or ray_address is not None
    ):  # an address says where the Ray is: it implies Ray
        return _ray_pool(space.problem, workers, ray_address)
    if executor != "local":
        raise ValueError(f"unknown executor {executor!r}; use local or ray")
    if workers is None or workers <= 1:
        return EvaluationPool(map, space.best_configs, 1, "local")
    if workers > LOCAL_WORKERS:
        # each local worker is a process holding the problem and its caches: thousands of them
        # exhaust the machine's memory before the first evaluation (Ray spreads its actors)
        raise ValueError(
            f"workers={workers}: at most {LOCAL_WORKERS} local processes; use executor=ray for more"
        )
    pool = ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(space.problem,))
    return EvaluationPool(pool.map, _worker_eval, workers, "local", [pool.shutdown])


def _ray_pool(
    problem: PlacementProblem, workers: int | None, address: str | None
) -> EvaluationPool:
    try:
        import ray
        from ray.util import ActorPool
    except ImportError:  # pragma: no cover - ray is the [ray] extra, which `make` installs
        raise ValueError("executor='ray' needs Ray: pip install 'rlplan[ray]'") from None
    closers: list[Callable[[], None]] = []
    if not ray.is_initialized():
        ray.init(
            address=address,
            num_cpus=None if address else (workers or None),
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
            configure_logging=False,
        )
        closers.append(ray.shutdown)
    if workers is None:
        workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
    actor = ray.remote(num_cpus=1)(_SpaceActor)
    shared = ray.put(problem)
    actors = [actor.remote(shared) for _ in range(workers)]
    pool = ActorPool(actors)

    def kill() -> None:
        for a in actors:
            ray.kill(a)

    closers.append(kill)  # closed last-in first-out: the actors, then the Ray this started
    return EvaluationPool(
        lambda fn, inds: list(pool.map(fn, list(inds))),
        lambda a, ind: a.evaluate.remote(ind),
        workers,
        "ray",
        closers,
    )
