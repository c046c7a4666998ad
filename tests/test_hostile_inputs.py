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
import shlex
from pathlib import Path

import pytest
import yaml

from tests.conftest import SMALL_SPECS, run_cli, run_cli_json

SMALL = [*SMALL_SPECS, "-O", "evaluations=5"]


def _cluster(tmp: Path, mutate) -> Path:
    data = yaml.safe_load(run_cli("presets", "show", "small-8").stdout)
    mutate(data)
    path = tmp / "cluster.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _bomb(tmp: Path) -> Path:
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 7)]
    lines.append("nodes: [" + ",".join(["*a6"] * 9) + "]")
    path = tmp / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _text(tmp: Path, name: str, text: str | bytes) -> Path:
    path = tmp / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def _plan_file(tmp: Path, mutate, *extra: str) -> Path:
    path = tmp / "plan.json"
    assert run_cli("plan", *SMALL, *extra, "-q", "-o", str(path)).returncode == 0
    data = json.loads(path.read_text())
    mutate(data)
    bad = tmp / "bad-plan.json"
    bad.write_text(
        json.dumps(data)
    )  # json.dumps writes NaN as the bare literal, as a hand edit would
    path.unlink()
    return bad


def _argv_with_file(command: str, *, text: str | bytes):
    """Builder: ``command``, its last word a file written into the input folder holding ``text``."""
    *argv, name = shlex.split(command)
    return lambda t: [*argv, str(_text(t, name, text))]


def _argv_with_plan_file(command: str, *, mutate):
    """Builder: ``command`` then a plan file of the small placement problem edited by ``mutate``."""
    return lambda t: [*shlex.split(command), str(_plan_file(t, mutate))]


def _argv_with_preset(command: str, *, preset: str, mutate):
    """Builder: ``command``, its last word a file: the preset ``preset`` edited by ``mutate``."""
    *argv, name = shlex.split(command)
    return lambda t: [*argv, _mutated(t, preset, name, mutate)]


def _rollout_7b_job(command: str, **workload):
    """Builder: ``rlplan <command> rollout --job`` on the rollout-7b-8k preset, its workload
    fields set to ``workload``."""
    job = f"{command} rollout --job j.yaml"
    return _argv_with_preset(job, preset="rollout-7b-8k", mutate=_workload(**workload))


def _replan_tail(mutate):
    """Builder: ``rlplan plan replan --state`` on the replan-tail preset edited by ``mutate``."""
    return _argv_with_preset("plan replan --state s.yaml", preset="replan-tail", mutate=mutate)


def _cluster_file(name: str, text: str | bytes):
    """Builder: ``rlplan plan placement --cluster <name>``, the file holding ``text``."""
    return _argv_with_file(f"plan placement --cluster {name}", text=text)


def _demand_csv(text: str | bytes):
    """Builder: ``rlplan plan circuits --demand d.csv``, d.csv holding ``text``."""
    return _argv_with_file("plan circuits --demand d.csv", text=text)


def _plan_placement_on_cluster(mutate):
    """Builder: `plan placement` on the small-8 cluster preset edited by ``mutate``."""
    return lambda t: ["plan", "placement", "--cluster", str(_cluster(t, mutate))]


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
        "bool-count",
        _plan_placement_on_cluster(lambda d: d["nodes"][0].update(count=True)),
        ["nodes[0].count", "boolean"],
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
    ("estimate-bin-zero", "estimate generation --bin 0", ["--bin"]),
    ("presets-unknown-kind", "presets --kind spaceship", ["spaceship"]),
    ("cosched-trace-bad", "simulate cosched --trace philly:jobs=0", ["trace.jobs"]),
]


def _check_hostile(case, tmp_path: Path) -> None:
    """Exit 2, one line on stderr with every expected word, no traceback, nothing written."""
    _, build, words = case
    inputs = tmp_path / "in"
    inputs.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    argv = build(inputs) if callable(build) else build
    argv = shlex.split(argv) if isinstance(argv, str) else argv
    before = set(inputs.iterdir())
    proc = run_cli(*argv, cwd=work, timeout=120)
    assert proc.returncode == 2, (argv, proc.returncode, proc.stderr[-500:])
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert set(inputs.iterdir()) == before, "no output next to the inputs"
    assert not list(work.iterdir()), "no output in the working directory"


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_hostile_input_is_one_line_exit_2_and_writes_nothing(case, tmp_path):
    _check_hostile(case, tmp_path)


