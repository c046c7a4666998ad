"""The house's lint, in `make test` so CI holds it (docs/architecture.md, "The house"): `ruff check`
(E501 at the configured line length, complexity over 15 refused for new functions) and
`ruff format --check` pass over the whole tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def _ruff() -> str:
    beside = Path(sys.executable).with_name("ruff")  # the venv's, installed by the dev extra
    found = str(beside) if beside.exists() else shutil.which("ruff")
    if found is None:
        pytest.skip("ruff is not installed (pip install -e '.[dev]')")
    return found


@pytest.mark.parametrize(
    "args", [("check", "."), ("format", "--check", ".")], ids=["check", "format"]
)
def test_ruff_passes(args):
    proc = subprocess.run([_ruff(), *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
