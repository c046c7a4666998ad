"""``NAME:key=value,...`` arguments, read one way for every command that takes them.

A response-length distribution (``costmodels.generation.lengths``), a synthetic rollout trace
(``rlplan simulate generation --lengths synthetic:...``) and a co-scheduling trace generator
(``costmodels.cosched.arrivals``) each name a generator and its arguments in one word. They share
the rules here, so a user meets the same refusals whichever option they type:

* every part is ``key=value`` with a key the generator takes;
* a key given twice is refused, not "the last one wins", which would silently drop what the user
  typed first;
* an integer argument (a count, a seed) takes an integer: ``n=1.5`` is refused, not truncated;
* a number is finite: ``nan`` and ``inf`` are refused.

Ranges (``> 0``, a token cap, a memory bound) stay with each generator, which knows them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from costmodels.errors import SpecError

#: an argument's kind: ``int`` (an integer), ``float`` (a finite number) or ``str`` (as typed)
Kind = type[int] | type[float] | type[str]


def parse_key_values(
    rest: str, kinds: Mapping[str, Kind], *, field: str, name: str
) -> dict[str, int | float | str]:
    """The arguments given in ``rest`` (``key=value,...``), each read as ``kinds[key]``.

    Refusals are :class:`SpecError` naming ``field.key``, the part typed and the rule broken;
    ``name`` is the generator's, for the list of the keys it takes. Keys not given are absent:
    the generator fills in its defaults.
    """
    args: dict[str, int | float | str] = {}
    for part in filter(None, rest.split(",")):
        key, eq, value = part.partition("=")
        if not eq or key not in kinds:
            raise SpecError(f"{field}.{key}", part, f"{name} takes {', '.join(kinds)}")
        if key in args:
            raise SpecError(f"{field}.{key}", part, f"{key} given twice")
        args[key] = _read(value, kinds[key], f"{field}.{key}")
    return args


def _read(value: str, kind: Kind, where: str) -> int | float | str:
    if kind is str:
        return value
    if kind is int:
        try:  # exactly as typed: a float would round a long integer
            return int(value)
        except ValueError:
            pass  # 1e3 is an integer too; 1.5 is refused below
    try:
        number = float(value)
    except ValueError:
        raise SpecError(where, value, "not a number") from None
    if not math.isfinite(number):
        raise SpecError(where, value, "must be a finite number")
    if kind is int:
        if number != int(number):
            raise SpecError(where, value, "not an integer")
        return int(number)
    return number
