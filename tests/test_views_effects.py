"""The native engine's one pass over a log partition's commits (codegen.dumps.views.effects,
commit_effects.h) against the pure backend's sorts (compaction.apply_offsets and the sorts of
codegen.dumps.views.offsets): the committed offsets and the deleting tombstones, row for row,
from the engine's columns (the command line) and from commit rows in any order (Spark's
``applyInArrow`` step); and its typed errors on bad arguments."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegen.columnar.package import SHIPPED
from codegen.dumps.arrow import record_batches
from codegen.dumps.views import effects
from codegen.dumps.views.commit_rows import (
    DELETION_SCHEMA,
    OFFSET_SCHEMA,
    _either,
    commit_numbers,
    commit_rows,
    offset_commits,
)
from codegen.dumps.views.commits import decode_commits
from codegen.dumps.views.committed import CommittedOffsets
from codegen.dumps.views.compaction import end_markers, flags
from codegen.dumps.views.effects import (
    ABORT_MARKER,
    COMMIT_MARKER,
    CONTROL,
    DECODED,
    NOTHING,
    PLAIN_COMMIT,
    TOMBSTONE,
    TRANSACTIONAL,
    commit_row_effects,
    commit_row_history,
    native_enabled,
)
from codegen.dumps.views.offsets import (
    deletions,
    deletions_in_effect,
    in_effect,
    latest,
    latest_in_effect,
)
from codegen.runtime.backends import use_backend
from tests.test_views_offsets import KEYS, _decoded, _key, logs, logs_with_groups, write_log

pytestmark = pytest.mark.skipif(not native_enabled(), reason="the native engine is not built")


def _shuffled_commit_rows(
    tmp_path: Path, steps: list[tuple[Any, ...]], seed: random.Random
) -> pa.Table | None:  # fmt: skip
    """The commit rows of a log partition written from ``steps``, in an order ``seed`` draws
    (as Spark's tasks may hand them); None when the log has no commit rows."""
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    tables = [commit_rows(t) for t in _decoded(path, 1000)]
    if not tables:
        return None
    rows = pa.concat_tables(tables)
    order = list(range(rows.num_rows))
    seed.shuffle(order)
    return rows.take(pa.array(order, pa.int64()))


def _both(decoded: list[pa.Table]) -> list[tuple[pa.Table, pa.Table]]:
    """The engine's answer and the pure backend's; the engine's is also that of the rows
    added as they are read, each commit checked in the engine's pass (add_checked)."""
    answers = []
    for backend in ("native", "pure"):
        use_backend(backend)
        try:
            offsets = CommittedOffsets()
            for table in decoded:
                offsets.add(table)
            answers.append((offsets.table(), offsets.deleted()))
            if backend == "native":
                checked = CommittedOffsets()
                for table in decoded:  # (its decoded columns are not read)
                    assert checked.add_checked(table, SHIPPED) is not None
                assert checked.table().equals(answers[0][0])
                assert checked.deleted().equals(answers[0][1])
        finally:
            use_backend(None)
    return answers


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=logs, batch_rows=st.sampled_from([1, 3, 16, 17, 1000]))
def test_one_pass_equals_the_sorts(
    tmp_path: Path, steps: list[tuple[Any, ...]], batch_rows: int
) -> None:  # fmt: skip
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    (native, pure) = _both(_decoded(path, batch_rows))
    assert native[0].equals(pure[0])
    assert native[1].equals(pure[1])


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=logs, seed=st.randoms(use_true_random=False))
def test_commit_rows_in_any_order_equal_the_sorts(
    tmp_path: Path, steps: list[tuple[Any, ...]], seed: random.Random
) -> None:  # fmt: skip
    """Spark's step: the commit rows of a log partition, shuffled, to latest and deletions."""
    rows = _shuffled_commit_rows(tmp_path, steps, seed)
    if rows is None:  # no steps
        return
    assert commit_row_effects(rows.sort_by("recordOffset")) is not None
    ordered = in_effect(rows)
    assert latest(rows).equals(latest_in_effect(ordered))
    assert deletions(rows).equals(deletions_in_effect(ordered))


def test_a_large_dump_with_open_transactions(tmp_path: Path) -> None:
    """Thousands of keys and transactions, some never ended: the engine's tables grow and its
    value and waiting-row stores are compacted many times over."""
    rng = random.Random(7)
    steps: list[tuple[Any, ...]] = []
    keys = list(range(4))
    for n in range(6000):
        producer = rng.choice([None, None, 7, 8, 9])
        if producer is not None and rng.random() < 0.1:
            steps.append(("end", producer, rng.choice([0, 1])))
        steps.append(
            ("commit", rng.choice(keys), rng.random() < 0.2, 3, n, producer, rng.random() < 0.05)
        )
    steps.append(("end", 7, 1))  # 8 and 9 left open
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    (native, pure) = _both(_decoded(path, 512))
    assert native[0].equals(pure[0])
    assert native[1].equals(pure[1])
    assert native[0].num_rows and native[1].num_rows


def test_many_keys_and_producers_grow_the_tables() -> None:
    """More keys and producers than the first tables hold, straight through the engine."""
    from codegen.native import _records

    n = 20_000
    keys = [_key(False, f"group-{i % 9000}", "topic", i % 3) for i in range(n)]
    key = pa.array(keys, pa.binary())
    value = pa.array([b"\x00\x03" + bytes(20)] * n, pa.binary())
    kinds = np.where(np.arange(n) % 2, 3, 1).astype(np.uint8)  # every other transactional
    producers = np.arange(n, dtype=np.int64)  # each its own producer, never ended
    effects = _records.CommitEffects()
    got = effects.add_records(
        *_buffers(key), *_buffers(value), _flags_of(kinds), producers,
        np.arange(n, dtype=np.int64), np.zeros(n, np.int64),
    )  # fmt: skip
    assert got == kinds.tobytes()
    rows = np.frombuffer(effects.live()[0], np.int64)
    # the plain commits only, the last of each key
    last: dict[bytes, int] = {}
    for i in range(0, n, 2):
        last[keys[i][2:]] = i
    assert rows.tolist() == sorted(last.values())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_values_written_over_and_moved_are_each_keys_last(seed: int) -> None:
    """Plain commits whose value (in the value arena: 120 bytes and more beside a key of 15 to
    17) is as long as their key's committed one are written over it, the others appended (and
    the arena compacted) or kept beside the key: each key's committed value is its last
    commit's bytes, through tombstones, transactional commits taking effect in between, and
    chunks of any size."""
    rng = random.Random(seed)
    keys = [_key(False, f"g{i}", "topic", i % 4) for i in range(300)]
    _assert_each_keys_last_value(rng, keys, 20_000, [0, 9, 17, 40, 130, 200], usual=120)


@pytest.mark.parametrize("seed", [1, 2])
def test_keys_in_their_entries_or_apart_and_values_beside_them_or_apart(seed: int) -> None:
    """A key of up to 128 bytes (after its type) is held in its table entry, a longer one
    apart; a plain commit's value is kept beside its key in the entry when both fit in those
    128 bytes, else in the value arena: keys of 0 (a key of another shape, its type only) to
    133 bytes, at and around 64 and 128, values of every length copy_short copies its own way
    (up to 64 bytes) and longer, whose sum with their key's size is 127, 128 and 129, a key's
    value moving between the entry and the arena, and enough keys (2,600) that the table's
    entries and slots grow several times."""
    rng = random.Random(seed)
    # keys of another shape (too short, a group's length below -1): their bytes after the
    # type, 0 to 129
    keys = [b"\x00\x01"] + [b"\x00\x01\xff\xfe" + bytes(n) for n in (0, 60, 62, 63, 126, 127)]
    for i in range(2_600):  # sizes after the type 13 + group: 14 to 133, 64, 65, 128, 129 among
        group = f"g{i}".ljust(rng.choice([1, 21, 27, 28, 51, 52, 115, 116, 120]), "x")
        keys.append(_key(False, group, "topic", i % 4))
    sizes = [0, 1, 9, 16, 17, 23, 24, 30, 32, 33, 40, 50, 63, 64, 65, 87, 88, 89, 104]
    _assert_each_keys_last_value(rng, keys, 40_000, sizes)


@pytest.mark.parametrize("size", [0, 1, 8, 9, 24, 40, 63, 64, 65])
def test_values_at_the_end_of_a_chunks_data_are_copied_as_long_as_they_are(size: int) -> None:
    """A plain commit's value of up to 64 bytes beside a key of up to 64 is copied as 64 bytes
    where the chunk's value data holds that many from the value's start, else as long as it
    is: rows of values of one size, the last ones within 64 bytes of the data's end (an exact
    bytes object, so that a read past it is the sanitizers' error, as Arrow pads its buffers),
    of keys of 10, 64 and 65 bytes after their type, each key committed twice (the second
    value written over the first beside the key) in chunks of 1 to 5 rows."""
    from codegen.native import _records

    rng = random.Random(size)
    keys = [_key(False, "g", "t", 0), _key(False, "g".ljust(55, "x"), "t", 1)]
    keys.append(_key(False, "g".ljust(56, "x"), "t", 2))
    assert [len(k) - 2 for k in keys] == [10, 64, 65]
    effects = _records.CommitEffects()
    live: dict[bytes, tuple[int, bytes]] = {}
    row = 0
    for chunk_size in (1, 2, 3, 4, 5, 3, 2, 1):
        chunk_keys = [keys[(row + j) % len(keys)] for j in range(chunk_size)]
        values = [rng.randbytes(size) for _ in chunk_keys]
        ends = np.cumsum([0] + [len(v) for v in values], dtype=np.int32)
        key_column = pa.array(chunk_keys, pa.binary())
        got = effects.add_records(
            *_buffers(key_column), ends, b"".join(values),
            _flags_of(np.ones(chunk_size, np.uint8)), np.full(chunk_size, -1, np.int64),
            np.arange(row, row + chunk_size, dtype=np.int64), np.zeros(chunk_size, np.int64),
        )  # fmt: skip
        assert got == bytes([PLAIN_COMMIT] * chunk_size)
        pairs = enumerate(zip(chunk_keys, values, strict=True))
        live.update((k[2:], (row + j, v)) for j, (k, v) in pairs)
        row += chunk_size
    assert _live_of(effects) == live


