"""The shipped examples, gathered from the problem descriptors (each problem's presets live in
its package, e.g. ``costmodels/placement/presets.py``). Any CLI option that takes a file also
takes a preset name; ``rlplan presets`` lists them."""

from __future__ import annotations

from costmodels.problem import Preset
from planner.registry import Registry, default_registry


def presets(kind: str | None = None, registry: Registry | None = None) -> list[Preset]:
    """Every preset (of one ``kind``: a spec field name such as ``cluster``, or ``problem``)."""
    return (registry or default_registry()).presets(kind)


def get_preset(name: str, registry: Registry | None = None) -> Preset | None:
    return (registry or default_registry()).preset(name)
