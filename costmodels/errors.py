"""Errors raised while loading and checking specs.

A :class:`SpecError` always names where the bad value came from (file), which field holds it
(a dotted path such as ``nodes[2].count``), the value itself, and why it is rejected, so the CLI
can print one line and exit with code 2 (docs/architecture.md, "Interfaces people use").
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable
from typing import Any


class SpecError(ValueError):
    """A spec (cluster, workflow, fabric, demand, jobs, plan file) is malformed or inconsistent."""

    def __init__(self, field: str, value: Any, reason: str, source: str | None = None) -> None:
        self.field = field
        self.value = value
        self.reason = reason
        self.source = source
        super().__init__(self._render())

    def _render(self) -> str:
        where = f"{self.source}: " if self.source else ""
        field = self.field or "<document>"
        return f"{where}{field}: {self.reason} (got {_short(self.value)})"

    def with_source(self, source: str) -> SpecError:
        """The same error, attributed to ``source`` (a file name or preset name)."""
        if self.source:
            return self
        return SpecError(self.field, self.value, self.reason, source)

    def prefixed(self, prefix: str) -> SpecError:
        """The same error with its field path nested under ``prefix`` (e.g. ``cluster``)."""
        field = f"{prefix}.{self.field}" if self.field else prefix
        return SpecError(field, self.value, self.reason, self.source)


def did_you_mean(name: Any, choices: Iterable[str]) -> str:
    """ " (did you mean X?)" for a near miss among ``choices``: a choice that starts with the given
    name ("H100" -> "H100-SXM"), or a close spelling ("shaea" -> "sha-ea"); empty when none is
    near."""
    import difflib

    if not isinstance(name, str) or not name:
        return ""
    choices = sorted(choices)
    close = [c for c in choices if c.lower().startswith(name.lower())] or difflib.get_close_matches(
        name, choices, n=2, cutoff=0.6
    )
    return f" (did you mean {' or '.join(close[:2])}?)" if close else ""


def refuse_repeated_names(names: Iterable[str], field: str, reason: str) -> None:
    """Raise a :class:`SpecError` at the first name seen before: its field is ``field`` with the
    item's index filled in (``"gpus[{}].name"``), its reason ``reason``."""
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise SpecError(field.format(i), name, reason)
        seen.add(name)


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict, _REPR.maxset = 3, 6, 6, 6, 6
_REPR.maxstring, _REPR.maxother, _REPR.maxlong = 60, 60, 40


def _short(value: Any, limit: int = 80) -> str:
    # bounded: reprlib stops at a few levels and items, so a huge or self-sharing value (a YAML
    # alias bomb) cannot make the error message itself hang
    text = _REPR.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class DuplicateKeyError(ValueError):
    """A JSON object names a key twice (``json.loads`` keeps the last one silently)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key = key


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for ``json.loads``: a repeated key raises
    :class:`DuplicateKeyError`."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(key)
        out[key] = value
    return out


def from_validation(
    exc: Any, source: str | None = None, prefix: str = "", model: Any = None
) -> SpecError:
    """pydantic's ValidationError (several lines, a URL) as the one-line SpecError of its first
    error: the field path, the value and pydantic's reason; for a missing field of ``model`` that
    takes one of a few values (a ``Literal``), those values."""
    err = exc.errors()[0]
    msg = err["msg"]
    if err["type"] == "missing":
        msg = "required field is missing" + _allowed(model, err["loc"])
    elif err["type"] == "extra_forbidden":
        msg = "unknown field"
    value = err.get("input") if err["type"] != "missing" else None
    path = field_path(err["loc"])
    return SpecError(
        f"{prefix}.{path}" if prefix and path else (prefix or path), value, msg, source
    )


def _allowed(model: Any, loc: tuple[Any, ...]) -> str:
    """ "; one of a, b" when the field at ``loc`` of the pydantic ``model`` is a ``Literal``."""
    import typing

    field = None
    for part in loc:
        fields = getattr(model, "model_fields", None)
        if not isinstance(part, str) or not fields or part not in fields:
            return ""
        field = fields[part]
        model = field.annotation
    if field is None:
        return ""
    args = [a for a in typing.get_args(field.annotation) if a is not type(None)]
    if typing.get_origin(field.annotation) is typing.Literal:
        return "; one of " + ", ".join(map(str, args))
    return ""


def field_path(loc: tuple[Any, ...] | list[Any]) -> str:
    """Render a pydantic-style location tuple as ``a.b[3].c``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out
