"""The columnar committed-offsets view (``codegen.dumps.views.offsets``) against the record-by-record
compacted view (``codegen.dumps.views.compacted.CompactedView``), on real segments written with
commits, tombstones, legacy records and transactions that commit, abort or stay open."""

from __future__ import annotations

import itertools
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegen.dumps.arrow import record_batches
from codegen.dumps.coordinator import CONSUMER_OFFSETS, coordinator_decoder, decode_batches
from codegen.dumps.decoded import DecodedBatch
from codegen.dumps.views.commit_rows import COMMIT_ROW_SCHEMA, OFFSET_SCHEMA, commit_rows
from codegen.dumps.views.commits import commit_keys, decode_commits
from codegen.dumps.views.committed import CommittedOffsets
from codegen.dumps.views.compacted import CompactedView
from codegen.dumps.views.consumer_offsets import read_compacted
from codegen.dumps.views.offsets import CommitHistory, deletions, latest
from codegen.dumps.views.reduction import reduce_plain
from codegen.dumps.writer import SegmentWriter
from codegen.forensics.groups import GroupsView
from codegen.forensics.offsets_view import OffsetsView
from generated import MESSAGES

_H = struct.Struct(">h")
COMMIT, ABORT = 1, 0


def _key(legacy: bool, group: str, topic: str, partition: int) -> bytes:
    name = "LegacyOffsetCommitKey" if legacy else "OffsetCommitKey"
    cls = MESSAGES[name]
    return _H.pack(cls.API_KEY) + cls(group=group, topic=topic, partition=partition).encode(0)


def _value(legacy: bool, version: int, offset: int, ts: int) -> bytes:
    if legacy:
        cls = MESSAGES["LegacyOffsetCommitValue"]
        return _H.pack(0) + cls(offset=offset, metadata="m", commit_timestamp=ts).encode(0)
    cls = MESSAGES["OffsetCommitValue"]
    fields: dict[str, Any] = {"offset": offset, "metadata": "", "commit_timestamp": ts}
    if version >= 3:
        fields["leader_epoch"] = offset % 7
    if version == 1:
        fields["expire_timestamp"] = ts + 1000
    return _H.pack(version) + cls(**fields).encode(version)


# One step of a log: ("commit", key, legacy, version, offset, producer or None, tombstone)
# or ("end", producer, COMMIT/ABORT).
KEYS = [("g1", "t", 0), ("g1", "t", 1), ("g2", "t", 0), ("", "u", 3)]
commit_step = st.tuples(
    st.just("commit"),
    st.sampled_from(range(len(KEYS))),
    st.booleans(),
    st.sampled_from([1, 2, 3]),
    st.integers(0, 10_000),
    st.one_of(st.none(), st.sampled_from([7, 8, 9])),
    st.booleans(),
)
end_step = st.tuples(st.just("end"), st.sampled_from([7, 8, 9]), st.sampled_from([COMMIT, ABORT]))
logs = st.lists(st.one_of(commit_step, commit_step, end_step), max_size=40)

# Group records among the commits: ("group", group, epoch, producer or None): a consumer
# group's ConsumerGroupMetadata record, transactional when it has a producer.
group_step = st.tuples(
    st.just("group"),
    st.sampled_from(["g1", "g2"]),
    st.integers(0, 50),
    st.one_of(st.none(), st.sampled_from([7, 8, 9])),
)
logs_with_groups = st.lists(st.one_of(commit_step, group_step, end_step, end_step), max_size=40)


