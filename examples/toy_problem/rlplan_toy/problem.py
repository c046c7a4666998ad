"""The language: n jobs with durations d_1..d_n, to run on m identical machines."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field


class JobsSpec(BaseModel):
    """The jobs' durations d_j (seconds) and the number of machines m."""

    durations: list[float] = Field(min_length=1)
    machines: int = Field(ge=1)


@dataclass(frozen=True, eq=False)
class ToyProblem:
    """One instance. ``kind`` is how the registry finds its descriptor; ``to_inputs()`` is what a
    plan file records under ``inputs`` (keyed by the descriptor's spec field, ``work``)."""

    spec: JobsSpec
    kind: str = field(default="toy", init=False)

    def to_inputs(self) -> dict[str, Any]:
        return {"work": self.spec.model_dump(mode="json")}
