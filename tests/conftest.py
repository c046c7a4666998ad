"""Shared helpers: run the real `rlplan` entry point, find test data."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


def rlplan_executable() -> str:
    exe = Path(sys.executable).parent / "rlplan"
    if not exe.exists():  # pragma: no cover - the project is always installed for the tests
        pytest.fail("the rlplan console script is not installed next to this Python; run `make test`")
    return str(exe)


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run([rlplan_executable(), *args], capture_output=True, text=True, cwd=cwd, timeout=timeout, env=env)


@pytest.fixture
def cli():
    return run_cli