def _live_of(effects: Any) -> dict[bytes, tuple[int, bytes]]:
    """The engine's live() as each key's bytes after its record type: (row, value bytes)."""
    out_rows, _, key_offsets, key_data, value_offsets, value_data = effects.live()
    k_off, v_off = np.frombuffer(key_offsets, np.int32), np.frombuffer(value_offsets, np.int32)
    return {
        key_data[k_off[j] + 2 : k_off[j + 1]]: (row, value_data[v_off[j] : v_off[j + 1]])
        for j, row in enumerate(np.frombuffer(out_rows, np.int64).tolist())
    }


def _commit_key_end(key: bytes) -> int:
    """Where an offset commit key's partition ends (commit_key_end's reading, one length at a
    time), -1 if the bytes are not one."""
    if len(key) < 10:
        return -1
    group = int.from_bytes(key[2:4], "big", signed=True)
    at = 4 + max(group, 0)
    if group < -1 or at + 6 > len(key):
        return -1
    topic = int.from_bytes(key[at : at + 2], "big", signed=True)
    at += 6 + max(topic, 0)
    return at if topic >= -1 and at <= len(key) else -1


def _identity(key: bytes) -> bytes:
    """A key's identity: its bytes after the type up to its partition's end, all of them
    when they are not an offset commit key (_commit_key_end)."""
    end = _commit_key_end(key)
    return key[2:end] if end >= 0 else key[2:]


def _shaped_key(group: int, topic: int, tail: int) -> bytes:
    """An OffsetCommitKey's bytes with these group and topic lengths (below 0: no bytes),
    ``tail`` bytes after its partition (below 0: cut short by as many)."""
    key = b"\x00\x01" + group.to_bytes(2, "big", signed=True) + b"g" * max(group, 0)
    key += topic.to_bytes(2, "big", signed=True) + b"t" * max(topic, 0) + b"\x00\x00\x00\x07"
    return key + b"x" * tail if tail >= 0 else key[:tail]


def _keys_of_every_shape(rng: random.Random) -> list[bytes]:
    """OffsetCommitKeys whose group and topic lengths end them at their last byte, with bytes
    after their partition, cut short, of a group or topic length of -1 or below, of one that
    reaches past the key, of 10 bytes and fewer."""
    keys = [
        _shaped_key(group, topic, tail)
        for group in (-2, -1, 0, 1, 5, 300)
        for topic in (-2, -1, 0, 3)
        for tail in (-5, -3, -1, 0, 1, 2, 7)
    ]
    keys += [b"\x00\x01" + bytes(rng.randrange(4)) * n for n in range(12)]
    keys += [b"\x00\x01\x00" + bytes([n]) + b"g" * 6 for n in range(12)]  # past the key
    return keys


def test_a_keys_identity_is_its_bytes_up_to_its_partition() -> None:
    """Keys whose group and topic lengths end them at their last byte (the pass's quick
    reading), with bytes after their partition, cut short, of a group or topic length of -1
    or below, of one that reaches past the key, of 10 bytes and fewer: the key live() gives
    back (its identity) is its bytes up to its partition, all of them when they are not an
    offset commit key; keys that differ only after their partition are one key."""
    from codegen.native import _records

    rng = random.Random(3)
    keys = _keys_of_every_shape(rng)
    rows = [rng.choice(keys) for _ in range(3_000)]
    values = [rng.randbytes(rng.choice([0, 8, 24])) for _ in rows]
    live: dict[bytes, tuple[int, bytes]] = {}
    for i, (key, value) in enumerate(zip(rows, values, strict=True)):
        live[_identity(key)] = (i, value)
    effects = _records.CommitEffects()
    start = 0
    while start < len(rows):
        n = min(rng.choice([1, 5, 16, 17, 200]), len(rows) - start)
        chunk = slice(start, start + n)
        got = effects.add_records(
            *_buffers(pa.array(rows[chunk], pa.binary())),
            *_buffers(pa.array(values[chunk], pa.binary())),
            _flags_of(np.ones(n, np.uint8)), np.full(n, -1, np.int64),
            np.arange(start, start + n, dtype=np.int64), np.zeros(n, np.int64),
        )  # fmt: skip
        assert got == bytes([PLAIN_COMMIT] * n)
        start += n
    assert _live_of(effects) == live
    assert len(live) < len(set(keys))  # some keys differ only after their partition


def test_the_checks_key_identity_is_add_records() -> None:
    """The pass's check reads a key's identity (commit_key_parts, commit_check.h) as
    add_records does (commit_key_size): commits of keys of every shape, each with a good
    value, through add_checked are live under the identity add_records gives them, and a key
    whose group or topic length is below 0 or reaches past it is refused, every row of it."""
    from codegen.native import _records

    rng = random.Random(5)
    keys = _keys_of_every_shape(rng)
    rows = [rng.choice(keys) for _ in range(2_000)]
    values = [  # OffsetCommitValue v1: offset, metadata, commit and expire timestamps
        b"\x00\x01" + i.to_bytes(8, "big") + b"\x00\x01m" + bytes(16) for i in range(len(rows))
    ]
    args = (
        *_buffers(pa.array(rows, pa.binary())), *_buffers(pa.array(values, pa.binary())),
        np.full(len(rows), DECODED, np.uint8), np.full(len(rows), -1, np.int64),
        np.arange(len(rows), dtype=np.int64), np.zeros(len(rows), np.int64),
    )  # fmt: skip
    records, checked = _records.CommitEffects(), _records.CommitEffects()
    records.add_records(*args)
    _, newer, refused, _ = checked.add_checked(*args, np.zeros(0, np.int64))  # no producers

    def accepted(key: bytes) -> bool:  # (no null group or topic: the lengths of -1 refused)
        group = int.from_bytes(key[2:4], "big", signed=True)
        if _commit_key_end(key) < 0 or group < 0:
            return False
        return int.from_bytes(key[4 + group : 6 + group], "big", signed=True) >= 0

    assert refused == [i for i, key in enumerate(rows) if not accepted(key)]
    assert 0 < len(refused) < len(rows) and newer == 0
    kept = {_identity(key) for key in rows if accepted(key)}
    live = _live_of(records)
    assert _live_of(checked) == {key: row for key, row in live.items() if key in kept}


def _assert_each_keys_last_value(
    rng: random.Random, keys: list[bytes], n: int, other_sizes: list[int], usual: int = 24
) -> None:
    """n random rows of these keys (plain commits of ``usual``-byte values mostly, else of one
    of other_sizes; tombstones; transactional commits committed) through the engine in chunks
    of random sizes: each key's committed row and value are its last commit's."""
    from codegen.native import _records

    rows: list[tuple[int, bytes, bytes | None, int]] = []  # kind, key, value, producer
    for _ in range(n):
        key = rng.choice(keys)
        roll = rng.random()
        if roll < 0.05:
            rows.append((2, key, None, -1))
        elif roll < 0.1:
            rows.append((3, key, rng.randbytes(rng.choice([0, 9, 24])), 7))
        elif roll < 0.12:
            rows.append((6, b"\x00\x00\x00\x01", None, 7))
        else:  # mostly one length per key, at times another
            size = usual if rng.random() < 0.9 else rng.choice(other_sizes)
            rows.append((1, key, rng.randbytes(size), -1))
    rows.append((6, b"\x00\x00\x00\x01", None, 7))
    live: dict[bytes, tuple[int, bytes]] = {}
    waiting: list[tuple[bytes, int, bytes]] = []
    for i, (kind, key, value, _) in enumerate(rows):
        if kind == 1:
            live[key[2:]] = (i, value or b"")
        elif kind == 2:
            live.pop(key[2:], None)
        elif kind == 3:
            waiting.append((key[2:], i, value or b""))
        else:
            live.update((k, (row, v)) for k, row, v in waiting)
            waiting = []
    effects = _records.CommitEffects()
    start = 0
    while start < len(rows):
        chunk = rows[start : start + rng.choice([1, 7, 15, 16, 17, 500, 4096])]
        key = pa.array([r[1] for r in chunk], pa.binary())
        value = pa.array([r[2] for r in chunk], pa.binary())
        kinds = np.array([r[0] for r in chunk], np.uint8)
        got = effects.add_records(
            *_buffers(key), *_buffers(value), _flags_of(kinds),
            np.array([r[3] for r in chunk], np.int64),
            np.arange(start, start + len(chunk), dtype=np.int64), np.zeros(len(chunk), np.int64),
        )  # fmt: skip
        assert got == kinds.tobytes()
        start += len(chunk)
    out_rows, _, key_offsets, key_data, value_offsets, value_data = effects.live()
    got = {}
    count = len(out_rows) // 8
    k_off, v_off = np.frombuffer(key_offsets, np.int32), np.frombuffer(value_offsets, np.int32)
    for j, row in enumerate(np.frombuffer(out_rows, np.int64).tolist()):
        got[key_data[k_off[j] + 2 : k_off[j + 1]]] = (row, value_data[v_off[j] : v_off[j + 1]])
    assert count == len(live)
    assert got == live