def write_log(path: Path, steps: list[tuple[Any, ...]]) -> None:
    """The steps (commits, ends and groups), a batch each, in order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with SegmentWriter(path) as w:
        for n, step in enumerate(steps):
            ts = 1_700_000_000_000 + n
            if step[0] == "end":
                _, producer, kind = step
                w.write_control(kind, producer_id=producer, producer_epoch=0, timestamp=ts)
                continue
            if step[0] == "group":
                _, group, epoch, producer = step
                key = _H.pack(3) + MESSAGES["ConsumerGroupMetadataKey"](group_id=group).encode(0)
                value = _H.pack(0) + MESSAGES["ConsumerGroupMetadataValue"](epoch=epoch).encode(0)
            else:
                _, k, legacy, version, offset, producer, tombstone = step
                key = _key(legacy, *KEYS[k])
                value = None if tombstone else _value(legacy, version, offset, ts)
            w.write_batch(
                [(key, value)],
                timestamp=ts,
                producer_id=-1 if producer is None else producer,
                producer_epoch=-1 if producer is None else 0,
                transactional=producer is not None,
            )


def _reference(path: Path) -> list[dict[str, Any]]:
    view = CompactedView().add_batches(decode_batches(path))
    return [
        {
            "group": o.group,
            "topic": o.topic,
            "partition": o.partition,
            "offset": o.offset,
            "leaderEpoch": o.leader_epoch,
            "metadata": o.metadata,
            "commitTimestamp": o.commit_timestamp,
            "expireTimestamp": o.expire_timestamp,
            "recordOffset": o.record_offset,
        }
        for o in view.offset_rows()
    ]


def _reference_deletions(path: Path) -> list[tuple[str, str, int, int, int]]:
    view = GroupsView(0).add_batches(decode_batches(path))
    assert isinstance(view, GroupsView)
    return [
        (e.group, e.detail["topic"], e.detail["partition"], e.offset, e.timestamp)
        for e in view.events
        if e.kind == "offset-deleted"
    ]


def _decoded(path: Path, batch_rows: int) -> list[pa.Table]:
    return [decode_commits(rb)[0] for rb in record_batches(path, batch_rows=batch_rows)]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=logs,
    batch_rows=st.sampled_from([1, 3, 1000]),
    reduce_every=st.sampled_from([1, 5, 1 << 18]),
)
def test_the_columnar_view_equals_the_record_view(
    tmp_path: Path, steps: list[tuple[Any, ...]], batch_rows: int, reduce_every: int
) -> None:  # fmt: skip
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    offsets = CommittedOffsets(reduce_every=reduce_every)
    for table in _decoded(path, batch_rows):
        offsets.add(table)
    assert offsets.table().to_pylist() == _reference(path)
    assert [tuple(r.values()) for r in offsets.deleted().to_pylist()] == _reference_deletions(path)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=logs, seed=st.randoms(use_true_random=False))
def test_the_reduction_step_takes_chunks_in_any_order(
    tmp_path: Path, steps: list[tuple[Any, ...]], seed: Any
) -> None:  # fmt: skip
    """What Spark does: reduce_plain on chunks read in any order, then latest per partition."""
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    chunks = [commit_rows(t) for t in _decoded(path, 2)]
    seed.shuffle(chunks)
    reduced = [reduce_plain(c) for c in chunks]
    seed.shuffle(reduced)
    rows = reduce_plain(pa.concat_tables(reduced)) if reduced else OFFSET_SCHEMA.empty_table()
    got = latest(rows) if reduced else rows
    assert got.to_pylist() == _reference(path)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=logs_with_groups, batch_rows=st.sampled_from([1, 4, 1000]))
def test_group_records_read_from_columns_equal_the_record_view(
    tmp_path: Path, steps: list[tuple[Any, ...]], batch_rows: int
) -> None:  # fmt: skip
    """``read_compacted`` (commits as columns, the other records one by one, markers only to
    the producers with open group records) gives the record view's groups and offsets, with
    transactions of group records and of commits by the same and by other producers."""
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    reference = CompactedView().add_batches(decode_batches(path))
    view, offsets = CompactedView(), CommittedOffsets()
    decoder = coordinator_decoder(CONSUMER_OFFSETS)
    limits = {"max_batch_size": 1 << 20, "max_batch_records": 1 << 20, "batch_rows": batch_rows}
    for _ in read_compacted(path, view, offsets, decoder, **limits):
        pass
    view.take_offsets(offsets)
    assert view.group_rows() == reference.group_rows()
    assert view.offset_rows() == reference.offset_rows()
    open_groups = {  # the open transactions' group records (the columns hold the commits)
        producer: [r.offset for r in records if "OffsetCommit" not in r.name]
        for producer, records in reference.pending.items()
    }
    assert {p: [r.offset for r in rs] for p, rs in view.pending.items()} == {
        p: offsets for p, offsets in open_groups.items() if offsets
    }
    # the chunks' counts (made when read) are the log batches and records the file holds
    chunks = list(read_compacted(path, CompactedView(), CommittedOffsets(), decoder, **limits))
    positions = [p for rb in record_batches(path, batch_rows=batch_rows)
                 for p in rb.column("batchPosition").to_pylist()]  # fmt: skip
    assert sum(c.records for c in chunks) == len(positions)
    assert sum(c.batches for c in chunks) == len(set(positions))
    assert [c.position for c in chunks][-1:] == ([max(positions)] if positions else [])
    records = [r for b in decode_batches(path) if isinstance(b, DecodedBatch) for r in b.records]
    assert sum(c.newer for c in chunks) == sum(r.newer_than_spec for r in records)


def test_a_transactional_commit_applies_at_its_marker(tmp_path: Path) -> None:
    """A transactional commit made before a plain one of the same key, committed after it,
    wins: it takes effect at the COMMIT marker."""
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    steps = [
        ("commit", 0, False, 3, 100, 7, False),  # offset 0: transactional, producer 7
        ("commit", 0, False, 3, 200, None, False),  # offset 1: plain
        ("end", 7, COMMIT),  # offset 2
        ("commit", 1, False, 3, 300, 8, False),  # offset 3: aborted
        ("end", 8, ABORT),
        ("commit", 2, False, 3, 400, 9, False),  # never ends
    ]
    write_log(path, steps)
    offsets = CommittedOffsets()
    for table in _decoded(path, 1000):
        offsets.add(table)
    rows = offsets.table().to_pylist()
    assert [(r["group"], r["partition"], r["offset"], r["recordOffset"]) for r in rows] == [
        ("g1", 0, 100, 0)
    ]
    assert rows == _reference(path)


@pytest.mark.parametrize("plain_after", [False, True])
def test_a_transactional_tombstone_deletes_the_offset_live_at_its_marker(
    tmp_path: Path, plain_after: bool
) -> None:
    """The commit a transactional tombstone deletes is the one live at its COMMIT marker: the
    reduction keeps it, though it sees a newer plain commit of the key (and, with
    ``plain_after``, one made between the tombstone and its marker)."""
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    steps: list[tuple[Any, ...]] = [("commit", 0, False, 3, n, None, False) for n in range(4)]
    steps.append(("commit", 0, False, 3, 0, 8, True))  # offset 4: transactional tombstone
    if plain_after:
        steps.append(("commit", 0, False, 3, 50, None, False))  # offset 5: what it deletes
    steps += [("end", 8, COMMIT), ("commit", 0, False, 3, 99, None, False)]
    write_log(path, steps)
    rows = pa.concat_tables([commit_rows(t) for t in _decoded(path, 1000)])
    expected = _reference_deletions(path)
    assert [d[3] for d in expected] == [4]
    for k in range(rows.num_rows + 1):  # reduced once after each row, then at the end
        reduced = reduce_plain(pa.concat_tables([reduce_plain(rows[:k]), rows[k:]]))
        got = [tuple(r.values()) for r in deletions(reduced).to_pylist()]
        assert got == expected, k


def test_rows_that_did_not_decode_are_left_out(tmp_path: Path) -> None:
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    good = _value(False, 3, 5, 1)
    with SegmentWriter(path.parent.mkdir(parents=True) or path) as w:
        w.write_batch([(_key(False, "g", "t", 0), good)])
        w.write_batch([(_key(False, "g", "t", 0), _H.pack(3) + b"\x00")])  # cut short
    (table,) = _decoded(path, 1000)
    assert table.column("_decode_error").null_count == 1
    got = latest(commit_rows(table)).to_pylist()
    assert [r["offset"] for r in got] == [5] == [r["offset"] for r in _reference(path)]


def test_an_empty_input_has_no_offsets() -> None:
    assert CommittedOffsets().table().num_rows == 0
    assert latest(COMMIT_ROW_SCHEMA.empty_table()).schema == OFFSET_SCHEMA


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=logs, batch_rows=st.sampled_from([1, 3, 1000]))
def test_the_commit_history_equals_the_record_view(
    tmp_path: Path, steps: list[tuple[Any, ...]], batch_rows: int
) -> None:
    """What ``lag`` reads: every commit that took effect, the tombstones after a commit, and
    which offsets are live."""
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    expected = OffsetsView(0).add_batches(decode_batches(path))
    assert isinstance(expected, OffsetsView)
    commits = CommitHistory()
    for table in _decoded(path, batch_rows):
        commits.add(table)
    got = OffsetsView(0)
    got.take_history(commits.table())
    assert got.history == expected.history
    assert got.deletions == expected.deletions
    assert got.offsets == expected.offsets


@settings(max_examples=200, deadline=None)
@given(
    codes=st.lists(
        st.one_of(st.integers(0, 40), st.integers(0, 2**32 - 1), st.integers(0, 2**62)),
        max_size=300,
    )
)
def test_stable_order_is_numpys_stable_argsort(codes: list[int]) -> None:
    """The radix passes give numpy's stable order: equal codes keep their order."""
    import numpy as np

    from codegen.dumps.views.compaction import stable_order

    for values in (codes, [c % 2**16 for c in codes], [c % 2**32 for c in codes]):
        array = np.array(values, np.int64)
        expected = np.argsort(array, kind="stable")
        assert stable_order(array).tolist() == expected.tolist()


