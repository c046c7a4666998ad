"""The ``rlplan`` console script: the whole CLI behind one guard, so that whatever goes wrong ends
as one line on stderr and an exit code (docs/architecture.md, "Interfaces people use": 0 plan / 1 no
plan / 2 bad input), never a traceback — usage errors included (typer and click would draw a box),
and Ctrl-C at any point, imports included (exit 130). ``RLPLAN_DEBUG=1`` shows the traceback of an
internal error.

The app it runs is composed here: the command-line package's commands (``planner.cli.app``) and
the commands other installed packages register under the ``rlplan.commands`` entry-point group —
how the benchmarks layer above adds ``bench`` without the planner importing it
(``docs/architecture.md``, "The house").

Kept tiny on purpose: it must be importable before anything heavy is."""

from __future__ import annotations

import os
import sys
from typing import Any

INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C

#: the entry-point group whose members are ``register(app)`` functions adding commands to rlplan
COMMANDS_GROUP = "rlplan.commands"

_composed: Any = None


def composed_app() -> Any:
    """The whole ``rlplan`` typer app: ``planner.cli.app`` plus every command registered under
    :data:`COMMANDS_GROUP` (``bench``, from the benchmarks layer)."""
    global _composed
    if _composed is None:
        from importlib.metadata import entry_points

        from planner.cli.app import app

        for ep in sorted(entry_points(group=COMMANDS_GROUP), key=lambda ep: ep.name):
            ep.load()(app)
        _composed = app
    return _composed


def _say(message: str) -> None:
    sys.stderr.write(f"error: {' '.join(message.split())}\n")


def _suggest(exc: Exception) -> str:
    """ "Did you mean" for a mistyped command (click suggests options itself)."""
    import difflib

    ctx = getattr(exc, "ctx", None)
    message = str(getattr(exc, "message", ""))
    if ctx is None or not message.startswith("No such command") or "Did you mean" in message:
        return ""
    name = message.split("'")[1] if "'" in message else ""
    commands = list(getattr(ctx.command, "commands", {}) or {})
    close = difflib.get_close_matches(name, commands, n=3, cutoff=0.6)
    return (
        f" (did you mean {' or '.join(close)}?)"
        if close
        else f" (commands: {', '.join(sorted(commands))})"
    )


def _given(exc: Exception, args: list[str]) -> str:
    """ " (got 'abc')" for an option value click could not convert, when its message does not
    already show it: the value as typed, found after the option's name in ``args``."""
    param = getattr(exc, "param", None)
    message = str(getattr(exc, "message", ""))
    for i, arg in enumerate(args):
        for opt in getattr(param, "opts", ()) or ():
            value = (
                args[i + 1]
                if arg == opt and i + 1 < len(args)
                else arg[len(opt) + 1 :]
                if arg.startswith(f"{opt}=")
                else None
            )
            if (
                value is not None
                and repr(value) not in message
                and f" {value} " not in f" {message} "
            ):
                return f" (got {value!r})"
    return ""


def main(argv: list[str] | None = None) -> None:
    # Plain click help, not typer's rich panels: the same text a script can parse, and rendering
    # the panels cost a tenth of a second on every `--help`. Results stay
    # rich tables; TYPER_USE_RICH=1 brings the panels back.
    os.environ.setdefault("TYPER_USE_RICH", "0")
    try:
        try:
            from typer._click import exceptions as cx  # typer >= 0.20 vendors click
        except ImportError:  # pragma: no cover - older typer runs on click itself
            from click import exceptions as cx

        import typer
        from pydantic import ValidationError

        from costmodels.errors import SpecError, from_validation
        from costmodels.solving import protect_stdout
        from planner.registry import PluginError

        # this process is ours: native solver noise must not reach a plan on `-o -`
        protect_stdout()

        try:
            code = composed_app()(args=argv, standalone_mode=False, prog_name="rlplan")
            if code == INTERRUPTED:  # typer turns Ctrl-C inside a command into a silent Exit(130)
                raise KeyboardInterrupt
        except cx.NoArgsIsHelpError as exc:
            sys.stderr.write(
                exc.format_message().rstrip() + "\n"
            )  # a bare `rlplan simulate`: its help
            code = 2
        except cx.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx else "rlplan"
            given = _given(exc, sys.argv[1:] if argv is None else argv)
            _say(
                f"{where}: {exc.format_message().rstrip('.')}{given}{_suggest(exc)}; "
                f"see `{where} --help`"
            )
            code = 2
        except typer.Abort:
            raise KeyboardInterrupt from None
        except (SpecError, PluginError) as exc:  # a user's plugin is bad input too
            _say(str(exc))
            code = 2
        except ValidationError as exc:  # a model built from user input outside the spec loaders
            _say(str(from_validation(exc)))
            code = 2
        except RecursionError:
            _say("input nested too deeply")
            code = 2
        except MemoryError:
            _say("out of memory: the input asks for more than this machine holds")
            code = 2
        except BrokenPipeError:
            # the reader went away (`rlplan ... | head`): not an error of ours
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            code = 0
        except OSError as exc:
            _say(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "))
            code = 2
        except Exception as exc:  # noqa: BLE001 - the last guard: one line, not a traceback
            if os.environ.get("RLPLAN_DEBUG"):
                raise
            _say(
                f"internal error: {exc.__class__.__name__}: {exc} (please report it; "
                "RLPLAN_DEBUG=1 shows the traceback)"
            )
            code = 1
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        code = INTERRUPTED
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