@pytest.mark.parametrize(
    "mask", [0, 0xFFFF_FFFF_0000_0000, 0x3, 0xFFFF_FFFF_0000_0003, (1 << 64) - 1]
)
def test_keys_whose_hashes_collide_are_told_apart_by_their_bytes(mask: int) -> None:
    """The key table (key_store.h) with its hashes cut to ``mask``'s bits (0: one hash for
    every key, so each probe walks past the others and compares their bytes; high bits only:
    one home slot, keys told apart by their tags, each in the slot after the one before; high
    bits and 0x3: four homes, a key in its home's next slot or further): keys of every size up
    to 70 bytes, pairs one byte apart at every place, numbered as first seen."""
    from codegen.native import _records

    rng = random.Random(mask & 0xFFFF)
    keys = []
    for size in range(71):
        base = rng.randbytes(size)
        keys.append(base)
        for at in range(size):  # the same bytes but one
            keys.append(base[:at] + bytes([base[at] ^ 0x80]) + base[at + 1 :])
    keys = keys[:600] if mask == 0 else keys  # every probe is linear when all collide
    rows = keys + rng.sample(keys, len(keys)) + keys[::-1]
    column = pa.array(rows, pa.binary())
    numbers = np.frombuffer(_records.key_numbers(*_buffers(column), mask), np.int64)
    first: dict[bytes, int] = {}
    expected = [first.setdefault(k, len(first)) for k in rows]
    assert numbers.tolist() == expected
    assert len(first) == len(set(keys))


def _buffers(column: pa.Array) -> tuple[np.ndarray, Any]:
    return np.frombuffer(column.buffers()[1], np.int32, len(column) + 1), column.buffers()[2]


_KIND_FLAGS = np.array(
    [
        0,
        DECODED,
        DECODED | TOMBSTONE,
        DECODED | TRANSACTIONAL,
        DECODED | TRANSACTIONAL | TOMBSTONE,
        CONTROL | TRANSACTIONAL,
        CONTROL | TRANSACTIONAL,
    ],
    np.uint8,
)


def _flags_of(kinds: np.ndarray) -> np.ndarray:
    """The flags that make rows of these kinds (1 to 4 of an offset commit key, 5 and 6 of a
    marker's key, type 0 or 1): what add_records takes."""
    return _KIND_FLAGS[kinds]


def _rows(n: int) -> tuple[Any, ...]:
    key = pa.array([_key(False, "g", "t", 0)] * n, pa.binary())
    value = pa.array([b"v"] * n, pa.binary())
    return (
        *_buffers(key), *_buffers(value), np.full(n, DECODED, np.uint8), np.zeros(n, np.int64),
        np.arange(n, dtype=np.int64), np.zeros(n, np.int64),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        (lambda a: a[:7], TypeError, r"add_(records|checked)\(key_offsets"),
        (lambda a: (a[0][:-1], *a[1:]), ValueError, "outside its data"),
        (lambda a: (a[0], a[1][:3], *a[2:]), ValueError, "outside its data"),
        (lambda a: (np.array([0, 30, 29], np.int32), *a[1:]), ValueError, "outside its data"),
        (lambda a: (*a[:2], a[2], b"", *a[4:]), ValueError, "outside its data"),
        (lambda a: (*a[:4], a[4][:1], *a[5:]), ValueError, "not one length"),
        (lambda a: (*a[:5], a[5][:1], *a[6:]), ValueError, "not one length"),
        (lambda a: (*a[:7], a[7].astype(np.int32)), ValueError, "not one length"),
        (lambda a: (*a[:4], a[4], None, *a[6:]), TypeError, "bytes-like"),
    ],
)
@pytest.mark.parametrize("method", ["add_records", "add_checked"])
def test_bad_arguments_are_typed_errors(
    change: Any, error: type[Exception], message: str, method: str
) -> None:
    from codegen.native import _records

    waiting = (effects.NO_PRODUCERS,) if method == "add_checked" else ()
    with pytest.raises(error, match=message):
        getattr(_records.CommitEffects(), method)(*change(_rows(2)), *waiting)


_COMMIT_MARKER_KEY = b"\x00\x00\x00\x01"
_MARKER_VALUE = b"\x00\x00\x00\x00\x00\x07"  # version 0, coordinator epoch 7


@pytest.mark.parametrize(
    ("key", "value", "producer", "left"),
    [
        (_COMMIT_MARKER_KEY, _MARKER_VALUE, 5, False),  # of no producer waiting: dropped
        (b"\x00\x00\x00\x00", _MARKER_VALUE, 5, False),  # an ABORT marker alike
        (_COMMIT_MARKER_KEY, _MARKER_VALUE, 6, True),  # the view holds producer 6's records
        (_COMMIT_MARKER_KEY, _MARKER_VALUE, 8, True),  # producer 8 has a data row left
        (b"\x80\x00\x00\x01", _MARKER_VALUE, 5, True),  # a key version below 0: an error
        (_COMMIT_MARKER_KEY, b"\xff\xff\x00\x00\x00\x07", 5, True),  # a value version too
        (_COMMIT_MARKER_KEY, _MARKER_VALUE[:5], 5, True),  # a value too short
        (_COMMIT_MARKER_KEY, None, 5, True),  # no value
    ],
)
def test_the_pass_leaves_to_python_the_markers_the_view_reads(
    key: bytes, value: bytes | None, producer: int, left: bool
) -> None:
    """add_checked's rows left drop an end-transaction marker the view would do nothing with:
    one whose producer is none the view holds records of (``waiting``) nor of a transactional
    data row left in the chunk (here after the marker), and that reads without an error; it
    leaves every other row (the data row, of a record type other than a commit, here)."""
    from codegen.native import _records

    group_key = b"\x00\x02\x00\x01g"  # group metadata: left to Python
    keys = pa.array([key, group_key], pa.binary())
    values = pa.array([value, b"\x00\x03"], pa.binary())
    flag = [CONTROL | TRANSACTIONAL | DECODED, TRANSACTIONAL | DECODED]
    if value is None:
        flag[0] |= TOMBSTONE
    rows = (
        *_buffers(keys), *_buffers(values), np.array(flag, np.uint8),
        np.array([producer, 8], np.int64), np.arange(2, dtype=np.int64), np.zeros(2, np.int64),
    )  # fmt: skip
    checking = _records.CommitEffects()
    _, _, _, out = checking.add_checked(*rows, np.array([6], np.int64))
    records = np.frombuffer(out, effects.LEFT_ROW)
    assert records["row"].tolist() == ([0, 1] if left else [1])
    marker = COMMIT_MARKER if key[3] == 1 else ABORT_MARKER
    assert records["kind"].tolist() == ([marker, NOTHING] if left else [NOTHING])
    with pytest.raises(ValueError, match="not int64"):
        _records.CommitEffects().add_checked(*rows, b"\x06")


@pytest.mark.parametrize("history", [False, True])
def test_a_chunk_add_checked_refuses_changes_nothing(history: bool) -> None:
    """add_checked refuses a chunk, or takes it whole: its checks and the room for the rows it
    leaves (rows_left.h, reserved) come before the pass, so a chunk refused (here its waiting
    producers not int64) adds no key and numbers no row, and the next chunk's keys are first
    seen at the rows after the last chunk taken."""
    from codegen.native import _records

    def chunk(first: int, n: int) -> tuple[Any, ...]:
        keys = [_key(False, "g", "t", first + i) for i in range(n)]
        values = [  # OffsetCommitValue v1: offset, metadata, commit and expire timestamps
            b"\x00\x01" + i.to_bytes(8, "big") + b"\x00\x01m" + bytes(16) for i in range(n)
        ]
        return (
            *_buffers(pa.array(keys, pa.binary())), *_buffers(pa.array(values, pa.binary())),
            np.full(n, DECODED, np.uint8), np.full(n, -1, np.int64),
            np.arange(first, first + n, dtype=np.int64), np.zeros(n, np.int64),
        )  # fmt: skip

    checked = _records.CommitEffects(history=history)
    checked.add_checked(*chunk(0, 5), effects.NO_PRODUCERS)
    with pytest.raises(ValueError, match="not int64"):
        checked.add_checked(*chunk(5, 7), b"\x06")
    assert checked.key_count == 5
    checked.add_checked(*chunk(5, 3), effects.NO_PRODUCERS)
    assert checked.key_count == 8
    assert np.frombuffer(checked.key_rows(5), np.int64).tolist() == [5, 6, 7]


def test_every_rows_key_offsets_are_checked_and_a_short_key_is_no_commit() -> None:
    """A key's or value's offsets outside its data (falling, or past its end) are an error on
    a row of any flags and before any row takes effect; a key too short for a record type (or
    a marker's) is of kind 0."""
    from codegen.native import _records

    args = list(_rows(2))
    args[0], args[4] = np.array([0, 9, 8], np.int32), np.zeros(2, np.uint8)
    with pytest.raises(ValueError, match="outside its data"):
        _records.CommitEffects().add_records(*args)
    falling, past_the_end, negative = [*range(39), 39, 38], [*range(40), 41], [-1, *range(1, 41)]
    for value_offsets in (list(range(41)), falling, past_the_end, negative):
        args = list(_rows(40))  # more rows than the engine looks ahead, four to a step
        args[2], args[3] = np.array(value_offsets, np.int32), b"v" * 40
        args[4] = np.array([DECODED] * 38 + [0, 0], np.uint8)  # the last two: no commit
        effects = _records.CommitEffects()
        if value_offsets == list(range(41)):
            assert effects.add_records(*args) == bytes([PLAIN_COMMIT] * 38 + [NOTHING] * 2)
            continue
        with pytest.raises(ValueError, match="outside its data"):
            effects.add_records(*args)
        assert effects.key_count == 0
    args = list(_rows(2))
    args[0], args[1] = np.array([0, 1, 3], np.int32), b"\x00\x00\x00"
    args[4] = np.array([DECODED, CONTROL | TRANSACTIONAL], np.uint8)
    effects = _records.CommitEffects()
    assert effects.add_records(*args) == bytes([NOTHING, NOTHING])
    assert effects.key_count == 0


