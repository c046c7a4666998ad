"""Plan JSON files: writing, reading back, re-checking, and the published JSON Schema.

A plan file carries the problem it solves (``inputs``), so the file alone can be re-checked by
``rlplan validate`` (docs/architecture.md, "Data flow" step 4). The schema is generated from the
pydantic models below and shipped as ``planner/schema/plan.schema.json``; a test fails when the
two drift.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model

import planner
from costmodels.errors import SpecError, field_path
from costmodels.fingerprint import judge_fingerprint
from costmodels.lax_input import refuse_lax
from costmodels.problem import ProblemKind
from costmodels.solving import Status, Termination
from planner.io import build_problem, read_document
from planner.registry import Registry, default_registry
from planner.result import Result, relative_gap
from planner.solve import EXACT_RTOL, check_plan

SCHEMA_VERSION = "1.12"
#: versions this rlplan reads: 1.0 lacks ``clock`` (read as a plan whose clock decided nothing:
#: 1.0 did not record it); 1.0 and 1.1 were judged on the flat kernels (:func:`_judge_of`);
#: before 1.3 no file records ``termination``; 1.4 adds a placement workflow's ``response_lengths``
#: (absent: constant, the only model before) and the breakdown's ``expected_error``; 1.5 adds
#: the ``fully-async`` mode and its ``fully_async`` knobs (absent before: no file used them);
#: 1.6 records the ``judge`` fingerprint (absent before: the judge that wrote the file is then
#: taken to be another one, see :func:`recheck_report`); 1.7 adds a placement workflow's
#: ``reference_pass`` (absent: true, the only model before) and the training and inference
#: breakdowns' ``straggler_s``; 1.8 adds the ``job`` problem and the placement params'
#: ``generation_scale`` (absent: 1, the only model before); 1.9 adds the ``fleet`` problem;
#: 1.10 adds a job plan's ``replan`` advice (absent: none, the only plan before); 1.11 adds a
#: rollout job's ``training.log_prob_pass`` (absent: true, the only model before) and lets a
#: placement workflow of any mode drop its ``reference_pass``; 1.12 adds a placement workflow's
#: ``old_log_prob_pass`` (absent: false, the only model before) and actor training's
#: ``log_prob_s``; anything else is refused naming both versions
READABLE_VERSIONS = tuple(f"1.{minor}" for minor in range(13))


class _PlanFileBase(BaseModel):
    model_config = ConfigDict(
        extra="forbid", allow_inf_nan=False
    )  # NaN objectives and bounds are no numbers

    # one version list: Literal of a tuple is the Literal of its items
    schema_version: Literal[READABLE_VERSIONS] = SCHEMA_VERSION  # type: ignore[valid-type]
    rlplan_version: str = ""
    judge: str = Field(
        default="",
        description=(
            "fingerprint of the cost models (code and measured data) that priced this plan; "
            "`rlplan validate` holds `objective` to today's judge when it is the same one, and "
            "otherwise shows today's objective beside the recorded one; absent before schema 1.6"
        ),
    )
    solver: str
    status: Status
    objective: float | None = Field(
        description="the cost model's objective for `plan` (see `objective_meaning`)"
    )
    objective_meaning: str = ""
    bound: float | None = None
    gap: float | None = Field(default=None, ge=0)
    wall_time_s: float = Field(ge=0)
    seed: int | None = None
    time_limit: float | None = Field(default=None, gt=0)
    options: dict[str, Any] = Field(default_factory=dict)
    message: str = ""
    clock: str = Field(
        default="",
        description=(
            "empty when the work budget decided the result (same input, seed and budget give this "
            "plan on any machine); otherwise how the wall clock stopped the search"
        ),
    )
    termination: Termination | None = Field(
        default=None,
        description=(
            "why the solver stopped, apart from `status` (what it returned): optimal, infeasible, "
            "time_limit, work_budget, "
            "converged or error; absent before schema 1.3"
        ),
    )
    violations: list[str] = Field(default_factory=list)
    breakdown: dict[str, Any] = Field(default_factory=dict)
    target_cost: dict[str, Any] | None = Field(
        default=None,
        description=(
            "planned with --target: the framework, this plan's objective, the same solve's "
            "objective and status without the restriction, and their ratio"
        ),
    )


def _inputs_model(kind: ProblemKind) -> type[BaseModel]:
    """``<Title>Inputs``: the problem's fields, as a plan file records them."""
    fields: dict[str, Any] = {}
    for f in kind.fields:
        if f.required:
            fields[f.name] = (f.model, ...)
        elif any(m.is_required() for m in f.model.model_fields.values()):
            fields[f.name] = (f.model | None, None)  # an optional input with no defaults
        else:
            fields[f.name] = (f.model, f.model())
    return create_model(f"{kind.title}Inputs", __config__=ConfigDict(extra="forbid"), **fields)


