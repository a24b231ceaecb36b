"""The native commit decoder fuzzed against the reference: batches of ``__consumer_offsets``
rows (offset-commit keys and values of every version, other records, control records, nulls),
their bytes mutated (tests/fuzz/mutations.py), decoded by both: the same columns and errors."""

from __future__ import annotations

import pytest
from commit_rows_data import arrays, assert_same_as_reference, seeds
from hypothesis import given
from hypothesis import strategies as st
from mutations import mutated

from codegen.dumps.views.commit_columns import native_commit_columns

pytestmark = pytest.mark.skipif(
    native_commit_columns(*arrays([]), "generated") is None,
    reason="the native engine is not built (or the pure backend is chosen)",
)

_SEEDS = seeds()
_KEYS = st.sampled_from([k for k, _, _ in _SEEDS if k is not None])
_VALUES = st.sampled_from([v for _, v, _ in _SEEDS if v is not None])
_ROW = st.tuples(
    st.one_of(_KEYS, mutated(_KEYS), st.none()),
    st.one_of(_VALUES, mutated(_VALUES), st.none()),
    st.one_of(st.just(False), st.booleans(), st.none()),
)


@given(rows=st.lists(_ROW, max_size=12), large=st.booleans(), start=st.integers(0, 3))
def test_mutated_rows_decode_as_the_reference_decodes_them(
    rows: list[tuple[bytes | None, bytes | None, bool | None]], large: bool, start: int
) -> None:
    key, value, control = arrays(rows, large)
    assert_same_as_reference(key, value, control)
    assert_same_as_reference(key[start:], value[start:], control[start:])
