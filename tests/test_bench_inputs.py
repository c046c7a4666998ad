"""What ``rlplan bench`` reads besides its options: the ``runs.jsonl`` of an output directory it
resumes into. Every field of every row is checked against what the harness writes
(``benchmarks/harness.py``); an edited or foreign row is refused in one line naming the file, the
row, the field and the value, exit 2, before any output is rewritten."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks.harness import ROW_FIELDS, InstanceRef, RunSpec, check_rows, execute_run
from costmodels.errors import SpecError
from tests.conftest import run_cli

ROOT = Path(__file__).parents[1]
PROBLEM = "problem: circuits\nfabric: fabric-moe-16\ndemand: demand-moe-16\n"

#: (field, a value the harness never writes there)
BAD_VALUES = [
    ("key", 5),
    ("suite", 5),
    ("instance_id", 5),
    ("instance", None),
    ("kind", ["circuits"]),
    ("size", "q"),
    ("size", -1),
    ("solver", 5),
    ("exact", "q"),
    ("options", "q"),
    ("options", {"a": 1}),
    ("seed", "q"),
    ("seed", -1),
    ("seed", 1.5),
    ("seed", True),
    ("time_limit", "q"),
    ("time_limit", 0),
    ("status", "q"),
    ("termination", "q"),
    ("objective", "q"),
    ("primary", "q"),
    ("bound", True),
    ("gap", "q"),
    ("wall_time_s", "q"),
    ("peak_rss_mb", "q"),
    ("peak_rss_mb", -1),
    ("message", 5),
    ("violations", "q"),
    ("violations", -1),
    ("extra", "q"),
    ("trace", "q"),
    ("trace", [["q", 1, 2.0]]),
]


@pytest.fixture(scope="module")
def row() -> dict:
    """A row as the harness writes it (a small circuits instance, greedy, in this process)."""
    inst = InstanceRef(
        "tiny",
        "circuits",
        generator="circuits_instance",
        args={"endpoints": 4, "ports": 2, "shape": "sparse", "pairs": 4},
    )
    made = execute_run(RunSpec("t", inst, "greedy", time_limit=30))
    assert made["status"] == "feasible", made["message"]
    return made


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_every_field_has_a_check():
    assert {name for name, _ in BAD_VALUES} == set(ROW_FIELDS)


def test_rows_the_harness_writes_pass(row, tmp_path):
    crashed = {**row, "status": "error", "termination": None, "objective": None, "size": None}
    crashed |= {"peak_rss_mb": None, "extra": {"traceback": "Traceback ..."}, "wall_time_s": None}
    check_rows(_write(tmp_path / "runs.jsonl", [row, crashed]))


@pytest.mark.parametrize(("field", "value"), BAD_VALUES, ids=lambda v: repr(v))
def test_a_bad_value_in_any_field_is_refused(row, tmp_path, field, value):
    path = _write(tmp_path / "runs.jsonl", [row, {**row, field: value}])
    with pytest.raises(SpecError) as raised:
        check_rows(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: row 2.{field}: "), message
    assert f"(got {value!r})" in message, message


def test_a_missing_or_unknown_field_is_refused(row, tmp_path):
    bare = {k: v for k, v in row.items() if k != "seed"}
    with pytest.raises(SpecError, match=r"row 1\.seed: missing"):
        check_rows(_write(tmp_path / "runs.jsonl", [bare]))
    with pytest.raises(SpecError, match=r"row 1\.colour: not a field"):
        check_rows(_write(tmp_path / "runs.jsonl", [{**row, "colour": "red"}]))


def test_an_extra_column_keeps_one_type(row, tmp_path):
    """The extras become columns of runs.parquet: a number in one row and text in another
    would not store."""
    first = {**row, "extra": {"circuits": 3}}
    second = {**row, "extra": {"circuits": "q"}}
    with pytest.raises(SpecError, match=r"row 2\.extra\.circuits: a number"):
        check_rows(_write(tmp_path / "runs.jsonl", [first, second]))
    with pytest.raises(SpecError, match=r"row 1\.extra\.circuits: a finite number"):
        check_rows(_write(tmp_path / "runs.jsonl", [{**row, "extra": {"circuits": [1]}}]))


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> tuple[Path, list[str]]:
    """A finished custom suite's output directory, and the arguments that resume into it."""
    base = tmp_path_factory.mktemp("bench-finished")
    problem = base / "mine.yaml"
    problem.write_text(PROBLEM)
    args = ["bench", "--problem", str(problem), "--solver", "greedy", "-q"]
    r = run_cli(*args, "--out", str(base / "out"), cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return base / "out", args


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("seed", "q"),
        ("size", "q"),
        ("peak_rss_mb", "q"),
        ("violations", "q"),
        ("time_limit", "q"),
        ("termination", "q"),
        # well-typed, but another run's: the row would be reported as the run its key names
        ("solver", "sha-ea"),
        ("seed", 7),
        ("instance", "another"),
        ("options", '{"evaluations": 3}'),
        ("time_limit", 5.0),
    ],
)
def test_resuming_into_an_edited_row_is_refused_before_writing(finished, tmp_path, field, value):
    src, args = finished
    out = tmp_path / "out"
    shutil.copytree(src, out)
    runs = out / "runs.jsonl"
    rows = [json.loads(line) for line in runs.read_text().splitlines()]
    rows[0][field] = value
    _write(runs, rows)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    r = run_cli(*args, "--out", str(out), cwd=ROOT)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {runs}: row 1.{field}: "), r.stderr
    assert lines[0].endswith(f"(got {value!r})"), r.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # nothing rewritten


def test_every_published_run_file_resumes():
    """The published results' runs.jsonl pass the resume check (a rerun of their command into
    their directory resumes), including those written before a row had its termination."""
    published = sorted((Path(__file__).parents[1] / "benchmarks/results").rglob("runs.jsonl"))
    assert published
    for path in published:
        check_rows(path)
    # and every row of a named suite's file is the run its key names
    from benchmarks.cli import _load_suite
    from benchmarks.harness import check_resumed

    results = Path(__file__).parents[1] / "benchmarks/results"
    for suite in ("placement", "scale", "scenarios"):
        check_resumed(
            _load_suite(suite, None, None, None, 1, ()).runs, results / suite / "runs.jsonl"
        )
