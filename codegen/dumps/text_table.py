"""Tables as aligned text: the ``--format table`` of the dump command.

A row is printed as it is: no markup is read from it, control characters are shown escaped
(a record's text cannot move the terminal's cursor or start a new line), and a cell wider than
its column ends in an ellipsis. Columns are as wide as their widest cell; when the table is
wider than the page, the widest columns give up their width first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

__all__ = ["table_text"]

PAGE_WIDTH: Final = 200
"""Characters per line of a table."""

_ESCAPES: Final = {  # C0 and C1 controls, and the line and paragraph separators
    **{c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))},
    **{c: f"\\u{c:04x}" for c in (0x2028, 0x2029)},
    **{ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"},
}


def _width(text: str) -> int:
    """Terminal cells of ``text`` (East Asian wide characters take two)."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells, an ellipsis last where cut, padded to ``width``."""
    cells = _width(text)
    if cells <= width:
        return text + " " * (width - cells)
    if text.isascii():
        return text[: width - 1] + "…"
    from rich.cells import set_cell_size

    return set_cell_size(text, width - 1) + "…"


def _column_widths(natural: list[int], room: int) -> list[int]:
    """Widths within ``room``: the widest columns narrowed to one cap, as far as needed."""
    if sum(natural) <= room:
        return natural
    cap = max(natural)
    for c in sorted(set(natural), reverse=True):  # lower the cap step by step
        narrower = [min(w, c) for w in natural]
        if sum(narrower) <= room:
            break
        cap = c
    else:
        c = 0
    # between the step that fits (c) and the one that does not (cap): the largest cap that fits
    wide = sum(1 for w in natural if w >= cap)
    rest = sum(w for w in natural if w < cap)
    cap = max(c, (room - rest) // wide, 1)
    return [min(w, cap) for w in natural]


def table_text(
    header: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    title: str | None = None,
    width: int = PAGE_WIDTH,
) -> str:
    """The table's text: ``title`` centred above, the header, a line per row; each line begins
    with a space and columns are two spaces apart."""
    table = [tuple(header), *(_shown(row) for row in rows)]
    columns = list(zip(*table, strict=True))
    ascii_columns = ["".join(column).isascii() for column in columns]
    natural = [
        max(map(len, column)) if ascii else max(map(_width, column))
        for column, ascii in zip(columns, ascii_columns, strict=True)
    ]
    room = width - 2 - 2 * (len(header) - 1)
    widths = _column_widths(natural, max(room, len(header)))
    lines = []
    if title is not None:
        total = 2 + sum(widths) + 2 * (len(widths) - 1)
        lines.append(title.center(total).rstrip())
    line = " " + "  ".join(f"{{:<{w}}}" for w in widths)
    cut = [i for i, w in enumerate(widths) if natural[i] > w]
    for row in table:
        if "".join(row).isascii():  # the common case: str.format pads, cells too wide are cut
            if cut:
                row = list(row)
                for i in cut:
                    if len(row[i]) > widths[i]:
                        row[i] = row[i][: widths[i] - 1] + "…"
            lines.append(line.format(*row).rstrip())
        else:
            cells = "  ".join(_fit(c, w) for c, w in zip(row, widths, strict=True))
            lines.append((" " + cells).rstrip())
    return "\n".join(lines) + "\n"


def _shown(row: Sequence[str]) -> Sequence[str]:
    """The row with its control characters escaped."""
    if "".join(row).isprintable():  # no control character (a fast test, rarely False)
        return row
    return tuple(c.translate(_ESCAPES) for c in row)
