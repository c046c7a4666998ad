"""A user's plugin that fails is bad input, not an internal error (docs/architecture.md,
"Interfaces people use"): whether it cannot be imported, is not a function, registers a solver
the registry refuses or a name already taken, or raises in ``register()``, ``rlplan bench
--plugin`` and ``RLPLAN_PLUGINS`` say so in one line naming the option (or the variable) and the
``module:function``, exit 2 and write nothing; ``build_registry`` raises a ``ValueError``."""

from __future__ import annotations

import os
import subprocess

import pytest

from planner.registry import PluginError, build_registry
from tests.conftest import rlplan_executable

#: plugin functions, each failing its own way; the module is written to the test's directory
PLUGINS = """
def no_time_limit(problem, *, seed=0):
    return None


def takes_no_time_limit(registry):
    registry.register("placement", "mine", no_time_limit, description="no time_limit")


def takes_a_taken_name(registry):
    registry.register(
        "placement", "verl", lambda p, *, time_limit=None, seed=0: None, description="again"
    )


def raises(registry):
    raise RuntimeError("the plugin's own bug")


not_a_function = 3
"""

#: (function, words the error says after ``<origin> badplugins:<function>: ``)
CASES = [
    ("takes_no_time_limit", "must accept keyword 'time_limit'"),
    ("takes_a_taken_name", "'verl' is already registered"),
    ("raises", "RuntimeError: the plugin's own bug"),
    ("not_a_function", "not a function register(registry) (got 3)"),
    ("no_such_function", "cannot load it"),
]


@pytest.fixture
def plugin_dir(tmp_path):
    (tmp_path / "badplugins.py").write_text(PLUGINS)
    (tmp_path / "mine.yaml").write_text(
        "problem: circuits\nfabric: fabric-moe-16\ndemand: demand-moe-16\n"
    )
    return tmp_path


def _rlplan(*args: str, cwd, env: dict[str, str] | None = None):
    return subprocess.run(
        [rlplan_executable(), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1", **(env or {})},
    )


def _one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert "internal error" not in stderr
    return lines[0]


@pytest.mark.parametrize(("function", "words"), CASES)
def test_bench_plugin_failures_name_the_option_and_the_plugin(plugin_dir, function, words):
    ref = f"badplugins:{function}"
    r = _rlplan(
        *("bench", "--problem", "mine.yaml", "--solver", "greedy"),
        *("--out", "out", "--plugin", ref, "-q"),
        cwd=plugin_dir,
    )
    assert r.returncode == 2, r.stderr
    line = _one_line(r.stderr)
    assert line.startswith(f"error: --plugin {ref}: ") and words in line, line
    assert not (plugin_dir / "out").exists()


@pytest.mark.parametrize(("function", "words"), CASES)
def test_rlplan_plugins_failures_name_the_variable_and_the_plugin(plugin_dir, function, words):
    ref = f"badplugins:{function}"
    env = {"RLPLAN_PLUGINS": ref, "PYTHONPATH": str(plugin_dir)}
    r = _rlplan("plan", "placement", "-o", "p.json", cwd=plugin_dir, env=env)
    assert r.returncode == 2, r.stderr
    line = _one_line(r.stderr)
    assert line.startswith(f"error: RLPLAN_PLUGINS {ref}: ") and words in line, line
    assert not (plugin_dir / "p.json").exists()


def test_a_plugin_without_module_function_is_refused(tmp_path):
    r = _rlplan("bench", "--plugin", "register", "--out", "out", cwd=tmp_path)
    assert r.returncode == 2
    assert _one_line(r.stderr) == "error: --plugin register: expected module:function"


def test_build_registry_raises_a_value_error(plugin_dir, monkeypatch):
    """A library caller's ``except ValueError`` catches a failing plugin too."""
    monkeypatch.syspath_prepend(str(plugin_dir))
    monkeypatch.delenv("RLPLAN_PLUGINS", raising=False)
    with pytest.raises(ValueError, match=r"^plugin badplugins:raises: RuntimeError") as raised:
        build_registry(("badplugins:raises",))
    assert isinstance(raised.value, PluginError) and raised.value.ref == "badplugins:raises"