_KEY_ROWS = st.lists(
    st.tuples(
        st.none() | st.sampled_from(["", "a", "b", "ab", "\u00e9"]),
        st.none() | st.integers(-(2**31), 2**31 - 1) | st.integers(-2, 2),
        st.none() | st.binary(max_size=3),
        st.none() | st.integers(-(2**63), 2**63 - 1) | st.integers(-2, 2),
    ),
    max_size=200,
)


@settings(max_examples=200, deadline=None)
@given(rows=_KEY_ROWS, among=st.lists(st.booleans(), min_size=200, max_size=200))
def test_key_groupings_group_equal_keys(rows: list[tuple[Any, ...]], among: list[bool]) -> None:
    """``key_ids``, ``last_rows`` and ``key_groups`` group rows by equal keys (null a value of
    its own), over strings, binary, narrow and wide integers, with a one-value column, and a
    code span too wide to join (four columns of 2**31 to 2**64 values)."""
    from codegen.dumps.views.compaction import key_groups, key_ids, last_rows

    names = ["s", "i", "b", "w"]
    types = [pa.string(), pa.int32(), pa.binary(), pa.int64()]
    columns = {
        n: pa.array([r[k] for r in rows], t)
        for k, (n, t) in enumerate(zip(names, types, strict=True))
    }
    table = pa.table(columns | {"none": pa.nulls(len(rows), pa.string())})
    chosen = np.array(among[: len(rows)], np.bool_)
    for keys in (names, ["s"], ["i", "none"], ["w", "i", "w", "i"]):
        values = [tuple(r[names.index(k)] if k in names else None for k in keys) for r in rows]
        ids = key_ids(table, keys).tolist()
        assert len(set(ids)) == len(set(values))
        assert all(
            (ids[a] == ids[b]) == (values[a] == values[b])
            for a in range(len(rows))
            for b in range(a)
        )
        for subset in (None, chosen):
            picked = [i for i in range(len(rows)) if subset is None or subset[i]]
            last = {values[i]: i for i in picked}
            assert last_rows(table, keys, subset).tolist() == sorted(last.values())
            order, bounds = key_groups(table, keys, subset)
            groups = [order[a:b].tolist() for a, b in itertools.pairwise(bounds.tolist())]
            expected = {}
            for i in picked:
                expected.setdefault(values[i], []).append(i)
            assert sorted(groups) == sorted(expected.values())


