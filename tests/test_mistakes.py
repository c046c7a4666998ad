"""A newcomer's natural mistakes each get a message that says what to do next: a near miss of a
solver, a preset or a problem name is answered with "did you mean", a missing field that takes
one of a few values names them, a problem file without ``problem:`` is read as the one problem its
fields describe; ``-q`` still says what came back and what was written; progress never counts past
its budget."""

from __future__ import annotations

import pytest

from costmodels.errors import SpecError, did_you_mean
from planner import load_problem
from tests.conftest import run_cli


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["plan", "placment"], "did you mean placement?"),
        (["plan", "placement", "--cluster", "small8"], "did you mean small-8"),
        (["plan", "placement", "--solver", "shaea"], "did you mean sha-ea?"),
        (["plan", "cosched", "--solver", "grdy"], "did you mean greedy?"),
    ],
)
def test_a_near_miss_is_answered_with_did_you_mean(argv, hint, tmp_path):
    r = run_cli(*argv, "-o", str(tmp_path / "p.json"))
    assert r.returncode == 2 and hint in r.stderr, r.stderr
    assert list(tmp_path.iterdir()) == []


def test_did_you_mean_prefers_a_name_that_starts_with_the_given_one():
    assert did_you_mean("H100", ["A100-80GB", "H100-SXM", "H200"]) == " (did you mean H100-SXM?)"
    assert did_you_mean("zzz", ["greedy", "milp"]) == ""
    assert did_you_mean(None, ["greedy"]) == ""


def test_a_missing_field_with_a_few_values_names_them(tmp_path):
    workflow = tmp_path / "wf.yaml"
    workflow.write_text("models: {actor: Qwen3-8B}\nglobal_batch: 64\n")
    r = run_cli("plan", "placement", "--workflow", str(workflow), "-o", str(tmp_path / "p.json"))
    assert r.returncode == 2
    assert "algorithm: required field is missing; one of ppo, grpo" in r.stderr, r.stderr


def test_a_problem_without_its_name_is_the_one_its_fields_describe():
    problem = load_problem({"cluster": "small-8", "workflow": "grpo-sync-qwen3-4b"})
    assert problem.kind == "placement"
    with pytest.raises(SpecError, match="name the problem"):
        load_problem({"nodes": 3})


def test_quiet_still_says_what_came_back_and_what_was_written(tmp_path):
    out = tmp_path / "c.json"
    r = run_cli("plan", "circuits", "-q", "-o", str(out))
    assert r.returncode == 0 and r.stderr == ""
    (line,) = r.stdout.splitlines()
    assert line.startswith("circuits by greedy: ") and line.endswith(f"wrote {out}")


def test_progress_never_counts_past_its_budget():
    from planner.cli.progress import _count

    assert _count(301, 300) == "300/300 evaluations"
    assert _count(0, 40) == "0/40 evaluations"


def test_a_search_that_finds_no_plan_says_why_when_the_judge_knows(tmp_path):
    """PPO on Qwen3-14B cannot fit 4 GPUs whatever the budget: the message says how much memory
    it needs and how many GPUs of the cluster's types would hold it, not "try a bigger budget"."""
    workflow = run_cli("presets", "show", "ppo-sync-qwen3-8b").stdout
    (tmp_path / "ppo.yaml").write_text(workflow.replace("Qwen3-8B", "Qwen3-14B"))
    r = run_cli(
        "plan", "placement", "--cluster", "small-4", "--workflow", str(tmp_path / "ppo.yaml"),
        "-O", "evaluations=20", "-o", str(tmp_path / "p.json"),
    )  # fmt: skip
    assert r.returncode == 1
    assert "model memory alone needs 651.2 GB" in r.stderr and " x L40S" in r.stderr, r.stderr


def test_a_median_response_above_its_cap_is_refused(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(
        "name: x\nworkload: {model: Qwen2.5-7B, gpu: H800, gpus: 16, prompts_per_step: 128,\n"
        "  responses_per_prompt: 8, max_response: 1024, dataset_prompts: 1280,\n"
        "  lengths: {median: 4000}}\n"
    )
    r = run_cli("plan", "rollout", "--job", str(job), "-o", str(tmp_path / "p.json"))
    assert r.returncode == 2 and "workload.lengths.median: above max_response" in r.stderr