def test_commit_rows_and_records_do_not_mix() -> None:
    from codegen.native import _records

    effects = _records.CommitEffects()
    effects.add_records(*_rows(1))
    empty = np.zeros(1, np.int32)
    with pytest.raises(ValueError, match="do not mix"):
        effects.add_commit_rows(empty, b"", empty, b"", b"", b"", b"")
    with pytest.raises(TypeError, match="no arguments"):
        _records.CommitEffects(1)


def test_commit_rows_of_a_group_longer_than_a_key_holds() -> None:
    from codegen.native import _records

    group = pa.array(["g" * 40_000], pa.string())
    topic = pa.array(["t"], pa.string())
    with pytest.raises(ValueError, match="longer than a key holds"):
        _records.CommitEffects().add_commit_rows(
            *_buffers(group), *_buffers(topic), np.zeros(1, np.int32), np.ones(1, np.uint8),
            np.zeros(1, np.int64),
        )  # fmt: skip


def _keyed_both(decoded: list[pa.Table], segment_bytes: int = 0) -> tuple[Any, Any]:
    """lag's commits by key from the engine's history (RecordHistory, given ``segment_bytes``)
    and from the pure backend's sorts (commit_rows, offsets.history, keyed_commits)."""
    from codegen.dumps.views.effects import RecordHistory
    from codegen.dumps.views.offsets import CommitHistory
    from codegen.forensics.commits import keyed_commits, keyed_effects

    native, pure = RecordHistory(segment_bytes), CommitHistory()
    for table in decoded:
        native.add(table)
        pure.add(table)
    return keyed_effects(native), keyed_commits(pure.table())


def _assert_same_keyed(native: Any, pure: Any) -> None:
    assert native.keys == pure.keys
    assert native.deleted_at == pure.deleted_at
    assert native.live == pure.live
    for name in ("bounds", "record_offset", "commit_timestamp", "offset", "leader_epoch"):
        assert getattr(native, name).tolist() == getattr(pure, name).tolist(), name
    assert native.last_rows.tolist() == pure.last_rows.tolist()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=logs, batch_rows=st.sampled_from([1, 3, 1000]))
def test_history_by_key_equals_the_sorts(
    tmp_path: Path, steps: list[tuple[Any, ...]], batch_rows: int
) -> None:  # fmt: skip
    """The engine's history mode (each commit and tombstone noted as it takes effect, grouped
    by key in the engine) against offsets.history and keyed_commits, row for row."""
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    _assert_same_keyed(*_keyed_both(_decoded(path, batch_rows)))


def test_history_of_a_large_dump_with_open_transactions(tmp_path: Path) -> None:
    """Thousands of commits: the history grows, waiting rows are compacted, and tombstones
    come before, between and after commits."""
    rng = random.Random(11)
    steps: list[tuple[Any, ...]] = []
    for n in range(6000):
        producer = rng.choice([None, None, 7, 8, 9])
        if producer is not None and rng.random() < 0.1:
            steps.append(("end", producer, rng.choice([0, 1])))
        steps.append(
            (
                "commit",
                rng.randrange(len(KEYS)),
                rng.random() < 0.2,
                3,
                n,
                producer,
                rng.random() < 0.1,
            )
        )
    steps.append(("end", 7, 1))  # 8 and 9 left open
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    native, pure = _keyed_both(_decoded(path, 512))
    _assert_same_keyed(native, pure)
    assert len(native.keys) == len(KEYS) and any(native.deleted_at)


def test_histories_one_after_another_equal_the_sorts(tmp_path: Path) -> None:
    """Histories made one after another, as lag's partitions are (each starts at the capacity
    the last one freed reached): a long one, a short one (well under that capacity), a longer
    one (grown past it); each against the sorts."""
    rng = random.Random(5)
    for count in (3000, 40, 7000):
        steps = [
            ("commit", rng.randrange(len(KEYS)), rng.random() < 0.2, 3, n, None, False)
            for n in range(count)
        ]
        path = tmp_path / str(count) / "__consumer_offsets-0" / "00000000000000000000.log"
        write_log(path, steps)
        native, pure = _keyed_both(_decoded(path, 512))
        _assert_same_keyed(native, pure)
        assert int(native.bounds[-1]) > 0


