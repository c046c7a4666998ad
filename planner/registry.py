"""The registry: problem kinds and their solvers, one per process (after vidur's registries).

Every problem arrives as a descriptor (``costmodels.problem.ProblemKind``: its language and judge)
with its solvers (:class:`~planner.solvers.entry.SolverEntry`, the built-ins' in
``planner/solvers/<problem>.py``), each naming its function through a loader; the registry calls
the loader only when the solver is used, so ``rlplan --help`` does not import HiGHS, CP-SAT or
DEAP. Unknown or duplicate keys fail loudly.

Solver options (after ``scipy.optimize.milp``'s allow-list, typed): a solver's options are its
keyword-only parameters other than those the façade owns (``time_limit``, ``seed``, ``progress``)
and those the planner injects (``SolverEntry.inject``). Their annotations, with pydantic
``Field`` constraints and descriptions where a solver gives them, make a pydantic model that
validates option values before the solver runs: ``-O population=0`` or ``-O backend=foo`` is a
:class:`SolverOptionError` naming the option and the value, never a crash inside the solver.

Plugins (a function ``register(registry)``): the ``rlplan.plugins`` entry-point group, the
``RLPLAN_PLUGINS`` environment variable (``module:function`` separated by commas), and
``build_registry(plugins=...)`` (``rlplan bench --plugin``). A plugin may add solvers to a kind
(:meth:`Registry.register`) or whole problems with their solvers (:meth:`Registry.add_problem`).
Plugins are the one place a ``module:function`` string remains: they name code outside rlplan.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import math
import os
import reprlib
import typing
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from costmodels.errors import did_you_mean
from costmodels.problem import Preset, ProblemKind
from costmodels.problems import builtin_kinds
from costmodels.solving import LOCAL_WORKERS
from planner.solvers import SolverEntry, SolverFn, builtin_solvers

#: keyword parameters the façade owns: never user options
FACADE_PARAMS = ("time_limit", "seed", "progress")
PLUGINS_ENV = "RLPLAN_PLUGINS"


class UnknownSolverError(LookupError, ValueError):
    """A solver name the registry does not have for a problem (or a problem with no solvers yet).
    Bad input, so a ``ValueError`` like every other (docs/python.md); a ``LookupError`` too, as a
    failed registry look-up."""


class PluginError(ValueError):
    """A user's plugin that could not be loaded, is not a function, or whose
    ``register(registry)`` failed (an import error, a solver the registry refuses, a duplicate
    name, any exception of its own): bad input, named by where it was given (``--plugin``,
    ``RLPLAN_PLUGINS``, an entry point) and its ``module:function``, so the CLI says it in one
    line and exits 2 (docs/architecture.md, "Interfaces people use")."""

    def __init__(self, origin: str, ref: str, reason: str) -> None:
        self.origin, self.ref, self.reason = origin, ref, reason
        super().__init__(f"{origin} {ref}: {reason}")


class SolverOptionError(ValueError):
    """An option the solver does not take, or a value its type or range rejects."""


def resolve(ref: str) -> Any:
    """The object a plugin's ``"module:function"`` reference names."""
    module, _, name = ref.partition(":")
    if not module or not name:
        raise ValueError(f"{ref!r}: expected module:function")
    return getattr(importlib.import_module(module), name)


