"""Catalogs and specs: load by name, user-defined entries, hierarchical network, derived tasks."""

from __future__ import annotations

import numpy as np
import pytest

from costmodels import SpecError, get_gpu, get_model, gpu_catalog, model_catalog
from costmodels.catalog import network_prices, ocs_devices
from costmodels.circuits.fabric import parse_demand_csv
from costmodels.cluster import DEFAULT_INTRA_NODE_LATENCY_MS, ClusterSpec, build_topology
from costmodels.workflow import TaskKind, WorkflowSpec
from planner.io import (
    build_problem,
    load_cluster,
    load_spec,
    load_workflow,
    parse_model,
)


def test_catalogs_load_by_name():
    a100 = get_gpu("A100-40GB")
    # the 40 GB SXM part: 1555 GB/s HBM (HetRL Table 1 prints the 80 GB part's 2039); NVLink
    # 300 per direction
    assert (
        a100.tflops_bf16_dense,
        a100.memory_gb,
        a100.hbm_gb_per_s,
        a100.intra_node_gb_per_s,
        a100.link_gb_per_s,
    ) == (312, 40, 1555, 600, 300)
    m = get_model("Qwen3-8B")
    assert (m.hidden, m.layers, m.query_heads, m.kv_heads) == (4096, 36, 32, 8)
    moe = get_model("Qwen2-57B-A14B")
    assert moe.is_moe and moe.num_experts == 64 and moe.experts_per_token == 8
    assert {"A100-40GB", "L40S", "L4", "H20", "H800"} <= set(gpu_catalog())
    assert len(model_catalog()) >= 11
    assert network_prices()[400].ocs_port_usd == 350
    assert ocs_devices()["piezo"].reconfig_delay_ms == 25
    with pytest.raises(SpecError, match="unknown GPU"):
        get_gpu("TPU-v9")


def test_catalog_data_ships_in_the_package():
    from importlib import resources

    for name in ("gpus.csv", "models.csv", "network_prices.csv", "ocs_devices.csv"):
        assert resources.files("costmodels").joinpath("data", name).is_file()


CLUSTER = {
    "nodes": [
        {"name": "a0", "gpu": "A100-40GB", "count": 2, "zone": "us"},
        {"name": "a1", "gpu": "A100-40GB", "count": 2, "zone": "us"},
        {"name": "b0", "gpu": "MyGPU", "count": 2, "zone": "eu"},
    ],
    "gpus": [
        {
            "name": "MyGPU",
            "tflops_bf16_dense": 200,
            "memory_gb": 64,
            "hbm_gb_per_s": 1600,
            "intra_node_gb_per_s": 300,
        }
    ],
    "network": {
        "intra_zone": {"bandwidth_gbps": 100, "latency_ms": 0.05},
        "inter_zone": [{"zones": ["us", "eu"], "bandwidth_gbps": 8, "latency_ms": 30}],
    },
}


def test_hierarchical_network_matrices():
    spec = load_cluster(CLUSTER)
    topo = build_topology(spec)
    assert [d.id for d in topo.devices] == ["a0:0", "a0:1", "a1:0", "a1:1", "b0:0", "b0:1"]
    assert topo.devices[4].gpu.name == "MyGPU"  # user-defined GPU without editing the package
    # intra-node from the catalog (GB/s), intra-zone and inter-zone from the spec (Gbps -> GB/s)
    assert topo.bandwidth_gbs[0, 1] == 300 and topo.latency_s[0, 1] == pytest.approx(
        DEFAULT_INTRA_NODE_LATENCY_MS / 1e3
    )
    assert (
        topo.bandwidth_gbs[4, 5] == 150
    )  # a user GPU without the per-direction figure: half its 300 GB/s
    assert topo.bandwidth_gbs[0, 2] == pytest.approx(12.5) and topo.latency_s[
        0, 2
    ] == pytest.approx(5e-5)
    assert topo.bandwidth_gbs[0, 4] == pytest.approx(1.0) and topo.latency_s[0, 4] == pytest.approx(
        0.03
    )
    assert np.allclose(topo.bandwidth_gbs, topo.bandwidth_gbs.T)
    assert np.isinf(np.diag(topo.bandwidth_gbs)).all() and (np.diag(topo.latency_s) == 0).all()


def test_intra_node_override_and_matrix_override():
    data = {
        **CLUSTER,
        "network": {
            **CLUSTER["network"],
            "intra_node": {"bandwidth_gbps": 800, "latency_ms": 0.01},
        },
    }
    topo = build_topology(load_cluster(data))
    assert topo.bandwidth_gbs[0, 1] == 100 and topo.latency_s[0, 1] == pytest.approx(1e-5)
    n = 6
    bw = [[0 if i == j else 10 * (i + j) for j in range(n)] for i in range(n)]
    lat = [[0 if i == j else 1.0 for j in range(n)] for i in range(n)]
    data = {
        **CLUSTER,
        "network": {
            "intra_zone": {"bandwidth_gbps": 1, "latency_ms": 1},
            "matrix": {"bandwidth_gbps": bw, "latency_ms": lat},
        },
    }
    topo = build_topology(load_cluster(data))
    assert (
        topo.explicit_matrix
        and topo.bandwidth_gbs[1, 2] == pytest.approx(30 / 8)
        and topo.latency_s[3, 4] == pytest.approx(1e-3)
    )


