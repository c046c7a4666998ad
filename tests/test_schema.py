"""The shipped JSON Schema matches the models, and written plans conform to it."""

from __future__ import annotations

import json

import jsonschema

from planner import load_problem, solve
from planner.planfile import json_schema, result_to_dict, shipped_schema


def test_shipped_schema_is_current():
    assert shipped_schema() == json.loads(json.dumps(json_schema(), sort_keys=True)), (
        "planner/schema/plan.schema.json is stale: run `make schema` (python -m planner.planfile)"
    )


def test_written_plan_conforms_to_schema():
    result = solve(
        load_problem(
            {"problem": "placement", "cluster": "small-8", "workflow": "grpo-sync-qwen3-4b"}
        ),
        "verl",
    )
    doc = result_to_dict(result)
    jsonschema.validate(doc, shipped_schema())
    doc["status"] = "splendid"
    try:
        jsonschema.validate(doc, shipped_schema())
    except jsonschema.ValidationError:
        pass
    else:  # pragma: no cover
        raise AssertionError("schema accepted an unknown status")


def test_schema_names_required_top_level_keys():
    schema = shipped_schema()
    placement = schema["$defs"]["PlacementPlanFile"]
    for key in ("problem", "solver", "status", "objective", "wall_time_s", "plan", "inputs"):
        assert key in placement["required"]
    for key in ("schema_version", "bound", "gap", "breakdown"):
        assert key in placement["properties"]
