"""One strict reader for rlplan's CSV inputs (demand matrices, length histograms, traces).

``csv.DictReader`` is lax in ways that hide mistakes: a repeated header column silently keeps
the last value, a row with too many fields puts the extras under the key ``None``, a row with too
few fills ``None``. Here each of those is a SpecError naming the row, as is an unknown column.
A UTF-8 byte-order mark is stripped by the file reader (``planner.io.read_text``).
"""

from __future__ import annotations

import csv
import io

from costmodels.errors import SpecError


def read_rows(
    text: str,
    required: tuple[str, ...],
    optional: tuple[str, ...] = (),
    source: str | None = None,
    what: str = "CSV",
) -> list[dict[str, str]]:
    """Rows of ``text`` as dicts of the header's columns (blank lines skipped); errors name the
    row, 1-based with the header as row 1."""
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise SpecError(
            "header", "", f"{what} is empty; it needs columns {','.join(required)}", source
        ) from None
    except csv.Error as exc:
        raise SpecError("row 1", "", f"malformed {what}: {exc}", source) from None
    repeated = sorted({h for h in header if header.count(h) > 1})
    if repeated:
        raise SpecError("header", ",".join(header), f"column {repeated[0]!r} appears twice", source)
    missing = [c for c in required if c not in header]
    if missing:
        raise SpecError(
            "header",
            ",".join(header),
            f"{what} needs columns {','.join(required)}; missing {', '.join(missing)}",
            source,
        )
    unknown = [h for h in header if h not in required and h not in optional]
    if unknown:
        known = ", ".join((*required, *optional))
        raise SpecError(
            "header", ",".join(header), f"unknown column {unknown[0]!r}; known: {known}", source
        )
    rows = []
    try:
        for fields in reader:
            line = reader.line_num
            if not fields or all(not f.strip() for f in fields):
                continue
            if len(fields) != len(header):
                raise SpecError(
                    f"row {line}",
                    ",".join(fields)[:60],
                    f"{len(fields)} fields, the header has {len(header)}",
                    source,
                )
            rows.append(dict(zip(header, fields, strict=True)))
    except csv.Error as exc:
        raise SpecError(f"row {reader.line_num}", "", f"malformed {what}: {exc}", source) from None
    return rows
