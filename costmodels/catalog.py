"""Hardware and model catalogs shipped with rlplan.

The tables come from the papers (``costmodels/data/*.csv``, copied from the project's reference
folder): GPUs from HetRL Table 1 and RollMux Table 1, models from OrchestrRL Table 3 and public
configs, network component prices from OrchestrRL Table 4 and OCS devices from its Table 2.

Users add their own GPU or model in a spec file (``gpus:`` / ``models:`` lists with the same
fields); :func:`merge_gpus` and :func:`merge_models` overlay them on the shipped entries.
"""

from __future__ import annotations

import contextlib
import csv
import functools
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from costmodels.errors import SpecError, did_you_mean, field_path
from costmodels.limits import (
    MAX_GPU_MEMORY_GB,
    MAX_HBM_GB_PER_S,
    MAX_LINK_GB_PER_S,
    MAX_MODEL_DIMENSION,
    MAX_PARAMS_B,
    MAX_TFLOPS,
    MIN_RATE,
)


class GPUSpec(BaseModel):
    """One GPU type. Units: TFLOP/s (dense BF16), GB, GB/s."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: str = Field(min_length=1)
    tflops_bf16_dense: float = Field(
        ge=MIN_RATE, le=MAX_TFLOPS, description="dense BF16 peak, TFLOP/s"
    )
    memory_gb: float = Field(gt=0, le=MAX_GPU_MEMORY_GB, description="HBM capacity, GB")
    hbm_gb_per_s: float = Field(ge=MIN_RATE, le=MAX_HBM_GB_PER_S, description="HBM bandwidth, GB/s")
    intra_node_gb_per_s: float = Field(
        ge=MIN_RATE,
        le=MAX_LINK_GB_PER_S,
        description=(
            "per-GPU intra-node (NVLink/PCIe) bandwidth, both directions added together, GB/s "
            "(the spec-sheet figure)"
        ),
    )
    intra_node_per_direction_gb_per_s: float | None = Field(
        default=None,
        ge=MIN_RATE,
        le=MAX_LINK_GB_PER_S,
        description=(
            "per-GPU intra-node bandwidth in one direction, GB/s; what a ring step sends over "
            "(default: half the both-directions figure)"
        ),
    )
    usd_per_hour: float | None = Field(default=None, ge=0, le=1e6)
    source: str = ""

    @property
    def link_gb_per_s(self) -> float:
        """One-direction intra-node bandwidth: a ring collective sends one way on each link, so
        this, not the spec sheet's both-directions sum, is its beta."""
        if self.intra_node_per_direction_gb_per_s is not None:
            return self.intra_node_per_direction_gb_per_s
        return self.intra_node_gb_per_s / 2


