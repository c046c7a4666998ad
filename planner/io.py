"""Loading specs and problems from files or preset names, with one-line errors.

Every loader accepts a path (YAML or JSON; CSV for demand) or the name of a shipped preset
(``planner.presets``). Whatever is wrong comes back as a :class:`costmodels.SpecError` that names
the file, the field and the value (issue 2, item 9); the CLI prints it and exits with code 2.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from costmodels.broadcast.problem import BroadcastProblem, BroadcastSpec
from costmodels.circuits.problem import CircuitProblem
from costmodels.cluster import ClusterSpec
from costmodels.errors import SpecError, field_path
from costmodels.circuits.fabric import DemandSpec, FabricSpec, parse_demand_csv
from costmodels.cosched.problem import CoscheduleProblem, JobsSpec
from costmodels.placement.problem import CostParams, PlacementProblem
from costmodels.workflow import WorkflowSpec
from planner.presets import get_preset

M = TypeVar("M", bound=BaseModel)

PROBLEM_FIELDS = {
    "placement": ("cluster", "workflow"),
    "circuits": ("fabric", "demand"),
    "cosched": ("jobs",),
    "broadcast": ("sync",),
}


def read_document(path: Path) -> Any:
    """Parse a YAML or JSON file; syntax errors become SpecErrors with line and column."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError("", str(path), "no such file (and no preset of that name; see `rlplan presets`)", str(path)) from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise SpecError("", str(path), f"cannot read: {exc.__class__.__name__}", str(path)) from None
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            lines = text.splitlines()
            near = lines[exc.lineno - 1][:60] if 0 < exc.lineno <= len(lines) else "<end of file>"
            raise SpecError(f"line {exc.lineno} column {exc.colno}", near, f"malformed JSON: {exc.msg}", str(path)) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        line = text.splitlines()[mark.line] if mark and mark.line < len(text.splitlines()) else ""
        raise SpecError(where, line.strip()[:60], f"malformed YAML: {problem}", str(path)) from None


def parse_model(cls: type[M], data: Any, source: str | None = None) -> M:
    """Validate ``data`` as ``cls``; the first pydantic error becomes a SpecError."""
    if not isinstance(data, dict):
        raise SpecError("", type(data).__name__, f"expected a mapping of {cls.__name__} fields", source)
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = err["msg"]
        if err["type"] == "missing":
            msg = "required field is missing"
        elif err["type"] == "extra_forbidden":
            msg = "unknown field"
        value = err.get("input") if err["type"] != "missing" else None
        raise SpecError(field_path(err["loc"]), value, msg, source) from None


def _resolve(ref: Any, kind: str, base: Path | None = None) -> tuple[Any, str]:
    """Data and source name for an inline mapping, a preset name or a file path."""
    if isinstance(ref, dict | list):
        return ref, f"<inline {kind}>"
    text = str(ref)
    path = Path(text)
    if base is not None and not path.is_absolute():
        path = base / path
    if path.exists():
        if kind == "demand" and path.suffix.lower() == ".csv":
            try:
                return parse_demand_csv(path.read_text(encoding="utf-8")), str(path)
            except SpecError as exc:
                raise exc.with_source(str(path)) from None
        return read_document(path), str(path)
    preset = get_preset(text)
    if preset is not None:
        if preset.kind != kind:
            raise SpecError(kind, text, f"preset {text!r} is a {preset.kind}, not a {kind}")
        return preset.data(), f"preset {text}"
    raise SpecError(kind, text, "no such file or preset (see `rlplan presets`)")


def _checked(spec: Any, source: str) -> Any:
    try:
        spec.check()
    except SpecError as exc:
        raise exc.with_source(source) from None
    return spec


def _load_spec(cls: type[M], kind: str, ref: Any, base: Path | None) -> M:
    data, src = _resolve(ref, kind, base)
    return _checked(parse_model(cls, data, src), src)


