"""``--format table``'s text: aligned columns within the page, cells shown as they are."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len

from codegen.dumps.text_table import PAGE_WIDTH, table_text


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