class ModelSpec(BaseModel):
    """One transformer LLM. ``params_b`` in billions; MoE when ``num_experts`` is set."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: str = Field(min_length=1)
    params_b: float = Field(gt=0, le=MAX_PARAMS_B)
    hidden: int = Field(gt=0, le=MAX_MODEL_DIMENSION)
    layers: int = Field(gt=0, le=MAX_MODEL_DIMENSION)
    ffn_intermediate: int = Field(
        gt=0, le=MAX_MODEL_DIMENSION, description="dense FFN size, or per-expert size for MoE"
    )
    num_experts: int | None = Field(default=None, gt=0, le=MAX_MODEL_DIMENSION)
    experts_per_token: int | None = Field(default=None, gt=0, le=MAX_MODEL_DIMENSION)
    query_heads: int = Field(gt=0, le=MAX_MODEL_DIMENSION)
    kv_heads: int = Field(gt=0, le=MAX_MODEL_DIMENSION)
    head_dim: int = Field(
        default=0,
        ge=0,
        le=MAX_MODEL_DIMENSION,
        description=(
            "attention head width; 0 or absent: hidden / query_heads (wrong for e.g. Qwen3-4B: "
            "give it)"
        ),
    )
    vocab: int = Field(gt=0, le=MAX_MODEL_DIMENSION)
    source: str = ""

    @model_validator(mode="before")
    @classmethod
    def _default_head_dim(cls, data: Any) -> Any:
        # Qwen3 models use 128 whatever hidden / heads says; the catalog gives it, user
        # models may not
        if (
            isinstance(data, dict)
            and not data.get("head_dim")
            and data.get("hidden")
            and data.get("query_heads")
        ):
            with contextlib.suppress(
                TypeError, ValueError, ZeroDivisionError
            ):  # the field validators name the bad value
                data = {**data, "head_dim": int(data["hidden"]) // int(data["query_heads"])}
        return data

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        if (self.num_experts is None) != (self.experts_per_token is None):
            raise ValueError("num_experts and experts_per_token must be given together")
        if self.num_experts is not None and self.experts_per_token > self.num_experts:  # type: ignore[operator]
            raise ValueError("experts_per_token exceeds num_experts")
        if self.query_heads % self.kv_heads:
            raise ValueError("query_heads must be a multiple of kv_heads")
        if self.head_dim <= 0:
            raise ValueError("head_dim must be > 0 (give it, or hidden >= query_heads)")
        return self

    @property
    def is_moe(self) -> bool:
        return self.num_experts is not None


class NetworkPrice(BaseModel):
    """Per-component prices at one link rate (OrchestrRL Table 4), USD."""

    model_config = ConfigDict(frozen=True)

    link_gbps: int
    transceiver_usd: float
    nic_usd: float
    electrical_switch_port_usd: float
    ocs_port_usd: float
    patch_panel_port_usd: float
    fiber_cable_usd: float
    source: str = ""


class OCSDevice(BaseModel):
    """One optical circuit switch technology (OrchestrRL Table 2)."""

    model_config = ConfigDict(frozen=True)

    technology: str
    example: str
    reconfig_delay_ms: float
    radix_ports: int
    source: str = ""


def _read_csv(name: str) -> list[dict[str, Any]]:
    text = resources.files("costmodels").joinpath("data", name).read_text(encoding="utf-8")
    rows = []
    for row in csv.DictReader(text.splitlines()):
        rows.append({k: (v if v != "" else None) for k, v in row.items()})
    return rows


def _build(cls: type[BaseModel], rows: list[dict[str, Any]], what: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, row in enumerate(rows):
        try:
            item = cls.model_validate(row)
        except ValidationError as exc:  # a broken shipped table is a packaging bug; say where
            err = exc.errors()[0]
            raise SpecError(
                field_path((i, *err["loc"])), err.get("input"), err["msg"], what
            ) from None
        key = getattr(item, "name", None) or getattr(item, "technology", None) or item.link_gbps
        out[key] = item
    return out


@functools.cache
def gpu_catalog() -> dict[str, GPUSpec]:
    """All shipped GPU types by name (``A100-40GB``, ``L40S``, ...)."""
    return _build(GPUSpec, _read_csv("gpus.csv"), "gpus.csv")


@functools.cache
def model_catalog() -> dict[str, ModelSpec]:
    """All shipped models by name (``Qwen3-8B``, ...)."""
    return _build(ModelSpec, _read_csv("models.csv"), "models.csv")


@functools.cache
def network_prices() -> dict[int, NetworkPrice]:
    """Component prices by link rate in Gbps."""
    return _build(NetworkPrice, _read_csv("network_prices.csv"), "network_prices.csv")


@functools.cache
def ocs_devices() -> dict[str, OCSDevice]:
    """OCS technologies by name (``piezo``, ``3d_mems``, ...)."""
    return _build(OCSDevice, _read_csv("ocs_devices.csv"), "ocs_devices.csv")


def reference_table(name: str) -> list[dict[str, Any]]:
    """A raw shipped table (e.g. ``rollmux_jobs.csv``) as a list of dicts of strings."""
    return _read_csv(name)


def get_gpu(name: str, extra: dict[str, GPUSpec] | None = None) -> GPUSpec:
    """Look a GPU up by name, user-defined entries first; raise a SpecError naming the choices."""
    table = {**gpu_catalog(), **(extra or {})}
    if name not in table:
        raise SpecError(
            "gpu",
            name,
            f"unknown GPU type{did_you_mean(name, table)}; known: {', '.join(sorted(table))} "
            "(`rlplan catalog gpus`)",
        )
    return table[name]


def get_model(name: str, extra: dict[str, ModelSpec] | None = None) -> ModelSpec:
    """Look a model up by name, user-defined entries first; raise a SpecError naming the choices."""
    table = {**model_catalog(), **(extra or {})}
    if name not in table:
        raise SpecError(
            "model",
            name,
            f"unknown model{did_you_mean(name, table)}; known: {', '.join(sorted(table))} "
            "(`rlplan catalog models`)",
        )
    return table[name]