class SolverInfo:
    """A registered solver. ``func`` (with injected objects bound) and the typed options model
    are built on first use."""

    def __init__(
        self,
        problem: str,
        name: str,
        description: str,
        *,
        exact: bool = False,
        func: SolverFn | None = None,
        load: Callable[[], SolverFn] | None = None,
        inject: Mapping[str, Callable[[], Any]] | None = None,
        time_limit: float = 60.0,
        ignores: tuple[str, ...] = (),
    ) -> None:
        if (func is None) == (load is None):
            raise TypeError("give a solver function or a loader of one, not both")
        if not (time_limit > 0 and math.isfinite(time_limit)):
            raise ValueError(
                f"solver {name!r}: default time_limit must be a positive number of seconds, got "
                f"{time_limit!r}"
            )
        self.problem, self.name, self.description, self.exact = problem, name, description, exact
        self.time_limit = float(time_limit)  # the default cap (SolverEntry.time_limit)
        self._func, self._load, self.inject = func, load, dict(inject or {})
        self.ignores = tuple(ignores)  # validator constraints it does not enforce (SolverEntry)

    def __repr__(self) -> str:
        return f"SolverInfo({self.problem!r}, {self.name!r})"

    @functools.cached_property
    def raw(self) -> SolverFn:
        func = self._func if self._func is not None else self._load()  # type: ignore[misc]
        params = inspect.signature(func).parameters
        for required in ("time_limit", "seed"):
            if required not in params:
                raise TypeError(f"solver {self.name!r} must accept keyword {required!r}")
        missing = sorted(set(self.inject) - set(params))
        if missing:
            raise TypeError(f"solver {self.name!r} has no parameter {missing[0]!r} to inject")
        return func

    @functools.cached_property
    def func(self) -> SolverFn:
        if not self.inject:
            return self.raw
        return functools.partial(self.raw, **{k: load() for k, load in self.inject.items()})

    @functools.cached_property
    def takes_progress(self) -> bool:
        return "progress" in inspect.signature(self.raw).parameters

    @functools.cached_property
    def options_model(self) -> type[BaseModel]:
        try:
            hints = typing.get_type_hints(self.raw, include_extras=True)
        except Exception:  # an annotation that does not resolve: accept any value for it
            hints = {}
        fields: dict[str, Any] = {}
        for p, spec in inspect.signature(self.raw).parameters.items():
            if (
                spec.kind is not inspect.Parameter.KEYWORD_ONLY
                or p in FACADE_PARAMS
                or p in self.inject
            ):
                continue
            default = spec.default if spec.default is not inspect.Parameter.empty else ...
            fields[p] = (hints.get(p, Any), default)
        return create_model(
            f"{self.name}-options",
            __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True),
            **fields,
        )

    @property
    def options(self) -> tuple[str, ...]:
        return tuple(self.options_model.model_fields)

    def option_help(self) -> list[tuple[str, str, str, str]]:
        """(name, type, default, meaning) per option, for ``--solver help``."""
        out = []
        for name, f in self.options_model.model_fields.items():
            ann = f.annotation
            kind = getattr(ann, "__name__", None) if not typing.get_args(ann) else None
            kind = kind or str(ann).replace("typing.", "").replace("NoneType", "None")
            bounds = [
                f"{k} {v}"
                for m in f.metadata
                for k, v in (
                    ("≥", getattr(m, "ge", None)),
                    (">", getattr(m, "gt", None)),
                    ("≤", getattr(m, "le", None)),
                    ("<", getattr(m, "lt", None)),
                )
                if v is not None
            ]
            out.append(
                (
                    name,
                    kind + (f" ({', '.join(bounds)})" if bounds else ""),
                    "required" if f.is_required() else repr(f.default),
                    f.description or "",
                )
            )
        return out

    def validate_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """The options checked by name, type and range; values coerced to the declared types."""
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            allowed = ", ".join(self.options) or "none"
            raise SolverOptionError(
                f"solver {self.name!r} does not take option {unknown[0]!r}; it takes: {allowed}"
            )
        try:
            model = self.options_model.model_validate(options)
        except ValidationError as exc:
            err = exc.errors()[0]
            name = str(err["loc"][0]) if err["loc"] else "?"
            raise SolverOptionError(
                f"solver {self.name!r} option {name}={options.get(name)!r}: {err['msg']}"
            ) from None
        for name, given in options.items():
            # pydantic's lax mode reads True as 1 and "5" as 5: a library caller's slip, refused
            # like the CLI refuses it in spec files
            value = getattr(model, name)
            if (
                isinstance(given, bool | str)
                and isinstance(value, int | float)
                and not isinstance(value, bool)
            ):
                raise SolverOptionError(
                    f"solver {self.name!r} option {name}={given!r}: a {type(given).__name__} "
                    "where a number is expected"
                )
        if options.get("executor") == "ray" and importlib.util.find_spec("ray") is None:
            raise SolverOptionError(
                f"solver {self.name!r} option executor='ray' needs Ray, which is not installed: "
                "pip install 'rlplan[ray]'"
            )
        workers = getattr(model, "workers", None) if "workers" in options else None
        local = options.get("executor", "local") == "local" and not options.get("ray_address")
        if "executor" in self.options and local and workers is not None and workers > LOCAL_WORKERS:
            # refused before any work: each local worker is a process with its own caches
            raise SolverOptionError(
                f"solver {self.name!r} option workers={workers}: at most {LOCAL_WORKERS} "
                "local processes; add executor=ray for more"
            )
        return {k: getattr(model, k) for k in options}