def _plan_file_model(kind: ProblemKind) -> type[_PlanFileBase]:
    """``<Title>PlanFile``: the common header, the problem tag, the plan and the inputs."""
    return create_model(
        f"{kind.title}PlanFile",
        __base__=_PlanFileBase,
        problem=(Literal[kind.name], ...),  # type: ignore[valid-type]
        plan=(kind.plan_type | None, ...),
        inputs=(_inputs_model(kind), ...),
    )


@functools.cache
def _adapter(kinds: tuple[ProblemKind, ...]) -> TypeAdapter[Any]:
    models = tuple(_plan_file_model(k) for k in kinds)
    if len(models) == 1:
        return TypeAdapter(models[0])
    # Union[...] of a runtime tuple of types: `X | Y` cannot spell it
    return TypeAdapter(Annotated[Union[models], Field(discriminator="problem")])  # noqa: UP007


def plan_file_adapter(registry: Registry | None = None) -> TypeAdapter[Any]:
    """The pydantic adapter of plan files of every solvable problem in ``registry``."""
    return _adapter(tuple((registry or default_registry()).solvable()))


def json_schema(registry: Registry | None = None) -> dict[str, Any]:
    """The JSON Schema of plan files, generated from the problem descriptors (the shipped one:
    rlplan's own problems, no plugins)."""
    from planner.registry import build_registry

    schema = plan_file_adapter(registry or build_registry(external=False)).json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "rlplan plan file"
    return schema


def shipped_schema() -> dict[str, Any]:
    text = (
        resources.files("planner")
        .joinpath("schema", "plan.schema.json")
        .read_text(encoding="utf-8")
    )
    return json.loads(text)


