"""Hostile input to every command (docs/architecture.md, "Interfaces people use"): whatever a user
or a script throws at rlplan ends with exit 2 (bad input or usage), one line on stderr naming the
file or option and the value, no traceback, and no file written — by pattern, not by case:

* files that are not specs: a directory, /dev/zero, binary bytes, deep nesting, a YAML alias bomb,
  a file of the wrong kind, an empty file;
* lax parsing: duplicate YAML and JSON keys, booleans where numbers go, duplicate custom names,
  CSV with repeated or unknown columns or ragged rows (and a UTF-8 BOM, which is fine);
* outputs: empty, a directory, the wrong picture suffix, two outputs on one file, an unwritable
  directory — refused before any solving;
* sizes no planner should attempt: 10^6 GPUs, 10^9 ports, 10^9 ranks;
* plan files that lie: NaN objective or bound, negative gap, a heuristic labelled optimal;
* usage: unknown commands and options, non-numbers, bench runs of zero seeds or negative limits.
"""

from __future__ import annotations

import json

import pytest
import yaml

from tests.conftest import run_cli
from tests.hostile_helpers import (
    SMALL,
    _argv_with_file,
    _argv_with_plan_file,
    _argv_with_preset,
    _bomb,
    _check_hostile,
    _cluster_file,
    _demand_csv,
    _plan_file,
    _plan_placement_on_cluster,
    _text,
)


def _bench_out_with(tmp, runs: str) -> str:
    """A bench output directory whose ``runs.jsonl`` holds ``runs`` (a resumed run reads it)."""
    out = tmp / "b"
    out.mkdir()
    _text(out, "runs.jsonl", runs)
    return str(out)


