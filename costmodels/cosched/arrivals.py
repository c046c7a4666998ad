"""Job traces for RollMux's cluster-level simulation (§7.4-7.5): jobs arrive, run for a while and
leave. A trace is a jobs file whose jobs carry ``arrival_s`` and ``duration_s`` (running time
alone; a co-executed job runs slower and stays longer), or a generator spec
``NAME:key=value,...``:

* ``philly:jobs=300,hours=580,mean_hours=14.4,sigma=1.0,workload=mixed,gpus=8,seed=0`` — §7.5's
  simulation: Poisson arrivals over ``hours`` (Philly's arrival process, rlplan's reading: the
  paper gives its totals, not its shape), durations lognormal with the given mean and log-sd
  (sigma = 1 puts the longest of 300 near the paper's 142.9 h), phases from Table 6 profiles
  (``workload``: mixed, balanced, rollout_heavy or train_heavy) at their maximum, SLO ~ U(1, 2),
  max group size 5.
* ``production:jobs=200,hours=192,mean_hours=27.9,sigma=1.0,seed=0`` — §7.4's production mix:
  Table 3 job types (``rollmux_jobs.csv``: model, max response length, batch, GPUs) uniformly,
  worst-case rollout simulated on H20 and training costed on H800 by
  ``costmodels.cosched.phases``, SLO ~ U(1, 2), durations lognormal with mean 27.9 h (the
  paper's), over ``hours`` (rlplan's choice: 8 days puts Solo-D's peak near the testbed's 328
  GPUs per pool).
* ``production-mix:jobs=200,hours=336,mean_hours=27.9,sigma=1.0,seed=0`` — §7.4's trace as the
  paper describes it, where Table 3 covers only part of it: Qwen2.5 models of 3B to 32B (uniform),
  maximum response lengths 4k/8k/16k/32k drawn with weights 0.3/0.35/0.2/0.15 (mean 12.0k; the
  paper's 12.1k), 256 responses per step (128 at 32k), 8 + 8 GPUs (16 + 16 for 32B), phases from
  the cost models as for ``production``, over two weeks; every job names its model, so warm-state
  residency (Table 2's host memory) binds.
* ``philly-log:path=FILE,jobs=300,skip=0,workload=mixed,gpus=8,seed=0`` — real arrivals and
  durations from Microsoft's public Philly trace (Jeon et al., ATC '19; github.com/msr-fiddle/
  philly-traces; data under CC BY 4.0). ``path`` names its ``cluster_job_log``, a 1 GB git-LFS
  download that rlplan does not ship; its finished jobs count (status ``Pass``, every attempt with
  a start and an end, :func:`read_philly_job_log`). Without ``path``, the public sample rlplan
  ships, ``costmodels/data/philly_jobs.csv`` (:func:`read_philly_sample`): the 3 034 jobs of the
  ``jobs.json`` that github.com/marwage/philly-traces derived from the same log (commit b741616,
  CC BY 4.0; finished, 4 or more GPUs, at least 10 minutes, clean attempt records), submitted
  2017-09-04 to 2017-12-22. Either way, jobs in submission order, ``skip`` of them dropped first,
  then ``jobs`` taken: arrival = submission time from the first one taken, duration = the first
  attempt's start to the last attempt's end. Phases and SLOs are drawn as for ``philly``: the trace
  has no RL jobs, so only its arrival process and running times are real. Its times carry no time
  zone; they are read as UTC, so no daylight-saving shift enters an arrival gap.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from functools import cache
from typing import Any

from costmodels.catalog import reference_table
from costmodels.errors import SpecError
from costmodels.key_values import parse_key_values
from costmodels.limits import MAX_JOBS

#: the longest trace a generator draws: Philly spans 83 days (~2 000 h); 100 years is absurd
MAX_TRACE_HOURS = 876_000.0

GENERATORS: dict[str, dict[str, float | str]] = {
    "philly": {
        "jobs": 300,
        "hours": 580.0,
        "mean_hours": 14.4,
        "sigma": 1.0,
        "workload": "mixed",
        "gpus": 8,
        "seed": 0,
        "max_group_size": 5,
    },
    "philly-log": {
        "path": "",
        "jobs": 300,
        "skip": 0,
        "workload": "mixed",
        "gpus": 8,
        "seed": 0,
        "max_group_size": 5,
    },
    "production-mix": {
        "jobs": 200,
        "hours": 336.0,
        "mean_hours": 27.9,
        "sigma": 1.0,
        "seed": 0,
        "max_group_size": 5,
    },
    "production": {
        "jobs": 200,
        "hours": 192.0,
        "mean_hours": 27.9,
        "sigma": 1.0,
        "seed": 0,
        "max_group_size": 5,
    },
}


def parse_generator(text: str) -> tuple[str, dict[str, Any]]:  # noqa: C901
    """``NAME:key=value,...`` into the generator's name and its arguments (defaults filled in)."""
    name, _, rest = text.partition(":")
    if name not in GENERATORS:
        raise SpecError(
            "trace", text, f"not a file or preset, and not a generator ({', '.join(GENERATORS)})"
        )
    defaults = GENERATORS[name]
    kinds = {key: type(value) for key, value in defaults.items()}
    args = {**defaults, **parse_key_values(rest, kinds, field="trace", name=name)}
    for key in ("jobs", "hours", "mean_hours", "sigma", "max_group_size", "gpus"):
        if key in args and not args[key] > 0:
            raise SpecError(f"trace.{key}", args[key], "must be > 0")
    if not 0 < args["jobs"] <= MAX_JOBS:
        raise SpecError("trace.jobs", args["jobs"], f"must be in 1..{MAX_JOBS:,}")
    if name == "philly-log":
        if args["skip"] < 0:
            raise SpecError("trace.skip", args["skip"], "must be >= 0")
        if not 0 <= args["seed"] < 2**63:
            raise SpecError("trace.seed", args["seed"], "must be in 0..2^63-1")
        return name, args
    for key in ("hours", "mean_hours"):
        if args[key] > MAX_TRACE_HOURS:
            raise SpecError(
                f"trace.{key}", args[key], f"at most {MAX_TRACE_HOURS:,.0f} h (100 years)"
            )
    if args["sigma"] > 10:
        raise SpecError(
            "trace.sigma",
            args["sigma"],
            "a lognormal spread above 10 draws durations past any float",
        )
    if args.get("gpus", 1) > 1024:
        raise SpecError("trace.gpus", args["gpus"], "at most 1 024 GPUs per pool of one job")
    if not 0 <= args["seed"] < 2**63:
        raise SpecError("trace.seed", args["seed"], "must be in 0..2^63-1")
    return name, args


