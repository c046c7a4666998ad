"""Which judge: a fingerprint of the cost models that priced a plan.

A plan file records the objective the judge gave its plan. When the judge is later recalibrated
(new kernels, a fitted engine term, a new generation model) the same plan gets another objective,
and the plan is not wrong for it: it was priced by another judge. ``rlplan validate`` tells the
two apart by this fingerprint (docs/architecture.md, "Data flow" step 4): a digest of every file
of the ``costmodels`` package, code and measured data alike, plus the module that defines the
problem kind when it lives elsewhere (a plugin's cost model). Equal fingerprints mean the same
judge, so an objective that disagrees is a false record; different ones mean the recorded
objective is the writer's and today's is shown beside it.

The digest is of file contents in a fixed (sorted, relative-path) order, so it is the same on any
machine and install layout (editable or wheel) of one release; compiled caches are left out.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_SKIPPED_DIRS = {"__pycache__"}
_SKIPPED_SUFFIXES = {".pyc", ".pyo"}
#: hex digits kept: 64 bits, far past any chance collision between two releases' judges
DIGITS = 16


def _files(root: Path) -> list[Path]:
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file()
        and p.suffix not in _SKIPPED_SUFFIXES
        and not _SKIPPED_DIRS.intersection(p.relative_to(root).parts)
    )


@functools.cache
def _package_digest() -> bytes:
    h = hashlib.sha256()
    for path in _files(_PACKAGE):
        h.update(path.relative_to(_PACKAGE).as_posix().encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.digest()


@functools.cache
def judge_fingerprint(problem_type: type | None = None) -> str:
    """The fingerprint of the judge that prices problems of ``problem_type`` (16 hex digits).

    The ``costmodels`` package always counts; a problem type defined outside it (a plugin) adds
    its own module's source file, which is where such a kind keeps its cost model."""
    h = hashlib.sha256(_package_digest())
    if problem_type is not None:
        source = inspect.getsourcefile(problem_type)
        if source is not None:
            path = Path(source).resolve()
            if _PACKAGE not in path.parents:
                h.update(path.read_bytes())
    return h.hexdigest()[:DIGITS]
