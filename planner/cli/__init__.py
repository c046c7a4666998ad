"""The ``rlplan`` command line (typer + rich): the one package that imports them
(``docs/architecture.md``, "The house"). It parses arguments, calls the library
(:func:`planner.plan`, :func:`planner.solve`, the loaders and the judge) and renders what comes
back; it decides nothing a library caller would not get.

``app.py`` composes the commands; ``entry.py`` is the console script that guards them (exit codes);
``plan.py`` is ``rlplan plan``, ``progress.py`` its live display; ``check.py`` is ``validate`` and
``evaluate``; ``catalog.py`` is ``catalog`` and ``presets``; ``calibrate.py`` is ``calibrate``;
``generation.py``, ``cosched.py`` and ``rollout.py`` are the problems' own ``simulate`` and
``estimate`` commands. Kept free of imports here: the console script imports this package first.

A command's function is as long as its option declarations: typer reads the command's interface
from its signature, one ``Annotated`` parameter per option with its help and range, and that
signature is often most of the function; what the command does past parsing lives in small
helpers or in the library.
"""