@pytest.mark.parametrize("segment_share", [0.0, 0.01, 1.0, 3.0])
def test_history_given_its_segment_bytes_makes_room_first(
    tmp_path: Path, segment_share: float
) -> None:
    """RecordHistory given its segments' bytes (some share of the file's: none, too few rows
    reserved, the file's, more) reserves once, before its first rows, as many rows as those
    bytes hold at the first chunk's key and value bytes a row (the file's: at least its rows,
    each record holding its key and value and more); its commits by key are the sorts' all
    the same."""
    rng = random.Random(7)
    steps = [
        ("commit", rng.randrange(len(KEYS)), rng.random() < 0.2, 3, n, None, False)
        for n in range(5000)
    ]
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    decoded = _decoded(path, 512)
    segment_bytes = int(path.stat().st_size * segment_share)
    reserved: list[int] = []
    engine_type = effects._engine_type()

    class Reserving:  # the engine's history, its reserve() calls noted
        def __init__(self, **kwargs: Any) -> None:
            self.effects = engine_type(**kwargs)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.effects, name)

        def reserve(self, rows: int) -> None:
            reserved.append(rows)
            self.effects.reserve(rows)

    with mock.patch.object(effects, "_engine_type", return_value=Reserving):
        native, pure = _keyed_both(decoded, segment_bytes)
    _assert_same_keyed(native, pure)
    first = decoded[0]
    first_bytes = sum(len(v) for c in ("key", "value") for v in first.column(c).to_pylist())
    assert reserved == ([segment_bytes * first.num_rows // first_bytes] if segment_bytes else [])
    if segment_share == 1.0:
        assert reserved[0] >= sum(t.num_rows for t in decoded) > 4000


def test_history_room_is_made_for_the_first_history_only() -> None:
    """reserve() makes room for the first history of a process (none freed yet: room for more
    rows than memory holds is refused), not for one after a history was freed (it starts at the
    capacity that one reached, as its blocks' sizes then match the last's): a fresh process,
    loading the engine this test's session loaded (a sanitized build under ``make
    sanitize``)."""
    from codegen.native import _records

    script = """
import importlib.util
import sys
spec = importlib.util.spec_from_file_location("codegen.native._records", sys.argv[1])
_records = importlib.util.module_from_spec(spec)
spec.loader.exec_module(_records)
h = _records.CommitEffects(history=True)
try:
    h.reserve(1 << 62)
except MemoryError:
    print("refused")
h.reserve(3)
h = None
h = _records.CommitEffects(history=True)
h.reserve(1 << 62)
print("after a history was freed: no room made")
"""
    done = subprocess.run(
        [sys.executable, "-c", script, str(_records.__file__)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split("\n")[:2] == ["refused", "after a history was freed: no room made"]


def _plain_history(n: int, first: int) -> Any:
    """A history of n plain commits of 7 keys at record offsets first on (commit times three
    times their offsets)."""
    from codegen.native import _records

    h = _records.CommitEffects(history=True)
    key = pa.array([_key(False, "g", "t", k % 7) for k in range(n)], pa.binary())
    value = pa.array([b"v"] * n, pa.binary())
    offsets = np.arange(first, first + n, dtype=np.int64)
    h.add_records(
        *_buffers(key), *_buffers(value), np.full(n, DECODED, np.uint8),
        np.zeros(n, np.int64), offsets, np.zeros(n, np.int64), offsets * 2, offsets * 3,
        np.zeros(n, np.int32), np.ones(n, np.uint8),
    )  # fmt: skip
    return h


def test_history_after_a_freed_one_holds_its_own_rows_only() -> None:
    """A history made after one was freed takes the freed one's columns (effect_history.h
    history_spare: their pages written already): it holds its own rows alone, fewer or more
    than the freed one's capacity, and a history made while another lives has columns of its
    own (writing one leaves the other's rows as they were)."""

    def rows(h: Any) -> list[int]:
        return np.frombuffer(h.effect_rows(), np.int64).tolist()

    def keyed_times(h: Any) -> list[int]:
        out = h.keyed(np.arange(len(np.frombuffer(h.key_rows(0), np.int64)), dtype=np.int64))
        return sorted(np.frombuffer(out[3], np.int64).tolist())

    longer = _plain_history(5_000, 0)
    del longer  # its columns kept for the next history
    shorter = _plain_history(300, 10_000)
    assert rows(shorter) == list(range(10_000, 10_300))
    assert keyed_times(shorter) == [3 * r for r in range(10_000, 10_300)]
    alongside = _plain_history(9_000, 50_000)  # shorter lives: columns of its own
    assert rows(shorter) == list(range(10_000, 10_300))
    assert rows(alongside) == list(range(50_000, 59_000))
    del shorter, alongside
    grown = _plain_history(20_000, 100_000)  # past the kept columns' capacity: grown from them
    assert rows(grown) == list(range(100_000, 120_000))
    assert keyed_times(grown) == [3 * r for r in range(100_000, 120_000)]


def test_history_release_frees_the_columns_kept() -> None:
    """history_release() frees the columns kept of the last history freed (history_spare), and
    only those: a freed history's columns stay allocated until it is called (traced by
    tracemalloc: PyMem); a history made after it holds its own rows."""
    import tracemalloc

    from codegen.native import _records

    n = 50_000
    tracemalloc.start()
    try:
        _records.history_release()  # what an earlier test kept (not traced) freed first
        h = _plain_history(n, 0)
        held = tracemalloc.get_traced_memory()[0]
        del h  # its columns kept for the next history
        kept = tracemalloc.get_traced_memory()[0]
        _records.history_release()
        released = tracemalloc.get_traced_memory()[0]
        _records.history_release()  # nothing kept: nothing to do
        # no column freed (the smallest is n * 4 bytes); the int objects made by these
        # measurements are traced too, so the count is not equal to the byte
        assert released - tracemalloc.get_traced_memory()[0] < n * 4
    finally:
        tracemalloc.stop()
    columns = n * (4 + 8 + 8 + 8 + 4)  # key, row, committed, commit time, epoch
    assert kept >= columns and held - kept < columns  # the other buffers only
    assert kept - released >= columns
    after = _plain_history(300, 7)
    assert np.frombuffer(after.effect_rows(), np.int64).tolist() == list(range(7, 307))


def test_a_history_freed_after_the_release_is_not_kept() -> None:
    """A history still alive at history_release() (a caller holding lag's last partition's)
    is freed when it is, not kept for the rest of the process (traced by tracemalloc: PyMem);
    a history made after the release keeps its columns again for the next."""
    import tracemalloc

    from codegen.native import _records

    n = 50_000
    columns = n * (4 + 8 + 8 + 8 + 4)  # key, row, committed, commit time, epoch
    tracemalloc.start()
    try:
        _records.history_release()  # what an earlier test kept (not traced) freed first
        alive = _plain_history(n, 0)
        _records.history_release()  # alive still holds its columns
        before = tracemalloc.get_traced_memory()[0]
        del alive
        freed = tracemalloc.get_traced_memory()[0]
        _records.history_release()  # nothing kept: nothing to free
        assert freed - tracemalloc.get_traced_memory()[0] < n * 4  # no column (as above)
        made = _plain_history(n, 0)  # a history made: freed, it keeps again
        held = tracemalloc.get_traced_memory()[0]
        del made
        kept = tracemalloc.get_traced_memory()[0]
        _records.history_release()
        released = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert before - freed >= columns  # its columns freed with it, none kept
    assert kept >= freed + columns and held - kept < columns  # the other buffers only
    assert kept - released >= columns


def test_history_of_keys_in_their_entries_or_apart(tmp_path: Path) -> None:
    """History mode holds a key of up to 40 bytes (after its type) in its one-line table entry,
    a longer one apart: 1,500 keys of 9 to 129 bytes (39, 40 and 41 among them, so a key one
    byte too long for its entry would overwrite the next key's), enough that the table's
    entries and slots grow several times, each committed, deleted and committed again in
    transactions and out of them; against the sorts."""
    import tests.test_views_offsets as offsets_tests

    rng = random.Random(3)
    keys = [("g" * rng.choice([0, 1, 29, 30, 31, 32, 33, 60, 120]) + str(i), "t", i % 3)
            for i in range(1_500)]  # fmt: skip
    steps: list[tuple[Any, ...]] = []
    for n in range(9_000):
        producer = rng.choice([None, None, None, 7, 8])
        if producer is not None and rng.random() < 0.1:
            steps.append(("end", producer, rng.choice([0, 1])))
        steps.append(
            ("commit", n % len(keys) if n < len(keys) else rng.randrange(len(keys)),
             False, 3, n, producer, rng.random() < 0.15)
        )  # fmt: skip
    steps += [("end", 7, 1), ("end", 8, 1)]
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    with mock.patch.object(offsets_tests, "KEYS", keys):
        write_log(path, steps)
    native, pure = _keyed_both(_decoded(path, 512))
    _assert_same_keyed(native, pure)
    assert len(native.keys) > 1_400  # those with a commit that took effect
    sizes = {8 + len(group.encode()) + len(topic) for group, topic, _ in keys}
    assert {39, 40, 41} <= sizes and max(sizes) > 120


@pytest.mark.parametrize(("seed", "count", "n", "reserved"),
                         [(0, 40, 3000, 0), (1, 40, 3000, 1001), (2, 40, 3000, 3000),
                          (3, 4500, 40_000, 0), (4, 4500, 40_000, 50_001)])  # fmt: skip
def test_history_columns_by_key_in_any_order(seed: int, count: int, n: int, reserved: int) -> None:
    """keyed(order) of plain commits and tombstones of ``count`` keys interleaved (the history
    grown many times over, or from ``reserved`` rows made room for first: fewer, as many,
    more): each key's commits in the order they took effect, in the keys'
    given order, every column's values whole (int64 and int32 ends, negative epochs);
    effect_rows() every row in the order it took effect. 40 keys are scattered with each key's
    next line asked for ahead, over 4,096 keys (effect_history.h HISTORY_AHEAD_KEYS) without."""
    from codegen.native import _records

    rng = np.random.default_rng(seed)
    names = [_key(False, f"g{k % 7}", f"t{k}", k) for k in range(count)]
    key_of = rng.integers(0, count, n)
    tombstone = rng.random(n) < 0.15
    int64 = np.iinfo(np.int64)
    committed = rng.integers(int64.min, int64.max, n, dtype=np.int64, endpoint=True)
    times = rng.integers(int64.min, int64.max, n, dtype=np.int64, endpoint=True)
    epochs = rng.choice(np.array([-(1 << 31), -1, 0, 5, (1 << 31) - 1], np.int32), n)
    epoch_valid = (rng.random(n) < 0.8).astype(np.uint8)  # not valid: -1
    offsets = np.arange(100, 100 + n, dtype=np.int64)
    key = pa.array([names[k] for k in key_of], pa.binary())
    value = pa.array([b"v"] * n, pa.binary())
    flags = np.where(tombstone, DECODED | TOMBSTONE, DECODED).astype(np.uint8)
    history = _records.CommitEffects(history=True)
    assert history.effect_rows() == b""
    history.reserve(reserved)
    history.add_records(
        *_buffers(key), *_buffers(value), flags, np.zeros(n, np.int64), offsets,
        np.zeros(n, np.int64), committed, times, epochs, epoch_valid,
    )  # fmt: skip
    assert np.frombuffer(history.effect_rows(), np.int64).tolist() == offsets.tolist()
    epochs = np.where(epoch_valid.view(np.bool_), epochs, -1)
    first_rows = np.frombuffer(history.key_rows(0), np.int64)
    number_of = {int(key_of[row]): k for k, row in enumerate(first_rows.tolist())}
    number = np.array([number_of[k] for k in key_of.tolist()])  # each row's key number
    order = rng.permutation(len(first_rows)).astype(np.int64)  # the keys drawn
    out = history.keyed(order)
    keys, bounds, rows, got_times, got_committed, got_epochs, deleted_bounds = (
        np.frombuffer(b, np.int64).tolist() for b in out[:7]
    )
    expected: dict[str, list[Any]] = {name: [] for name in ("keys", "rows", "times", "committed")}
    expected |= {"epochs": [], "bounds": [0], "deleted": [], "live": [], "last": []}
    for k in order.tolist():
        at = np.flatnonzero(number == k)
        commits = at[~tombstone[at]]
        if not len(commits):
            continue
        expected["keys"].append(k)
        expected["rows"] += offsets[commits].tolist()
        expected["times"] += times[commits].tolist()
        expected["committed"] += committed[commits].tolist()
        expected["epochs"] += epochs[commits].tolist()
        expected["bounds"].append(len(expected["rows"]))
        expected["deleted"].append(offsets[at[tombstone[at] & (at > commits[0])]].tolist())
        expected["live"].append(int(not tombstone[at[-1]]))
        expected["last"].append(int(at[-1]))
    assert len(expected["keys"]) > 0.75 * count and any(expected["deleted"])
    assert (len(expected["keys"]) > 4096) == (count > 4096)
    assert (keys, bounds, rows) == (expected["keys"], expected["bounds"], expected["rows"])
    assert (got_times, got_committed) == (expected["times"], expected["committed"])
    assert got_epochs == expected["epochs"]
    assert deleted_bounds == np.cumsum([0] + [len(d) for d in expected["deleted"]]).tolist()
    assert out[7] == expected["deleted"]
    assert list(out[8]) == expected["live"]
    assert np.frombuffer(out[9], np.int64).tolist() == expected["last"]


def _vm_flags(address: int) -> list[str]:
    """The VmFlags of the mapping of this process that holds ``address`` (/proc/self/smaps)."""
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            start, end = (int(a, 16) for a in head.split("-"))
            inside = start <= address < end
        elif inside and head == "VmFlags:":
            return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


@pytest.mark.skipif(
    not Path("/sys/kernel/mm/transparent_hugepage").is_dir(), reason="no transparent huge pages"
)
def test_keyed_commit_columns_are_advised_huge_pages() -> None:
    """keyed()'s commit columns (megabytes written at random places) are advised huge pages:
    the mapping of each one's first whole 2 MiB has the hg flag; their values are every
    commit's."""
    from codegen.native import _records

    n, count, huge = 600_000, 1000, 2 << 20
    rng = np.random.default_rng(3)
    names = [_key(False, f"g{k}", "t", k) for k in range(count)]
    key_of = rng.integers(0, count, n)
    values = np.arange(n, dtype=np.int64)
    key = pa.array([names[k] for k in key_of.tolist()], pa.binary())
    history = _records.CommitEffects(history=True)
    history.add_records(
        *_buffers(key), *_buffers(pa.array([b"v"] * n, pa.binary())),
        np.full(n, DECODED, np.uint8), np.zeros(n, np.int64), values, np.zeros(n, np.int64),
        values, values, values.astype(np.int32), np.ones(n, np.uint8),
    )  # fmt: skip
    first_rows = np.frombuffer(history.key_rows(0), np.int64)
    order = np.argsort(key_of[first_rows], kind="stable").astype(np.int64)  # by name number
    out = history.keyed(order)
    by_key = np.argsort(key_of, kind="stable")
    for column in out[2:6]:
        got = np.frombuffer(column, np.int64)
        assert got.tolist() == by_key.tolist()
        first_huge = (got.ctypes.data + huge - 1) & ~(huge - 1)
        assert first_huge + huge <= got.ctypes.data + got.nbytes
        assert "hg" in _vm_flags(first_huge)


@pytest.mark.parametrize(
    ("order", "message"),
    [
        (np.zeros(0, np.int64), "each of the 2 keys"),
        (np.array([0, 0], np.int64), "given twice"),
        (np.array([0, 2], np.int64), "out of range"),
        (np.array([0, -1], np.int64), "out of range"),
        (np.array([0, 1], np.int32), "each of the 2 keys"),
    ],
)
def test_history_bad_key_orders_are_typed_errors(order: np.ndarray, message: str) -> None:
    from codegen.native import _records

    effects = _records.CommitEffects(history=True)
    args = list(_rows(2))
    key = pa.array([_key(False, "g", "t", 0), _key(False, "g", "t", 1)], pa.binary())
    args[0], args[1] = _buffers(key)
    effects.add_records(*args, *_no_numbers(2))
    assert effects.key_count == 2
    assert np.frombuffer(effects.key_rows(0), np.int64).tolist() == [0, 1]
    with pytest.raises(ValueError, match=message):
        effects.keyed(order)


_KEY_TEXT = st.lists(
    st.sampled_from(["a", "b", "\x00", "\xe9", "\xff", "\u0100", "\U0001f600", "cg-group-00"]),
    max_size=12,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(
    pool=st.lists(_KEY_TEXT, min_size=1, max_size=6),
    picks=st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(-(1 << 63), (1 << 63) - 1)),
        max_size=60,
    ),
    small=st.booleans(),
)
def test_key_order_is_sorted(
    pool: list[str], picks: list[tuple[int, int, int]], small: bool
) -> None:
    """The engine's order of commit keys is sorted()'s, equal keys in the order given: strs of
    one byte a character compared by words (shorter than, as long as and longer than 16,
    sharing heads, NULs at their ends), wide ones and mixed, partitions of any int64."""
    from codegen.native import _records

    keys = [(pool[g % len(pool)], pool[t % len(pool)], p % 3 if small else p) for g, t, p in picks]
    order = np.frombuffer(_records.key_order(keys), np.int64).tolist()
    assert order == sorted(range(len(keys)), key=keys.__getitem__)


@pytest.mark.parametrize(
    "shape",
    ["dump", "distinct groups and topics", "partitions far apart", "one key", "none"],
)
def test_key_order_of_many_keys_is_sorted(shape: str) -> None:
    """The engine's order of many keys is sorted()'s: lag's shape (1,000 groups of 8 topics
    and 24 partitions, keys repeated, by counts of ranks), as many groups and topics as keys
    and partitions over all of int64 (by a merge)."""
    from codegen.native import _records

    rng = np.random.default_rng(7)
    n = {"one key": 1, "none": 0}.get(shape, 6000)
    group, topic = rng.integers(0, 1000, n), rng.integers(0, 8, n)
    partition = rng.integers(0, 24, n)
    if shape == "distinct groups and topics":
        group, topic = rng.permutation(n), rng.permutation(n)
    if shape == "partitions far apart":
        partition = rng.integers(-(1 << 63), (1 << 63) - 1, n, endpoint=True)
    names = ["cg-group-", "classic-group-00", "g\u0100-"]
    keys = [
        (f"{names[g % 3]}{g:04d}", f"orders-{t}", int(p))
        for g, t, p in zip(group.tolist(), topic.tolist(), partition.tolist(), strict=True)
    ]
    keys += keys[: n // 10]  # equal keys: in the order given
    order = np.frombuffer(_records.key_order(keys), np.int64).tolist()
    assert order == sorted(range(len(keys)), key=keys.__getitem__)


@pytest.mark.parametrize(
    "key",
    [
        ("g", None, 0),
        (None, "t", 0),
        ("g", "t", None),
        ("g", "t", 1 << 63),
        ("g", "t"),
        ["g", "t", 0],
    ],
)
def test_key_order_leaves_other_keys_to_python(key: Any) -> None:
    """A key with a null, a partition past int64 or not a tuple of three: None (keyed_effects
    sorts in Python); a keys argument not a list: TypeError."""
    from codegen.native import _records

    assert _records.key_order([("g", "t", 0), key]) is None
    assert _records.key_order([]) == b""
    with pytest.raises(TypeError, match="a list of"):
        _records.key_order((("g", "t", 0),))


def test_keyed_effects_with_a_null_in_a_key_sorts_nulls_last() -> None:
    """keyed_effects' order where the engine gives none (a key with a null): nulls last."""
    from codegen.forensics.commits import keyed_effects

    history = mock.Mock()
    history.keys = [("g", "t", 1), ("g", None, 0), ("a", "t", 2)]
    seen: list[list[int]] = []

    def keyed(order: np.ndarray) -> Any:
        seen.append(order.tolist())
        return mock.Mock(keys=np.zeros(0, np.int64))

    history.keyed = keyed
    keyed_effects(history)
    assert seen == [[2, 0, 1]]


def test_history_mode_errors_are_typed() -> None:
    from codegen.native import _records

    plain, history = _records.CommitEffects(), _records.CommitEffects(history=True)
    with pytest.raises(ValueError, match="needs CommitEffects\\(history=True\\)"):
        plain.keyed(np.zeros(0, np.int64))
    with pytest.raises(TypeError, match="in history mode"):
        history.add_records(*_rows(1))  # without the decoded values
    with pytest.raises(TypeError, match="add_records"):
        plain.add_records(*_rows(1), *_no_numbers(1))
    committed, times, epochs, valid = _no_numbers(2)
    for wrong in (
        (committed, times[:1], epochs, valid),
        (committed, times, epochs[:1], valid),
        (committed, times, epochs.astype(np.int64), valid),  # epochs are int32
        (committed, times, epochs, np.ones(1, np.uint8)),
        (committed, times, epochs, np.zeros(3, np.uint8)),
        (committed, times, epochs, np.zeros(0, np.uint8)),
    ):
        with pytest.raises(ValueError, match="not one length"):
            history.add_records(*_rows(2), *wrong)
    with pytest.raises(ValueError, match="needs CommitEffects\\(history=True\\)"):
        plain.effect_rows()
    with pytest.raises(ValueError, match="give 0 to the keys' count"):
        history.key_rows(1)
    with pytest.raises(ValueError, match="give 0 to the keys' count"):
        history.key_rows(-1)
    with pytest.raises(ValueError, match="needs CommitEffects\\(history=True\\)"):
        plain.reserve(1)
    with pytest.raises(ValueError, match="give a count of rows"):
        history.reserve(-1)
    history.reserve(0)  # no room asked for: nothing to do
    for kept in (history.live, history.take_deleted):
        with pytest.raises(ValueError, match="not kept in history mode"):
            kept()
    keyed = history.keyed(np.zeros(0, np.int64))
    assert [len(b) for b in keyed] == [0, 8, 0, 0, 0, 0, 8, 0, 0, 0]  # deleted: a list, of no key


def _no_numbers(n: int) -> tuple[np.ndarray, ...]:
    """History mode's numbers of n rows (committed, commit times, epochs, their validity), 0
    and every epoch valid."""
    return (
        np.zeros(n, np.int64),
        np.zeros(n, np.int64),
        np.zeros(n, np.int32),
        np.ones(n, np.uint8),
    )


def _engine_kinds(table: pa.Table) -> np.ndarray:
    """Each row's kind as the engine reads it from its key and flags (what
    RecordEffects.add returns), of a table with no more than key, value and flag columns."""
    from codegen.native import _records

    n = table.num_rows
    kinds = _records.CommitEffects().add_records(
        *effects.binary_buffers(table.column("key")),
        *effects.binary_buffers(table.column("value")),
        effects._row_flags(table), np.full(n, 7, np.int64), np.arange(n, dtype=np.int64),
        np.zeros(n, np.int64),
    )  # fmt: skip
    return np.frombuffer(kinds, np.uint8)


def _commit_rows_kinds(table: pa.Table) -> list[int]:
    """Each row's kind as commit_rows reads the rows (the pure backend's reading)."""
    commit, control, transactional = offset_commits(table)
    is_marker, marker = end_markers(table.column("key"), control, transactional)
    tombstone = ~is_marker & flags(table.column("isTombstone"))
    kinds = np.where(commit, PLAIN_COMMIT + tombstone + 2 * transactional, NOTHING)
    return np.where(is_marker, ABORT_MARKER + marker, kinds).tolist()  # type: ignore[no-any-return]


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=logs, seed=st.randoms(use_true_random=False))
def test_history_of_commit_rows_equals_the_sorts(
    tmp_path: Path, steps: list[tuple[Any, ...]], seed: random.Random
) -> None:  # fmt: skip
    """Spark's step for lag: offsets.history of a log partition's commit rows (shuffled) by the
    engine's history mode and by the pure backend's sorts, row for row."""
    from codegen.dumps.views.offsets import history

    rows = _shuffled_commit_rows(tmp_path, steps, seed)
    if rows is None:  # no steps
        return
    assert commit_row_history(rows.sort_by("recordOffset")) is not None
    answers = []
    for backend in ("native", "pure"):
        use_backend(backend)
        try:
            answers.append(history(rows))
        finally:
            use_backend(None)
    assert answers[0].equals(answers[1])


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=logs_with_groups, batch_rows=st.sampled_from([1, 3, 1000]))
def test_the_engine_kinds_are_the_commit_rows_reading(
    tmp_path: Path, steps: list[tuple[Any, ...]], batch_rows: int
) -> None:  # fmt: skip
    """commit_kinds.h (the kinds add_records returns) against commit_rows' reading
    (offset_commits, end_markers) of a log."""
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    for table in _decoded(path, batch_rows):
        assert _engine_kinds(table).tolist() == _commit_rows_kinds(table)


_ANY_KEY = st.one_of(
    st.none(),
    st.binary(max_size=6),
    st.sampled_from([_key(False, "g", "t", 1), _key(True, "g", "t", 2), b"\x00\x00\x00\x01"]),
)


def _decoded_rows(rows: list[tuple[Any, ...]]) -> pa.Table:
    """(key, value, isControl, isTransactional) rows as decode_commits reads them."""
    table = pa.table(
        {
            "key": pa.array([r[0] for r in rows], pa.binary()),
            "value": pa.array([r[1] for r in rows], pa.binary()),
            "isControl": pa.array([r[2] for r in rows], pa.bool_()),
            "isTransactional": pa.array([r[3] for r in rows], pa.bool_()),
        }
    )
    return decode_commits(table)[0]


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            _ANY_KEY, st.one_of(st.none(), st.binary(max_size=8)), st.booleans(), st.booleans()
        ),
        max_size=12,
    )
)
def test_the_engine_kinds_of_any_key_bytes(rows: list[tuple[Any, ...]]) -> None:
    """Keys too short, of other record types or cut short, values that do not decode, control
    records and markers: the engine's kinds are commit_rows' reading."""
    decoded = _decoded_rows(rows)
    assert _engine_kinds(decoded).tolist() == _commit_rows_kinds(decoded)


