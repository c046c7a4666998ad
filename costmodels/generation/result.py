"""What one simulated generation step yields (``costmodels.generation.engine``): per request,
per instance and overall figures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from costmodels.generation.requests import RequestRecord


@dataclass
class SimResult:
    """Per request, per instance and overall figures of one simulated generation step."""

    makespan_s: float
    records: dict[int, RequestRecord]
    preemptions: int
    tokens: int
    busy_s: list[float]
    gpus: list[int]
    timelines: list[list[tuple[float, float, int, int]]]
    actions: list[dict[str, Any]]
    held_s: list[float] | None = None  # time each instance held its GPUs (default: the makespan)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.makespan_s if self.makespan_s > 0 else 0.0

    @property
    def idle_gpu_s(self) -> float:
        """GPU-seconds instances sat idle before the makespan (the bubbles RollPacker/RollMux
        measure)."""
        held = self.held_s or [self.makespan_s] * len(self.gpus)
        return sum(
            g * max(0.0, h - b) for g, h, b in zip(self.gpus, held, self.busy_s, strict=True)
        )

    def remaining_curve(self) -> tuple[np.ndarray, np.ndarray]:
        """(time, requests not yet complete) at every completion (OrchestrRL Fig. 11)."""
        done = np.sort(
            np.array([r.completed for r in self.records.values() if r.completed is not None])
        )
        n = len(done)
        return np.concatenate([[0.0], done]), n - np.arange(len(done) + 1)

    def to_dict(self) -> dict[str, Any]:
        return {
            "makespan_s": self.makespan_s,
            "preemptions": self.preemptions,
            "tokens": self.tokens,
            "tokens_per_s": self.tokens_per_s,
            "idle_gpu_s": self.idle_gpu_s,
            "instances": [
                {"gpus": g, "busy_s": b} for g, b in zip(self.gpus, self.busy_s, strict=True)
            ],
            "requests": {str(k): vars(v) for k, v in self.records.items()},
            "actions": self.actions,
        }
