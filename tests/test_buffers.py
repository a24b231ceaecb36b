"""Every public reader takes any buffer, whichever backend serves it.

``Cls.reader(v)``, ``row_reader(v)``, ``decode``, ``decode_row`` and ``read`` are given the
same bytes as ``bytes``, a bytearray, a memoryview of bytes, one of a bytearray and a sliced
one: for every shipped message at its lowest and highest version, Hypothesis-built messages
and truncations of them give the same values (bytes values as ``bytes``, exact types) or the
same errors (class, text, field path and byte offset) as ``bytes`` do, and the active
backend's readers give what the generated pure ones give. What is not a contiguous buffer is
refused with the native engine's error on every path.

A ``codec`` test: ``make test`` runs it on the native backend and again on the pure one.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest
from corpus import corpus_settings, native_corpora
from hypothesis import given
from hypothesis import strategies as st
from strategies import exact_form, instances

import generated
from codegen.runtime import DecodeError

SETTINGS = corpus_settings("SPECGEN_EXAMPLES", 4)
PREFIX, SUFFIX = b"\xff\x00\x01", b"\xee"
PAIRS = [
    pytest.param(m.name, v, id=f"{m.name}/v{v}")
    for m in native_corpora()["shipped"]
    for v in sorted({m.valid_versions.lowest, m.valid_versions.highest})
]


def other_buffers(data: bytes) -> dict[str, Any]:
    """``data`` in each buffer form but ``bytes``."""
    return {
        "bytearray": bytearray(data),
        "memoryview": memoryview(data),
        "memoryview of a bytearray": memoryview(bytearray(data)),
        "sliced memoryview": memoryview(PREFIX + data + SUFFIX)[len(PREFIX) : -len(SUFFIX)],
    }


def entry_points(cls: Any, version: int) -> dict[str, Callable[[Any], Any]]:
    """Each way to read a whole buffer: the public API (served by the active backend) and the
    generated pure readers behind it."""
    return {
        "reader": lambda buf: cls.reader(version)(buf, 0),
        "row_reader": lambda buf: cls.row_reader(version)(buf, 0),
        "pure reader": lambda buf: cls._PURE_READERS[version](buf, 0),
        "pure row reader": lambda buf: cls._PURE_ROW_READERS[version](buf, 0),
        "decode": lambda buf: cls.decode(buf, version),
        "decode_row": lambda buf: cls.decode_row(buf, version),
        "read": lambda buf: cls.read(buf, 0, version),
    }


def outcome(read: Callable[[Any], Any], buf: Any) -> tuple[Any, ...]:
    try:
        value = read(buf)
    except DecodeError as exc:
        return ("error", type(exc), str(exc), exc.field, exc.offset)
    return ("ok", exact_form(value))


def assert_every_buffer_reads_alike(cls: Any, version: int, data: bytes) -> None:
    reads = entry_points(cls, version)
    for name, read in reads.items():
        expected = outcome(read, data)
        for form, buf in other_buffers(data).items():
            assert outcome(read, buf) == expected, (name, form, data.hex())
    for form, buf in {"bytes": data, **other_buffers(data)}.items():
        for public, pure in (("reader", "pure reader"), ("row_reader", "pure row reader")):
            got, expected = outcome(reads[public], buf), outcome(reads[pure], buf)
            assert got == expected, (public, form, data.hex())


@pytest.mark.parametrize(("name", "version"), PAIRS)
@SETTINGS
@given(data=st.data())
def test_every_buffer_reads_alike(name: str, version: int, data: st.DataObject) -> None:
    cls = generated.MESSAGES[name]
    message = next(m for m in native_corpora()["shipped"] if m.name == name)
    obj = data.draw(instances(message, sys.modules[cls.__module__], version), label="object")
    wire = obj.encode(version)
    assert_every_buffer_reads_alike(cls, version, wire)
    for end in range(0, len(wire), max(1, len(wire) // 16)):
        assert_every_buffer_reads_alike(cls, version, wire[:end])
    # From an offset inside the buffer: offsets count from the start of the buffer given.
    expected = cls.reader(version)(PREFIX + wire, len(PREFIX))
    for form, buf in other_buffers(PREFIX + wire).items():
        got = cls.reader(version)(buf, len(PREFIX))
        assert exact_form(got) == exact_form(expected), form
        assert exact_form(cls.read(buf, len(PREFIX), version)) == exact_form(expected), form


NOT_BUFFERS = [
    ("text", TypeError, "a bytes-like object is required, not 'str'"),
    (5, TypeError, "a bytes-like object is required, not 'int'"),
    (None, TypeError, "a bytes-like object is required, not 'NoneType'"),
    (
        memoryview(bytes(range(20)))[::2],
        BufferError,
        "memoryview: underlying buffer is not C-contiguous",
    ),
]


@pytest.mark.parametrize(
    ("buf", "error", "text"), NOT_BUFFERS, ids=["str", "int", "None", "strided memoryview"]
)
def test_what_is_not_a_contiguous_buffer_is_refused_alike(
    buf: Any, error: type[Exception], text: str
) -> None:
    """The native engine's errors (``PyObject_GetBuffer``), from every way in."""
    cls = generated.MESSAGES["OffsetCommitKey"]
    for name, read in entry_points(cls, 0).items():
        with pytest.raises(error) as caught:
            read(buf)
        assert type(caught.value) is error and str(caught.value) == text, name
