"""Per-layer parameter, FLOP and KV-cache arithmetic of a decoder-only transformer.

HetRL Appendix B.2 writes a layer's weights as 4h^2 + 3h*h2 and its forward FLOPs per sample as
2*4*s*h^2 (QKVO projections) + 2*2*s^2*h (attention) + 2*3*s*h*h2 (SwiGLU MLP). We keep that shape
but count the K and V projections with the model's real KV width (grouped-query attention), which
equals the paper's 4h^2 when kv_heads == query_heads, and count an MoE layer's MLP with its
experts_per_token experts for FLOPs and all experts for memory.
"""

from __future__ import annotations

from costmodels.catalog import ModelSpec

BYTES_BF16 = 2
BYTES_FP32 = 4


def attention_params(m: ModelSpec) -> int:
    """Q, K, V, O projection weights of one layer."""
    q_width = m.query_heads * m.head_dim
    kv_width = m.kv_heads * m.head_dim
    return m.hidden * q_width * 2 + m.hidden * kv_width * 2


def mlp_params(m: ModelSpec, active: bool) -> int:
    """SwiGLU MLP weights of one layer (3*h*h2); for MoE all experts, or the routed ones if
    ``active``."""
    experts = 1 if not m.is_moe else (m.experts_per_token if active else m.num_experts)
    return 3 * m.hidden * m.ffn_intermediate * int(experts)  # type: ignore[arg-type]


def layer_params(m: ModelSpec, active: bool = False) -> int:
    return attention_params(m) + mlp_params(m, active)


def embedding_params(m: ModelSpec) -> int:
    """Input embedding plus LM head (counted untied)."""
    return 2 * m.vocab * m.hidden


def total_params(m: ModelSpec) -> float:
    """All parameters. The catalog's ``params_b`` is authoritative; the per-layer split below
    scales layer counts to it so stage shards add up to the published size."""
    return m.params_b * 1e9


def stage_params(m: ModelSpec, stage_layers: int, first: bool, last: bool) -> float:
    """Parameters held by one pipeline stage of ``stage_layers`` layers (all experts).

    The published total is split as: embedding on the first stage, LM head on the last, and the
    remainder spread evenly over layers.
    """
    emb = m.vocab * m.hidden
    per_layer = max(total_params(m) - 2 * emb, 0.0) / m.layers
    return per_layer * stage_layers + (emb if first else 0.0) + (emb if last else 0.0)


def active_fraction(m: ModelSpec) -> float:
    """Share of a layer's weights touched per token (1 for dense models)."""
    return layer_params(m, active=True) / layer_params(m, active=False)


def layer_forward_flops(m: ModelSpec, seq: int) -> float:
    """Forward FLOPs of one layer for one sample of ``seq`` tokens (HetRL B.2, C^layer_comp)."""
    proj = 2 * seq * attention_params(m)
    attn = 2 * 2 * seq * seq * m.hidden
    mlp = 2 * seq * mlp_params(m, active=True)
    return float(proj + attn + mlp)


def layer_forward_flops_mean(m: ModelSpec, seq_mean: float, seq_square_mean: float) -> float:
    """E[:func:`layer_forward_flops`] over sequence lengths s with E[s] = ``seq_mean`` and
    E[s^2] = ``seq_square_mean`` (its terms are linear and quadratic in s)."""
    linear = 2 * attention_params(m) + 2 * mlp_params(m, active=True)
    return float(linear * seq_mean + 2 * 2 * seq_square_mean * m.hidden)


def lm_head_forward_flops(m: ModelSpec, seq: float) -> float:
    return float(2 * seq * m.hidden * m.vocab)


def kv_bytes_per_token(m: ModelSpec, layers: int, tp: int) -> float:
    """KV-cache bytes per token on one GPU of a TP group holding ``layers`` layers.

    KV heads are split across TP ranks; when TP exceeds the KV head count each rank keeps one
    replicated head (as vLLM does).
    """
    heads_per_rank = max(m.kv_heads / tp, 1.0)
    return 2.0 * layers * heads_per_rank * m.head_dim * BYTES_BF16


def weights_read_gb(
    m: ModelSpec, stage_layers: int, first: bool, last: bool, tp: int, batch: float
) -> float:
    """GB of weights one GPU of a TP group reads in a decode step of ``batch`` tokens (D2): its
    shard of the stage, and for MoE only the experts the batch is expected to route to."""
    shard = stage_params(m, stage_layers, first, last)
    if m.is_moe:
        e, k = m.num_experts, m.experts_per_token
        expert = mlp_params(m, active=False) / e  # type: ignore[operator]
        touched = e * (1 - (1 - k / e) ** max(batch, 0))  # type: ignore[operator]
        shard -= stage_layers * (e - touched) * expert  # type: ignore[operator]
    return BYTES_BF16 * shard / tp / 1e9