def test_relabelled_heuristic_plan_is_invalid(tmp_path):
    bad = _plan_file(tmp_path, lambda d: d.update(status="optimal"))
    proc = run_cli("validate", str(bad))
    assert proc.returncode == 1 and "heuristic" in proc.stderr


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
    ("bench-out-empty", "bench --out ''", ["--out"]),
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


@pytest.mark.parametrize("case", GENERATED, ids=[c[0] for c in GENERATED])
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


# ---------------------------------------------------------------------------------------------
# Sizes, contradictions and crashes by input kind: each refused before work starts, naming the
# option or field and the value (costmodels.limits holds the bounds and the memory check).


def _preset(name: str) -> dict:
    return yaml.safe_load(run_cli("presets", "show", name).stdout)


def _mutated(tmp: Path, preset: str, name: str, mutate) -> str:
    data = _preset(preset)
    mutate(data)
    return str(_text(tmp, name, yaml.safe_dump(data, sort_keys=False)))


def _workload(**fields):
    return lambda d: d["workload"].update(fields)


def _request(rem: int, ctx: int):
    return lambda d: d["instances"][0]["requests"].append([rem, ctx])


def _custom_gpu(**fields):
    gpu = {
        "name": "X1",
        "tflops_bf16_dense": 100,
        "memory_gb": 80,
        "hbm_gb_per_s": 2000,
        "intra_node_gb_per_s": 100,
        **fields,
    }
    return lambda d: (d.update(gpus=[gpu]), d["nodes"][0].update(gpu="X1"))


def _many_jobs_json(tmp: Path, n: int) -> str:
    job = _preset("rollmux-mixed")["jobs"][0]
    return str(
        _text(tmp, "jobs.json", json.dumps({"jobs": [dict(job, name=f"j{i}") for i in range(n)]}))
    )


def _big_yaml(tmp: Path) -> str:
    row = (
        "- {name: j%d, rollout_gpus: 8, train_gpus: 8, t_rollout_s: 75.0, t_train_s: 75.0, "
        "slo: 1.5}\n"
    )
    return str(_text(tmp, "jobs.yaml", "jobs:\n" + "".join(row % i for i in range(60_000))))


def _rollout_plan_file(tmp: Path, mutate=lambda p: None, job: str = "rollout-14b-16k") -> Path:
    """A problem file with a `plan:` section: RollPacker's settings for ``job``, mutated."""
    from costmodels.rollout.space import paper_plan
    from planner.io import build_problem

    plan = paper_plan(build_problem("rollout", {"job": job}).workload).model_dump(mode="json")
    mutate(plan)
    return _text(
        tmp, "rollout-plan.yaml", yaml.safe_dump({"problem": "rollout", "job": job, "plan": plan})
    )


