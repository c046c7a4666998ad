"""Extract the measured side of the fidelity report from NVIDIA AIConfigurator's database.

AIConfigurator (``pip install 'rlplan[calibrate]'``: aiconfigurator-core) ships per-operator
latencies measured on real GPUs with vLLM (GEMMs, decode and prefill attention, vLLM's custom
all-reduce) and composes a model's step from them: per layer the QKV, output, gate/up and down
GEMMs, attention over the batch's KV and two all-reduces, plus norms and embedding from its
memory-bandwidth model. It has no serving-engine CPU term, so its decode step is the *kernel* time
of a step — what :func:`costmodels.decode.decode_step_time` models (the engine overhead is a
separate
term, calibrated against whole-step measurements).

This writes two CSVs into ``costmodels/data/measured/`` (shipped, so the report and the tests
need nothing extra): ``aic_vllm_decode.csv`` (model, GPU, TP, batch, context: the step's kernel
time and its GEMM / attention / all-reduce / other split), ``aic_vllm_prefill.csv`` (model, GPU,
TP, batch, prompt tokens: the prefill time) and ``aic_vllm_allreduce.csv`` (GPU, TP, message bytes:
one vLLM custom all-reduce, CUDA-graph variant, as the engine composes steps from). Run::

    python -m benchmarks.fidelity.aic            # needs aiconfigurator-core; ~1 min

Only AIConfigurator's "current" vLLM data is used (0.24.0; 0.14.0 on A100), bf16 weights and KV.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

#: rlplan catalog GPU -> AIConfigurator system with measured vLLM data. H800, H20, A100-40GB and
#: L4 have none (L4's system file is estimate-only): their profiles are assumed, not fitted.
SYSTEMS = {"H100-SXM": "h100_sxm", "H200": "h200_sxm", "A100-80GB": "a100_sxm", "L40S": "l40s"}
#: rlplan catalog model -> the Hugging Face config AIConfigurator ships (same dimensions)
MODELS = {
    "Qwen3-8B": "Qwen/Qwen3-8B",
    "Qwen3-32B": "Qwen/Qwen3-32B",
    "Llama-3.1-8B": "meta-llama/Meta-Llama-3.1-8B",
}
TPS = (1, 2, 4, 8)
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
CONTEXTS = (1024, 2048, 4096, 8192, 16384)
PREFILL_BATCHES = (1, 4, 16)
PREFILL_TOKENS = (512, 1024, 2048, 4096, 8192)
#: all-reduce messages: tokens x a 4 096-wide bf16 hidden state, from one decode token to a prefill
ALLREDUCE_TOKENS = tuple(
    2**i for i in range(15)
)  # every power of two: NCCL and vLLM switch algorithm by size
ALLREDUCE_HIDDEN = 4096
OUT = Path(__file__).resolve().parents[2] / "costmodels" / "data" / "measured"


def _split(ops: list[tuple]) -> dict[str, float]:
    """AIConfigurator's per-op list (name, ms summed over layers, energy, source) by term, in s."""
    out = {"gemm_s": 0.0, "attention_s": 0.0, "allreduce_s": 0.0, "other_s": 0.0}
    for name, ms, *_ in ops:
        key = (
            "gemm_s"
            if "gemm" in name
            else "attention_s"
            if "attention" in name
            else "allreduce_s"
            if name.endswith(("_ar", "ar_1", "ar_2"))
            else "other_s"
        )
        out[key] += ms / 1e3
    return out


def extract(out: Path = OUT) -> dict[str, int]:
    import aiconfigurator_core.sdk.operations as ops
    from aiconfigurator_core.sdk import perf_database
    from aiconfigurator_core.sdk.engine import EngineHandle, build_ops_json

    out.mkdir(parents=True, exist_ok=True)
    decode, prefill, allreduce = [], [], []
    for gpu, system in SYSTEMS.items():
        version = perf_database.get_version_slots(system, "vllm")["current"]
        ops_engine = EngineHandle.for_database(
            perf_database.get_database(system, "vllm", "current")
        )
        for tp in TPS[1:]:
            op = build_ops_json([ops.CustomAllReduce("ar", 1, ALLREDUCE_HIDDEN, tp)])
            for tokens in ALLREDUCE_TOKENS:
                ((_, ms, *_),) = ops_engine.evaluate_ops_json(
                    op, is_context=False, batch_size=tokens, s=1
                )
                allreduce.append(
                    {
                        "gpu": gpu,
                        "tp": tp,
                        "bytes": tokens * ALLREDUCE_HIDDEN * 2,
                        "seconds": round(ms / 1e3, 12),
                        "source": f"aiconfigurator-core {system} vllm {version} custom all-reduce",
                    }
                )
        for model, hf in MODELS.items():
            for tp in TPS:
                engine = EngineHandle.compile(
                    hf,
                    system,
                    "vllm",
                    tp_size=tp,
                    gemm_quant_mode="bfloat16",
                    kvcache_quant_mode="bfloat16",
                    fmha_quant_mode="bfloat16",
                )
                for ctx in CONTEXTS:
                    for batch in BATCHES:
                        # the estimator evaluates the step at KV length isl + osl // 2 + 1
                        parts = _split(engine.decode_step_per_op(batch, ctx - 1, 0))
                        decode.append(
                            {
                                "gpu": gpu,
                                "model": model,
                                "tp": tp,
                                "batch": batch,
                                "context": ctx,
                                "step_s": round(sum(parts.values()), 9),
                                **{k: round(v, 9) for k, v in parts.items()},
                                "source": f"aiconfigurator-core {system} vllm {version}",
                            }
                        )
                for batch in PREFILL_BATCHES:
                    for tokens in PREFILL_TOKENS:
                        prefill.append(
                            {
                                "gpu": gpu,
                                "model": model,
                                "tp": tp,
                                "batch": batch,
                                "prompt_tokens": tokens,
                                "prefill_s": round(
                                    engine.predict_prefill_latency(batch, tokens, 0) / 1e3, 9
                                ),
                                "source": f"aiconfigurator-core {system} vllm {version}",
                            }
                        )
    for name, rows in (
        ("aic_vllm_decode.csv", decode),
        ("aic_vllm_prefill.csv", prefill),
        ("aic_vllm_allreduce.csv", allreduce),
    ):
        with (out / name).open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return {"decode": len(decode), "prefill": len(prefill), "allreduce": len(allreduce)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    start = time.time()
    try:
        counts = extract(args.out)
    except ImportError:
        raise SystemExit(
            "error: aiconfigurator-core is not installed: pip install 'rlplan[calibrate]'"
        ) from None
    print(
        f"wrote {counts['decode']} decode, {counts['prefill']} prefill and {counts['allreduce']} "
        f"all-reduce rows to {args.out} in {time.time() - start:.0f} s"
    )


if __name__ == "__main__":
    main()
