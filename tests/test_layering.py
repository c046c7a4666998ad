"""DESIGN.md's arrows: benchmarks -> planner -> {formulations, heuristics} -> costmodels, and
formulations and heuristics never import each other. Checked on every import statement, lazy
ones inside functions included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
ALLOWED = {
    "costmodels": {"costmodels"},
    "formulations": {"formulations", "costmodels"},
    "heuristics": {"heuristics", "costmodels"},
    "planner": {"planner", "formulations", "heuristics", "costmodels"},
    "benchmarks": {"benchmarks", "planner", "formulations", "heuristics", "costmodels"},
}


def imported_packages(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name.split(".")[0]) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module.split(".")[0]))
    return [(line, pkg) for line, pkg in out if pkg in ALLOWED]


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_point_down(package):
    wrong = [f"{path.relative_to(ROOT)}:{line} imports {pkg}"
             for path in sorted((ROOT / package).rglob("*.py"))
             for line, pkg in imported_packages(path) if pkg not in ALLOWED[package]]
    assert not wrong, "\n".join(wrong)
