"""Shared helpers: run the real `rlplan` entry point, find test data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

DATA = Path(__file__).parent / "data"

# Property tests draw the same examples on every run (derandomize): a suite that passes on one
# machine passes on the next, whatever the load. `HYPOTHESIS_PROFILE=explore` draws fresh ones
# (and keeps failures in .hypothesis/), the way to hunt for new counterexamples; each one found
# becomes a named regression test.
settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


def broken_constraints(violations: list[str]) -> set[str]:
    """The constraint names of a result's violations (``[SLO] job ...`` -> ``SLO``)."""
    return {v.partition("]")[0].lstrip("[") for v in violations}


#: the training-state settings of ``costmodels.memory.tasklet_memory`` the memory tests use:
#: activation recomputation, fp32 gradients, Adam's 12 bytes a parameter, sharded over data ranks
ADAM_WITH_RECOMPUTE = {
    "recompute": True,
    "grad_bytes": 4,
    "optimizer_bytes": 12,
    "distributed_optimizer": True,
}


def small_rollout_workload(**fields: object):
    """A rollout workload small enough to simulate whole epochs in a test: Qwen2.5-7B on 8 H800 at
    TP 1, 16 prompts of 4 responses up to 4096 tokens, 80 prompts in the dataset; ``fields``
    override any of these."""
    from costmodels.rollout.workload import RolloutWorkload

    base = {
        "model": "Qwen2.5-7B",
        "gpu": "H800",
        "gpus": 8,
        "tp": 1,
        "prompts_per_step": 16,
        "responses_per_prompt": 4,
        "max_response": 4096,
        "dataset_prompts": 80,
        "training": {"replica_gpus": 2},
    }
    return RolloutWorkload(**{**base, **fields})


def rlplan_executable() -> str:
    exe = Path(sys.executable).parent / "rlplan"
    if not exe.exists():  # pragma: no cover - the project is always installed for the tests
        pytest.fail(
            "the rlplan console script is not installed next to this Python; run `make test`"
        )
    return str(exe)


def run_cli(
    *args: str, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [rlplan_executable(), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env=env,
    )


def run_cli_json(*args: object, **kw: Any) -> Any:
    """Run ``rlplan *args`` (which prints JSON: ``--json`` or ``-o -``; paths as they are), require
    exit 0 (stderr shown otherwise), and return the printed document."""
    proc = run_cli(*map(str, args), **kw)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


#: the small placement job the CLI tests plan (a few seconds)
#: its specs: the small-8 cluster preset and GRPO on Qwen3-4B
SMALL_SPECS = ("--cluster", "small-8", "--workflow", "grpo-sync-qwen3-4b")
#: `rlplan plan` of it by the verl baseline (a second): the tests that use it check the command
#: (what is printed, written and re-checked), not a search
SMALL_PLACEMENT = ("plan", "placement", *SMALL_SPECS, "--solver", "verl")


def plan_small(out: Path | str, *extra: str, **kw: object) -> subprocess.CompletedProcess[str]:
    """``rlplan plan`` the small placement job to ``out`` (``-`` for stdout)."""
    return run_cli(*SMALL_PLACEMENT, *extra, "-o", str(out), **kw)  # type: ignore[arg-type]


def run_cli_pty(*args: str, timeout: float = 300, columns: int = 120) -> tuple[int, str]:
    """Run rlplan on a pseudo-terminal, as a user at a terminal does: (exit code, everything it
    printed). Progress bars, colours and live displays only show up there."""
    import pty
    import threading

    primary, secondary = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:  # a terminal reads as the program writes: an undrained pty blocks it
        while True:
            try:
                data = os.read(primary, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    proc = subprocess.run(
        [rlplan_executable(), *args],
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        timeout=timeout,
        env={**os.environ, "COLUMNS": str(columns)},
    )
    os.close(secondary)
    reader.join(timeout=10)
    os.close(primary)
    return proc.returncode, b"".join(chunks).decode(errors="replace")


@pytest.fixture
def cli():
    return run_cli
