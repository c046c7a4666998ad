"""Builders and the check shared by the hostile-input tests (tests/test_hostile_inputs.py,
tests/test_input_limits.py): input files and command lines a case runs, and what every case must
end with (exit 2, one line naming the file or option and the value, nothing written)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import yaml

from tests.conftest import SMALL_PLACEMENT, SMALL_SPECS, run_cli

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
    """A plan file of the small placement job (by the verl baseline: a second; what is edited is
    the file, not the search) edited by ``mutate``."""
    path = tmp / "plan.json"
    assert run_cli(*SMALL_PLACEMENT, *extra, "-q", "-o", str(path)).returncode == 0
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


def _preset(name: str) -> dict:
    return yaml.safe_load(run_cli("presets", "show", name).stdout)


def _mutated(tmp: Path, preset: str, name: str, mutate) -> str:
    data = _preset(preset)
    mutate(data)
    return str(_text(tmp, name, yaml.safe_dump(data, sort_keys=False)))


def _workload(**fields):
    return lambda d: d["workload"].update(fields)


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
