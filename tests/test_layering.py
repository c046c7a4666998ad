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


PROBLEM_LAYERS = ("costmodels", "formulations", "heuristics")


def _problem_of(module: str) -> str | None:
    """The problem a dotted module belongs to (``heuristics.placement.ea`` -> placement), or None
    for shared code (``costmodels.comm``, and ``costmodels.generation``: the simulator every online
    problem's policies run on, DESIGN.md "The house")."""
    parts = module.split(".")
    if parts[:2] == ["costmodels", "generation"]:
        return None
    if len(parts) >= 2 and parts[0] in PROBLEM_LAYERS and (ROOT / parts[0] / parts[1]).is_dir():
        return parts[1]
    return None


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
    return out


@pytest.mark.parametrize("layer", PROBLEM_LAYERS)
def test_no_problem_imports_another_problems_package(layer):
    """What two problems share lives at the top of costmodels (DESIGN.md, "The house"); shared
    code never imports a problem's package either."""
    wrong = []
    for path in sorted((ROOT / layer).rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        own = _problem_of(".".join(rel.parts))
        for line, module in _imported_modules(path):
            other = _problem_of(module)
            if other is not None and other != own and not (own is None and rel.parts[-1] in ("problems", "__init__") and layer == "costmodels"):
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not wrong, "\n".join(wrong)


def test_every_layer_lists_the_problems():
    """`ls` of a layer shows the problems: each solvable problem has a package in costmodels, and
    its solvers live in its packages of formulations and heuristics."""
    from planner.registry import default_registry

    reg = default_registry()
    for kind in reg.kinds():
        assert (ROOT / "costmodels" / kind.name / "__init__.py").exists(), kind.name
        for entry in kind.solvers:
            module = entry.target.partition(":")[0]
            assert module.split(".")[0] in ("formulations", "heuristics") and _problem_of(module) == kind.name, entry.target
            for ref in entry.inject.values():  # the planner injects across layers, never across problems
                assert _problem_of(ref.partition(":")[0]) == kind.name, ref