SIZES_AND_CONTRADICTIONS = [
    # absurd sizes
    (
        "gen-billion-instances",
        "simulate generation --instances 1000000000xTP2",
        ["--instances", "65,536"],
    ),
    (
        "gen-billion-requests",
        "simulate generation --lengths synthetic:prompts=1000000000,n=8",
        ["lengths.prompts", "memory limit"],
    ),
    (
        "gen-over-memory-limit",
        "--memory-limit-gb 0.1 simulate generation --lengths synthetic:prompts=10000,n=16",
        ["lengths.prompts", "0.1 GB", "--memory-limit-gb"],
    ),
    (
        "estimate-billion-requests",
        "estimate generation --lengths uniform:n=1000000000",
        ["lengths.n", "memory limit"],
    ),
    ("estimate-billion-gpus", "estimate generation --gpus 1000000000", ["--gpus", "1000000000"]),
    (
        "gen-max-num-seqs-huge",
        "simulate generation --max-num-seqs 1000000000",
        ["--max-num-seqs", "1000000000"],
    ),
    (
        "cosched-too-many-jobs",
        lambda t: ["plan", "cosched", "--jobs", _many_jobs_json(t, 10_001)],
        ["jobs.json", "jobs", "10000"],
    ),
    (
        "cosched-yaml-too-big",
        lambda t: ["plan", "cosched", "--jobs", _big_yaml(t)],
        ["jobs.yaml", "MiB", "JSON"],
    ),
    (
        "philly-too-many-jobs",
        "simulate cosched --trace philly:jobs=100000",
        ["trace.jobs", "10,000"],
    ),
    (
        "rollout-step-too-big",
        _rollout_7b_job("simulate", prompts_per_step=65536, responses_per_prompt=1024),
        ["workload.prompts_per_step", "memory limit"],
    ),
    (
        "workflow-huge-batch",
        _argv_with_preset(
            "plan placement --workflow w.yaml",
            preset="grpo-sync-qwen3-4b",
            mutate=lambda d: d.update(global_batch=10**15),
        ),
        ["global_batch"],
    ),
    (
        "gpu-absurd-tflops",
        _plan_placement_on_cluster(_custom_gpu(tflops_bf16_dense=1e308)),
        ["tflops_bf16_dense"],
    ),
    (
        "demand-absurd-bytes",
        _demand_csv("src,dst,bytes\ntor0,tor1,1e308\n"),
        ["row 2.bytes", "1e308"],
    ),
    (
        "estimate-absurd-context",
        "estimate generation --lengths uniform:context=1e300",
        ["lengths.context"],
    ),
    # contradictions
    ("rollout-tp16-on-8-gpu-nodes", _rollout_7b_job("simulate", tp=16), ["workload.tp", "16"]),
    ("rollout-tp3", _rollout_7b_job("plan", tp=3), ["workload.tp", "3"]),
    (
        "rollout-min-above-max-timeout",
        _rollout_7b_job(
            "simulate", reward={"sandbox_worker": {"min_timeout_s": 40, "max_timeout_s": 30}}
        ),
        ["min_timeout_s", "40"],
    ),
    ("gen-tp16", "simulate generation --instances 1xTP16", ["--instances", "TP16"]),
    ("gen-tp3", "simulate generation --instances 2xTP3", ["--instances", "TP3"]),
    ("philly-key-twice", "simulate cosched --trace philly:jobs=5,jobs=6", ["trace.jobs", "twice"]),
    (
        "replan-quoted-number",
        _replan_tail(lambda d: d.update(nodes="1")),
        ["nodes", "quoted string", "'1'"],
    ),
    (
        "cluster-quoted-count",
        _plan_placement_on_cluster(lambda d: d["nodes"][0].update(count="4")),
        ["nodes[0].count", "quoted string"],
    ),
    # the error names the option at fault
    ("gen-negative-seed", "simulate generation --seed -1", ["--seed", "-1"]),
    (
        "gen-huge-block",
        "simulate generation --block-size 1000000000",
        ["--block-size", "1000000000"],
    ),
    (
        "philly-infinite-mean",
        "simulate cosched --trace philly:mean_hours=inf",
        ["trace.mean_hours", "inf"],
    ),
    ("philly-infinite-hours", "simulate cosched --trace philly:hours=inf", ["trace.hours", "inf"]),
    (
        "replan-context-fits-nothing",
        _replan_tail(_request(10, 10**12)),
        ["instances[0].requests[", "KV tokens"],
    ),
    ("yaml-nul-byte", _cluster_file("c.yaml", "nodes: []\x00\n"), ["c.yaml", "control character"]),
    # messages: one line, the value echoed
    ("estimate-zero-seqs", "estimate generation --max-num-seqs 0", ["--max-num-seqs", "0"]),
    ("time-limit-word", "plan --time-limit abc", ["--time-limit", "'abc'"]),
    ("max-num-seqs-word", "simulate generation --max-num-seqs many", ["--max-num-seqs", "'many'"]),
    (
        "rollout-plan-is-a-job",
        _argv_with_preset(
            "simulate rollout --plan job.yaml", preset="rollout-7b-8k", mutate=lambda d: None
        ),
        ["job.yaml", "not a plan file", "workload"],
    ),
    (
        "evaluate-no-plan-section",
        _argv_with_plan_file("evaluate", mutate=lambda d: d.pop("plan")),
        ["plan", "required field is missing"],
    ),
    (
        "target-unknown-framework",
        lambda t: ["plan", *SMALL, "--target", "deepspeed", "-o", str(t / "p.json")],
        ["--target", "deepspeed", "verl, roll"],
    ),
    (
        "target-on-a-problem-without-one",
        lambda t: ["plan", "rollout", "--target", "verl", "-o", str(t / "p.json")],
        ["--target verl", "rollout", "placement"],
    ),
    (
        "target-in-a-problem-file-unknown",
        lambda t: [
            "plan",
            str(
                _text(
                    t,
                    "prob.yaml",
                    yaml.safe_dump(
                        {
                            "problem": "placement",
                            "cluster": "small-8",
                            "workflow": "grpo-sync-qwen3-4b",
                            "target": {"framework": "deepspeed"},
                        }
                    ),
                )
            ),
            "-o",
            str(t / "p.json"),
        ],
        ["prob.yaml", "target", "deepspeed"],
    ),
    # silently lax before
    ("export-to-stdout", ["plan", *SMALL, "--export", "verl", "-o", "-"], ["--export", "-o"]),
    (
        "evaluate-unknown-key",
        _argv_with_file(
            "evaluate p.yaml",
            text=yaml.safe_dump(
                {"problem": "rollout", "job": "rollout-7b-8k", "plan": {}, "colour": "red"}
            ),
        ),
        ["colour", "unknown field"],
    ),
    (
        "jsonl-duplicate-key",
        _argv_with_file(
            "simulate generation --lengths t.jsonl",
            text='{"response_lengths": [5], "response_lengths": [6]}\n',
        ),
        ["t.jsonl", "duplicate key"],
    ),
    (
        "plan-file-unknown-version",
        _argv_with_plan_file("validate", mutate=lambda d: d.update(schema_version="0.9")),
        ["schema_version", "0.9", "1.2"],
    ),
]