def _arrivals_and_durations(
    rng: random.Random, jobs: int, hours: float, mean_hours: float, sigma: float
) -> list[tuple[float, float]]:
    rate = jobs / hours
    mu = math.log(mean_hours) - sigma * sigma / 2  # lognormal mean = exp(mu + sigma^2 / 2)
    t, out = 0.0, []
    for _ in range(jobs):
        t += rng.expovariate(rate)
        out.append((t * 3600.0, rng.lognormvariate(mu, sigma) * 3600.0))
    return out


def _trace_jobs(
    rng: random.Random,
    times: list[tuple[float, float]],
    draw: Any,
) -> list[dict[str, Any]]:
    """One job per (arrival, duration): ``draw(i)`` gives its name and fields, then its SLO is
    drawn from U(1, 2) (§7.4-7.5), in that order for every generator."""
    out = []
    for i, (arrival, duration) in enumerate(times):
        name, fields = draw(i)
        out.append(
            {
                "name": name,
                **fields,
                "slo": round(rng.uniform(1, 2), 3),
                "arrival_s": round(arrival, 1),
                "duration_s": round(duration, 1),
            }
        )
    return out


def _profile_rows(workload: str) -> list[dict[str, str]]:
    """Table 6's profiles of ``workload`` (all nine for ``mixed``)."""
    rows = [
        r
        for r in reference_table("rollmux_profiles.csv")
        if workload == "mixed" or r["workload"] == workload
    ]
    if not rows:
        raise SpecError(
            "trace.workload", workload, "known: mixed, balanced, rollout_heavy, train_heavy"
        )
    return rows


def _profile_job(rng: random.Random, rows: list[dict[str, str]], gpus: int) -> Any:
    """``draw`` for :func:`_trace_jobs`: a Table 6 profile at its maximum phases."""

    def draw(i: int) -> tuple[str, dict[str, Any]]:
        r = rng.choice(rows)
        return f"{r['workload']}-{r['size']}-{i}", {
            "rollout_gpus": gpus,
            "train_gpus": gpus,
            "t_rollout_s": float(r["t_roll_max_s"]),
            "t_train_s": float(r["t_train_max_s"]),
        }

    return draw


