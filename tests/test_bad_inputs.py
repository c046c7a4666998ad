"""Bad input ends with exit code 2 and one line naming file, field and value
(docs/architecture.md, "Interfaces people use")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import DATA, run_cli

BAD = sorted((DATA / "bad").iterdir())

#: for each bad file, a word its message must contain (the field or the value at fault)
MUST_NAME = {
    "cluster-malformed.yaml": "malformed YAML",
    "cluster-unknown-gpu.yaml": "nodes[0].gpu",
    "cluster-negative-bandwidth.yaml": "network.intra_zone.bandwidth_gbps",
    "cluster-zero-count.yaml": "nodes[0].count",
    "cluster-missing-zone-link.yaml": "ap-south",
    "cluster-missing-nodes.yaml": "nodes",
    "cluster-duplicate-node.yaml": "nodes[1].name",
    "cluster-unknown-field.yaml": "gpus_per_node",
    "cluster-bad-matrix-shape.yaml": "network.matrix.bandwidth_gbps",
    "cluster-negative-latency.yaml": "latency_ms",
    "cluster-not-a-mapping.yaml": "list",
    "cluster-inter-zone-unknown-zone.yaml": "mars-1",
    "cluster-count-string.yaml": "eight",
    "cluster-custom-gpu-negative-memory.yaml": "gpus[0].memory_gb",
    "cluster-nan-bandwidth.json": "bandwidth_gbps",
    "workflow-unknown-model.yaml": "Qwen9-1T",
    "workflow-ppo-no-critic.yaml": "models.critic",
    "workflow-bad-algorithm.yaml": "dpo",
    "workflow-zero-batch.yaml": "global_batch",
    "workflow-eta-out-of-range.yaml": "eta",
    "workflow-missing-models.yaml": "models",
    "workflow-malformed.json": "line 1",
    "fabric-unknown-endpoint-eligible.yaml": "t9",
    "fabric-failed-exceeds-ports.yaml": "endpoints[1].ports",
    "demand-bad-bytes.csv": "lots",
    "demand-negative-bytes.csv": "row 2.bytes",
    "demand-unknown-endpoint.csv": "tor42",
    "demand-missing-column.csv": "bytes",
    "plan-malformed.json": "malformed JSON",
    "plan-missing-field.json": "inputs",
    "problem-unknown-kind.yaml": "teleportation",
    "problem-unknown-preset.yaml": "small-7",
    "sync-holders-exceed-ranks.yaml": "pods[0].holders",
    "sync-zero-budget.yaml": "pods[1].budget",
}


def command_for(path: Path, out: Path) -> list[str]:
    kind = path.name.split("-")[0]
    if kind == "cluster":
        return ["plan", "placement", "--cluster", str(path), "-o", str(out)]
    if kind == "workflow":
        return [
            "plan",
            "placement",
            "--cluster",
            "small-8",
            "--workflow",
            str(path),
            "-o",
            str(out),
        ]
    if kind == "fabric":
        return ["plan", "circuits", "--fabric", str(path), "-o", str(out)]
    if kind == "demand":
        return ["plan", "circuits", "--demand", str(path), "-o", str(out)]
    if kind == "sync":
        return ["plan", "broadcast", "--sync", str(path), "-o", str(out)]
    if kind == "plan":
        return ["validate", str(path)]
    return ["plan", str(path), "-o", str(out)]


def test_there_are_enough_bad_inputs():
    assert len(BAD) >= 20
    assert {p.name for p in BAD} == set(MUST_NAME)


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_input_exits_2_with_one_line(path: Path, tmp_path: Path):
    out = tmp_path / "plan.json"
    proc = run_cli(*command_for(path, out))
    assert proc.returncode == 2, proc.stderr + proc.stdout
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    message = lines[0]
    assert path.name in message, message  # the file
    assert MUST_NAME[path.name] in message, message  # the field or value
    assert not out.exists()
    assert not list(tmp_path.iterdir()), "no partial output"


def test_missing_file_exits_2(tmp_path: Path):
    proc = run_cli(
        "plan",
        "placement",
        "--cluster",
        str(tmp_path / "nope.yaml"),
        "-o",
        str(tmp_path / "p.json"),
    )
    assert proc.returncode == 2
    assert "nope.yaml" in proc.stderr and "Traceback" not in proc.stderr


def test_unknown_solver_and_option_exit_2(tmp_path: Path):
    proc = run_cli("plan", "--solver", "quantum", "-o", str(tmp_path / "p.json"))
    assert proc.returncode == 2 and "quantum" in proc.stderr and "verl" in proc.stderr
    proc = run_cli("plan", "--option", "warp_factor=10", "-o", str(tmp_path / "p.json"))
    assert proc.returncode == 2 and "warp_factor" in proc.stderr
    assert not (tmp_path / "p.json").exists()
