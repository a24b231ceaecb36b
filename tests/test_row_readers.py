"""Row readers: the tuple form of every generated reader gives what the object form gives.

The round-trip tests compare rows with decoded objects on valid bytes; here the shipped codecs
are fed damaged bytes (every truncation, single-byte changes) and both forms must agree: the
same error text, or rows equal to the decoded objects. Leaf structs are read inline in their
parent's array loop; errors inside them must still name the element.
"""

from __future__ import annotations

import collections.abc
import importlib
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import instances, plain_row, row_of

from codegen.emit import load_messages
from codegen.ir import Message
from codegen.runtime import KafkaMessage, UnsupportedVersionError
from codegen.runtime.errors import BufferUnderflow
from generated import MESSAGES
from generated.offset_commit_value import OffsetCommitValue

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = load_messages([ROOT / "message_specs"])
PAIRS = [
    pytest.param(m, v, id=f"{m.name}/v{v}") for m in SHIPPED for v in m.valid_versions.versions()
]


def _outcome(decode: Any, data: bytes, version: int, as_row: Any) -> tuple[str, Any]:
    try:
        return "ok", as_row(decode(data, version))
    except Exception as exc:  # both forms must fail alike, whatever the exception
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize(("message", "version"), PAIRS)
def test_damaged_bytes_fail_alike(message: Message, version: int) -> None:
    module = importlib.import_module(f"generated.{message.module}")
    cls: type[KafkaMessage] = getattr(module, message.name)

    @settings(
        max_examples=3,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(instances(message, module, version), st.data())
    def check(obj: Any, data: st.DataObject) -> None:
        encoded = obj.encode(version)
        damaged = [encoded[:cut] for cut in range(len(encoded))]
        if encoded:
            for _ in range(8):
                at = data.draw(st.integers(0, len(encoded) - 1))
                byte = data.draw(st.integers(0, 255))
                damaged.append(encoded[:at] + bytes([byte]) + encoded[at + 1 :])
        damaged.append(encoded + b"\x00")
        for buf in damaged:
            assert _outcome(cls.decode_row, buf, version, plain_row) == _outcome(
                cls.decode, buf, version, row_of
            ), buf.hex()

    check()


def test_row_fields_name_the_row() -> None:
    value = OffsetCommitValue(offset=42, leader_epoch=3, metadata="m", commit_timestamp=7)
    row = OffsetCommitValue.decode_row(value.encode(3), 3)
    assert dict(zip(OffsetCommitValue.ROW_FIELDS, row, strict=True)) == {
        "offset": 42,
        "leader_epoch": 3,
        "metadata": "m",
        "commit_timestamp": 7,
        "expire_timestamp": -1,  # not in version 3: the default, as decode gives
        "topic_id": value.topic_id,
        "unknown_tags": {},
    }


def test_row_reader_reads_inside_a_buffer() -> None:
    value = OffsetCommitValue(offset=1, metadata="é", commit_timestamp=2)
    data = value.encode(4)
    row, end = OffsetCommitValue.row_reader(4)(b"\xff\xff" + data + b"\xff", 2)
    assert end == 2 + len(data)
    assert plain_row(row) == row_of(value)


def test_every_message_has_rows_for_every_version() -> None:
    for name in MESSAGES:
        cls = MESSAGES[name]
        assert set(cls._ROW_READERS) == set(cls._READERS), name
        assert cls.ROW_FIELDS[-1] == "unknown_tags"
        assert len(cls.ROW_FIELDS) == len(cls._FIELDS) + 1


def test_unknown_version_is_refused() -> None:
    with pytest.raises(UnsupportedVersionError, match="has no version 9"):
        OffsetCommitValue.row_reader(9)
    with pytest.raises(UnsupportedVersionError, match="has no version 9"):
        OffsetCommitValue.decode_row(b"", 9)


def test_rows_are_read_only() -> None:
    row = OffsetCommitValue.decode_row(OffsetCommitValue().encode(4), 4)
    with pytest.raises(TypeError):
        row[-1][1] = b"x"


@pytest.mark.parametrize("version", [3, 4])  # rigid and flexible member layouts
def test_errors_inside_array_elements_name_the_element(version: int) -> None:
    # Members are leaf structs, read inline in the members loop: errors still name the element.
    from generated.group_metadata_value import GroupMetadataValue, MemberMetadata

    members = [
        MemberMetadata(member_id=f"m{i}", client_id="c", client_host=f"/10.0.0.{i}")
        for i in range(2)
    ]
    value = GroupMetadataValue(protocol_type="consumer", generation=1, members=members)
    data = value.encode(version)
    host = data.rindex(b"/10.0.0.1")
    cut = data[: host + 3]
    for decode in (GroupMetadataValue.decode, GroupMetadataValue.decode_row):
        with pytest.raises(BufferUnderflow) as caught:
            decode(cut, version)
        assert caught.value.field == "members[1].client_host"
        assert caught.value.offset == host
        assert f"GroupMetadataValue v{version}, field members[1].client_host, byte {host}" in str(
            caught.value
        )


# --------------------------------------------------------------------------- row types


def _mismatch(value: Any, kind: Any, namespace: dict[str, Any], where: str) -> str | None:
    """Where ``value`` does not have the type ``kind`` (a row alias and what it holds)."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is tuple:
        if not isinstance(value, tuple) or len(value) != len(args):
            return f"{where}: {value!r} is not a tuple of {len(args)}"
        for i, (item, item_kind) in enumerate(zip(value, args, strict=True)):
            found = _mismatch(item, item_kind, namespace, f"{where}[{i}]")
            if found:
                return found
        return None
    if origin is list:
        if not isinstance(value, list):
            return f"{where}: {value!r} is not a list"
        found_any = (_mismatch(v, args[0], namespace, f"{where}[{i}]") for i, v in enumerate(value))
        return next((f for f in found_any if f), None)
    if origin in (types.UnionType, typing.Union):
        failures = [_mismatch(value, a, namespace, where) for a in args]
        return None if any(f is None for f in failures) else f"{where}: {value!r} is not {kind}"
    if origin is collections.abc.Mapping:
        ok = isinstance(value, Mapping) and all(
            type(k) is int and type(v) is bytes for k, v in value.items()
        )
        return None if ok else f"{where}: {value!r} is not a Mapping[int, bytes]"
    if kind is type(None):
        return None if value is None else f"{where}: {value!r} is not None"
    # Exact types: a bool is no int here, a memoryview no bytes.
    return None if type(value) is kind else f"{where}: {value!r} is not {kind.__name__}"


@pytest.mark.parametrize("message", [pytest.param(m, id=m.name) for m in SHIPPED])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_rows_have_their_row_types(message: Message, data: st.DataObject) -> None:
    """What ``decode_row`` gives is what the module's ``<Name>Row`` alias says, to the element
    type, on this backend: the aliases mypy checks user code against describe real rows."""
    module = importlib.import_module(f"generated.{message.module}")
    cls = getattr(module, message.name)
    version = data.draw(st.sampled_from(list(message.valid_versions.versions())))
    value = data.draw(instances(message, module, version))
    row = cls.decode_row(value.encode(version), version)
    alias = getattr(module, f"{message.name}Row")
    assert _mismatch(row, alias, vars(module), "row") is None
