"""A violated constraint, as validators report it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    """``constraint`` is a short stable name (``C3-memory``, ``port-budget``...); ``message`` says
    what is wrong, with the offending values."""

    constraint: str
    message: str

    def __str__(self) -> str:
        return f"[{self.constraint}] {self.message}"