def load_cluster(ref: Any, base: Path | None = None) -> ClusterSpec:
    """A cluster spec from a file, a preset name or a mapping, validated."""
    return _load_spec(ClusterSpec, "cluster", ref, base)


def load_workflow(ref: Any, base: Path | None = None) -> WorkflowSpec:
    """A workflow spec from a file, a preset name or a mapping, validated."""
    return _load_spec(WorkflowSpec, "workflow", ref, base)


def load_fabric(ref: Any, base: Path | None = None) -> FabricSpec:
    """A fabric spec from a file, a preset name or a mapping, validated."""
    return _load_spec(FabricSpec, "fabric", ref, base)


def load_demand(ref: Any, fabric: FabricSpec, base: Path | None = None) -> DemandSpec:
    data, src = _resolve(ref, "demand", base)
    if isinstance(data, DemandSpec):
        demand = data
    elif isinstance(data, list):
        demand = parse_model(DemandSpec, {"entries": data}, src)
    else:
        demand = parse_model(DemandSpec, data, src)
    try:
        demand.check_against(fabric)
    except SpecError as exc:
        raise exc.with_source(src) from None
    return demand


def load_sync(ref: Any, base: Path | None = None) -> BroadcastSpec:
    """A weight-sync broadcast spec (PoDs, budgets, weights) from a file, preset or mapping."""
    return _load_spec(BroadcastSpec, "sync", ref, base)


def load_jobs(ref: Any, base: Path | None = None) -> JobsSpec:
    """A co-scheduling jobs spec from a file, a preset name or a mapping, validated."""
    return _load_spec(JobsSpec, "jobs", ref, base)


def build_problem(kind: str, fields: dict[str, Any], base: Path | None = None, source: str | None = None) -> Any:
    """A problem of ``kind`` from its fields (each inline, a file path or a preset name)."""
    if kind not in PROBLEM_FIELDS:
        raise SpecError("problem", kind, f"unknown problem kind; known: {', '.join(PROBLEM_FIELDS)}", source)
    for name in PROBLEM_FIELDS[kind]:
        if fields.get(name) is None:
            raise SpecError(name, None, f"a {kind} problem needs a {name}", source)
    def attributed(name: str, load: Any, *args: Any) -> Any:
        # errors in an inline field, or in resolving a name, belong to the problem file
        try:
            return load(fields[name], *args)
        except SpecError as exc:
            if source and (exc.source is None or exc.source.startswith("<inline")):
                field = exc.field if exc.field == name or exc.source is None else f"{name}.{exc.field}"
                raise SpecError(field, exc.value, exc.reason, source) from None
            raise

    if kind == "placement":
        params = parse_model(CostParams, fields.get("params") or {}, source)
        return PlacementProblem(attributed("cluster", load_cluster, base), attributed("workflow", load_workflow, base), params)
    if kind == "circuits":
        fabric = attributed("fabric", load_fabric, base)
        return CircuitProblem(fabric, attributed("demand", load_demand, fabric, base))
    if kind == "broadcast":
        return BroadcastProblem(attributed("sync", load_sync, base))
    return CoscheduleProblem(attributed("jobs", load_jobs, base))


def load_problem(ref: Any) -> Any:
    """A problem from a problem file (``problem: placement`` plus its fields), a preset name, or
    a mapping. Paths inside a problem file are relative to the file."""
    base = None
    if isinstance(ref, dict):
        data, src = ref, "<inline problem>"
    else:
        data, src = _resolve(ref, "problem")
        if not src.startswith("preset"):
            base = Path(src).parent
    if not isinstance(data, dict):
        raise SpecError("", type(data).__name__, "a problem file is a mapping with a `problem:` key", src)
    kind = data.get("problem")
    extra = set(data) - {"problem", "params", *PROBLEM_FIELDS.get(kind, ())}
    if kind in PROBLEM_FIELDS and extra:
        raise SpecError(sorted(extra)[0], data[sorted(extra)[0]], f"unknown field for a {kind} problem", src)
    return build_problem(kind, data, base, src)


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temp file and a rename: never a partial file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
