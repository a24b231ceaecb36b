"""Tables as aligned text: the ``--format table`` of the dump command.

A row is printed as it is: no markup is read from it, control characters are shown escaped
(a record's text cannot move the terminal's cursor or start a new line), and a cell wider than
its column ends in an ellipsis. Columns are as wide as their widest cell; when the table is
wider than the page, the widest columns give up their width first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

__all__ = ["columns_text", "columns_text_reference", "table_text"]

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
    columns = [list(column) for column in zip(*rows, strict=True)] or [[] for _ in header]
    return columns_text(header, columns, title=title, width=width)


def columns_text(
    header: Sequence[str],
    columns: Sequence[list[str]],
    *,
    title: str | None = None,
    width: int = PAGE_WIDTH,
) -> str:
    """:func:`table_text` of the rows given column by column (a list of cells per column, in
    row order): the text is the same; the work is done a column at a time. With the native
    backend the engine draws it (``codegen/native/table_text.h``), else
    :func:`columns_text_reference`."""
    from codegen.dumps.json_text import native_printer

    module = native_printer()
    if module is None:
        return columns_text_reference(header, columns, title=title, width=width)
    text: str = module.table_text(
        tuple(header),
        [column if type(column) is list else list(column) for column in columns],
        title,
        width,
        _width,
        _fit,
    )
    return text


def columns_text_reference(
    header: Sequence[str],
    columns: Sequence[list[str]],
    *,
    title: str | None = None,
    width: int = PAGE_WIDTH,
) -> str:
    """:func:`columns_text` in Python: the readable reference the engine's is compared with."""
    columns = [_shown_column(column) for column in columns]
    ascii_columns = [
        h.isascii() and "".join(column).isascii() for h, column in zip(header, columns, strict=True)
    ]
    natural = [
        max(len(h), max(map(len, column), default=0))
        if ascii
        else max(_width(h), max(map(_width, column), default=0))
        for h, column, ascii in zip(header, columns, ascii_columns, strict=True)
    ]
    room = width - 2 - 2 * (len(header) - 1)
    widths = _column_widths(natural, max(room, len(header)))
    lines = []
    if title is not None:
        total = 2 + sum(widths) + 2 * (len(widths) - 1)
        lines.append(title.center(total).rstrip())
    # The common case, every cell ASCII: str.format pads, cells too wide are cut first.
    line = " " + "  ".join(f"{{:<{w}}}" for w in widths)
    cut = [
        column if natural[i] <= w else [c if len(c) <= w else c[: w - 1] + "…" for c in column]
        for i, (column, w) in enumerate(zip(columns, widths, strict=True))
    ]
    lines.append(
        line.format(
            *(h if len(h) <= w else h[: w - 1] + "…" for h, w in zip(header, widths, strict=True))
        ).rstrip()
    )
    body = list(map(str.rstrip, map(line.format, *cut)))
    if not all(ascii_columns):  # rows with other characters: cells fitted by their width
        wide = [i for i, ascii in enumerate(ascii_columns) if not ascii]
        for r in range(len(body)):
            if all(columns[i][r].isascii() for i in wide):
                continue
            cells = "  ".join(_fit(c[r], w) for c, w in zip(columns, widths, strict=True))
            body[r] = (" " + cells).rstrip()
        if not all(map(str.isascii, header)):
            lines[-1] = (
                " " + "  ".join(_fit(h, w) for h, w in zip(header, widths, strict=True))
            ).rstrip()
    lines += body
    return "\n".join(lines) + "\n"


def _shown_column(column: list[str]) -> list[str]:
    """The column with its control characters escaped."""
    if "".join(column).isprintable():  # no control character (a fast test, rarely False)
        return column
    return [c.translate(_ESCAPES) for c in column]
