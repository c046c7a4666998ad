"""The per-configuration constants of OrchestrRL Eq. 1's T_j (``costmodels.replan.problem``'s
module doc): the remaining-length bins, each TP's plane through the decode model, and C_sw."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costmodels.decode import Instance, step_coefficients
from costmodels.reconfig import shard_overlap
from costmodels.transformer import BYTES_BF16, total_params


@dataclass(frozen=True)
class Bin:
    """Requests of one remaining-length bin: length L (upper bound), count N, mean context κ."""

    upper: int
    count: int
    context: int


@dataclass(frozen=True)
class Config:
    """The per-configuration constants of T_j, C_mig and (2) (module doc), one row per bin."""

    tp: int
    instance: Instance
    kv_tokens: int  # K_y
    alpha: float
    beta: float
    gamma: float
    work: np.ndarray  # w_yb
    concurrency: np.ndarray  # B_yb (0 where the bin does not fit)
    migrate: np.ndarray  # μ_yb
    # L_b / B_yb: decode steps one request of bin b adds at full concurrency (L_b where it does not
    # fit)
    token_steps: np.ndarray

    @property
    def floor(self) -> np.ndarray:
        """c_yb = w_yb + α_y L_b / B_yb: the least one request of bin b adds to T_j (S_j >= Σ x L /
        B)."""
        return self.work + self.alpha * self.token_steps

    def fits(self, b: int) -> bool:
        return bool(self.concurrency[b] > 0)


def step_plane(inst: Instance) -> tuple[float, float, float]:
    """(α, β, γ) of the plane s(B, C) = α + β B + γ C through the decode model (module doc)."""
    gamma = step_coefficients(
        inst, 1
    ).m1  # the KV read per context token, as the simulator steps it
    b_ref = max(2, inst.params.max_num_seqs)
    one, full = inst.decode_step(1, 0.0)["step_s"], inst.decode_step(b_ref, 0.0)["step_s"]
    beta = (full - one) / (b_ref - 1)
    return one - beta, beta, gamma


def switch_s(inst: Instance, tp_old: int | None, bandwidth_gbs: float, overhead_s: float) -> float:
    """C_sw: fetch what the GPU's old shard (TP ``tp_old``; None: no or mixed weights) lacks of
    its new shard, plus the engine restart."""
    shard = BYTES_BF16 * total_params(inst.model) / inst.tp / 1e9
    overlap = 0.0 if tp_old is None else shard_overlap(tp_old, inst.tp)
    return shard * (1.0 - overlap) / bandwidth_gbs + overhead_s
