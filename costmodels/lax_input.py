"""Refuse what pydantic's lax mode would silently convert in a spec (docs/architecture.md,
"Interfaces people use"): ``count: true`` read as 1, ``nodes: '1'`` as 1, ``recompute: 0`` or
``'off'`` as False. Strict mode is not used because it would also refuse an integer where a float
goes; instead the input and the validated model are walked side by side, so every spec model is
covered without marking its fields."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from costmodels.errors import SpecError


def lax_coercion(data: Any, value: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first place where lax mode changed a scalar's type, as (path, the input, the
    validated value): true/false or a string where the model holds a number, or anything but
    true/false where it holds a boolean (a spec takes YAML's booleans only)."""
    if isinstance(value, bool):
        return None if isinstance(data, bool) else (path, data, value)
    if isinstance(data, bool | str):
        return (path, data, value) if isinstance(value, int | float) else None
    if isinstance(data, dict):
        for key, item in data.items():
            if isinstance(value, BaseModel):
                child = getattr(value, str(key), None)
            elif isinstance(value, dict):
                child = value.get(key)
            else:
                continue
            found = lax_coercion(item, child, f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(data, list) and isinstance(value, list | tuple):
        for i, (item, child) in enumerate(zip(data, value, strict=False)):
            found = lax_coercion(item, child, f"{path}[{i}]")
            if found:
                return found
    return None


def refuse_lax(data: Any, model: BaseModel, source: str | None = None) -> None:
    """Raise a :class:`SpecError` naming the first field :func:`lax_coercion` finds."""
    where = lax_coercion(data, model)
    if where is None:
        return
    path, given, validated = where
    kind = (
        "a boolean"
        if isinstance(given, bool)
        else "a quoted string"
        if isinstance(given, str)
        else "a number"
    )
    wanted = "true or false" if isinstance(validated, bool) else "a number"
    raise SpecError(path, given, f"{kind} where {wanted} is expected", source)