class Registry:
    def __init__(self) -> None:
        self._kinds: dict[str, ProblemKind] = {}
        self._solvers: dict[tuple[str, str], SolverInfo] = {}
        self._defaults: dict[str, str] = {}

    @classmethod
    def builtin_problems(cls) -> Registry:
        """rlplan's problems with none of their solvers: for registering your own (or test
        doubles) alone."""
        reg = cls()
        for kind in builtin_kinds():
            reg._kinds[kind.name] = kind
        return reg

    # ------------------------------------------------------------------ problems

    def add_problem(self, kind: ProblemKind, solvers: tuple[SolverEntry, ...] = ()) -> None:
        """Add a problem and its solvers. A problem given solvers must have exactly one default;
        one given none is listed but not solvable (its solvers have not landed)."""
        if kind.name in self._kinds:
            raise ValueError(f"problem {kind.name!r} is already registered")
        if solvers and sum(s.default for s in solvers) != 1:
            raise ValueError(
                f"problem {kind.name!r}: exactly one solver must be the default, got "
                f"{[s.name for s in solvers if s.default] or 'none'}"
            )
        self._kinds[kind.name] = kind
        for entry in solvers:
            self._add(
                SolverInfo(
                    kind.name,
                    entry.name,
                    entry.description,
                    exact=entry.exact,
                    load=entry.load,
                    inject=entry.inject,
                    time_limit=entry.time_limit,
                    ignores=entry.ignores,
                ),
                default=entry.default,
            )

    def kind(self, name: str) -> ProblemKind:
        if name not in self._kinds:
            raise KeyError(f"unknown problem {name!r}; known: {', '.join(self._kinds)}")
        return self._kinds[name]

    def kinds(self) -> list[ProblemKind]:
        """Every registered problem, in registration order (built-ins first)."""
        return list(self._kinds.values())

    def solvable(self) -> list[ProblemKind]:
        """The problems that have solvers (a kind whose solvers have not landed has none)."""
        return [k for k in self._kinds.values() if self.solvers(k.name)]

    def kind_of(self, problem: Any) -> ProblemKind:
        name = getattr(problem, "kind", None)
        if name not in self._kinds:
            raise TypeError(
                f"not a problem rlplan can solve: {type(problem).__name__} (kind {name!r})"
            )
        return self._kinds[name]

    def presets(self, kind: str | None = None) -> list[Preset]:
        return [
            p for k in self._kinds.values() for p in k.presets if kind is None or p.kind == kind
        ]

    def preset(self, name: str) -> Preset | None:
        return next((p for p in self.presets() if p.name == name), None)

    # ------------------------------------------------------------------ solvers

    def register(
        self,
        problem: str,
        name: str,
        func: SolverFn,
        *,
        description: str,
        exact: bool = False,
        default: bool = False,
        time_limit: float = 60.0,
    ) -> SolverInfo:
        """Add a solver function to a registered problem (``time_limit``: its default cap, s)."""
        if problem not in self._kinds:
            raise ValueError(
                f"cannot register solver {name!r}: unknown problem {problem!r}; known: "
                f"{', '.join(self._kinds)}"
            )
        info = SolverInfo(problem, name, description, exact=exact, func=func, time_limit=time_limit)
        info.raw  # noqa: B018  (a function without time_limit/seed fails at registration, not at solve time)
        return self._add(info, default=default)

    def _add(self, info: SolverInfo, *, default: bool) -> SolverInfo:
        key = (info.problem, info.name)
        if key in self._solvers:
            raise ValueError(
                f"solver {info.name!r} is already registered for problem {info.problem!r}"
            )
        self._solvers[key] = info
        if default or info.problem not in self._defaults:
            self._defaults[info.problem] = info.name
        return info

    def get(self, problem: str, name: str | None = None) -> SolverInfo:
        name = name or self._defaults.get(problem)
        if name is None:
            raise UnknownSolverError(f"no solvers are registered for problem {problem!r} yet")
        if (problem, name) not in self._solvers:
            known = ", ".join(s.name for s in self.solvers(problem)) or "none"
            raise UnknownSolverError(
                f"unknown solver {name!r} for problem {problem!r}"
                f"{did_you_mean(name, (s.name for s in self.solvers(problem)))}; available: {known}"
            )
        return self._solvers[(problem, name)]

    def default(self, problem: str) -> str | None:
        return self._defaults.get(problem)

    def solvers(self, problem: str | None = None) -> list[SolverInfo]:
        return [s for (p, _), s in sorted(self._solvers.items()) if problem is None or p == problem]

    def problems(self) -> list[str]:
        return [k.name for k in self.solvable()]


