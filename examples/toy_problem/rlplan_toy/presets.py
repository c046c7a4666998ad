"""The shipped example, usable wherever a jobs file is expected (``rlplan presets``)."""

from __future__ import annotations

from typing import Any

from costmodels.problem import Preset

#: five jobs on two machines: LPT gives 7 (3+2+2 | 3+2), the optimum is 6 (3+3 | 2+2+2)
TOY_FIVE: dict[str, Any] = {"durations": [3, 3, 2, 2, 2], "machines": 2}


def toy_presets() -> tuple[Preset, ...]:
    return (Preset("toy-five", "work", "five jobs, two machines", lambda: dict(TOY_FIVE)),)