def philly_trace(
    jobs: int = 300,
    hours: float = 580.0,
    mean_hours: float = 14.4,
    sigma: float = 1.0,
    workload: str = "mixed",
    gpus: int = 8,
    seed: int = 0,
    max_group_size: int = 5,
) -> dict[str, Any]:
    """§7.5's simulated trace (module doc) as a jobs file."""
    rng = random.Random(seed)
    rows = _profile_rows(workload)
    times = _arrivals_and_durations(rng, jobs, hours, mean_hours, sigma)
    out = _trace_jobs(rng, times, _profile_job(rng, rows, gpus))
    return {
        "name": f"philly-{workload}-{jobs}-s{seed}",
        "description": f"{jobs} Table 6 ({workload}) jobs over {hours:g} h, mean {mean_hours:g} h",
        "max_group_size": max_group_size,
        "jobs": out,
    }


@cache
def job_phases(
    model: str, rollout_gpus: int, train_gpus: int, responses: int, max_len: int
) -> dict[str, Any]:
    """A job type's GPUs and worst-case phases from the cost models (module doc): every response
    at ``max_len`` on H20 rollout GPUs, training on H800 over the responses and 512-token
    prompts."""
    from costmodels.cosched.phases import train_seconds, worst_case_rollout_s

    return {
        "model": model,
        "rollout_gpus": rollout_gpus,
        "train_gpus": train_gpus,
        "t_rollout_s": round(
            worst_case_rollout_s(model, "H20", rollout_gpus, responses, max_len), 2
        ),
        "t_train_s": round(train_seconds(model, "H800", train_gpus, responses, 512, max_len), 2),
    }


@cache
def table3_phases() -> dict[str, dict[str, Any]]:
    """Table 3's job types with worst-case phase durations from the cost models (module doc)."""
    return {
        r["job_type"]: job_phases(
            r["model"],
            int(r["rollout_gpus"]),
            int(r["train_gpus"]),
            int(r["batch_size"]),
            int(r["max_len_tokens"]),
        )
        for r in reference_table("rollmux_jobs.csv")
    }


#: §7.4's mix (module doc): models, and maximum response lengths with their weights
MIX_MODELS = ("Qwen2.5-3B", "Qwen2.5-7B", "Qwen2.5-14B", "Qwen2.5-32B")
MIX_LENGTHS = ((4096, 0.30), (8192, 0.35), (16384, 0.20), (32768, 0.15))


def mix_phases(model: str, max_len: int) -> dict[str, Any]:
    """One §7.4 mix job type (module doc): 16 + 16 GPUs for 32B, else 8 + 8; 256 responses per
    step, 128 past 16k."""
    gpus = 16 if model.endswith("32B") else 8
    return job_phases(model, gpus, gpus, 128 if max_len > 16384 else 256, max_len)


def production_trace(
    jobs: int = 200,
    hours: float = 192.0,
    mean_hours: float = 27.9,
    sigma: float = 1.0,
    seed: int = 0,
    max_group_size: int = 5,
    mix: bool = False,
) -> dict[str, Any]:
    """A production-like jobs file (module doc): RollMux Table 3 job types, or with ``mix`` §7.4's
    production mix (3B-32B, 4k-32k; ``GENERATORS["production-mix"]`` spans 336 h)."""
    rng = random.Random(seed)
    draw: Callable[[int], tuple[str, dict[str, Any]]]
    if mix:
        lengths, weights = zip(*MIX_LENGTHS, strict=True)

        def draw(i: int) -> tuple[str, dict[str, Any]]:
            model = rng.choice(MIX_MODELS)
            max_len = rng.choices(lengths, weights)[0]
            return f"{model.split('-')[-1]}-{max_len // 1024}k-{i}", mix_phases(model, max_len)

    else:
        types = table3_phases()
        names = sorted(types)

        def draw(i: int) -> tuple[str, dict[str, Any]]:
            t = rng.choice(names)
            return f"{t}-{i}", types[t]

    times = _arrivals_and_durations(rng, jobs, hours, mean_hours, sigma)
    out = _trace_jobs(rng, times, draw)
    return {
        "name": f"production-{'mix-' if mix else ''}{jobs}-s{seed}",
        "description": (
            f"{jobs} jobs of §7.4's mix (3B-32B, 4k-32k) over {hours:g} h"
            if mix
            else f"{jobs} RollMux Table 3 jobs over {hours:g} h, mean {mean_hours:g} h"
        ),
        # §7.4's pools: H20 rollout, H800 training
        "rollout_pool": {"gpu": "H20"},
        "train_pool": {"gpu": "H800"},
        "max_group_size": max_group_size,
        "jobs": out,
    }


