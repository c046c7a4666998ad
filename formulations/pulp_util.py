"""PuLP helpers shared by the exact models."""

from __future__ import annotations

from typing import Any


def variable_factory(prob: Any) -> Any:
    """``prob.add_variable`` where PuLP has it (3.x onwards), else ``LpVariable``."""
    import pulp

    if hasattr(prob, "add_variable"):
        return lambda name, **kw: prob.add_variable(name, **kw)
    return lambda name, **kw: pulp.LpVariable(name, **kw)
