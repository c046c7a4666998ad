"""The arrows of docs/architecture.md, "The house": benchmarks -> planner -> {formulations,
heuristics} -> search -> costmodels, formulations and heuristics never import each other, problems
never import each other, and no package has an import cycle: the import-linter contracts in
pyproject.toml, run here."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).parents[1]
PROBLEM_LAYERS = ("costmodels", "search", "formulations", "heuristics")
#: problems that compose the others (docs/architecture.md, "The job plan")
COMPOSERS = ("job", "fleet")


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
    # the job plan's packages compose the problems: a contract keeps every problem from them
    listed |= {
        m
        for c in contracts
        if c["type"] == "forbidden" and c["name"].startswith("The job plan composes")
        for m in c["forbidden_modules"]
    }
    for layer in PROBLEM_LAYERS:
        for pkg in sorted((ROOT / layer).iterdir()):
            if (pkg / "__init__.py").exists() and _problem_of(f"{layer}.{pkg.name}.x") is not None:
                assert f"{layer}.{pkg.name}" in listed, (
                    f"{layer}.{pkg.name} is in no independence contract (pyproject.toml)"
                )


def test_every_layer_lists_the_problems():
    """`ls` of a layer shows the problems: each solvable problem has a package in costmodels, its
    solvers are wired in ``planner/solvers/<problem>.py`` and live in its packages of formulations
    and heuristics, and what the planner injects into a solver comes from the same problem."""
    from planner.registry import default_registry

    reg = default_registry()
    for kind in reg.kinds():
        assert (ROOT / "costmodels" / kind.name / "__init__.py").exists(), kind.name
        assert (ROOT / "planner" / "solvers" / f"{kind.name}.py").exists(), kind.name
        for info in reg.solvers(kind.name):
            module = info.raw.__module__
            assert (
                module.split(".")[0] in ("formulations", "heuristics")
                and _problem_of(module) == kind.name
            ), (kind.name, info.name, module)
            for name, load in info.inject.items():  # across layers, never across problems
                if kind.name in COMPOSERS:  # the job plan is handed the other problems' solvers
                    assert all(callable(f) for f in load().values()), (info.name, name)
                    continue
                assert _problem_of(load().__module__) == kind.name, (info.name, name)


def test_no_string_addresses_a_solver_or_a_command():
    """Solvers and commands are named directly (``docs/architecture.md``, "Adding a solver"): no
    ``"package.module:function"`` string in rlplan's code routes to one. Packaging metadata
    (``pyproject.toml``'s console script and entry points) is the one place such names remain."""
    import re

    ref = re.compile(
        r"""["'](costmodels|formulations|heuristics|search|planner|benchmarks)(\.\w+)+:\w+"""
    )
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for layer in ("costmodels", "formulations", "heuristics", "search", "planner", "benchmarks")
        for path in sorted((ROOT / layer).rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if ref.search(line)
    ]
    assert not offenders, offenders


def test_the_generic_planner_names_no_problem():
    """Following a problem from the command line to its plan file visits the command-line
    package, ``planner.plan``, ``solve``, the problem's solver and its judge: the generic modules
    on that path name no problem; only the solver wiring (``planner/solvers``) and the mount point
    of the problems' own commands (``planner/cli/app.py``) do (``docs/architecture.md``, "The
    house")."""
    import re

    from planner.registry import default_registry

    names = [k.name for k in default_registry().kinds()]
    generic = [
        "planning.py",
        "solve.py",
        "registry.py",
        *(f"cli/{m}.py" for m in ("plan", "check", "catalog", "console", "render", "progress")),
        "cli/entry.py",
    ]
    for module in generic:
        text = (ROOT / "planner" / module).read_text()
        found = [n for n in names if re.search(rf"\b{n}\b", text)]
        assert not found, f"planner/{module} names {found}"


def test_the_typer_and_rich_contract_names_every_module_below_the_command_line():
    """The contract keeping typer and rich in ``planner.cli`` lists every other planner module, so
    a new one cannot slip past it."""
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
    (contract,) = [c for c in contracts if "typer" in c.get("forbidden_modules", [])]
    below = {
        f"planner.{p.stem if p.is_file() else p.name}"
        for p in (ROOT / "planner").iterdir()
        if (p.suffix == ".py" or (p / "__init__.py").exists())
        and p.stem not in ("__init__", "__main__", "cli")
    }
    assert below <= set(contract["source_modules"]), sorted(below - set(contract["source_modules"]))