def _philly_time(value: Any) -> float | None:
    """Seconds since the epoch of a Philly timestamp, read as UTC (module doc); None if absent."""
    from datetime import UTC, datetime

    if not isinstance(value, str) or not value or value == "None":
        return None
    try:
        return datetime.strptime(value, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


#: the public Philly sample rlplan ships (module doc)
PHILLY_SAMPLE = "philly_jobs.csv"


def read_philly_sample() -> list[tuple[float, float]]:
    """(submission time s, running time s) of every job of the shipped Philly sample (module doc),
    in submission order: its rows, each a finished job with its first start and last end, read
    as the ``cluster_job_log`` entries they came from by :func:`read_philly_job_log`."""
    return read_philly_job_log(
        [
            {
                "status": "Pass",
                "submitted_time": row["submitted_time"],
                "attempts": [
                    {"start_time": row["first_start_time"], "end_time": row["last_end_time"]}
                ],
            }
            for row in reference_table(PHILLY_SAMPLE)
        ],
        PHILLY_SAMPLE,
    )


def read_philly_job_log(data: Any, source: str = "cluster_job_log") -> list[tuple[float, float]]:
    """(submission time s, running time s) of the finished jobs of a Philly ``cluster_job_log``
    (module doc), in submission order. A job counts when its status is ``Pass`` and every attempt
    has a start and an end (the trace's notes: some attempts lack them); its running time is the
    first start to the last end (the wall time the job held GPUs for, retries included)."""
    if not isinstance(data, list):
        raise SpecError("", type(data).__name__, "a Philly cluster_job_log is a JSON list", source)
    out = []
    for job in data:
        if not isinstance(job, dict) or job.get("status") != "Pass":
            continue
        attempts = job.get("attempts") or []
        submitted = _philly_time(job.get("submitted_time"))
        starts = [_philly_time(a.get("start_time")) for a in attempts if isinstance(a, dict)]
        ends = [_philly_time(a.get("end_time")) for a in attempts if isinstance(a, dict)]
        if submitted is None or not starts or None in starts or None in ends:
            continue
        duration = max(ends) - min(starts)  # type: ignore[type-var]
        if duration > 0:
            out.append((submitted, float(duration)))
    out.sort(key=lambda x: x[0])
    return out


def philly_log_trace(
    path: str,
    jobs: int = 300,
    skip: int = 0,
    workload: str = "mixed",
    gpus: int = 8,
    seed: int = 0,
    max_group_size: int = 5,
) -> dict[str, Any]:
    """A jobs file on the Philly trace's real arrivals and durations: its ``cluster_job_log`` at
    ``path``, or the shipped public sample when ``path`` is empty (module doc)."""
    import json
    from pathlib import Path

    if path:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SpecError(
                "trace.path", path, f"cannot read a Philly cluster_job_log: {exc}"
            ) from None
        finished = read_philly_job_log(data, path)
    else:
        finished = read_philly_sample()
    finished = finished[skip : skip + jobs]
    source = path or PHILLY_SAMPLE
    if not finished:
        raise SpecError("trace.skip", skip, f"{source} has no finished job past the first {skip}")
    start = finished[0][0]
    rng = random.Random(seed)
    rows = _profile_rows(workload)
    times = [(submitted - start, duration) for submitted, duration in finished]
    out = _trace_jobs(rng, times, _profile_job(rng, rows, gpus))
    return {
        "name": f"philly-log-{workload}-{len(out)}-from{skip}-s{seed}",
        "description": (
            f"{len(out)} Table 6 ({workload}) jobs on Philly's arrivals and durations ({source})"
        ),
        "max_group_size": max_group_size,
        "jobs": out,
    }


def generate(text: str) -> dict[str, Any]:
    name, args = parse_generator(text)
    if name == "philly-log":
        return philly_log_trace(**args)
    if name == "production-mix":
        return production_trace(**args, mix=True)
    return philly_trace(**args) if name == "philly" else production_trace(**args)