@pytest.mark.parametrize(
    "case", SIZES_AND_CONTRADICTIONS, ids=[c[0] for c in SIZES_AND_CONTRADICTIONS]
)
def test_sizes_contradictions_and_blame(case, tmp_path):
    _check_hostile(case, tmp_path)


def test_plan_file_of_the_previous_release_is_migrated(tmp_path):
    """A schema 1.0 plan with the efficiency knobs of the release before the one efficiency set
    is read and re-checked on the flat kernels it was made with; a 1.1 plan too, and not on
    today's fitted kernels (its objective would not match); an input field no release had names
    the version."""

    def old(d):
        d.update(schema_version="1.0", rlplan_version="0.0.9")
        d.pop("clock")
        d.pop("termination")
        eff = d["inputs"]["params"].pop("efficiency")
        d["inputs"]["params"].update(compute_efficiency=eff["compute"], hbm_efficiency=eff["hbm"])

    def v11(d):  # what 1.1 wrote: no kernels, engine or per-layer overhead fields
        d.update(schema_version="1.1")
        d.pop("termination")
        for key in ("kernels", "engine", "decode_layer_overhead_us"):
            d["inputs"]["params"]["efficiency"].pop(key)

    proc = run_cli("validate", str(_plan_file(tmp_path, old, "--profile", "flat")))
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("validate", str(_plan_file(tmp_path, v11, "--profile", "flat")))
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("validate", str(_plan_file(tmp_path, v11)))
    assert proc.returncode == 1 and "[objective]" in proc.stdout + proc.stderr, (
        proc.stdout + proc.stderr
    )
    proc = run_cli(
        "validate",
        str(_plan_file(tmp_path, lambda d: (old(d), d["inputs"]["params"].update(frobnicate=1)))),
    )
    assert (
        proc.returncode == 2
        and "frobnicate" in proc.stderr
        and "schema 1.0" in proc.stderr
        and "0.0.9" in proc.stderr
    )