_FLAGS = ("isControl", "isTransactional", "isTombstone")


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            _ANY_KEY, st.one_of(st.none(), st.binary(max_size=8)), st.booleans(), st.booleans()
        ),
        max_size=20,
    ),
    start=st.integers(0, 19),
    null_flags=st.sets(st.sampled_from(_FLAGS)),
    errors=st.sampled_from([None, "_error", "_decode_error"]),
)
def test_the_engine_kinds_of_sliced_and_null_flags(
    rows: list[tuple[Any, ...]], start: int, null_flags: set[str], errors: str | None
) -> None:
    """The flags read from their columns' bitmaps: a table sliced off a byte boundary, flags
    with nulls (read as false), rows with a read error: the engine's kinds are commit_rows'
    reading."""
    decoded = _decoded_rows(rows)
    n = decoded.num_rows
    for name in null_flags:
        values = decoded.column(name).to_pylist()
        # a false flag made null: the same row, as decode_commits read it
        nulled = [None if i % 3 == 0 and not v else v for i, v in enumerate(values)]
        decoded = decoded.set_column(
            decoded.column_names.index(name), name, pa.array(nulled, pa.bool_())
        )
    if errors is not None:
        error = pa.array([None if i % 2 else "broken" for i in range(n)], pa.string())
        if errors in decoded.column_names:
            decoded = decoded.set_column(decoded.column_names.index(errors), errors, error)
        else:
            decoded = decoded.append_column(errors, error)
    sliced = decoded.slice(min(start, n))
    assert _engine_kinds(sliced).tolist() == _commit_rows_kinds(sliced)


