"""The frameworks' own configuration, for tests that check exports against it.

verl: the release's wheel from the package index, unpacked once into a cache
(``RLPLAN_FRAMEWORK_CACHE``, default ``~/.cache/rlplan/frameworks``); its Hydra configs are
composed with hydra-core. When the index cannot be reached the tests skip and say so. ROLL needs
torch to import, so its config field set is test data read from its source
(``tests/data/roll/README.md``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data"


def _cache() -> Path:
    root = os.environ.get("RLPLAN_FRAMEWORK_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "rlplan" / "frameworks"


def verl_root(version: str) -> Path:
    """The unpacked verl wheel of ``version`` (its ``verl/`` package inside); skips the test when
    the package index cannot be reached."""
    target = _cache() / f"verl-{version}"
    if (target / "verl" / "trainer" / "config").is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            f"verl=={version}",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--timeout",
            "30",
            "-d",
            tmp,
        ]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"verl {version} wheel not downloadable here ({exc})")
        wheels = list(Path(tmp).glob("verl-*.whl"))
        if done.returncode != 0 or not wheels:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
            pytest.skip(f"verl {version} wheel not downloadable here (pip: {' '.join(tail)})")
        unpacked = Path(tmp) / "unpacked"
        with zipfile.ZipFile(wheels[0]) as whl:
            whl.extractall(unpacked)
        try:
            unpacked.rename(target)  # atomic: a parallel worker may have won the race
        except OSError:
            shutil.rmtree(unpacked, ignore_errors=True)
    return target


def compose_verl(version: str, config_name: str, overrides: list[str]) -> Any:
    """verl's config ``config_name`` with ``overrides``, composed by hydra-core in struct mode as
    ``python -m <entry point> --config-name <config_name>`` does; raises Hydra's error on a key
    verl does not have."""
    hydra = pytest.importorskip("hydra")
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    root = verl_root(version)
    recipe = next((r for r in ("one_step_off", "fully_async") if config_name.startswith(r)), None)
    if recipe:
        shipped = root / "verl" / "experimental" / f"{recipe}_policy" / "config"
        config_dir = shipped if shipped.is_dir() else DATA / "verl" / f"v{version}"
    else:
        config_dir = root / "verl" / "trainer" / "config"
    assert hydra is not None
    GlobalHydra.instance().clear()
    cwd = os.getcwd()
    os.chdir(root)  # the recipes' configs find the trainer's through file://verl/trainer/config
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base=None):
            return compose(config_name=config_name, overrides=overrides)
    finally:
        os.chdir(cwd)
        GlobalHydra.instance().clear()


def roll_fields(which: str = "rlvr_config_fields") -> dict[str, Any]:
    """ROLL's config classes and their fields, read from its source (``tests/data/roll``)."""
    return json.loads((DATA / "roll" / f"{which}.json").read_text())


def strict_roll_errors(doc: dict[str, Any], fields: dict[str, Any]) -> list[str]:
    """Every key of ``doc`` that ROLL's RLVRConfig (``fields["root"]``) would drop or misread
    under a strict load: unknown keys at any depth, read-only properties, and values whose type
    is not the field's (a worker config must be a mapping, an int field an int, ...)."""
    classes = fields["classes"]
    readonly = fields.get("readonly_properties", {})
    out: list[str] = []

    def walk(value: dict[str, Any], cls: str, path: str) -> None:
        spec = classes[cls]["fields"]
        for key, v in value.items():
            where = f"{path}{key}"
            if key in readonly.get(cls, ()):
                out.append(f"{where}: a read-only property of {cls}")
                continue
            if key not in spec:
                out.append(f"{where}: not a field of {cls}")
                continue
            f = spec[key]
            nested, container = f.get("nested"), f.get("container")
            if nested and nested in classes:
                if container == "dict":
                    if not isinstance(v, dict):
                        out.append(f"{where}: {cls}.{key} is a mapping of {nested}")
                        continue
                    for name, item in v.items():
                        if isinstance(item, dict):
                            walk(item, nested, f"{where}.{name}.")
                elif isinstance(v, dict):
                    walk(v, nested, f"{where}.")
                elif v is not None:
                    out.append(f"{where}: {cls}.{key} is a {nested} mapping, got {v!r}")
                continue
            out.extend(_type_errors(where, f.get("type", ""), v))

    walk(doc, fields["root"], "")
    return out


def _type_errors(where: str, annotation: str, v: Any) -> list[str]:
    """A scalar's type against its field annotation, as dacite's strict mode would check it."""
    a = annotation.replace("typing.", "")
    if v is None:
        return [] if ("Optional" in a or "None" in a) else [f"{where}: None for {a}"]
    checks = [
        ("bool", lambda x: isinstance(x, bool)),
        ("int", lambda x: isinstance(x, int) and not isinstance(x, bool)),
        ("float", lambda x: isinstance(x, int | float) and not isinstance(x, bool)),
        ("str", lambda x: isinstance(x, str)),
        ("List", lambda x: isinstance(x, list)),
        ("list", lambda x: isinstance(x, list)),
        ("Dict", lambda x: isinstance(x, dict)),
        ("dict", lambda x: isinstance(x, dict)),
        ("Literal", lambda x: repr(x) in a or f'"{x}"' in a),
    ]
    allowed = [ok for name, ok in checks if name in a]
    if not allowed or "Any" in a:
        return []
    return [] if any(ok(v) for ok in allowed) else [f"{where}: {v!r} is not a {a}"]