_SORT_ROWS = st.lists(
    st.tuples(
        st.none() | st.sampled_from(["", "a", "A", "ab", "b", "\u00e9", "z\x00", "\U0001f600"]),
        st.none() | st.sampled_from(["", "t", "t-1", "\u00fc"]),
        st.none() | st.integers(-(2**31), 2**31 - 1) | st.integers(-2, 2),
    ),
    max_size=120,
)


@settings(max_examples=200, deadline=None)
@given(rows=_SORT_ROWS, split=st.integers(0, 120))
def test_by_key_is_arrows_sort_by_the_commit_key(rows: list[tuple[Any, ...]], split: int) -> None:
    """``by_key`` orders rows as Arrow's ``sort_by`` group, topic, partition ascending: strings
    by their bytes, nulls last, equal keys in row order, over chunked columns too."""
    from codegen.dumps.views.commit_rows import COMMIT_KEY
    from codegen.dumps.views.offsets import by_key

    table = pa.table(
        {
            "group": pa.array([r[0] for r in rows], pa.string()),
            "topic": pa.array([r[1] for r in rows], pa.string()),
            "partition": pa.array([r[2] for r in rows], pa.int32()),
            "row": pa.array(range(len(rows)), pa.int64()),
        }
    )
    split = min(split, len(rows))
    for t in (table, pa.concat_tables([table.slice(0, split), table.slice(split)])):
        assert by_key(t).equals(t.sort_by([(k, "ascending") for k in COMMIT_KEY]))


