"""The README's set-up times, measured on a fresh clone and checked against what the README says.

The README promises a newcomer two commands and how long each takes. This measures them the way
a newcomer meets them: ``git clone`` of the committed tree into a temporary folder, then

1. the set-up (``make .venv/.installed-stamp``: the virtualenv and ``pip install -e .[dev,ray]``,
   which the first ``make plan`` or ``make test`` runs),
2. ``make plan`` (the shipped example planned, written and validated),
3. ``make test`` (the unit suite; ``make test-all`` adds the slow tier CI runs),

each timed by the wall clock, which is the quantity measured here (a benchmark, not a test). With
``--load N`` it runs beside ``N`` CPU-bound processes, as on a shared machine. Measurements are
merged into ``times.json`` under their load ("quiet" or "loaded-N") with the commit, date and
core count, so a quiet and a loaded run can be recorded by two invocations.

``--check`` runs nothing: it reads the README's figures (the ``make plan`` and ``make test`` lines
of its first code block, "about N minutes") and the recorded quiet measurement, and fails when a
figure is more than :data:`TOLERANCE` away from it; ``tests/test_readme_times.py`` runs the same
check in the unit suite, so a README that drifts from the last measurement fails there.

    python -m benchmarks.readme_times --out benchmarks/results/readme-times
    python -m benchmarks.readme_times --load 2 --steps test --out benchmarks/results/readme-times
    python -m benchmarks.readme_times --check
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "readme-times"
#: how far (relative) a README figure may sit from the recorded quiet measurement
TOLERANCE = 0.20
#: step -> the make target it times
STEPS = {"setup": ".venv/.installed-stamp", "plan": "plan", "test": "test"}
_CLAIM = re.compile(r"^make (plan|test)\b.*?about (\d+(?:\.\d+)?) min", re.M)


def readme_claims(text: str) -> dict[str, float]:
    """The README's "about N minutes" for ``make plan`` and ``make test``, in seconds (the lines
    of its first code block that start with the command)."""
    block = text.split("```sh", 1)[-1].split("```", 1)[0]
    return {step: float(minutes) * 60 for step, minutes in _CLAIM.findall(block)}


def check(readme: Path = ROOT / "README.md", times: Path = RESULTS / "times.json") -> list[str]:
    """What the README says that the recorded quiet measurement does not bear out (empty: all
    within :data:`TOLERANCE`)."""
    claims = readme_claims(readme.read_text(encoding="utf-8"))
    quiet = json.loads(times.read_text(encoding="utf-8")).get("quiet", {})
    problems = []
    for step in ("plan", "test"):
        if step not in claims:
            problems.append(f"README: no 'make {step} ... about N minutes' in its first code block")
            continue
        measured = quiet.get(f"{step}_s")
        if measured is None:
            problems.append(f"{times}: no quiet measurement of make {step}")
        elif abs(claims[step] - measured) > TOLERANCE * measured:
            problems.append(
                f"README says make {step} takes about {claims[step] / 60:g} min; measured "
                f"{measured / 60:.1f} min quiet at {quiet.get(f'{step}_commit', '?')} "
                f"(more than {TOLERANCE:.0%} apart)"
            )
    return problems


@contextlib.contextmanager
def _busy(n: int) -> Iterator[None]:
    """``n`` CPU-bound processes for the duration of the block."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def _tail(text: str, lines: int = 3) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def measure(steps: list[str], load: int) -> dict[str, Any]:
    """Clone the committed tree and time ``steps`` in order (the set-up first when a later step
    needs it, so a step's time never includes the install)."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    row: dict[str, Any] = {
        "commit": commit,
        "date": _dt.date.today().isoformat(),
        "cores": os.cpu_count(),
        "busy_processes": load,
    }
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    with tempfile.TemporaryDirectory(prefix="rlplan-readme-") as tmp, _busy(load):
        clone = Path(tmp) / "rlplan"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        for step in ["setup", *[s for s in steps if s != "setup"]]:
            start = time.monotonic()
            proc = subprocess.run(
                ["make", STEPS[step]], cwd=clone, capture_output=True, text=True, env=env
            )
            row[f"{step}_s"] = round(time.monotonic() - start, 1)
            row[f"{step}_commit"] = commit  # steps measured by separate runs keep their own
            row[f"{step}_exit"] = proc.returncode
            row[f"{step}_tail"] = _tail(proc.stdout + proc.stderr)
            print(f"make {STEPS[step]}: {row[f'{step}_s']:.0f} s, exit {proc.returncode}")
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--load", type=int, default=0, help="CPU-bound processes beside the run")
    parser.add_argument(
        "--steps", default="plan,test", help="comma-separated: plan, test (set-up always runs)"
    )
    parser.add_argument("--check", action="store_true", help="check the README, run nothing")
    args = parser.parse_args(argv)
    if args.check:
        problems = check(times=args.out / "times.json")
        for p in problems:
            print(p)
        return 1 if problems else 0
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    unknown = sorted(set(steps) - set(STEPS))
    if unknown or args.load < 0:
        parser.error(f"--steps: unknown step {unknown[0]!r}" if unknown else "--load: below 0")
    row = measure(steps, args.load)
    row["command"] = "python -m benchmarks.readme_times " + " ".join(argv or sys.argv[1:])
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "times.json"
    recorded = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    key = "quiet" if args.load == 0 else f"loaded-{args.load}"
    recorded[key] = {**recorded.get(key, {}), **row}
    path.write_text(json.dumps(recorded, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {path}")
    return 0 if all(row.get(f"{s}_exit") == 0 for s in ["setup", *steps]) else 1


if __name__ == "__main__":
    sys.exit(main())
