"""Rollout length traces: a group-aware synthetic generator and readers for the formats people have.

**Synthetic** (:func:`synthetic_trace`). RL rollouts come in groups (n responses per prompt,
GRPO) whose lengths are heavy-tailed and correlated within a group. Response j of prompt g in
step s has length

    L = min(max_len, round(exp(mu + drift * s + d_g + e_gj)))
    d_g ~ N(0, sigma_prompt) (+ hard_shift with probability p_hard),  e_gj ~ N(0, sigma_response)

so a prompt's difficulty d_g moves all its responses together, hard prompts make the long tail
that reaches the maximum length, and ``drift`` lengthens responses as training goes on. The
defaults are calibrated to what the papers report: RollPacker §2.2 (P75 of 755-1.1k tokens with a
16k maximum; a few responses run to the limit), OrchestrRL Fig. 3a (most responses under 7.5k,
a long tail) and RollMux Fig. 11 (heavy tails at every model size); ``tests`` check the
percentiles. Prompt lengths are log-normal around ``prompt_median``.

**Readers** (each raises :class:`SpecError` naming the file, row and value):

* Vidur's request CSV: ``num_prefill_tokens,num_decode_tokens[,arrived_at]`` (one group per row);
* RollPacker's per-group JSONL: one object per prompt with ``response_lengths`` (a list) and
  optionally ``prompt_length``;
* plain CSV: ``prompt_tokens,output_tokens,group``.

:func:`histogram` bins remaining lengths into 256-token bins costed at their upper bound, with the
context already cached, as OrchestrRL §4.1 does.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from costmodels.csvtable import read_rows
from costmodels.decode import LengthHistogram
from costmodels.errors import DuplicateKeyError, SpecError, no_duplicate_keys
from costmodels.generation.requests import Request
from costmodels.limits import REQUEST_BYTES, check_memory, memory_limit_bytes


@dataclass(frozen=True)
class TraceParams:
    """Knobs of the synthetic generator (module doc); defaults calibrated as stated there."""

    median: float = 420.0
    sigma_prompt: float = 0.75
    sigma_response: float = 0.55
    p_hard: float = 0.04
    hard_shift: float = 2.2
    drift: float = 0.0
    prompt_median: float = 300.0
    prompt_sigma: float = 0.5


def prompt_difficulty(rng: np.random.Generator, n: int, p: TraceParams) -> np.ndarray:
    """d_g of ``n`` prompts (module doc): N(0, sigma_prompt), plus hard_shift for hard prompts."""
    return rng.normal(0.0, p.sigma_prompt, n) + np.where(
        rng.random(n) < p.p_hard, p.hard_shift, 0.0
    )


def prompt_lengths(rng: np.random.Generator, n: int, p: TraceParams) -> np.ndarray:
    """Prompt lengths of ``n`` prompts: log-normal around ``prompt_median``, at least 1 token."""
    return np.maximum(
        1, np.rint(rng.lognormal(math.log(p.prompt_median), p.prompt_sigma, n))
    ).astype(int)


def response_lengths(
    rng: np.random.Generator,
    difficulty: Any,
    shape: Any,
    p: TraceParams,
    max_len: int,
    step: int = 0,
) -> np.ndarray:
    """Response lengths min(max_len, round(exp(mu + drift s + d + e))) of ``shape``, e drawn here
    (module doc); ``difficulty`` broadcasts against ``shape``."""
    noise = rng.normal(0.0, p.sigma_response, shape)
    mu = math.log(p.median) + p.drift * step
    return np.clip(np.rint(np.exp(mu + difficulty + noise)), 1, max_len).astype(int)


def synthetic_trace(
    prompts: int,
    responses_per_prompt: int,
    max_len: int = 16384,
    seed: int = 0,
    step: int = 0,
    params: TraceParams | None = None,
) -> list[Request]:
    """``prompts x responses_per_prompt`` requests of one RL step (module doc); group = prompt."""
    if prompts <= 0 or responses_per_prompt <= 0 or max_len <= 0:
        raise ValueError("prompts, responses_per_prompt and max_len must be > 0")
    p = params or TraceParams()
    rng = np.random.default_rng([seed, step])
    difficulty = prompt_difficulty(rng, prompts, p)
    lengths = response_lengths(
        rng, difficulty[:, None], (prompts, responses_per_prompt), p, max_len, step
    )
    prompt_len = prompt_lengths(rng, prompts, p)
    out = []
    for g in range(prompts):
        for j in range(responses_per_prompt):
            out.append(Request(len(out), int(prompt_len[g]), int(lengths[g, j]), group=g))
    return out


def _int(value: str | None, source: str, where: str, field: str, minimum: int) -> int:
    path = f"{where}.{field}" if field else where
    try:
        v = float(value) if value is not None and value != "" else math.nan
    except ValueError:
        raise SpecError(path, value, "not a number", source) from None
    if not math.isfinite(v) or v != int(v) or v < minimum:
        raise SpecError(path, value, f"must be an integer >= {minimum}", source)
    return int(v)


def _float(value: str | None, source: str, where: str, field: str) -> float:
    try:
        v = float(value) if value not in (None, "") else 0.0
    except ValueError:
        raise SpecError(f"{where}.{field}", value, "not a number", source) from None
    if not math.isfinite(v) or v < 0:
        raise SpecError(f"{where}.{field}", value, "must be a finite number >= 0", source)
    return v


def _rows(text: str, source: str, required: set[str], optional: set[str]) -> list[dict[str, str]]:
    rows = read_rows(text, tuple(sorted(required)), tuple(sorted(optional)), source, "trace CSV")
    if not rows:
        raise SpecError("", source, "the trace holds no requests", source)
    return rows


def read_vidur_csv(text: str, source: str) -> list[Request]:
    """Vidur's request trace: ``num_prefill_tokens,num_decode_tokens[,arrived_at]``."""
    out = []
    for i, row in enumerate(
        _rows(text, source, {"num_prefill_tokens", "num_decode_tokens"}, {"arrived_at"})
    ):
        where = f"row {i + 2}"
        out.append(
            Request(
                i,
                _int(row["num_prefill_tokens"], source, where, "num_prefill_tokens", 0),
                _int(row["num_decode_tokens"], source, where, "num_decode_tokens", 1),
                group=i,
                ready=_float(row.get("arrived_at"), source, where, "arrived_at"),
            )
        )
    return out


