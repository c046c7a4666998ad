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

from costmodels.cluster import ClusterSpec
from costmodels.errors import SpecError, field_path
from costmodels.problem import ProblemKind, SpecField
from costmodels.workflow import WorkflowSpec
from planner.registry import Registry, default_registry

M = TypeVar("M", bound=BaseModel)


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


def _resolve(ref: Any, kind: str, base: Path | None = None, registry: Registry | None = None,
             csv: Any = None) -> tuple[Any, str]:
    """Data and source name for an inline mapping, a preset name or a file path (``csv`` parses a
    ``.csv`` file's text)."""
    if isinstance(ref, dict | list | BaseModel):
        return ref, f"<inline {kind}>"
    text = str(ref)
    path = Path(text)
    if base is not None and not path.is_absolute():
        path = base / path
    if path.exists():
        if csv is not None and path.suffix.lower() == ".csv":
            try:
                return csv(path.read_text(encoding="utf-8")), str(path)
            except SpecError as exc:
                raise exc.with_source(str(path)) from None
        return read_document(path), str(path)
    preset = (registry or default_registry()).preset(text)
    if preset is not None:
        if preset.kind != kind:
            raise SpecError(kind, text, f"preset {text!r} is a {preset.kind}, not a {kind}")
        return preset.data(), f"preset {text}"
    raise SpecError(kind, text, "no such file or preset (see `rlplan presets`)")


def load_field(spec: SpecField, ref: Any, loaded: dict[str, Any] | None = None, base: Path | None = None,
               registry: Registry | None = None) -> Any:
    """One input of a problem from a file, a preset name or inline data: parsed, validated by the
    field's model, its own ``check()`` run, then checked against the fields it depends on."""
    if not spec.file and not isinstance(ref, dict | BaseModel):
        raise SpecError(spec.name, ref, "expected an inline mapping (this field is not read from a file)")
    data, src = _resolve(ref, spec.name, base, registry, spec.csv)
    if isinstance(data, spec.model):
        value = data
    else:
        if isinstance(data, list) and spec.list_key:
            data = {spec.list_key: data}
        value = parse_model(spec.model, data, src)
    try:
        if hasattr(value, "check"):
            value.check()
        if spec.check_with is not None:
            spec.check_with(value, loaded or {})
    except SpecError as exc:
        raise exc.with_source(src) from None
    return value


def load_spec(problem: str, field: str, ref: Any, base: Path | None = None) -> Any:
    """One input of ``problem`` (e.g. ``load_spec("placement", "cluster", "small-8")``)."""
    return load_field(default_registry().kind(problem).spec_field(field), ref, base=base)


def load_cluster(ref: Any, base: Path | None = None) -> ClusterSpec:
    """A cluster spec (shared by every problem that places work on GPUs) from a file, a preset
    name or a mapping, validated."""
    return load_field(SpecField("cluster", ClusterSpec, "cluster spec"), ref, base=base)


def load_workflow(ref: Any, base: Path | None = None) -> WorkflowSpec:
    """An RL workflow spec from a file, a preset name or a mapping, validated."""
    return load_field(SpecField("workflow", WorkflowSpec, "workflow spec"), ref, base=base)


def solvable_kind(name: Any, source: str | None = None, registry: Registry | None = None) -> ProblemKind:
    """The descriptor of problem ``name``; a SpecError on field ``problem`` when it is unknown or
    has no solvers yet."""
    reg = registry or default_registry()
    solvable = ", ".join(reg.problems())
    if name not in {k.name for k in reg.kinds()}:
        raise SpecError("problem", name, f"unknown problem kind; known: {solvable}", source)
    if not reg.solvers(name):
        raise SpecError("problem", name, f"no solvers are registered for this problem yet; solvable: {solvable}", source)
    return reg.kind(name)


def build_problem(kind: str, fields: dict[str, Any], base: Path | None = None, source: str | None = None,
                  registry: Registry | None = None) -> Any:
    """A problem of ``kind`` from its fields (each inline, a file path or a preset name)."""
    reg = registry or default_registry()
    desc = solvable_kind(kind, source, reg)
    loaded: dict[str, Any] = {}
    for spec in desc.fields:
        ref = fields.get(spec.name)
        if ref is None:
            if spec.required:
                raise SpecError(spec.name, None, f"a {kind} problem needs a {spec.name}", source)
            continue
        try:
            loaded[spec.name] = load_field(spec, ref, loaded, base, reg)
        except SpecError as exc:
            # errors in an inline field, or in resolving a name, belong to the problem file
            if source and (exc.source is None or exc.source.startswith("<inline")):
                field = exc.field if exc.field == spec.name or exc.source is None else f"{spec.name}.{exc.field}"
                raise SpecError(field, exc.value, exc.reason, source) from None
            raise
    return desc.build(**loaded)


def load_problem(ref: Any, registry: Registry | None = None) -> Any:
    """A problem from a problem file (``problem: <kind>`` plus its fields), a preset name, or a
    mapping. Paths inside a problem file are relative to the file."""
    reg = registry or default_registry()
    base = None
    if isinstance(ref, dict):
        data, src = ref, "<inline problem>"
    else:
        data, src = _resolve(ref, "problem", registry=reg)
        if not src.startswith("preset"):
            base = Path(src).parent
    if not isinstance(data, dict):
        raise SpecError("", type(data).__name__, "a problem file is a mapping with a `problem:` key", src)
    desc = solvable_kind(data.get("problem"), src, reg)
    extra = sorted(set(data) - {"problem", *(f.name for f in desc.fields)})
    if extra:
        raise SpecError(extra[0], data[extra[0]], f"unknown field for a {desc.name} problem", src)
    return build_problem(desc.name, data, base, src, reg)


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
