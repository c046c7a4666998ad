"""``rlplan plan placement --plot FILE``: the plan on its cluster, and one iteration on a clock.

Top: the cluster as it is wired. One shaded block per zone (the network's slow boundaries), one
box per node, one square per GPU, coloured by the task group that holds it (grey: idle). Each
data-parallel
replica of actor generation is outlined in solid black and each replica of actor training in
dashed red, so tensor/pipeline groups that cross a node or a zone boundary are visible at a glance.

Bottom: the iteration's phases (grey bars) as the cost model composes them (HetRL Appendix
B.4). In sync mode generation, inference, training and the weight transfer follow one another;
in async mode the generation group's work overlaps inference + training on the other GPUs and
the transfer follows the longer of the two. Under the phase row, one bar per task from its
phase's start: tasks of one phase that share a GPU group run interleaved (Φ with η), so their bars
overlap and the phase lasts less than their sum. A task's bar has its group's colour, the colour
of its GPUs above.

matplotlib is imported when drawing, not on import."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

#: bar colour of each phase row, and its text's: shades of grey, because colour means a task
#: group in both halves of the figure (the GPU map and the task bars)
_PHASE_SHADES = {
    "generation": ("dimgray", "white"),
    "inference": ("gray", "white"),
    "training": ("darkgray", "black"),
    "weight sync": ("silver", "black"),
}
_OTHER_SHADE = ("gainsboro", "black")


def _seconds(v: float) -> str:
    """Plain seconds: 1141 s, 59.5 s, 0.125 s (never 1.14e+03)."""
    return f"{v:.0f} s" if v >= 100 else f"{v:.3g} s"


#: GPUs drawn per row inside a node box
_ROW = 8
#: at most this many node boxes per row inside a zone
_NODES_PER_ROW = 12


#: zone blocks are shelved left to right until a shelf is this many cells wide
_SHELF = 44


def _zone_block(
    members: list[Any],
) -> tuple[
    dict[str, tuple[float, float]], list[tuple[str, float, float, float, float]], float, float
]:
    """One zone laid out alone from (0, 0): its nodes in rows of about sqrt(2 x nodes), at most
    ``_NODES_PER_ROW``."""
    cells: dict[str, tuple[float, float]] = {}
    boxes: list[tuple[str, float, float, float, float]] = []
    per_row = max(
        1, min(_NODES_PER_ROW, round(math.sqrt(2 * len(members))))
    )  # roughly twice as wide as tall
    rows = [members[i : i + per_row] for i in range(0, len(members), per_row)]
    width = y = 0.0
    for row in reversed(rows):  # first nodes on top
        x = 0.5
        for node in row:
            w, nh = min(node.count, _ROW), math.ceil(node.count / _ROW)
            boxes.append((node.name, x - 0.2, y + 0.3, w + 0.4, nh + 0.4))
            for i in range(node.count):
                cells[f"{node.name}:{i}"] = (x + i % _ROW, y + 0.5 + (nh - 1 - i // _ROW))
            x += w + 1.0
        width = max(width, x)
        y += max(math.ceil(n.count / _ROW) for n in row) + 1.2
    return cells, boxes, width, y


def _layout(
    problem: Any,
) -> tuple[
    dict[str, tuple[float, float]],
    list[tuple[str, float, float, float, float]],
    list[tuple[str, float, float, float, float]],
    float,
    float,
]:
    """Cell positions of every GPU (lower-left corner, unit cells), node boxes
    ``(name, x, y, w, h)``, zone bands ``(zone, x, y, w, h)``, and the drawing's width and
    height. Zones are blocks shelved left to right, first zone top left."""
    nodes = problem.cluster.nodes
    zones: list[str] = []
    for node in nodes:
        if node.zone not in zones:
            zones.append(node.zone)
    blocks = [(zone, *_zone_block([n for n in nodes if n.zone == zone])) for zone in zones]
    shelves: list[list[Any]] = [[]]
    for block in blocks:
        if shelves[-1] and sum(b[3] + 1.0 for b in shelves[-1]) + block[3] > _SHELF:
            shelves.append([])
        shelves[-1].append(block)
    cells: dict[str, tuple[float, float]] = {}
    boxes: list[tuple[str, float, float, float, float]] = []
    bands: list[tuple[str, float, float, float, float]] = []
    width = y = 0.0
    for shelf in reversed(shelves):
        x = 0.0
        h = max(b[4] for b in shelf) + 0.8  # room for the zone's name above its nodes
        for zone, zcells, zboxes, w, zh in shelf:
            top = y + h
            dy = top - 0.8 - zh  # blocks hang from the shelf's top
            cells.update({d: (cx + x, cy + dy) for d, (cx, cy) in zcells.items()})
            boxes += [(n, bx + x, by + dy, bw, bh) for n, bx, by, bw, bh in zboxes]
            bands.append((zone, x, dy, w, zh + 0.8))
            x += w + 1.0
        width = max(width, x)
        y += h + 0.4
    return cells, boxes, bands, width, y


def _outline(
    ax: Any, cells: dict[str, tuple[float, float]], devices: list[str], **style: Any
) -> None:
    """A rectangle around the cells of ``devices`` that share a row of one node; a group spread
    over several nodes gets one rectangle per node (joined by nothing: the gap is the network)."""
    from matplotlib.patches import Rectangle

    by_row: dict[tuple[str, float], list[float]] = {}
    for d in devices:
        x, y = cells[d]
        by_row.setdefault((d.rsplit(":", 1)[0], y), []).append(x)
    for (_, y), xs in by_row.items():
        ax.add_patch(
            Rectangle(
                (min(xs) + 0.04, y + 0.04), max(xs) - min(xs) + 0.92, 0.92, fill=False, **style
            )
        )


def _timeline(
    ax: Any, problem: Any, breakdown: dict[str, Any], colour_of_task: dict[str, Any]
) -> None:
    """One iteration as bars: the phases in grey rows (sync: in sequence; async: generation's
    group beside inference + training), then each task from its phase's start, in the colour of
    its task group (``colour_of_task``)."""
    tasks = breakdown["tasks"]
    total = breakdown["iteration_time_s"]
    asynchronous = problem.workflow.mode != "sync"
    segments, starts, phase_rows = _phase_segments(breakdown["phases"], asynchronous)
    names = [t.name for t in problem.tasks]
    ticks, labels = [], []
    for row, label in enumerate(phase_rows):
        ticks.append(len(names) + row)
        labels.append(label)
    for label, start, length, row in segments:
        if length <= 0:
            continue
        colour, text_colour = _PHASE_SHADES.get(label, _OTHER_SHADE)
        ax.barh(len(names) + row, length, left=start, color=colour, edgecolor="white", height=0.8)
        if length / total > len(label) / 90:  # only where the text fits inside the bar
            ax.text(
                start + length / 2,
                len(names) + row,
                f"{label} {_seconds(length)}",
                ha="center",
                va="center",
                fontsize=8,
                color=text_colour,
            )
    phase_of = {t.name: t.kind.value for t in problem.tasks}  # generation, inference or training
    for i, name in enumerate(reversed(names)):
        phase = phase_of[name]
        time_s = tasks[name]["time_s"]
        ax.barh(
            i,
            time_s,
            left=starts.get(phase, 0.0),
            color=colour_of_task.get(name, "lightgray"),
            alpha=0.85,
            height=0.6,
        )
        ax.text(starts.get(phase, 0.0) + time_s, i, f" {_seconds(time_s)}", va="center", fontsize=7)
        ticks.append(i)
        labels.append(name)
    ax.set_yticks(ticks, labels, fontsize=8)
    ax.set_xlim(0, total * 1.12)
    ax.set_xlabel("seconds into the iteration")
    mode = (
        "async: generation overlaps inference + training on other GPUs"
        if asynchronous
        else "sync: phases in sequence"
    )
    ax.set_title(
        f"one iteration, {_seconds(total)} ({mode})\ntask bars start at their phase; tasks "
        "sharing GPUs interleave (HetRL B.4)",
        fontsize=9,
    )


def _phase_segments(
    phases: dict[str, Any], asynchronous: bool
) -> tuple[list[tuple[str, float, float, int]], dict[str, float], list[str]]:
    """The phases as (label, start, length, row) bars, each phase's start and the rows' labels:
    async runs generation (and its group's other tasks) beside inference then training, the
    weight sync after both; sync runs the four in sequence."""
    gen, inf, trn, sync = (
        phases["generation_s"],
        phases["inference_s"],
        phases["training_s"],
        phases["weight_transfer_s"],
    )
    if asynchronous:
        busy = phases.get("generation_group_busy_s", gen)
        segments = [("generation", 0.0, gen, 1)]
        if busy > gen:
            segments.append(("generation group: its other tasks", gen, busy - gen, 1))
        segments += [
            ("inference", 0.0, inf, 0),
            ("training", inf, trn, 0),
            ("weight sync", max(busy, inf + trn), sync, 0),
        ]
        starts = {"generation": 0.0, "inference": 0.0, "training": inf}
        phase_rows = ["inference + training", "generation group"]
    else:
        segments = [
            ("generation", 0.0, gen, 0),
            ("inference", gen, inf, 0),
            ("training", gen + inf, trn, 0),
            ("weight sync", gen + inf + trn, sync, 0),
        ]
        starts = {"generation": 0.0, "inference": gen, "training": gen + inf}
        phase_rows = ["iteration"]
    return segments, starts, phase_rows


def plot_placement(
    problem: Any, plan: Any, breakdown: dict[str, Any], path: Path, title: str = ""
) -> None:
    """Draw ``plan`` on ``problem``'s cluster and its iteration timeline into ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    cells, boxes, bands, width, height = _layout(problem)
    group_of_device = {d: gi for gi, g in enumerate(plan.groups) for d in g.devices}
    palette = plt.get_cmap("tab10" if len(plan.groups) <= 10 else "tab20")
    fig_w = max(10.0, min(18.0, 0.32 * width + 3))
    cluster_h = max(1.2, min(9.0, fig_w / (width + 4) * height))  # GPUs stay square
    fig = plt.figure(
        figsize=(fig_w, cluster_h + 1.6 + 0.3 * len(problem.tasks) + 2.0), layout="constrained"
    )
    upper, lower = fig.subfigures(
        2, 1, height_ratios=[cluster_h + 1.6, 0.3 * len(problem.tasks) + 2.0]
    )
    top = upper.subplots()
    bottom = lower.subplots()
    for zone, x, y, w, h in bands:
        top.add_patch(Rectangle((x, y), w, h, color="whitesmoke", zorder=0))
        top.text(x + 0.3, y + h - 0.35, zone, ha="left", va="center", fontsize=8, fontweight="bold")
    for name, x, y, w, h in boxes:
        top.add_patch(Rectangle((x, y), w, h, fill=False, edgecolor="dimgray", linewidth=0.8))
        top.text(x + w, y + h + 0.05, name, fontsize=6, ha="right", va="bottom", color="dimgray")
    for device, (x, y) in cells.items():
        g = group_of_device.get(device)
        top.add_patch(
            Rectangle(
                (x + 0.1, y + 0.1),
                0.8,
                0.8,
                color="lightgray" if g is None else palette(g % palette.N),
            )
        )
    for task, style in (
        ("actor_generation", {"edgecolor": "black", "linewidth": 1.4}),
        ("actor_training", {"edgecolor": "darkred", "linewidth": 1.2, "linestyle": "--"}),
    ):
        placement = next((t for t in plan.tasks if t.task == task), None)
        if placement is not None:
            for replica in placement.devices:
                _outline(top, cells, [d for stage in replica for d in stage], **style)
    top.set_xlim(-0.2, width)
    top.set_ylim(-0.2, height)
    top.set_aspect("equal")
    top.axis("off")
    legend = [
        Patch(color=palette(i % palette.N), label=f"group {i}: {', '.join(g.tasks)}")
        for i, g in enumerate(plan.groups)
    ]
    legend += [
        Patch(facecolor="none", edgecolor="black", label="a generation replica (TP x PP)"),
        Patch(
            facecolor="none",
            edgecolor="darkred",
            linestyle="--",
            label="a training replica (TP x PP)",
        ),
    ]
    if len(group_of_device) < len(cells):
        legend.append(Patch(color="lightgray", label="idle GPU"))
    upper.legend(handles=legend, loc="outside lower center", ncol=2, fontsize=7, frameon=False)
    upper.suptitle(
        f"{title}{_seconds(breakdown['iteration_time_s'])}/iteration on {len(cells)} GPUs "
        f"({len(problem.cluster.nodes)} nodes, {len(bands)} zone{'s' if len(bands) > 1 else ''})",
        fontsize=10,
    )
    colour_of_task = {t: palette(i % palette.N) for i, g in enumerate(plan.groups) for t in g.tasks}
    _timeline(bottom, problem, breakdown, colour_of_task)
    fig.savefig(path, dpi=120)
    plt.close(fig)