_NUMBER = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))
_EPOCH = st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1))
_MEMBER = st.one_of(
    st.none(),
    st.fixed_dictionaries({"offset": _NUMBER, "leaderEpoch": _EPOCH, "commitTimestamp": _NUMBER}),
)
_LEGACY = st.one_of(
    st.none(), st.fixed_dictionaries({"offset": _NUMBER, "commitTimestamp": _NUMBER})
)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.one_of(st.none(), st.fixed_dictionaries({"current": _MEMBER, "legacy": _LEGACY})),
        max_size=40,
    ),
    start=st.integers(0, 20),
    only=st.sampled_from([None, "current", "legacy"]),
)
def test_numbers_read_from_buffers_are_the_kernels(
    rows: list[dict[str, Any] | None], start: int, only: str | None
) -> None:
    """commit_numbers reads the value struct's buffers: on structs sliced off a byte boundary,
    with nulls at every level (value, member, field), a member missing, or both set (the
    first wins), it gives what the kernels (_either, fill_null) give."""
    current = pa.struct(
        [("offset", pa.int64()), ("leaderEpoch", pa.int32()), ("commitTimestamp", pa.int64())]
    )
    legacy = pa.struct([("offset", pa.int64()), ("commitTimestamp", pa.int64())])
    fields = [("OffsetCommitValue", current), ("LegacyOffsetCommitValue", legacy)]
    if only is not None:
        fields = [fields[0] if only == "current" else fields[1]]
    names = {"OffsetCommitValue": "current", "LegacyOffsetCommitValue": "legacy"}
    values = [None if r is None else {name: r[names[name]] for name, _ in fields} for r in rows]
    value = pa.array(values, pa.struct(fields))
    decoded = pa.table({"decodedValue": value}).slice(min(start, len(rows)))
    got = commit_numbers(decoded)
    array = decoded.column("decodedValue").combine_chunks()
    members = ("OffsetCommitValue", "LegacyOffsetCommitValue")
    readings = [
        ("offset", pa.int64(), 0),
        ("commitTimestamp", pa.int64(), 0),
        ("leaderEpoch", pa.int32(), -1),
    ]
    for column, (field, typ, null) in zip(got, readings, strict=True):
        want = _either(array, members, field, typ).fill_null(pa.scalar(null, typ))
        assert column.dtype == np.int64
        assert column.tolist() == want.to_pylist()


_FLAG_NAMES = ("isControl", "isTransactional", "isTombstone")
_SHAPES = ("all true", "all false", "all null", "nulls", "no nulls")


def _bool_column(draw: random.Random, n: int, shape: str) -> list[bool | None]:
    if shape in ("all true", "all false"):
        return [shape == "all true"] * n
    if shape == "all null":
        return [None] * n
    choices = (True, False, None) if shape == "nulls" else (True, False)
    return [draw.choice(choices) for _ in range(n)]


def _error_column(draw: random.Random, n: int, shape: str) -> list[str | None]:
    if shape == "nulls":
        return [draw.choice(("bad", None)) for _ in range(n)]
    return ["bad" if shape == "all true" else None] * n


