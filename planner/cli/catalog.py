"""``rlplan catalog`` (the GPU types and models the judge knows) and ``rlplan presets`` (the
shipped examples, usable wherever a file is expected)."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
import yaml
from rich.table import Table

from costmodels.problem import Summary
from planner.cli.console import fail, out
from planner.cli.render import render
from planner.presets import get_preset, presets


def presets_list(
    ctx: typer.Context,
    kind: Annotated[str | None, typer.Option(help="only this kind")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable list")] = False,
) -> None:
    """List the shipped presets (any CLI option that takes a file also takes a preset name)."""
    if ctx.invoked_subcommand is not None:
        return
    kinds = sorted({p.kind for p in presets()})
    if kind is not None and kind not in kinds:
        fail(f"--kind: no presets of kind {kind!r}; kinds: {', '.join(kinds)}")
    if as_json:
        sys.stdout.write(
            json.dumps(
                [
                    {"name": p.name, "kind": p.kind, "description": p.description}
                    for p in presets(kind)
                ],
                indent=2,
            )
            + "\n"
        )
        return
    table = Table(title="rlplan presets")
    for col in ("name", "kind", "description"):
        table.add_column(col)
    for p in presets(kind):
        table.add_row(p.name, p.kind, p.description)
    out.print(table)
    out.print(
        "Show one with `rlplan presets show NAME`; save it with `rlplan presets show NAME > "
        "my.yaml`."
    )


def presets_show(name: Annotated[str, typer.Argument(help="preset name")]) -> None:
    """Print a preset in the format its files use (YAML; demands as CSV), ready to copy and edit."""
    p = get_preset(name)
    if p is None:
        fail(f"no preset named {name!r}; see `rlplan presets`")
    data = p.data()
    sys.stdout.write(p.text(data) if p.text is not None else _yaml_within(data))


def _yaml_within(data: object, columns: int = 80) -> str:
    """``data`` as YAML whose lines fit ``columns`` (an 80-column terminal, an editor's ruler):
    PyYAML breaks a long string at a space only once a line has passed its ``width``, so a line
    can overshoot by a word; a narrower width is tried until none does. Folding a plain or quoted
    scalar at spaces reads back as the same string. A single word longer than the room (a path)
    is never broken, so the narrowest try is kept then."""
    text = ""
    for width in range(columns, columns // 2, -4):
        # allow_unicode: the papers' section signs and Greek letters as written, not \xA7 escapes
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=width)
        if max(map(len, text.splitlines()), default=0) <= columns:
            break
    return text


def catalog(
    what: Annotated[str, typer.Argument(help="gpus or models")] = "gpus",
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable list")] = False,
) -> None:
    """List the GPU types or models rlplan knows (the names cluster and workflow files use)."""
    from costmodels.catalog import gpu_catalog, model_catalog

    if what not in ("gpus", "models"):
        fail(f"catalog: unknown list {what!r}; use gpus or models")
    items = list((gpu_catalog() if what == "gpus" else model_catalog()).values())
    if as_json:
        sys.stdout.write(json.dumps([i.model_dump(mode="json") for i in items], indent=2) + "\n")
        return
    if what == "gpus":
        title = "GPU types (cluster files: nodes[].gpu; custom ones under gpus:)"
        columns = ("name", "BF16 TFLOP/s", "memory GB", "HBM GB/s", "link GB/s", "$/h")
        rows = [
            (
                g.name,
                f"{g.tflops_bf16_dense:g}",
                f"{g.memory_gb:g}",
                f"{g.hbm_gb_per_s:g}",
                f"{g.link_gb_per_s:g}",
                f"{g.usd_per_hour:g}" if g.usd_per_hour is not None else "-",
            )
            for g in items
        ]
    else:
        title = "models (workflow files: models.actor etc.; custom ones under custom_models:)"
        columns = ("name", "params (B)", "layers", "hidden", "heads / KV heads", "MoE")
        rows = [
            (
                m.name,
                f"{m.params_b:g}",
                str(m.layers),
                str(m.hidden),
                f"{m.query_heads} / {m.kv_heads}",
                "yes" if m.is_moe else "",
            )
            for m in items
        ]
    table = render(Summary(title, columns, rows))
    out.print(table)