def test_committed_offsets_are_the_schema_columns_in_order() -> None:
    """``CommittedOffset.from_table`` takes the columns by position: the fields and the
    columnar view's columns are the same, in the same order."""
    from codegen.dumps.views.compacted import CommittedOffset
    from codegen.naming import camel_case

    assert [camel_case(name) for name in CommittedOffset._fields] == OFFSET_SCHEMA.names


@pytest.mark.parametrize("keys", [[], [b""], [b"", None, b"\x00"]])
def test_chunks_with_no_byte_to_read_have_no_commit(keys: list[bytes | None]) -> None:
    """A chunk of no row (a partition with no record before an --as-of cut) or of keys too
    short for a record type: its data buffer may hold no byte at all."""
    found = commit_keys(pa.array(keys, pa.binary()), np.zeros(len(keys), np.bool_))
    assert found.tolist() == [False] * len(keys)


_TEXT = st.text(st.characters(codec="utf-8"), max_size=6)


_PRINTABLE = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=6)
"""Printable ASCII, quotes and backslashes included: the columns offset_lines neither searches
for control characters nor (without a quote or a backslash) escapes."""


def _offset_rows(text: st.SearchStrategy[str]) -> st.SearchStrategy[list[tuple[Any, ...]]]:
    return st.lists(
        st.tuples(
            text,
            text,
            st.integers(-(2**31), 2**31 - 1),
            st.integers(-(2**63), 2**63 - 1),
            st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
            st.one_of(st.none(), text),
            st.integers(-(2**63), 2**63 - 1),
        ),
        max_size=8,
    )


@settings(max_examples=200, deadline=None)
@given(
    rows=st.one_of(_offset_rows(_TEXT), _offset_rows(_PRINTABLE)),
    split=st.integers(0, 8),
)
def test_offset_lines_are_compact_json_of_each_row(rows: list[tuple[Any, ...]], split: int) -> None:
    """``dump --compacted``'s offset lines, made a column at a time, are the lines
    ``compact_json`` writes row by row: quotes, backslashes, control characters, any Unicode,
    nulls, the integers' bounds, columns of printable ASCII only; tables of one chunk or
    several."""
    from codegen.dumps.jsonl import offset_lines
    from codegen.dumps.record_json import compact_json

    table = pa.Table.from_pylist(
        [dict(zip(OFFSET_SCHEMA.names, (*r[:6], r[6], r[6], r[3]), strict=True)) for r in rows],
        schema=OFFSET_SCHEMA,
    )
    table = pa.concat_tables([table.slice(0, split), table.slice(split)])
    expected = b"".join(compact_json({"view": "offset", **r}) + b"\n" for r in table.to_pylist())
    assert offset_lines(table) == expected


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), st.booleans()), max_size=40),
    start=st.integers(0, 40),
    split=st.integers(0, 40),
)
def test_flags_read_from_bitmaps_are_the_values_with_null_as_false(
    values: list[bool | None], start: int, split: int
) -> None:
    """flags reads a boolean column's bitmaps: arrays sliced off a byte boundary, nulls,
    chunked columns of any split, no chunk at all."""
    from codegen.dumps.views.compaction import flags

    array = pa.array(values, pa.bool_())
    start = min(start, len(values))
    split = min(split, len(values))
    expected = [bool(v) for v in values]
    for column, wanted in [
        (array, expected),
        (array.slice(start), expected[start:]),
        (pa.chunked_array([array.slice(0, split), array.slice(split)], pa.bool_()), expected),
        (pa.chunked_array([], pa.bool_()), []),
        (pa.nulls(len(values)), [False] * len(values)),
    ]:
        got = flags(column)
        assert got.dtype == np.bool_
        assert got.tolist() == wanted


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), st.booleans()), max_size=40),
    start=st.integers(0, 40),
    split=st.integers(0, 40),
    picks=st.lists(st.integers(0, 39), max_size=10),
)
def test_flags_at_rows_are_those_rows_flags(
    values: list[bool | None], start: int, split: int, picks: list[int]
) -> None:
    """flags_at reads a boolean column's bitmaps at some rows only: flags at those rows, for
    arrays sliced off a byte boundary, nulls, chunked columns and a column of nulls."""
    from codegen.dumps.views.compaction import flags, flags_at

    array = pa.array(values, pa.bool_())
    start = min(start, len(values))
    split = min(split, len(values))
    for column in [
        array,
        array.slice(start),
        pa.chunked_array([array.slice(0, split), array.slice(split)], pa.bool_()),
        pa.chunked_array([array], pa.bool_()),
        pa.nulls(len(values)),
    ]:
        at = np.array([i for i in picks if i < len(column)], np.intp)
        got = flags_at(column, at)
        assert got.dtype == np.bool_
        assert got.tolist() == flags(column)[at].tolist()


