"""The arrows of docs/architecture.md, "The house": benchmarks -> planner -> {formulations,
heuristics} -> search -> costmodels, formulations and heuristics never import each other, problems
never import each other, and no package has an import cycle: the import-linter contracts in
pyproject.toml, run here."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).parents[1]
PROBLEM_LAYERS = ("costmodels", "search", "formulations", "heuristics")


def _problem_of(module: str) -> str | None:
    """The problem a dotted module belongs to (``heuristics.placement.ea`` -> placement), or None
    for shared code (``costmodels.comm``, and ``costmodels.generation``: the simulator every online
    problem's policies run on, docs/architecture.md, "The house")."""
    parts = module.split(".")
    if parts[:2] == ["costmodels", "generation"]:
        return None
    if len(parts) >= 2 and parts[0] in PROBLEM_LAYERS and (ROOT / parts[0] / parts[1]).is_dir():
        return parts[1]
    return None


def test_import_contracts_hold():
    """The import-linter contracts in pyproject.toml (`lint-imports`): the layers, problems apart
    from each other in every layer, and no import cycle inside any package. Lazy imports inside
    functions count (grimp reads every import statement)."""
    import contextlib
    import io
    import os

    from importlinter.cli import lint_imports

    cwd = os.getcwd()
    out = io.StringIO()
    try:
        os.chdir(ROOT)
        with contextlib.redirect_stdout(out):
            code = lint_imports(no_cache=True, no_logo=True)
    finally:
        os.chdir(cwd)
    assert code == 0, out.getvalue()


def test_the_contracts_name_every_problem():
    """A new problem package cannot slip past the independence contracts: each lists every
    problem package its layer has."""
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
    listed = {m for c in contracts if c["type"] == "independence" for m in c["modules"]}
    for layer in PROBLEM_LAYERS:
        for pkg in sorted((ROOT / layer).iterdir()):
            if (pkg / "__init__.py").exists() and _problem_of(f"{layer}.{pkg.name}.x") is not None:
                assert f"{layer}.{pkg.name}" in listed, (
                    f"{layer}.{pkg.name} is in no independence contract (pyproject.toml)"
                )


def test_every_layer_lists_the_problems():
    """`ls` of a layer shows the problems: each solvable problem has a package in costmodels, and
    its solvers live in its packages of formulations and heuristics."""
    from planner.registry import default_registry

    reg = default_registry()
    for kind in reg.kinds():
        assert (ROOT / "costmodels" / kind.name / "__init__.py").exists(), kind.name
        for entry in kind.solvers:
            module = entry.target.partition(":")[0]
            assert (
                module.split(".")[0] in ("formulations", "heuristics")
                and _problem_of(module) == kind.name
            ), entry.target
            for (
                ref
            ) in entry.inject.values():  # the planner injects across layers, never across problems
                assert _problem_of(ref.partition(":")[0]) == kind.name, ref


def test_a_problems_commands_live_with_the_problem_and_the_planner_names_none():
    """Following a problem from its command to its plan file stays in its own packages plus the
    generic planner: its commands are descriptor references into its packages, and the planner's
    CLI modules name no problem (``docs/architecture.md``, "The house")."""
    import re

    from costmodels.problem import COMMAND_GROUPS
    from planner.registry import default_registry, resolve

    reg = default_registry()
    names = [k.name for k in reg.kinds()]
    mounted = 0
    for kind in reg.kinds():
        for entry in kind.commands:
            assert entry.group in COMMAND_GROUPS, entry
            for ref in (entry.target, *entry.inject.values()):
                assert _problem_of(ref.partition(":")[0]) == kind.name, ref
                assert callable(resolve(ref)), ref
            mounted += 1
    assert mounted >= 4  # estimate/simulate generation (replan), simulate cosched, simulate rollout
    for module in ("cli.py", "entry.py", "calibrate_command.py"):
        text = (ROOT / "planner" / module).read_text()
        found = [n for n in names if re.search(rf"\b{n}\b", text)]
        assert not found, f"planner/{module} names {found}"
