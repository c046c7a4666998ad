"""Output paths checked before any work starts, and written whole or not at all.

A run that solves for a minute and then cannot write its plan loses the minute; so every output a
command will write (``-o``, ``--plot``, ``--export`` siblings, ``bench --out``) is checked first:
not empty, not a directory, the right suffix, in an existing writable directory, and no two
outputs the same file. Files are written through a temporary file and a rename
(:func:`planner.io.write_atomic`) with the permissions the user's umask gives a new file (a bare
``mkstemp`` would leave them private, 0600).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from costmodels.errors import SpecError

PLOT_SUFFIXES = (".png",)


def check_output(path: str | Path, option: str, suffixes: tuple[str, ...] | None = None) -> Path:
    """``path`` as a file the command may create or replace, or a SpecError naming ``option``."""
    text = str(path)
    if not text.strip():
        raise SpecError(option, text, "an empty path")
    p = Path(text)
    if p.is_dir():
        raise SpecError(option, text, "is a directory; give a file path")
    if suffixes and p.suffix.lower() not in suffixes:
        raise SpecError(option, text, f"must end in {' or '.join(suffixes)}")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise SpecError(option, text, f"no such directory {str(parent)!r}")
    try:  # a real probe: permission bits say nothing of read-only mounts, /proc, or root
        fd, probe = tempfile.mkstemp(prefix=".rlplan-probe-", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError:
        raise SpecError(option, text, f"cannot write in directory {str(parent)!r}") from None
    if p.exists() and not os.access(p, os.W_OK):
        raise SpecError(option, text, "exists and is not writable")
    return p


def check_output_dir(path: str | Path, option: str) -> Path:
    """A directory the command may create (with its parents) or write into."""
    text = str(path)
    if not text.strip():
        raise SpecError(option, text, "an empty path")
    p = Path(text)
    if p.exists() and not p.is_dir():
        raise SpecError(option, text, "exists and is not a directory")
    probe = p
    while not probe.exists():
        probe = probe.parent if str(probe.parent) else Path(".")
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise SpecError(option, text, f"cannot write in {str(probe)!r}")
    if probe != p:
        # os.access answers yes to root everywhere, /proc and read-only mounts included: make
        # (and at once remove) a directory where the output's first missing part would go
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".rlplan-probe-", dir=probe))
        except OSError as exc:
            raise SpecError(option, text, f"cannot create a directory in {str(probe)!r}") from exc
    return p


def check_distinct(outputs: dict[str, Path]) -> None:
    """No two outputs may be the same file (``-o X --plot X`` would write a picture as the plan)."""
    seen: dict[Path, str] = {}
    for option, p in outputs.items():
        key = p.resolve()
        if key in seen:
            raise SpecError(
                option, str(p), f"is also the {seen[key]} file; give each output its own path"
            )
        seen[key] = option


def new_file_mode() -> int:
    """The mode a new file gets under the current umask (read without changing it for good)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def write_picture(path: Path, draw: Callable[[Path], None]) -> None:
    """``draw(tmp)`` into a temporary PNG next to ``path``, then rename it over ``path``: a
    failed drawing leaves neither a partial picture nor a stray temporary file."""
    fd, name = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=".png", dir=path.parent if str(path.parent) else "."
    )
    os.close(fd)
    tmp = Path(name)
    try:
        draw(tmp)
        os.chmod(tmp, new_file_mode())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
