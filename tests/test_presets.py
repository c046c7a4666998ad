"""Every preset loads and validates; the CLI lists and shows them."""

from __future__ import annotations

import pytest
import yaml

from planner.io import build_problem, load_cluster, load_field, load_problem
from planner.presets import get_preset, presets
from planner.registry import default_registry
from tests.conftest import run_cli


@pytest.mark.parametrize("name", [p.name for p in presets()])
def test_every_preset_loads(name):
    """Problem presets load whole into their kind's problem type; a spec preset loads as its
    field's model, and inside a problem (a preset that uses it, or the kind's defaults with it)
    when it depends on other fields (a demand on its fabric)."""
    p = get_preset(name)
    reg = default_registry()
    if p.kind == "problem":
        problem = load_problem(name)
        assert isinstance(problem, reg.kind_of(problem).problem_type), (name, type(problem))
        return
    kind = next(k for k in reg.kinds() if any(f.name == p.kind for f in k.fields))
    field = kind.spec_field(p.kind)
    if not field.depends:
        assert isinstance(load_field(field, name), field.model), name
        return
    users = [q.name for q in presets("problem") if q.data().get(p.kind) == name]
    problem = (
        load_problem(users[0])
        if users
        else build_problem(kind.name, {**kind.defaults(), p.kind: name})
    )
    assert isinstance(problem, kind.problem_type), (name, type(problem))


def test_required_presets_exist():
    names = {p.name for p in presets()}
    for scenario in ("single-region", "multi-region-hybrid", "multi-country", "multi-continent"):
        assert f"hetrl-{scenario}" in names
    for n in (4, 8, 16, 24):
        assert f"small-{n}" in names
    for alg in ("ppo", "grpo"):
        for mode in ("sync", "async"):
            for size in ("4b", "8b", "14b"):
                assert f"{alg}-{mode}-qwen3-{size}" in names
    for tailed in ("grpo-sync-qwen3-8b-tail", "grpo-async-qwen3-8b-tail"):
        assert tailed in names
    assert {"dapo-sync-qwen2.5-7b", "dapo-fully-async-qwen2.5-7b"} <= names


def test_hetrl_testbed_matches_the_paper():
    for name in (
        "hetrl-single-region",
        "hetrl-multi-region-hybrid",
        "hetrl-multi-country",
        "hetrl-multi-continent",
    ):
        spec = load_cluster(name)
        counts: dict[str, int] = {}
        for node in spec.nodes:
            counts[node.gpu] = counts.get(node.gpu, 0) + node.count
        assert counts == {"A100-40GB": 24, "L40S": 24, "L4": 16}


@pytest.mark.parametrize(
    "name,lat,bw",
    [
        ("hetrl-multi-country", (5, 30), (1.9, 5.0)),
        ("hetrl-multi-continent", (5, 60), (0.9, 5.0)),
    ],
)
def test_scenario_links_stay_in_the_papers_ranges(name, lat, bw):
    links = load_cluster(name).network.inter_zone
    assert len({z for link in links for z in link.zones}) == 8
    assert min(link.latency_ms for link in links) == pytest.approx(lat[0])
    assert max(link.latency_ms for link in links) == pytest.approx(lat[1])
    assert min(link.bandwidth_gbps for link in links) == pytest.approx(bw[0])
    assert max(link.bandwidth_gbps for link in links) == pytest.approx(bw[1])


def test_hybrid_scenario_links():
    spec = load_cluster("hetrl-multi-region-hybrid")
    by_pair = {frozenset(link.zones): link for link in spec.network.inter_zone}
    ov = by_pair[frozenset(("ohio", "virginia"))]
    assert (ov.latency_ms, ov.bandwidth_gbps) == (10.0, 5.0)
    edge = [link for pair, link in by_pair.items() if any("edge" in z for z in pair)]
    assert edge and all(link.bandwidth_gbps == 1.0 for link in edge)


def test_cli_lists_and_shows_presets(tmp_path):
    proc = run_cli("presets")
    assert proc.returncode == 0
    for name in ("hetrl-multi-continent", "small-24", "ppo-async-qwen3-14b", "default"):
        assert name in proc.stdout
    proc = run_cli("presets", "show", "small-8")
    assert proc.returncode == 0
    (tmp_path / "c.yaml").write_text(proc.stdout)
    assert load_cluster(tmp_path / "c.yaml").num_gpus == 8
    assert yaml.safe_load(proc.stdout)["name"] == "small-8"
    assert run_cli("presets", "show", "nope").returncode == 2