def test_chunk_counts_count_commits_newer_than_the_specs(tmp_path: Path) -> None:
    """A chunk counts its offset commits of a value version newer than the specs (when read)
    with its records, batches and last batch position."""
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, [("commit", 0, False, 3, 5, None, False)] * 2)
    v4 = MESSAGES["OffsetCommitValue"](offset=9, metadata="", commit_timestamp=1).encode(4)
    newer = b"\x00\x07" + v4[:-1] + b"\x01\x07\x02\xab\xcd"  # an unknown tag 7 of 2 bytes
    with SegmentWriter(path, append=True) as w:
        w.write_batch([(_key(False, *KEYS[1]), newer)], timestamp=1)
    decoder = coordinator_decoder(CONSUMER_OFFSETS)
    limits = {"max_batch_size": 1 << 20, "max_batch_records": 1 << 20}
    chunks = list(read_compacted(path, CompactedView(), CommittedOffsets(), decoder, **limits))
    assert [(c.newer, c.records, c.batches) for c in chunks] == [(1, 3, 3)]
    positions = next(record_batches(path)).column("batchPosition").to_pylist()
    assert chunks[0].position == max(positions) > 0


def test_commits_checked_in_the_engines_pass_count_and_apply_as_decoded(
    tmp_path: Path,
) -> None:
    """``read_compacted`` with each commit checked in the engine's pass as it reads it
    (``add_checked``) counts the newer versions and the errors (refused commits, with their
    texts) and applies the commits as where the rows are decoded first and as the pure backend
    does: rows of every kind (newer versions, refused keys and values, tombstones, other
    record types), plain, in a committed transaction and in one left open."""
    from unittest import mock

    from commit_rows_data import seeds

    from codegen.dumps.views import committed
    from codegen.runtime.backends import use_backend

    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    path.parent.mkdir(parents=True)
    rows = [(key, value) for key, value, control in seeds() if control is False]
    with SegmentWriter(path) as w:
        for n, record in enumerate(rows * 2):
            w.write_batch([record], timestamp=1_700_000_000_000 + n)
        for producer, at in ((7, 1_700_000_001_000), (8, 1_700_000_003_000)):
            w.write_batch(rows, timestamp=at, producer_id=producer, producer_epoch=0,
                          transactional=True)  # fmt: skip
        # producer 7's transaction committed, 8's left open
        w.write_control(COMMIT, producer_id=7, producer_epoch=0, timestamp=1_700_000_004_000)

    def read(batch_rows: int) -> tuple[Any, ...]:
        view, offsets = CompactedView(), CommittedOffsets()
        decoder = coordinator_decoder(CONSUMER_OFFSETS)
        limits = {"max_batch_size": 1 << 20, "max_batch_records": 1 << 20}
        chunks = list(read_compacted(path, view, offsets, decoder, batch_rows=batch_rows, **limits))
        view.take_offsets(offsets)
        return (
            sum(c.newer for c in chunks),
            [(p, r.error) for c in chunks for p, r in c.errors],
            sum(c.unknown for c in chunks),
            view.group_rows(),
            view.offset_rows(),
            {p: [r.offset for r in rs] for p, rs in view.pending.items()},
        )

    for batch_rows in (3, 1000):
        checked = read(batch_rows)
        assert checked[0] == 8 and len(checked[1]) == 24  # newer versions, errors
        with mock.patch.object(committed, "engine_checks", return_value=False):
            assert read(batch_rows) == checked
        use_backend("pure")
        try:
            assert read(batch_rows) == checked
        finally:
            use_backend(None)