def test_custom_model_in_workflow():
    wf = load_workflow(
        {
            "algorithm": "grpo",
            "mode": "sync",
            "models": {"actor": "Tiny-1B"},
            "custom_models": [
                {
                    "name": "Tiny-1B",
                    "params_b": 1.0,
                    "hidden": 2048,
                    "layers": 16,
                    "ffn_intermediate": 8192,
                    "query_heads": 16,
                    "kv_heads": 4,
                    "vocab": 32000,
                }
            ],
            "global_batch": 8,
            "responses_per_prompt": 2,
            "prompt_length": 128,
            "response_length": 128,
        }
    )
    assert wf.model("actor").name == "Tiny-1B"
    assert wf.model("reference").name == "Tiny-1B"  # reference defaults to the actor's model


def test_tasks_derived_from_algorithm():
    ppo = load_workflow("ppo-sync-qwen3-8b").tasks()
    assert [t.name for t in ppo] == [
        "actor_generation",
        "reward_inference",
        "reference_inference",
        "critic_inference",
        "actor_training",
        "critic_training",
    ]
    assert ppo[0].kind is TaskKind.GENERATION and ppo[0].depends_on == ()
    assert all(t.depends_on == ("actor_generation",) for t in ppo[1:4])
    assert set(ppo[4].depends_on) == {"reward_inference", "reference_inference", "critic_inference"}
    grpo = load_workflow("grpo-async-qwen3-4b").tasks()
    assert [t.name for t in grpo] == [
        "actor_generation",
        "reward_inference",
        "reference_inference",
        "actor_training",
    ]
    rule_based = load_workflow(
        {**load_workflow("grpo-sync-qwen3-4b").model_dump(), "models": {"actor": "Qwen3-4B"}}
    )
    assert "reward_inference" not in [t.name for t in rule_based.tasks()]


def test_json_and_yaml_specs_are_equivalent(tmp_path):
    import json

    import yaml

    (tmp_path / "c.json").write_text(json.dumps(CLUSTER))
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(CLUSTER))
    assert load_cluster(tmp_path / "c.json") == load_cluster(tmp_path / "c.yaml")


def test_fabric_demand_and_jobs_shapes():
    fabric = load_spec("circuits", "fabric", "fabric-8")
    assert fabric.degrees()["tor0"] == 4 and len(fabric.eligible_pairs()) == 28
    demand = parse_demand_csv("src,dst,bytes\ntor0,tor1,5e9\ntor1,tor0,2e9\ntor0,tor1,1e9\n")
    assert demand.matrix() == {("tor0", "tor1"): 6e9, ("tor1", "tor0"): 2e9}
    problem = build_problem(
        "circuits", {"fabric": "fabric-8", "demand": [e.model_dump() for e in demand.entries]}
    )
    assert problem.pair_demand() == {("tor0", "tor1"): 6e9}
    failed = load_spec(
        "circuits",
        "fabric",
        {**fabric.model_dump(), "failed_ports": {"tor3": 3}, "reserved_ports": {"tor3": 1}},
    )
    assert failed.degrees()["tor3"] == 0
    bip = load_spec(
        "circuits",
        "fabric",
        {
            "link_gbps": 100,
            "template": "bipartite",
            "endpoints": [
                {"name": "g0", "ports": 2, "side": "gen"},
                {"name": "g1", "ports": 2, "side": "gen"},
                {"name": "t0", "ports": 2, "side": "train"},
            ],
        },
    )
    assert bip.eligible_pairs() == {("g0", "t0"), ("g1", "t0")}
    jobs = load_spec("cosched", "jobs", "rollmux-mixed")
    assert len(jobs.jobs) == 9 and jobs.max_group_size == 5


def test_parse_model_reports_the_first_error_path():
    with pytest.raises(SpecError) as exc:
        parse_model(
            ClusterSpec,
            {
                "nodes": [{"name": "a", "gpu": "L4", "count": -1, "zone": "z"}],
                "network": {"intra_zone": {"bandwidth_gbps": 1, "latency_ms": 0}},
            },
            "x.yaml",
        )
    assert (
        exc.value.field == "nodes[0].count"
        and exc.value.value == -1
        and exc.value.source == "x.yaml"
    )
    with pytest.raises(SpecError, match="GRPO has no critic"):
        load_workflow(
            {
                **load_workflow("grpo-sync-qwen3-4b").model_dump(),
                "models": {"actor": "Qwen3-4B", "critic": "Qwen3-4B"},
            }
        )
    with pytest.raises(SpecError):
        parse_model(WorkflowSpec, {"algorithm": "grpo"}, "w.yaml")


@pytest.mark.parametrize("given", [0, 1, 1.0, "0", "off", "no", "yes", "true"])
def test_a_boolean_field_takes_true_or_false_only(given):
    """pydantic's lax mode reads 0, 'off' or 'yes' as a boolean; a spec takes YAML's true/false
    only, at any depth (a field, a nested model's field, a field of a model in a list)."""
    from costmodels.cosched.plan import CoschedulePlan
    from planner.presets import get_preset

    workflow = get_preset("dapo-fully-async-qwen2.5-7b").data()
    group = {"rollout_nodes": 1, "train_nodes": 1, "jobs": [{"name": "a"}]}
    cases = [
        (WorkflowSpec, {**workflow, "recompute": given}, "recompute"),
        (
            WorkflowSpec,
            {**workflow, "fully_async": {**workflow["fully_async"], "partial_rollout": given}},
            "fully_async.partial_rollout",
        ),
        (CoschedulePlan, {"groups": [group, {**group, "colocated": given}]}, "groups[1].colocated"),
    ]
    for cls, data, field in cases:
        with pytest.raises(SpecError, match="where true or false is expected") as exc:
            parse_model(cls, data, "x.yaml")
        assert (exc.value.field, exc.value.value) == (field, given)
    # YAML's own booleans (true/false; PyYAML's YAML 1.1 also reads unquoted yes/no/on/off)
    assert parse_model(WorkflowSpec, {**workflow, "recompute": False}).recompute is False
