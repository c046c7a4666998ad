"""Greedy circuit allocation's speed against the plain Algorithm 3 transcription
(OrchestrRL Appendix D.2).

    python -m benchmarks.circuits_greedy_speed --out benchmarks/results/circuits/greedy_speed

Sparse demand (log-normal volumes) on 128 / 256 / 512 / 1 024 endpoints with 16 / 32 / 48 / 64 OCS
ports and 1 250 to 10 000 demanded pairs, as the ``circuits`` suite's scale instances. Each
instance is built once; ``allocate_greedy`` (the sorted event scan) is timed as the median of 7
runs, the transcription once (it takes minutes at 10^4 pairs), side by side in this run, and the two
allocations are checked equal. Writes ``results.csv`` and ``results.json``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from benchmarks.instances import circuits_instance
from benchmarks.publish import command_line, write_csv, write_json
from heuristics.circuits.greedy import allocate_greedy, allocate_greedy_reference

SIZES = ((128, 16, 1250), (256, 32, 2500), (512, 48, 5000), (1024, 64, 10000))


def run(repeat: int = 7) -> list[dict]:
    rows = []
    for endpoints, ports, pairs in SIZES:
        problem = circuits_instance(endpoints, ports, "sparse", pairs=pairs, seed=0)
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            ours = allocate_greedy(problem)
            times.append(time.perf_counter() - t)
        t = time.perf_counter()
        reference = allocate_greedy_reference(problem)
        ref_s = time.perf_counter() - t
        median = statistics.median(times)
        rows.append(
            {
                "endpoints": endpoints,
                "ports": ports,
                "pairs": pairs,
                "circuits": sum(ours.values()),
                "greedy_median_s": median,
                "greedy_max_s": max(times),
                "reference_s": ref_s,
                "speedup": ref_s / median,
                "same_allocation": ours == reference,
            }
        )
        print(rows[-1], flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=Path("benchmarks/results/circuits/greedy_speed")
    )
    args = parser.parse_args(argv)
    rows = run()
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(
        args.out / "results.json",
        {"command": command_line("benchmarks.circuits_greedy_speed", argv), "rows": rows},
    )
    write_csv(args.out / "results.csv", rows)


if __name__ == "__main__":
    main()