def test_ray_missing_is_a_usage_error_naming_the_extra(monkeypatch, capsys):
    import sys

    from planner.cli.entry import main

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails, as without the [ray] extra
    for argv in (["plan", *SMALL, "--executor", "ray"], ["plan", *SMALL, "-O", "executor=ray"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        err = capsys.readouterr().err
        assert exit_.value.code == 2, err
        assert "rlplan[ray]" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "options", [{"evaluations": True}, {"evaluations": "5"}, {"population": 2.5}]
)
def test_library_options_are_checked_like_cli_ones(options):
    from planner import solve
    from planner.io import build_problem
    from planner.registry import SolverOptionError

    problem = build_problem("placement", {"cluster": "small-8", "workflow": "grpo-sync-qwen3-4b"})
    with pytest.raises(SolverOptionError, match=next(iter(options))):
        solve(problem, solver="sha-ea", **options)


def test_trace_csv_names_its_prompts(tmp_path):
    """Real traces name prompts (``p0``, UUIDs): responses of one name are one group."""
    from costmodels.generation.request_traces import read_trace

    reqs = read_trace(
        "prompt_tokens,output_tokens,group\n10,20,p7\n10,30,p7\n12,40,uuid-1\n11,5,p7\n", "t.csv"
    )
    assert [r.group for r in reqs] == [0, 0, 1, 0]
    assert [
        r.group for r in read_trace("prompt_tokens,output_tokens,group\n1,2,5\n1,3,9\n", "t.csv")
    ] == [5, 9]
    path = _text(
        tmp_path, "t.csv", "prompt_tokens,output_tokens,group\n10,20,p0\n10,30,p0\n12,40,p1\n"
    )
    assert run_cli_json("simulate", "generation", "--lengths", path, "--json")["request_count"] == 3


def test_simulate_rollout_judges_baselines_on_the_plans_job_and_refuses_invalid_plans(tmp_path):
    plan = _rollout_plan_file(tmp_path)
    on_plan_job = run_cli("simulate", "rollout", "--plan", str(plan), "--setting", "verl", "--json")
    on_14b = run_cli(
        "simulate", "rollout", "--job", "rollout-14b-16k", "--setting", "verl", "--json"
    )
    assert on_plan_job.returncode == 0 and on_14b.returncode == 0, (
        on_plan_job.stderr + on_14b.stderr
    )
    verl = [r for r in json.loads(on_plan_job.stdout)["results"] if r["plan"] == "verl"][0]
    assert verl["objective_s"] == json.loads(on_14b.stdout)["results"][0]["objective_s"]

    bad = _rollout_plan_file(tmp_path, lambda p: p.update(short_tp=3))
    proc = run_cli("simulate", "rollout", "--plan", str(bad))
    assert proc.returncode == 1 and "short_tp=3" in proc.stderr and "--run-invalid" in proc.stderr


def test_every_count_option_has_a_documented_upper_bound():
    """Each integer option of every command has a range, which `--help` prints."""
    import inspect
    import typing

    import typer

    from planner.cli.entry import composed_app

    def leaves(command, path):
        subs = getattr(command, "commands", None)
        if subs:
            for name, sub in subs.items():
                yield from leaves(sub, [*path, name])
        else:
            yield path, command

    unbounded = []
    for path, command in leaves(typer.main.get_command(composed_app()), ["rlplan"]):
        if command.callback is None:
            continue
        sig = inspect.signature(command.callback, eval_str=True)
        for param in command.params:
            spec = sig.parameters.get(param.name)
            if spec is None:
                continue
            base = (
                typing.get_args(spec.annotation)[0]
                if typing.get_origin(spec.annotation) is typing.Annotated
                else spec.annotation
            )
            if base is int and getattr(param, "max", None) is None:
                unbounded.append(f"{' '.join(path)} {param.opts[0]}")
    assert not unbounded, unbounded
    help_text = run_cli("simulate", "generation", "--help").stdout
    assert "1<=x<=65536" in help_text.replace(" ", "")