def read_plain_csv(text: str, source: str) -> list[Request]:
    """``prompt_tokens,output_tokens,group``. ``group`` names the prompt a response answers: an
    integer id is kept as it is; when any row names its prompt otherwise (``p0``, a UUID, a
    dataset key, as real traces do), every distinct name gets an id in order of first appearance."""
    rows = _rows(text, source, {"prompt_tokens", "output_tokens", "group"}, set())
    labels = [(row["group"] or "").strip() for row in rows]
    for i, label in enumerate(labels):
        if not label:
            raise SpecError(f"row {i + 2}.group", rows[i]["group"], "empty prompt id", source)
    numeric = all(label.isdigit() for label in labels)
    ids: dict[str, int] = {}
    out = []
    for i, row in enumerate(rows):
        where = f"row {i + 2}"
        group = int(labels[i]) if numeric else ids.setdefault(labels[i], len(ids))
        out.append(
            Request(
                i,
                _int(row["prompt_tokens"], source, where, "prompt_tokens", 0),
                _int(row["output_tokens"], source, where, "output_tokens", 1),
                group=group,
            )
        )
    return out


def read_rollpacker_jsonl(text: str, source: str, default_prompt: int = 0) -> list[Request]:
    """One JSON object per prompt with ``response_lengths`` and optionally ``prompt_length``
    (and ``prompt_id``, any string, which is not needed: each line is one prompt)."""
    out: list[Request] = []
    groups = 0
    most = int(memory_limit_bytes() // REQUEST_BYTES)
    for i, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        where = f"line {i + 1}"
        try:
            obj = json.loads(line, object_pairs_hook=no_duplicate_keys)
        except json.JSONDecodeError as exc:
            raise SpecError(where, line[:60], f"not JSON ({exc.msg})", source) from None
        except DuplicateKeyError as exc:
            raise SpecError(f"{where}.{exc.key}", line[:60], "duplicate key", source) from None
        except RecursionError:
            raise SpecError(where, line[:60], "nested too deeply", source) from None
        if not isinstance(obj, dict) or "response_lengths" not in obj:
            raise SpecError(where, line[:60], "needs an object with response_lengths", source)
        lengths = obj["response_lengths"]
        if not isinstance(lengths, list) or not lengths:
            raise SpecError(
                f"{where}.response_lengths", lengths, "a group needs at least one response", source
            )
        unknown = set(obj) - {"response_lengths", "prompt_length", "prompt_id"}
        if unknown:
            raise SpecError(
                where,
                ",".join(sorted(unknown)),
                "unknown keys; known: response_lengths, prompt_length, prompt_id",
                source,
            )
        prompt = _int(
            str(obj.get("prompt_length", default_prompt)), source, where, "prompt_length", 0
        )
        group = groups
        groups += 1
        if len(out) + len(lengths) > most:
            check_memory(where, source, len(out) + len(lengths), REQUEST_BYTES, "requests")
        for j, v in enumerate(lengths):
            out.append(
                Request(
                    len(out),
                    prompt,
                    _int(str(v), source, f"{where}.response_lengths[{j}]", "", 1),
                    group=group,
                )
            )
    if not out:
        raise SpecError("", source, "the trace holds no requests", source)
    return out


def write_plain_csv(requests: list[Request]) -> str:
    lines = ["prompt_tokens,output_tokens,group"] + [
        f"{r.prompt},{r.output},{r.group}" for r in requests
    ]
    return "\n".join(lines) + "\n"


def write_vidur_csv(requests: list[Request]) -> str:
    lines = ["num_prefill_tokens,num_decode_tokens,arrived_at"] + [
        f"{r.prompt},{r.output},{r.ready!r}" for r in requests
    ]
    return "\n".join(lines) + "\n"


def write_rollpacker_jsonl(requests: list[Request]) -> str:
    groups: dict[int, list[Request]] = {}
    for r in requests:
        groups.setdefault(r.group, []).append(r)
    return "".join(
        json.dumps({"prompt_length": rs[0].prompt, "response_lengths": [r.output for r in rs]})
        + "\n"
        for rs in groups.values()
    )


def read_trace(text: str, source: str) -> list[Request]:
    """Any of the three formats, told apart by their header or first line; refused before it is
    parsed when its rows would pass the memory bound (:mod:`costmodels.limits`)."""
    try:
        rows = text.count("\n")
        check_memory("rows", f"{rows:,} rows", rows, REQUEST_BYTES, "requests")
    except SpecError as exc:
        raise exc.with_source(source) from None
    head = text.lstrip().split("\n", 1)[0]
    if head.startswith("{"):
        return read_rollpacker_jsonl(text, source)
    if "num_decode_tokens" in head:
        return read_vidur_csv(text, source)
    if "output_tokens" in head:
        return read_plain_csv(text, source)
    raise SpecError(
        "header",
        head[:60],
        "not a known trace: Vidur CSV (num_prefill_tokens,num_decode_tokens[,arrived_at]),"
        " plain CSV (prompt_tokens,output_tokens,group) or RollPacker JSONL (response_lengths)",
        source,
    )


def histogram(requests: list[Request], bin_tokens: int = 256) -> LengthHistogram:
    """Remaining-length histogram (OrchestrRL §4.1): bins of ``bin_tokens`` costed at their upper
    bound, with each request's cached context (prompt + generated)."""
    from costmodels.generation.lengths import bin_lengths

    remaining = np.array([r.output - r.generated for r in requests], dtype=float)
    context = np.array([r.prompt + r.generated for r in requests], dtype=float)
    return bin_lengths(remaining, context, bin_tokens)
