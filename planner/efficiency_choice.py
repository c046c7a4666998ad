"""The judge's kernels and serving engine a user picks by name or file (``--profile``,
``--engine``), as :class:`~costmodels.efficiency.Efficiency` field updates
(``docs/architecture.md``, "One judge, one set of physics": shipped profiles, a cluster spec's, a
user's file, later ones winning per GPU type)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from costmodels.errors import SpecError

PROFILE_HELP = (
    "decode and prefill kernels: aic-vllm (default: the shipped profiles fitted to "
    "AIConfigurator's vLLM "
    "measurements), a file `rlplan calibrate` wrote (its GPU types first, the shipped ones for "
    "the rest), or flat "
    "(the fixed compute and HBM fractions of rlplan 0.x)"
)

ENGINE_HELP = (
    "serving engine's CPU time per decode step: cuda-graph (default: vLLM's, and verl's since "
    "0.6) or "
    "eager (enforce_eager, verl's up to 0.5 and the papers' veRL baselines; fitted to OrchestrRL "
    "§2.1)"
)


def efficiency_update(profile: str | None, engine: str | None) -> dict[str, Any]:
    """The efficiency fields a profile choice (``flat``, or a profile file) and an engine name
    set; a :class:`SpecError` naming ``--profile`` or ``--engine`` for a bad one."""
    from costmodels.profiles import engine_profiles
    from planner.io import load_profile_file

    update: dict[str, Any] = {}
    if profile == "flat" and not Path(profile).exists():
        update.update(kernels="flat", profiles={})
    elif profile is not None:
        try:
            profiles, training = load_profile_file(profile)
            update["profiles"] = profiles
            if training:
                update["training_mfu"] = {gpu: fit.mfu for gpu, fit in training.items()}
        except SpecError as exc:
            raise exc if exc.source else SpecError("--profile", profile, exc.reason) from None
    if engine is not None:
        engines = engine_profiles()
        if engine not in engines:
            raise SpecError("--engine", engine, f"one of {', '.join(engines)}")
        update.update(engines[engine].efficiency_update())
    return update


def efficiency(profile: str | None, engine: str | None = None) -> Any:
    """The default efficiency set, with the profile's fitted kernels and the engine's overheads
    when given."""
    from costmodels.efficiency import Efficiency

    return Efficiency(**efficiency_update(profile, engine))