def _env_refs() -> list[str]:
    return [r.strip() for r in os.environ.get(PLUGINS_ENV, "").split(",") if r.strip()]


def _why(exc: BaseException) -> str:
    """An exception as the reason a plugin failed: its message, with its class unless the
    message is the registry's own (a ValueError or TypeError raised by :meth:`Registry.register`
    already says what is wrong)."""
    text = " ".join(str(exc).split()) or "(no message)"
    if isinstance(exc, ModuleNotFoundError | ValueError | TypeError):
        return text
    return f"{type(exc).__name__}: {text}"


def _run_plugin(reg: Registry, origin: str, ref: str, load: Callable[[], Any]) -> None:
    """Load one plugin and call it with ``reg``; whatever fails is a :class:`PluginError` naming
    ``origin`` and ``ref`` (the plugin is the user's code: its failure is bad input)."""
    if ":" not in ref:
        raise PluginError(origin, ref, "expected module:function")
    try:
        func = load()
    except Exception as exc:  # noqa: BLE001 - an import runs the user's module
        raise PluginError(origin, ref, f"cannot load it: {_why(exc)}") from exc
    if not callable(func):
        got = reprlib.repr(func)
        raise PluginError(origin, ref, f"not a function register(registry) (got {got})")
    try:
        func(reg)
    except Exception as exc:  # noqa: BLE001 - register() is the user's code
        raise PluginError(origin, ref, _why(exc)) from exc


def build_registry(
    plugins: tuple[str, ...] = (), *, external: bool = True, origin: str = "plugin"
) -> Registry:
    """A fresh registry: the built-in problems with their solvers, then (with ``external``) the
    ``rlplan.plugins`` and legacy ``rlplan.solvers`` entry points and ``$RLPLAN_PLUGINS``, then
    each of ``plugins`` (``module:function``, called with the registry). A plugin that fails
    raises :class:`PluginError`, named ``origin`` (``--plugin`` for ``rlplan bench``),
    ``RLPLAN_PLUGINS`` or its entry point's group."""
    from importlib.metadata import entry_points

    reg = Registry()
    solvers = builtin_solvers()
    for kind in builtin_kinds():
        reg.add_problem(kind, solvers[kind.name])
    named: list[tuple[str, str]] = []
    if external:
        for group in ("rlplan.plugins", "rlplan.solvers"):
            for ep in entry_points(group=group):
                _run_plugin(reg, f"entry point {group}", ep.value, ep.load)
        named += [(PLUGINS_ENV, ref) for ref in _env_refs()]
    named += [(origin, ref) for ref in plugins]
    for where, ref in named:
        _run_plugin(reg, where, ref, functools.partial(resolve, ref))
    return reg


@functools.cache
def default_registry() -> Registry:
    """The process-wide registry: built-ins plus every plugin named by entry points or
    ``$RLPLAN_PLUGINS``."""
    return build_registry()