def _sliced(values: list[Any], typ: pa.DataType, at: int, n: int, chunks: bool) -> Any:
    """values[at:at + n] as a slice of a longer array (its bits at an offset), or as two chunks."""
    array = pa.array(values, typ).slice(at, n)
    if chunks:
        return pa.chunked_array([array.slice(0, n // 2), array.slice(n // 2)], typ)
    return array


@pytest.mark.parametrize("seed", range(40))
def test_the_engines_row_flags_are_the_numpy_forms(seed: int) -> None:
    """row_flags (row_flags.h) equals _row_flags' numpy form on flag columns with nulls, sliced
    at any bit, in chunks, all true, all false, all null, and error columns absent, all set,
    all null or some set; and so does their checked form (add_checked's: the tombstones where
    the value is null, no decode error)."""
    draw = random.Random(seed)
    n, at, tail = draw.randrange(0, 300), draw.randrange(0, 17), draw.randrange(0, 9)
    chunks = draw.random() < 0.3
    columns: dict[str, Any] = {}
    for name in _FLAG_NAMES:
        values = _bool_column(draw, at + n + tail, draw.choice(_SHAPES))
        columns[name] = _sliced(values, pa.bool_(), at, n, chunks)
    for name in ("_error", "_decode_error"):
        shape = draw.choice(("absent", "all true", "all false", "nulls"))
        if shape != "absent":
            values = _error_column(draw, at + n + tail, shape)
            columns[name] = _sliced(values, pa.string(), at, n, chunks)
    # the value, whose nulls are the tombstones of add_checked's flags (row_flags' checked form)
    valid = _bool_column(draw, at + n + tail, draw.choice(_SHAPES))
    values = [None if v is None else b"v" for v in valid]
    columns["value"] = _sliced(values, pa.binary(), at, n, chunks)
    table = pa.table(columns)
    assert effects.row_flags(table).tolist() == effects._row_flags(table).tolist()
    checked = effects.row_flags(table, checked=True).tolist()
    assert checked == effects._row_flags(table, checked=True).tolist()
    tombstone = [TOMBSTONE * (v is None) for v in values[at : at + n]]
    unchecked = effects._row_flags(table.select([c for c in columns if c != "_decode_error"]))
    assert checked == [
        f & ~TOMBSTONE | t for f, t in zip(unchecked.tolist(), tombstone, strict=True)
    ]


@pytest.mark.parametrize("at", range(9))
def test_every_combination_of_the_five_flags_sets_its_bits(at: int) -> None:
    """Each of the 32 combinations of control, transactional, tombstone, error and decode
    error (four times over, past 64 rows), from bitmaps at bit offset ``at``: its flags, bit for
    bit, by the engine and by numpy alike."""
    rows = [[(r >> b) & 1 for b in range(5)] for r in range(32)] * 4
    pad: list[list[int]] = [[0] * 5] * at
    cells = pad + rows
    table = pa.table(
        {
            **{
                name: pa.array([bool(c[b]) for c in cells], pa.bool_()).slice(at)
                for b, name in enumerate(_FLAG_NAMES)
            },
            "_error": pa.array(["e" if c[3] else None for c in cells]).slice(at),
            "_decode_error": pa.array(["d" if c[4] else None for c in cells]).slice(at),
        }
    )
    expected = [
        c * CONTROL | t * TRANSACTIONAL | s * TOMBSTONE | (0 if e or d else DECODED)
        for c, t, s, e, d in rows
    ]
    assert effects.row_flags(table).tolist() == expected
    assert effects._row_flags(table).tolist() == expected


def test_row_flags_refuses_a_short_bitmap_and_a_flag_of_another_shape() -> None:
    from codegen.native import _records

    bitmap = b"\xff"
    with pytest.raises(ValueError, match="too short"):
        _records.row_flags(9, (bitmap, 0), 0, 0, 0, 0)
    with pytest.raises(ValueError, match="too short"):
        _records.row_flags(8, (bitmap, 1), 0, 0, 0, 0)
    with pytest.raises(TypeError, match="a flag is"):
        _records.row_flags(8, (bitmap,), 0, 0, 0, 0)
    assert _records.row_flags(8, (bitmap, 0, b"\x0f", 0), 0, 0, 0, 1) == bytes([1] * 4 + [0] * 4)


@pytest.mark.parametrize("flag", ["isControl", "isTransactional", "isTombstone", "_error"])
@pytest.mark.parametrize("row", [0, 63, 64, 100, 127, 199])
def test_one_flag_among_plain_rows_is_kept(flag: str, row: int) -> None:
    """Runs of 64 rows decoded with no flag set (row_flags.h's usual run) beside one row with
    ``flag`` set: that row's flags, and only its, differ, by the engine and by numpy alike."""
    n, at = 200, 3
    columns: dict[str, Any] = {
        name: pa.array([False] * (n + at), pa.bool_()).slice(at) for name in _FLAG_NAMES
    }
    columns["_error"] = pa.nulls(n + at, pa.string()).slice(at)
    cells: list[Any] = [None] * (n + at)
    cells[at + row] = True if flag in _FLAG_NAMES else "bad"
    columns[flag] = pa.array(cells, columns[flag].type).slice(at)
    table = pa.table(columns)
    expected = [DECODED] * n
    expected[row] = {"isControl": CONTROL, "isTransactional": TRANSACTIONAL}.get(
        flag, TOMBSTONE
    ) | DECODED
    if flag == "_error":
        expected[row] = 0
    assert effects.row_flags(table).tolist() == expected
    assert effects._row_flags(table).tolist() == expected


def _record_effects(decoded: list[pa.Table]) -> effects.RecordEffects:
    out = effects.RecordEffects()
    for table in decoded:
        out.add(table)
    return out


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=logs,
    batch_rows=st.sampled_from([1, 16, 1000]),
    held=st.sampled_from([1, 1 << 16]),
    engine_decodes=st.booleans(),
)
def test_offsets_and_deletions_are_the_commit_rows_columns(
    tmp_path: Path, steps: list[tuple[Any, ...]], batch_rows: int, held: int, engine_decodes: bool
) -> None:  # fmt: skip
    """RecordEffects.offsets() and deletions(), read from the decoded keys and values (or, where
    the engine does not decode them, from the commit rows), are the columns of live() and
    deleted(), the commit rows; with tombstones taken during the adds (``held``) or at the end."""
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    decoded = _decoded(path, batch_rows)
    no_decode = mock.patch.object(effects, "native_commit_columns", lambda *_: None)
    with mock.patch.object(effects, "DELETED_HELD", held):
        reference = _record_effects(decoded)
        want = (
            reference.live().select(OFFSET_SCHEMA.names),
            reference.deleted().select(DELETION_SCHEMA.names),
        )
        lean = _record_effects(decoded)
        if engine_decodes:
            got = (lean.offsets(), lean.deletions())
        else:
            with no_decode:
                got = (lean.offsets(), lean.deletions())
    assert got[0].schema == OFFSET_SCHEMA and got[0].equals(want[0])
    assert got[1].schema == DELETION_SCHEMA and got[1].equals(want[1])


@pytest.mark.parametrize("held", [1, 1 << 16])
def test_deletions_read_again_are_the_same_rows(tmp_path: Path, held: int) -> None:
    """RecordEffects.deletions() and deleted() read a second time give the rows of the first,
    and the tombstones taken out are not kept again (nothing grows from read to read); with
    tombstones taken during the adds (``held``) or at the end."""
    steps: list[tuple[Any, ...]] = [
        ("commit", 0, False, 1, 10, None, False),
        ("commit", 1, False, 3, 11, None, False),
        ("commit", 0, False, 1, 12, None, True),
        ("commit", 1, False, 3, 13, None, True),
        ("commit", 2, False, 3, 14, None, False),
    ]
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    with mock.patch.object(effects, "DELETED_HELD", held):
        out = _record_effects(_decoded(path, 1))
    first = out.deletions()
    taken = len(out._deleted)
    assert first.num_rows == 2
    assert out.deletions().equals(first)
    assert out.deleted().select(DELETION_SCHEMA.names).equals(first)
    assert len(out._deleted) == taken


def test_offsets_and_deletions_of_microsecond_timestamps(tmp_path: Path) -> None:
    """A tombstone's timestamp in epoch ms where the rows' are microseconds (kafka-log's), with
    legacy and current commits, as the commit rows give them."""
    steps: list[tuple[Any, ...]] = [
        ("commit", 0, False, 1, 10, None, False),
        ("commit", 1, True, 3, 11, None, False),
        ("commit", 2, False, 3, 12, None, False),
        ("commit", 0, False, 1, 13, None, True),
        ("commit", 1, False, 3, 14, None, True),
    ]
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    decoded = []
    for table in _decoded(path, 1000):
        i = table.schema.get_field_index("timestamp")
        times = pa.array(
            [t * 1000 + 999 for t in table.column(i).cast(pa.int64()).to_pylist()],
            pa.timestamp("us"),
        )
        decoded.append(table.set_column(i, "timestamp", times))
    reference, lean = _record_effects(decoded), _record_effects(decoded)
    deleted = reference.deleted().select(DELETION_SCHEMA.names)
    assert deleted.num_rows == 2
    assert lean.deletions().equals(deleted)
    assert lean.offsets().equals(reference.live().select(OFFSET_SCHEMA.names))
    assert lean.offsets().num_rows == 1


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=logs, batch_rows=st.sampled_from([1, 16, 1000]))
def test_history_of_decoded_rows_is_that_of_rows_as_they_are(
    tmp_path: Path, steps: list[tuple[Any, ...]], batch_rows: int
) -> None:  # fmt: skip
    """RecordHistory of rows decoded (each key's strings read from ``decodedKey``) and of rows
    as they are (lag's: each key's first rows decoded again from their bytes) is one history:
    the engine checks each commit and reads its numbers from its value in its pass either way."""
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    answers = []
    for decode in (decode_commits, lambda rb: (rb, {})):
        history = effects.RecordHistory()
        for rb in record_batches(path, batch_rows=batch_rows):
            history.add(decode(rb)[0])
        keyed = history.keyed(np.arange(len(history.keys), dtype=np.int64))
        columns = [keyed.keys, keyed.bounds, keyed.record_offset, keyed.commit_timestamp]
        columns += [keyed.offset, keyed.leader_epoch, keyed.deleted_bounds]
        answers.append((history.keys, [c.tolist() for c in columns], keyed.deleted))
    assert answers[0] == answers[1]


def test_history_decodes_keys_again_by_its_package(tmp_path: Path) -> None:
    """RecordHistory decodes a key's first rows again by the package it was given, not the
    shipped one (the engine checking the package's commits in its pass: its layouts, as said
    here of a package that is not installed)."""
    steps: list[tuple[Any, ...]] = [
        ("commit", 0, False, 1, 10, None, False),
        ("commit", 1, False, 3, 11, None, False),
        ("commit", 0, False, 1, 12, None, False),
    ]
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_log(path, steps)
    asked: list[str] = []

    def by_shipped(rows: pa.Table, package: str = SHIPPED) -> Any:
        asked.append(package)
        return decode_commits(rows)

    with mock.patch.object(effects, "engine_checks", return_value=True):
        history = effects.RecordHistory(package="user_codecs")
    with mock.patch.object(effects, "decode_commits", by_shipped):
        for rb in record_batches(path, batch_rows=1000):
            history.add(rb)
    assert asked and set(asked) == {"user_codecs"}
    assert len(history.keys) == 2


@pytest.mark.parametrize("backend", ["pure", "native"])
def test_history_is_made_only_where_the_engine_checks_the_commits(backend: str) -> None:
    """RecordHistory is refused where the engine does not check the package's commits in its
    pass (the pure backend asked for, or other layouts), and lag reads those with the pure
    backend's CommitHistory (engine_history says which)."""
    use_backend(backend)
    try:
        assert effects.engine_history() is (backend == "native")
        with mock.patch.object(effects, "engine_checks", return_value=False):
            assert not effects.engine_history()
            with pytest.raises(RuntimeError, match="does not check generated's offset commits"):
                effects.RecordHistory()
    finally:
        use_backend(None)
