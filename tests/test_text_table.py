"""``--format table``'s text: aligned columns within the page, cells shown as they are."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.cells import cell_len

from codegen.dumps.json_text import jsontext_module
from codegen.dumps.text_table import (
    PAGE_WIDTH,
    columns_text,
    columns_text_reference,
    table_text,
)
from codegen.runtime import backends


def test_columns_line_up_two_spaces_apart() -> None:
    text = table_text(("a", "long header"), [("xyz", "1"), ("", "22")])
    assert text.splitlines() == [" a    long header", " xyz  1", "      22"]


def test_a_title_is_centred_over_the_table() -> None:
    first = table_text(("group", "offset"), [("g", "1")], title="offsets").splitlines()[0]
    assert first.strip() == "offsets" and first.startswith("   ")


def test_markup_and_control_characters_are_shown_not_obeyed() -> None:
    text = table_text(("metadata",), [("[bold]x[/bold]",), ("a\nb\x1b[2J\tc",)])
    lines = text.splitlines()
    assert lines[1].strip() == "[bold]x[/bold]"
    assert lines[2].strip() == "a\\nb\\x1b[2J\\tc"
    assert len(lines) == 3


def test_a_wide_table_narrows_its_widest_columns_first() -> None:
    row = ("p-0", "k" * 150, "v" * 300)
    lines = table_text(("partition", "key", "value"), [row]).splitlines()
    assert all(cell_len(line) <= PAGE_WIDTH for line in lines)
    cells = lines[1].split()
    assert cells[0] == "p-0"  # narrow columns keep their width
    assert cells[1].endswith("…") and cells[2].endswith("…")
    assert len(cells[1]) == len(cells[2])  # the two wide ones share the room


def test_east_asian_wide_characters_take_two_cells() -> None:
    lines = table_text(("name", "n"), [("日本", "1"), ("ab", "2")]).splitlines()
    assert cell_len(lines[1]) == cell_len(lines[2])
    narrow = table_text(("v",), [("日本語" * 100,)], width=21).splitlines()[1]
    assert cell_len(narrow) <= 21 and narrow.endswith("…")


# Drawing up to 2 KB of text per example is slow where every allocation goes through
# AddressSanitizer (make sanitize): generation speed is no part of what this checks.
@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    st.lists(
        st.tuples(st.text(max_size=120), st.text(max_size=300), st.text(max_size=5)),
        min_size=1,
        max_size=5,
    ),
    st.integers(min_value=20, max_value=250),
)
def test_every_line_fits_the_page_and_every_row_is_one_line(
    rows: list[tuple[str, str, str]], width: int
) -> None:
    lines = table_text(("a", "b", "c"), rows, width=width).splitlines()
    assert len(lines) == len(rows) + 1
    assert all(cell_len(line) <= width for line in lines)


# ------------------------------------------------ the engine's text against the reference

_NATIVE = jsontext_module() is not None and backends.requested() != backends.PURE
_native = pytest.mark.skipif(not _NATIVE, reason="the native printer is not built or not asked for")

_CHARACTERS = st.one_of(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E),
    st.sampled_from(
        "\n\r\t\x00\x1b\x7f\x85\x9f\xa0\xad\xe9\xfc\u0301\u2028\u2029\u3000\u200d\ufe0f"
        "日本語한\U0001f600\U0001f468\u2026\x1c"
    ),
    st.characters(codec="utf-8"),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),  # lone surrogates
)
_CELLS = st.one_of(st.just(""), st.text(_CHARACTERS, max_size=40), st.text(max_size=250))


@st.composite
def _tables(draw: st.DrawFn) -> tuple[tuple[str, ...], list[list[str]], str | None, int]:
    ncol = draw(st.integers(1, 6))
    nrows = draw(st.integers(0, 6))
    header = tuple(draw(st.lists(st.text(_CHARACTERS, max_size=12), min_size=ncol, max_size=ncol)))
    columns = [draw(st.lists(_CELLS, min_size=nrows, max_size=nrows)) for _ in range(ncol)]
    title = draw(st.none() | st.text(_CHARACTERS, max_size=30))
    width = draw(st.integers(1, 260))
    return header, columns, title, width


@_native
@settings(max_examples=400, deadline=None)
@given(_tables())
def test_the_engines_table_is_the_references(
    table: tuple[tuple[str, ...], list[list[str]], str | None, int],
) -> None:
    header, columns, title, width = table
    assert columns_text(header, columns, title=title, width=width) == columns_text_reference(
        header, columns, title=title, width=width
    )


@_native
def test_the_engines_table_of_records_is_the_references() -> None:
    header = ("partition", "offset", "key", "value")
    rows = [
        ("p-0", "0", '{"group":"g"}', '{"offset":1}'),
        ("p-0", "1", "é" * 90, "v" * 300),
        ("p-0", "2", "日本" * 50, "a\nb\x1b[2J\tc\u2028"),
        ("p-0", "3", "", "<tombstone>"),
        ("p-1", "4", "\U0001f468\u200d\U0001f469", "ü ﻿\u3000"),
    ]
    columns = [list(column) for column in zip(*rows, strict=True)]
    for width in (8, 40, 120, 200, 400):
        for title in (None, "records", "日本語の表"):
            assert columns_text(header, columns, title=title, width=width) == (
                columns_text_reference(header, columns, title=title, width=width)
            )


def test_cells_that_are_not_text_are_refused() -> None:
    if not _NATIVE:
        pytest.skip("the native printer is not built or not asked for")
    with pytest.raises(TypeError):
        columns_text(("a",), [[1]])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        columns_text(("a", "b"), [["x"], []])