# (id, what to run: a command line as a shell would split it, an argv or a builder(tmp) -> argv,
# words the one-line message must contain)
CASES = [
    ("directory", lambda t: ["plan", "placement", "--cluster", str(t)], ["is a directory"]),
    ("dev-zero", "plan placement --cluster /dev/zero", ["/dev/zero", "MiB"]),
    ("binary-csv", _demand_csv(b"\xff\xfe\x00\x01"), ["d.csv", "UTF-8"]),
    ("deep-yaml", _cluster_file("c.yaml", "a: " + "[" * 5000 + "]" * 5000), ["nested too deeply"]),
    (
        "deep-json",
        _argv_with_file("validate p.json", text="[" * 50000 + "]" * 50000),
        ["nested too deeply"],
    ),
    (
        "alias-bomb",
        lambda t: ["plan", "placement", "--cluster", str(_bomb(t))],
        ["bomb.yaml", "alias"],
    ),
    ("empty-file", _cluster_file("c.yaml", ""), ["c.yaml"]),
    (
        "cosched-to-evaluate",
        _argv_with_file("evaluate jobs.yaml", text=yaml.safe_dump({"jobs": [{"name": "a"}]})),
        ["jobs.yaml"],
    ),
    ("dup-yaml-key", _cluster_file("c.yaml", "nodes: []\nnodes: []\n"), ["duplicate key", "nodes"]),
    ("dup-json-key", _cluster_file("c.json", '{"nodes": [], "nodes": 1}'), ["duplicate key"]),
    (
        "escape-in-a-name",
        _plan_placement_on_cluster(lambda d: d["nodes"][0].update(name="a\x1b[2Jb")),
        ["nodes[0].name", "control character"],
    ),
    (
        "c1-control-in-json",
        _cluster_file("c.json", '{"nodes": [{"name": "a\\u009bb", "gpu": "L4", "count": 1}]}'),
        ["nodes[0].name", "control character"],
    ),
    (
        "bool-count",
        _plan_placement_on_cluster(lambda d: d["nodes"][0].update(count=True)),
        ["nodes[0].count", "boolean"],
    ),
    (
        # pydantic's lax mode would read 'no' (or 0, 'off', 'yes') as a boolean
        "workflow-quoted-boolean",
        _argv_with_preset(
            "plan placement --cluster small-8 --workflow w.yaml",
            preset="grpo-sync-qwen3-4b",
            mutate=lambda d: d.update(recompute="no"),
        ),
        ["w.yaml", "recompute", "true or false", "'no'"],
    ),
    (
        "workflow-number-boolean",
        _argv_with_preset(
            "plan placement --cluster small-8 --workflow w.yaml",
            preset="grpo-sync-qwen3-4b",
            mutate=lambda d: d.update(reference_pass=0),
        ),
        ["w.yaml", "reference_pass", "true or false", "(got 0)"],
    ),
    (
        "workflow-string-old-log-prob-pass",
        _argv_with_preset(
            "plan placement --cluster small-8 --workflow w.yaml",
            preset="grpo-sync-qwen3-4b",
            mutate=lambda d: d.update(old_log_prob_pass="yes"),
        ),
        ["w.yaml", "old_log_prob_pass", "true or false", "'yes'"],
    ),
    (
        "dup-custom-gpu",
        _plan_placement_on_cluster(
            lambda d: d.update(
                gpus=[
                    {
                        "name": "X1",
                        "tflops_bf16_dense": 100,
                        "memory_gb": 80,
                        "hbm_gb_per_s": 2000,
                        "intra_node_gb_per_s": 100,
                    }
                ]
                * 2
            )
        ),
        ["gpus[1].name", "X1"],
    ),
    (
        # all of its memory kept for the runtime: nothing fits, refused before any costing
        "gpu-without-usable-memory",
        _plan_placement_on_cluster(
            lambda d: d.update(
                gpus=[
                    {
                        "name": "X1",
                        "tflops_bf16_dense": 100,
                        "memory_gb": 1,
                        "hbm_gb_per_s": 2000,
                        "intra_node_gb_per_s": 100,
                    }
                ],
                nodes=[{**d["nodes"][0], "gpu": "X1"}],
            )
        ),
        ["cluster.gpus[0].memory_gb", "memory_reserve_gb"],
    ),
    (
        # thousands of local processes would exhaust memory before the first evaluation
        "sha-ea-local-workers",
        "plan placement --cluster small-8 --workflow grpo-sync-qwen3-4b -O workers=1000",
        ["workers=1000", "executor=ray"],
    ),
    (
        # the last value would win silently: refused before any work, nothing written
        "option-given-twice",
        "plan placement --cluster small-8 --workflow grpo-sync-qwen3-4b -O evaluations=10 "
        "-O evaluations=20",
        ["-O: evaluations given twice", "evaluations=10", "evaluations=20"],
    ),
    (
        "sha-ea-workers-absurd",
        "plan placement --cluster small-8 --workflow grpo-sync-qwen3-4b -O workers=100000",
        ["workers=100000"],
    ),
    ("csv-repeated-column", _demand_csv("src,dst,bytes,bytes\nt0,t1,5,6\n"), ["appears twice"]),
    ("csv-extra-field", _demand_csv("src,dst,bytes\nt0,t1,5,7\n"), ["row 2", "4 fields"]),
    ("csv-unknown-column", _demand_csv("src,dst,bytes,colour\nt0,t1,5,red\n"), ["colour"]),
    (
        "million-gpus",
        _plan_placement_on_cluster(
            lambda d: d.update(
                nodes=[{**d["nodes"][0], "name": f"n{i}", "count": 64} for i in range(16000)]
            )
        ),
        ["8,192"],
    ),
    (
        "gpus-per-node",
        _plan_placement_on_cluster(lambda d: d["nodes"][0].update(count=10**6)),
        ["nodes[0].count"],
    ),
    ("output-empty", ["plan", *SMALL, "-o", ""], ["-o", "empty"]),
    ("output-directory", lambda t: ["plan", *SMALL, "-o", str(t)], ["-o", "directory"]),
    (
        "output-no-such-dir",
        lambda t: ["plan", *SMALL, "-o", str(t / "nope" / "p.json")],
        ["no such directory"],
    ),
    (
        "plot-same-as-plan",
        lambda t: ["plan", *SMALL, "-o", str(t / "x.png"), "--plot", str(t / "x.png")],
        ["--plot", "-o"],
    ),
    (
        "plot-pdf",
        lambda t: ["simulate", "generation", "--plot", str(t / "x.pdf")],
        ["--plot", ".png"],
    ),
    (
        "plan-nan-objective",
        _argv_with_plan_file("validate", mutate=lambda d: d.update(objective=float("nan"))),
        ["objective", "finite"],
    ),
    (
        "plan-quoted-tp",
        _argv_with_plan_file("validate", mutate=lambda d: d["plan"]["tasks"][0].update(tp="2")),
        ["plan.tasks[0].tp", "quoted string"],
    ),
    (
        "plan-boolean-batch",
        _argv_with_plan_file(
            "evaluate", mutate=lambda d: d["inputs"]["workflow"].update(global_batch=True)
        ),
        ["inputs.workflow.global_batch", "boolean"],
    ),
    (
        "plan-nan-bound",
        _argv_with_plan_file("validate", mutate=lambda d: d.update(bound=float("nan"))),
        ["bound"],
    ),
    (
        "plan-negative-gap",
        _argv_with_plan_file("validate", mutate=lambda d: d.update(gap=-0.5)),
        ["gap"],
    ),
    ("unknown-command", "pln", ["plan"]),
    ("unknown-option", "plan --colour red", ["--colour"]),
    ("not-a-number", "plan --time-limit soon", ["--time-limit"]),
    (
        "bench-zero-seeds",
        lambda t: ["bench", "--problem", "small-8", "--seeds", "0", "--out", str(t / "b")],
        ["--seeds"],
    ),
    (
        "bench-negative-limit",
        lambda t: ["bench", "--problem", "small-8", "--time-limit", "-1", "--out", str(t / "b")],
        ["--time-limit"],
    ),
    ("bench-out-is-file", _argv_with_file("bench --out f.txt", text="x"), ["--out"]),
    (
        "bench-out-with-an-edited-row",
        lambda t: [
            "bench",
            "--problem",
            "small-8",
            "--out",
            _bench_out_with(t, '{"key": "k", "status": "feasible", "objective": "abc"}\n'),
        ],
        ["runs.jsonl", "row 1.objective", "abc"],
    ),
    (
        "bench-memory-absurd",
        lambda t: [
            "bench",
            "--problem",
            "small-8",
            "--memory-limit-gb",
            "1e30",
            "--out",
            str(t / "b"),
        ],
        ["--memory-limit-gb", "1e+30"],
    ),
    (
        "bench-memory-tiny",
        lambda t: [
            "bench",
            "--problem",
            "small-8",
            "--memory-limit-gb",
            "0.01",
            "--out",
            str(t / "b"),
        ],
        ["--memory-limit-gb", "0.01"],
    ),
    ("estimate-bin-zero", "estimate generation --bin 0", ["--bin"]),
    ("presets-unknown-kind", "presets --kind spaceship", ["spaceship"]),
    ("cosched-trace-bad", "simulate cosched --trace philly:jobs=0", ["trace.jobs"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_hostile_input_is_one_line_exit_2_and_writes_nothing(case, tmp_path):
    _check_hostile(case, tmp_path)


def test_relabelled_heuristic_plan_is_invalid(tmp_path):
    bad = _plan_file(tmp_path, lambda d: d.update(status="optimal"))
    proc = run_cli("validate", str(bad))
    assert proc.returncode == 1 and "heuristic" in proc.stderr


def test_replan_plan_with_negative_counts_under_kv_balance_is_invalid_not_a_crash(tmp_path):
    """A negative request count is an assignment violation; with the KV-balance constraint on,
    the validator must not go on to price the instance (its KV share is undefined)."""
    path = tmp_path / "r.json"
    assert (
        run_cli("plan", "replan", "--state", "replan-tail", "-q", "-o", str(path)).returncode == 0
    )
    doc = json.loads(path.read_text())
    bins = doc["plan"]["instances"][0]["bins"]
    bins[0][1] = -1
    doc["inputs"]["state"]["kv_delta"] = 0.1
    path.write_text(json.dumps(doc))
    proc = run_cli("validate", str(path))
    assert proc.returncode == 1 and "negative counts" in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr


def test_bom_csv_and_json_listings_are_fine(tmp_path):
    demand = tmp_path / "d.csv"
    demand.write_bytes("\ufeffsrc,dst,bytes\nt0,t1,5\n".encode())
    fabric = run_cli("presets", "--kind", "fabric", "--json")
    assert fabric.returncode == 0 and json.loads(fabric.stdout)
    name = json.loads(fabric.stdout)[0]["name"]
    proc = run_cli(
        "plan",
        "circuits",
        "--fabric",
        name,
        "--demand",
        str(demand),
        "-q",
        "-o",
        str(tmp_path / "p.json"),
    )
    assert proc.returncode in (0, 2), proc.stderr
    assert "BOM" not in proc.stderr and "\ufeff" not in proc.stderr
    gpus = run_cli("catalog", "gpus", "--json")
    assert gpus.returncode == 0 and any(g["name"] == "H100-SXM" for g in json.loads(gpus.stdout))
    assert run_cli("--version").stdout.startswith("rlplan ")


def test_new_files_follow_the_umask(tmp_path):
    import os
    import stat

    out = tmp_path / "p.json"
    assert run_cli("plan", *SMALL, "-q", "-o", str(out)).returncode == 0
    mask = os.umask(0o022)
    os.umask(mask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask


# ---------------------------------------------------------------------------------------------
# The same patterns over every input kind: each file a problem reads, each command that reads a
# plan file, each output option. Generated, so a new problem's inputs get the cases for free.

#: a spec field (file option of `rlplan plan`) and the problem it belongs to
FILE_OPTIONS = [
    ("cluster", "placement"),
    ("workflow", "placement"),
    ("fabric", "circuits"),
    ("demand", "circuits"),
    ("sync", "broadcast"),
    ("state", "replan"),
    ("jobs", "cosched"),
    ("job", "rollout"),
]

# : (id, file builder(tmp, stem) -> path or literal, words the message must contain; {stem} is the
# file's)
NOT_A_SPEC = [
    ("directory", lambda t, s: str(t), ["is a directory"]),
    ("dev-zero", lambda t, s: "/dev/zero", ["MiB"]),
    (
        "binary",
        lambda t, s: str(_text(t, f"{s}.yaml", b"\x00\xff\xfe\x80 binary")),
        ["{stem}.yaml"],
    ),
    ("empty", lambda t, s: str(_text(t, f"{s}.yaml", "")), ["{stem}.yaml"]),
    (
        "deep",
        lambda t, s: str(_text(t, f"{s}.yaml", "a: " + "[" * 3000 + "]" * 3000)),
        ["nested too deeply"],
    ),
    (
        "dup-key",
        lambda t, s: str(_text(t, f"{s}.yaml", "name: a\nname: b\n")),
        ["duplicate key", "name"],
    ),
    ("scalar", lambda t, s: str(_text(t, f"{s}.yaml", "42\n")), ["{stem}.yaml"]),
    ("missing", lambda t, s: str(t / f"{s}-nowhere.yaml"), ["{stem}-nowhere"]),
]

GENERATED = [
    (
        f"plan-{field}-{kind}",
        (
            lambda t, field=field, problem=problem, build=build: [
                "plan",
                problem,
                f"--{field}",
                build(t, field),
            ]
        ),
        [w.format(stem=field) for w in words],
    )
    for field, problem in FILE_OPTIONS
    for kind, build, words in NOT_A_SPEC
]
GENERATED += [
    (
        f"{command}-{kind}",
        (lambda t, command=command, build=build: [command, build(t, "plan")]),
        [w.format(stem="plan") for w in words],
    )
    for command in ("validate", "evaluate")
    for kind, build, words in NOT_A_SPEC
]
#: the cross product above over the cluster file and `validate` runs in `make test`; over the
#: other input kinds (the same reading code, each case a fresh interpreter) in the slow tier
SLOW_TIER = {
    case[0] for case in GENERATED if not case[0].startswith(("plan-cluster-", "validate-"))
}
GENERATED += [
    (
        "plan-file-of-another-kind",
        _argv_with_file("validate c.json", text=json.dumps({"nodes": []})),
        ["c.json"],
    ),
    (
        "problem-file-unknown-problem",
        _argv_with_file("plan p.yaml", text="problem: teleport\n"),
        ["teleport"],
    ),
    (
        "circuits-output-directory",
        lambda t: ["plan", "circuits", "-o", str(t)],
        ["-o", "directory"],
    ),
    (
        "circuits-plot-jpg",
        lambda t: ["plan", "circuits", "--plot", str(t / "c.jpg")],
        ["--plot", ".png"],
    ),
    ("broadcast-plot-empty", "plan broadcast --plot ''", ["--plot"]),
    (
        "broadcast-export-unknown",
        lambda t: ["plan", "broadcast", "--export", "verl", "-o", str(t / "b.json")],
        ["--export"],
    ),
    (
        "cosched-plot-directory",
        lambda t: ["simulate", "cosched", "--trace", "philly:jobs=5,hours=10", "--plot", str(t)],
        ["--plot"],
    ),
    ("generation-plot-empty", "simulate generation --plot ''", ["--plot"]),
    ("rollout-setting-unknown", "simulate rollout --setting dapo", ["--setting", "dapo", "paper"]),
    (
        "rollout-plan-of-another-kind",
        _argv_with_file("simulate rollout --plan x.json", text="{}"),
        ["x.json"],
    ),
    (
        "rollout-job-bad-model",
        _argv_with_file(
            "plan rollout --job j.yaml", text="workload: {model: GPT-9, gpu: H800, gpus: 8}\n"
        ),
        ["j.yaml", "workload.model", "GPT-9"],
    ),
    (
        "rollout-job-gpus-zero",
        _argv_with_file(
            "plan rollout --job j.yaml", text="workload: {model: Qwen2.5-7B, gpu: H800, gpus: 0}\n"
        ),
        ["j.yaml", "gpus", "0"],
    ),
    (
        "rollout-job-too-long",
        _argv_with_file(
            "plan rollout --job j.yaml",
            text="workload: {model: Qwen2.5-72B, gpu: L40S, gpus: 8, max_response: 900000}\n",
        ),
        ["j.yaml", "max_response"],
    ),
    (
        "rollout-dataset-below-one-step",
        _argv_with_file(
            "plan rollout --job j.yaml",
            text="workload: {model: Qwen2.5-7B, gpu: H800, gpus: 8, dataset_prompts: 100}\n",
        ),
        ["j.yaml", "workload.dataset_prompts", "prompts_per_step (128)", "(got 100)"],
    ),
    ("bench-out-empty", "bench --out ''", ["--out"]),
    # os.access says yes to root in /proc: the probe makes a directory there
    ("bench-out-in-proc", "bench --out /proc/rlplan-nope", ["--out", "cannot create", "/proc"]),
    ("bench-jobs-zero", lambda t: ["bench", "--jobs", "0", "--out", str(t / "b")], ["--jobs"]),
    (
        "bench-unknown-suite",
        lambda t: ["bench", "--suite", "everything", "--out", str(t / "b")],
        ["everything"],
    ),
    (
        "bench-bad-plugin",
        lambda t: ["bench", "--plugin", "nosuchmodule:register", "--out", str(t / "b")],
        ["--plugin"],
    ),
    (
        "bench-nan-limit",
        lambda t: ["bench", "--problem", "small-8", "--time-limit", "nan", "--out", str(t / "b")],
        ["--time-limit"],
    ),
    ("plan-zero-limit", "plan circuits --time-limit 0", ["time_limit"]),
    ("plan-negative-seed-type", "plan circuits --seed 1.5", ["--seed"]),
    ("plan-option-no-equals", "plan circuits -O fill", ["key=value"]),
    ("plan-option-unknown", "plan circuits --solver milp -O colour=red", ["colour"]),
    ("plan-option-out-of-range", "plan placement -O population=0", ["population"]),
    ("plan-solver-unknown", "plan circuits --solver oracle", ["oracle"]),
    ("plan-field-of-other-problem", "plan circuits --cluster small-8", ["--cluster"]),
    ("plan-preset-unknown", "plan placement --cluster small-9", ["small-9"]),
    ("catalog-unknown", "catalog planets", ["planets"]),
    ("presets-show-unknown", "presets show nothing-like-it", ["nothing-like-it"]),
    ("estimate-unknown-gpu", "estimate generation --gpu H100", ["H100"]),
    ("estimate-unknown-model", "estimate generation --model Qwen9-1T", ["Qwen9-1T"]),
    ("simulate-bad-instances", "simulate generation --instances 4xTPtwo", ["--instances"]),
    ("simulate-bad-lengths", "simulate generation --lengths synthetic:prompts=-1", ["prompts"]),
    ("simulate-unknown-policy", "simulate cosched --policy clairvoyant", ["clairvoyant"]),
    (
        "simulate-unknown-dispatch",
        "simulate generation --dispatch random",
        ["--dispatch", "random"],
    ),
]


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, id=c[0], marks=[pytest.mark.slow] if c[0] in SLOW_TIER else [])
        for c in GENERATED
    ],
)
def test_every_input_kind_gets_the_same_treatment(case, tmp_path):
    _check_hostile(case, tmp_path)


def test_ctrl_c_during_a_solve_exits_130_and_writes_nothing(tmp_path):
    """SIGINT mid-search (the user's Ctrl-C): exit 130, one line, no plan file, no temp file."""
    import os
    import signal
    import subprocess
    import time

    from tests.conftest import rlplan_executable

    out = tmp_path / "p.json"
    proc = subprocess.Popen(
        [
            rlplan_executable(),
            "plan",
            "--cluster",
            "small-8",
            "--workflow",
            "grpo-sync-qwen3-4b",
            "--time-limit",
            "30",
            "-o",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "RLPLAN_PROGRESS_EVERY": "0.2"},
        cwd=tmp_path,
        # a user's foreground command takes Ctrl-C; a suite started in the background (`make
        # test &` in a script) hands its children SIGINT ignored, and Python keeps it ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 60
    line = proc.stderr.readline()  # the first progress line: the search is under way
    assert line.startswith("rlplan: solving"), line
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=max(1, deadline - time.time()))
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted" in stderr
    assert list(tmp_path.iterdir()) == [], "no plan and no temp file"


@pytest.mark.parametrize("output", ["job.yaml", "job.json"])
def test_an_output_that_is_an_input_file_is_refused_and_the_input_kept(output, tmp_path):
    # -o job.yaml would replace the workflow by the plan; --export verl beside job.json writes
    # job.verl.yaml, here the workflow file too
    workflow = tmp_path / ("job.verl.yaml" if output == "job.json" else "job.yaml")
    shown = run_cli("presets", "show", "grpo-sync-qwen3-4b")
    assert shown.returncode == 0, shown.stderr
    workflow.write_text(shown.stdout)
    before = workflow.read_text()
    argv = ["plan", "placement", "--cluster", "small-8", "--workflow", str(workflow)]
    argv += ["--solver", "verl", "-o", str(tmp_path / output)]
    if output == "job.json":
        argv += ["--export", "verl"]
    proc = run_cli(*argv, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "--workflow file" in lines[0], proc.stderr
    assert workflow.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [workflow.name]
