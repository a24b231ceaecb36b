"""The native commit decoder (codegen/native/commit_columns.h through
:mod:`codegen.dumps.views.commit_columns`) against the reference, the topic decoder: every
value version, newer versions, every kind of row, each byte cut and each length or version
written wrong, sliced, chunked and large arrays. The fuzz round: tests/fuzz/test_fuzz_commit_columns.py.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pyarrow as pa
import pytest
from commit_rows_data import (
    TOPIC_ID,
    arrays,
    assert_same_as_reference,
    commit_key,
    commit_value,
    seeds,
)

from codegen.columnar.schema import DECODE_ERROR
from codegen.dumps.views import commits
from codegen.dumps.views.commit_columns import native_commit_columns
from codegen.dumps.views.commits import (
    decode_commit_flags,
    decode_commits,
    decode_commits_reference,
)
from codegen.runtime.backends import native_engine

pytestmark = pytest.mark.skipif(
    native_engine() is None or native_commit_columns(*arrays([]), "generated") is None,
    reason="the native engine is not built (or the pure backend is chosen)",
)


def test_every_kind_of_row_decodes_as_the_reference_decodes_it() -> None:
    assert_same_as_reference(*arrays(seeds()))


def test_large_binary_sliced_and_chunked_arrays() -> None:
    rows = seeds()
    assert_same_as_reference(*arrays(rows, large=True))
    key, value, control = arrays(rows * 2)
    assert_same_as_reference(key[3:20], value[3:20], control[3:20])
    assert_same_as_reference(
        pa.chunked_array([key[:5], key[5:]]),
        pa.chunked_array([value[:5], value[5:]]),
        pa.chunked_array([control[:5], control[5:]]),
    )
    null_control = pa.nulls(len(rows), pa.bool_())
    assert_same_as_reference(key[: len(rows)], value[: len(rows)], null_control)
    assert_same_as_reference(*arrays([]))


@pytest.mark.parametrize("version", range(0, 6))
def test_every_cut_of_a_key_and_a_value(version: int) -> None:
    """A key or a value cut at each byte: refused with the reference's text (or read, where
    the bytes cut are after the message)."""
    key, value = commit_key(1, "grp", "tp", 2), commit_value(version, metadata="meta")
    rows = [(key[:i], value, False) for i in range(len(key) + 1)]
    rows += [(key, value[:i], False) for i in range(len(value) + 1)]
    assert_same_as_reference(*arrays(rows))


def _replace(data: bytes, at: int, new: bytes) -> bytes:
    return data[:at] + new + data[at + len(new) :]


def test_lengths_versions_tags_and_text_written_wrong() -> None:
    key = commit_key(1, "grp", "tp", 2)
    v3, v4 = commit_value(3, metadata="meta"), commit_value(4, metadata="meta")
    rows = [
        (_replace(key, 2, struct.pack(">h", -1)), v3, False),  # a negative length
        (_replace(key, 2, struct.pack(">h", 0x7FFF)), v3, False),  # past the end
        (_replace(key, 4, b"\xed\xa0"), v3, False),  # a surrogate: not UTF-8
        (_replace(key, 4, b"\xc0\xaf"), v3, False),  # an overlong form
        (key, _replace(v3, 14, struct.pack(">h", -2)), False),
        (key, _replace(v3, 16, b"\xff"), False),
        (key, _replace(v4, 14, b"\x00"), False),  # a compact null: metadata is not nullable
        (key, _replace(v4, 14, b"\x80\x80\x80\x80\x80"), False),  # a varint of 6 bytes
        (key, _replace(v4, 14, b"\x81\x80\x02"), False),  # longer than 0x7FFF
        (key, struct.pack(">h", 1) + commit_value(4)[2:], False),  # v4 bytes read as v1
    ]
    for version in (4, 5, 300):  # the tagged section of version 4 (and of newer versions)
        body = commit_value(version, tags=b"\x00")
        section = len(body) - 1
        for tags in (
            b"\x01\x00\x0f" + TOPIC_ID.bytes[:15],  # topicId of 15 bytes
            b"\x01\x00\x11" + TOPIC_ID.bytes + b"x",  # of 17
            b"\x01\x00\x10" + TOPIC_ID.bytes[:8],  # cut
            b"\x01\x07\x05ab",  # an unknown tag longer than the bytes left
            b"\x01\x80\x80\x80\x80\x08\x00",  # tag 2**31
            b"\x01\xff\xff\xff\xff\x07\x00",  # tag 2**31 - 1: skipped
            b"\x02\x03\x00\x03\x00",  # a tag twice: the reader keeps both
            b"\x91\x4e",  # 10001 tags announced
            b"\x90\x4e",  # 10000 tags announced, none there
            b"\x80\x80\x80\x80\x10",  # a count of 6 bytes
            b"\x00trailing bytes",  # ignored, as Kafka ignores them
        ):
            rows.append((key, body[:section] + tags, False))
    rows += [(key, struct.pack(">h", v) + commit_value(4)[2:], False) for v in (-1, -32768, 32767)]
    rows += [
        (commit_key(0), struct.pack(">h", v) + commit_value(0, 0)[2:], False) for v in (1, 2, -1)
    ]
    assert_same_as_reference(*arrays(rows))


def test_decode_commits_names_each_refused_row() -> None:
    rows = seeds()
    key, value, control = arrays(rows)
    batch = pa.RecordBatch.from_arrays([key, value, control], ["key", "value", "isControl"])
    table, errors = decode_commits(batch)
    reasons = table.column("_decode_error").to_pylist()
    assert errors and {i: r for i, r in enumerate(reasons) if r is not None} == errors
    assert errors[rows.index((None, commit_value(3), False))] == "record has no key"


def test_decode_commit_flags_is_decode_commits_flags() -> None:
    """The flags alone (what the engine's pass reads of the rows): decode_commits' flag
    columns, error texts and rows; decode_commits itself where the engine does not decode."""
    key, value, control = arrays(seeds())
    batch = pa.RecordBatch.from_arrays([key, value, control], ["key", "value", "isControl"])
    full, errors = decode_commits(batch)
    flags, flag_errors = decode_commit_flags(batch)
    assert flag_errors == errors
    assert flags.column_names == [
        *batch.schema.names,
        "isTombstone",
        "isNewerVersion",
        DECODE_ERROR,
    ]
    for name in flags.column_names:
        assert flags.column(name).equals(full.column(name)), name
    with mock.patch.object(commits, "native_commit_flags", lambda *_: None):
        fallback, fallback_errors = decode_commit_flags(batch)
    assert fallback.equals(full) and fallback_errors == errors


def _generated(tmp_path: Path, package: str, nullable_metadata: bool) -> None:
    """The shipped consumer-offsets specs generated as ``package``, with OffsetCommitValue's
    metadata nullable if asked."""
    specs = tmp_path / "consumer_offsets"  # the folder names the topic the specs belong to
    specs.mkdir()
    shipped = Path(__file__).resolve().parents[1] / "message_specs" / "consumer_offsets"
    for spec in shipped.glob("*.json"):
        text = spec.read_text(encoding="utf-8")
        if spec.name == "OffsetCommitValue.json" and nullable_metadata:
            field = '{ "name": "metadata", "type": "string", "versions": "0+",'
            assert text.count(field) == 1
            text = text.replace(field, field[:-1] + ', "nullableVersions": "0+",')
        (specs / spec.name).write_text(text, encoding="utf-8")
    generate = [sys.executable, "-m", "codegen", "generate", "--specs", str(specs)]
    generate += ["--out", str(tmp_path / "out"), "--package", package]
    done = subprocess.run(generate, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("package", "nullable_metadata"), [("same_commits", False), ("nullable_metadata", True)]
)
def test_a_package_with_another_commit_layout_goes_to_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package: str, nullable_metadata: bool
) -> None:
    """The engine reads the shipped layouts: a package generated from the same specs is read
    natively; one whose OffsetCommitValue differs only in a nullable field (same names, types
    and versions) is decoded by the reference, which reads its null metadata."""
    _generated(tmp_path, package, nullable_metadata)
    monkeypatch.syspath_prepend(str(tmp_path / "out"))
    value = __import__(f"{package}.offset_commit_value", fromlist=["OffsetCommitValue"])
    metadata = None if nullable_metadata else "m"
    message = value.OffsetCommitValue(
        offset=7, metadata=metadata, commit_timestamp=5, leader_epoch=3, topic_id=TOPIC_ID
    )
    rows = arrays([(commit_key(1, "g", "t", 4), struct.pack(">h", 4) + message.encode(4), False)])
    assert (native_commit_columns(*rows, package) is None) is nullable_metadata
    batch = pa.table(dict(zip(("key", "value", "isControl"), rows, strict=True)))
    table, errors = decode_commits(batch, package)
    reference = decode_commits_reference(*rows, package)
    assert not errors and not reference.errors
    for name, column in reference.columns.items():
        assert table.column(name).to_pylist() == column.to_pylist(), name


def test_long_and_non_ascii_groups_and_topics() -> None:
    """Names of 128 bytes and more (a length byte above 0x7F between the group and the topic),
    valid UTF-8 beyond ASCII in either, and text written wrong in the topic alone: the key's
    strings checked by one ASCII test of both where it passes, each on its own where not."""
    key = commit_key(1, "g", "topic", 2)
    rows = [
        (commit_key(1, "g" * n, "t" * m, 3), commit_value(3), False)
        for n, m in ((0, 0), (127, 128), (128, 200), (300, 0), (0, 1000))
    ]
    rows += [
        (commit_key(1, group, topic, 3), commit_value(3), False)
        for group, topic in (("é" * 70, "t"), ("g", "ü" * 90), ("日本" * 30, "€" * 50))
    ]
    rows += [
        (_replace(key, 7, b"\xff"), commit_value(3), False),  # in the topic
        (_replace(key, 7, b"\xed\xa0\x80"), commit_value(3), False),  # a surrogate there
        (_replace(commit_key(1, "g", "t" * 130, 2), 9, b"\xc0\xaf"), None, False),
    ]
    assert_same_as_reference(*arrays(rows))