def json_safe(obj: Any) -> Any:
    """Replace non-finite floats (JSON has none) by None, recursively."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj


def result_to_dict(result: Result, registry: Registry | None = None) -> dict[str, Any]:
    kind = (registry or default_registry()).kind_of(result.problem)
    doc = {
        "schema_version": SCHEMA_VERSION,
        "rlplan_version": planner.__version__,
        "judge": judge_fingerprint(type(result.problem)),
        "problem": kind.name,
        "solver": result.solver,
        "status": result.status.value,
        "objective": result.objective,
        "objective_meaning": kind.objective,
        "bound": result.bound,
        "gap": result.gap,
        "wall_time_s": result.wall_time_s,
        "seed": result.seed,
        "time_limit": result.time_limit,
        "options": result.options,
        "message": result.message,
        "clock": result.clock,
        "termination": None if result.termination is None else result.termination.value,
        "violations": result.violations,
        "plan": result.plan.model_dump(mode="json") if result.plan is not None else None,
        "breakdown": result.breakdown,
        "inputs": result.problem.to_inputs(),
    }
    if result.stats.get("target"):
        doc["target_cost"] = result.stats["target"]
    doc = json_safe(doc)
    plan_file_adapter(registry).validate_python(doc)  # what we write must be what we publish
    return doc


def result_to_json(result: Result) -> str:
    return json.dumps(result_to_dict(result), indent=2, allow_nan=False) + "\n"


def plan_file_from_dict(data: dict[str, Any]) -> Any:
    """Validate a plan-file mapping (raises pydantic's ValidationError)."""
    return plan_file_adapter().validate_python(data)


def _not_a_plan_file(data: dict[str, Any], source: str) -> SpecError:
    """What a document without ``schema_version`` is, said in one line (a job, jobs, cluster or
    problem file handed where a plan goes is the usual mistake)."""
    keys = ", ".join(sorted(map(str, data))[:6]) or "none"
    return SpecError(
        "schema_version",
        None,
        "not a plan file: `rlplan plan` writes schema_version, problem, plan and inputs "
        f"(this file has {keys}; a problem file with a `plan:` section also works where a plan is "
        "read)",
        source,
    )


def _workflows_judged_without_recompute(node: Any) -> Any:
    """``node`` with every placement workflow in it (a mapping with ``algorithm``, ``mode`` and
    ``models``) given ``old_log_prob_pass: false`` where it has none: before schema 1.12 no
    workflow recomputed the old log-probs, and an unset one now takes its framework's default."""
    if isinstance(node, list):
        return [_workflows_judged_without_recompute(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _workflows_judged_without_recompute(v) for k, v in node.items()}
    if {"algorithm", "mode", "models"} <= set(out) and "old_log_prob_pass" not in out:
        out["old_log_prob_pass"] = False
    return out


def _migrate(data: dict[str, Any]) -> dict[str, Any]:
    """A file of an earlier schema as this rlplan reads it. 1.0 files written before the judge's
    one efficiency set carried placement ``inputs.params.compute_efficiency`` and
    ``hbm_efficiency``; they become ``efficiency.compute`` and ``efficiency.hbm`` (the same
    derating of peak FLOP/s and HBM bandwidth), and the plan is then re-checked by today's judge.
    Files before 1.12 judged every workflow without the old log-prob recompute, which an unset
    ``old_log_prob_pass`` no longer means: it is written in
    (:func:`_workflows_judged_without_recompute`)."""
    version = data.get("schema_version")
    if version in READABLE_VERSIONS and READABLE_VERSIONS.index(version) < READABLE_VERSIONS.index(
        "1.12"
    ):
        data = {**data, "inputs": _workflows_judged_without_recompute(data.get("inputs"))}
    params = (
        (data.get("inputs") or {}).get("params") if isinstance(data.get("inputs"), dict) else None
    )
    if (
        data.get("schema_version") == "1.0"
        and isinstance(params, dict)
        and {"compute_efficiency", "hbm_efficiency"} & set(params)
    ):
        params = dict(params)
        efficiency = dict(params.get("efficiency") or {})
        for old, new in (("compute_efficiency", "compute"), ("hbm_efficiency", "hbm")):
            if old in params:
                efficiency[new] = params.pop(old)
        params["efficiency"] = efficiency
        data = {**data, "inputs": {**data["inputs"], "params": params}}
    return data


def read_plan_file(path: Path) -> Any:
    """Parse a plan file; malformed content raises SpecError naming the field. Schema 1.0 files
    are migrated (:func:`_migrate`); other versions are refused naming both."""
    data = read_document(Path(path))
    if not isinstance(data, dict):
        raise SpecError("", type(data).__name__, "a plan file is a JSON object", str(path))
    version = data.get("schema_version")
    if version is None:
        raise _not_a_plan_file(data, str(path))
    if version not in READABLE_VERSIONS:
        raise SpecError(
            "schema_version",
            version,
            f"this rlplan reads plan files of schema {' and '.join(READABLE_VERSIONS)} "
            f"(it writes {SCHEMA_VERSION}); re-plan with this rlplan",
            str(path),
        )
    for key in ("problem", "plan", "inputs"):  # before the union's first complaint (often `solver`)
        if key not in data:
            raise SpecError(
                key,
                None,
                "required field is missing: a plan file records the problem, the plan and its "
                "inputs",
                str(path),
            )
    data = _migrate(data)
    try:
        doc = plan_file_adapter().validate_python(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = err["loc"]
        # drop the discriminator tag pydantic puts first in union locations
        if loc and loc[0] in {k.name for k in default_registry().kinds()}:
            loc = loc[1:]
        value = err.get("input") if err["type"] != "missing" else None
        msg = "required field is missing" if err["type"] == "missing" else err["msg"]
        if version != SCHEMA_VERSION and loc and loc[0] == "inputs":
            writer = data.get("rlplan_version") or "version unknown"
            msg += (
                f" (a schema {version} file from an earlier rlplan, {writer}; "
                f"this rlplan writes {SCHEMA_VERSION}: re-plan)"
            )
        raise SpecError(field_path(loc), value, msg, str(path)) from None
    # read as strictly as a spec file: '2' or true where a number goes, 'no' where true/false
    # goes (costmodels.lax_input); rlplan writes neither, so such a value was edited in
    refuse_lax(data, doc, str(path))
    return doc


def load_plan_and_problem(path: Path) -> tuple[Any, Any]:
    """(problem, plan) from a plan file written by rlplan, or from a hand-written document that
    holds a problem (``problem:`` and its fields, as in a problem file) plus a ``plan:``."""
    from planner.io import parse_model, solvable_kind

    path = Path(path)
    data = read_document(path)
    if isinstance(data, dict) and "schema_version" not in data:
        if "plan" not in data or "problem" not in data:
            raise _not_a_plan_file(data, str(path))
        fields = {k: v for k, v in data.items() if k != "plan"}
        kind = fields.get("problem")
        desc = solvable_kind(kind, str(path))
        extra = sorted(set(fields) - {"problem", *(f.name for f in desc.fields)})
        if extra:
            raise SpecError(
                extra[0],
                fields[extra[0]],
                f"unknown field for a {desc.name} problem with a plan",
                str(path),
            )
        problem = build_problem(kind, fields, base=path.parent, source=str(path))
        plan = parse_model(solvable_kind(kind, str(path)).plan_type, data["plan"], str(path))
        return problem, plan
    doc = read_plan_file(path)
    if doc.plan is None:
        raise SpecError(
            "plan", None, f"the file holds no plan (status {doc.status.value})", str(path)
        )
    return _judge_of(doc, str(path)), doc.plan


def _judge_of(doc: Any, source: str) -> Any:
    """The problem a plan file records, judged as the rlplan that wrote it judged it: files of
    schema 1.0 and 1.1 predate the fitted kernels (``costmodels.profiles``) and were made on the
    flat compute and HBM fractions, which ``kernels: flat`` restores (profiles the file names
    itself still apply)."""
    try:
        problem = build_problem(doc.problem, doc.inputs.model_dump(mode="json"), source=source)
    except SpecError as exc:
        raise exc.prefixed("inputs").with_source(source) from None
    kind = default_registry().kind(doc.problem)
    if doc.schema_version in ("1.0", "1.1") and kind.with_efficiency is not None:
        problem = kind.with_efficiency(problem, {"kernels": "flat"})
    return problem


@dataclass(frozen=True)
class Recheck:
    """What ``rlplan validate`` finds in a plan file.

    ``violations`` make the file invalid. ``objective`` is today's judge's objective of the plan
    (None when the plan violates its constraints or is absent); ``same_judge`` says whether the
    file was priced by today's judge (its ``judge`` fingerprint matches); ``moved`` holds, for a
    file priced by another judge whose objective differs from today's, the line that says so."""

    violations: list[str]
    objective: float | None = None
    same_judge: bool = True
    moved: str = ""


def _writer(doc: Any) -> str:
    version = doc.rlplan_version or "an unknown version"
    judge = f"judge {doc.judge}" if doc.judge else "no judge fingerprint"
    return f"rlplan {version}, schema {doc.schema_version}, {judge}"


def recheck_report(doc: Any, source: str = "") -> Recheck:
    """Re-check a plan file against its own inputs: the plan's constraints (always today's: a
    plan that no longer fits its GPUs cannot be deployed), and that the recorded objective, bound
    and gap agree with the judge that wrote the file.

    That judge is today's when the file's ``judge`` fingerprint is today's
    (:func:`costmodels.fingerprint.judge_fingerprint`); then a disagreeing objective is a false
    record. A file written by another judge (another fingerprint, or none: schema 1.5 and older)
    is re-judged as closely as this rlplan can restore its writer (1.0 and 1.1 on the flat
    kernels, :func:`_judge_of`); if today's objective still differs, the recorded objective
    stands as its writer's, the bound and gap are checked against it, and ``moved`` says both
    objectives. A recalibrated cost model does not make a deployed plan invalid."""
    problem = _judge_of(doc, source)
    if doc.plan is None:
        return Recheck([f"[no-plan] the file holds no plan (status {doc.status.value})"])
    violations, objective, _ = check_plan(problem, doc.plan)
    same_judge = bool(doc.judge) and doc.judge == judge_fingerprint(type(problem))
    if violations:
        return Recheck(violations, None, same_judge)
    out = []
    assert objective is not None
    moved = ""
    recorded = objective  # the objective the bound and gap are held to
    if doc.objective is None or abs(doc.objective - objective) > EXACT_RTOL * max(
        1.0, abs(objective)
    ):
        if same_judge or doc.objective is None:
            out.append(
                f"[objective] recorded objective {doc.objective!r} but the cost model gives "
                f"{objective:.9g}"
            )
        else:
            recorded = doc.objective
            change = (objective - recorded) / abs(recorded) if recorded else math.inf
            moved = (
                f"[judge moved] recorded objective {recorded:.6g} is its writer's "
                f"({_writer(doc)}); today's judge gives {objective:.6g} ({change:+.1%})"
            )
    if doc.bound is not None and doc.bound > recorded * (1 + EXACT_RTOL) + 1e-12:
        out.append(
            f"[bound] recorded bound {doc.bound:.9g} exceeds the plan's objective {recorded:.9g}"
        )
    if not doc.status.has_plan:
        out.append(f"[status] status {doc.status.value!r} but the file holds a valid plan")
    if doc.status.value == "optimal":
        reg = default_registry()
        known = {s.name: s for s in reg.solvers(doc.problem)}
        if doc.solver in known and not known[doc.solver].exact:
            out.append(
                f"[status] status 'optimal' but {doc.solver} is a heuristic: it proves nothing"
            )
    gap = relative_gap(recorded, doc.bound)
    if gap is not None and doc.gap is not None and abs(gap - doc.gap) > 1e-6 + EXACT_RTOL:
        out.append(f"[gap] recorded gap {doc.gap:.9g} but objective and bound give {gap:.9g}")
    return Recheck(out, objective, same_judge, moved)


def recheck(doc: Any, source: str = "") -> list[str]:
    """The violations :func:`recheck_report` finds (empty: the file is valid)."""
    return recheck_report(doc, source).violations


def main() -> None:  # python -m planner.planfile: regenerate the shipped schema
    path = Path(__file__).parent / "schema" / "plan.schema.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(json_schema(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
