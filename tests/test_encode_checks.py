"""Encode and from_json refuse wrong values with a typed error naming the field path.

Each case gives one wrong value to a shipped message (or to ``EncodeChecks``, a spec written
here for what no shipped spec has: records fields, an ignorable field) and checks the exact
error type and text. The unknown-tags cases pin Kafka 4.4.0's writer
(``RawTaggedFieldWriter``): known tags first, then the unknown ones, which must be ascending;
tests/test_oracle_diff.py checks the same bytes against Kafka's classes.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from codegen.runtime import UnknownTags
from codegen.runtime.errors import (
    DecodeError,
    EncodeError,
    FieldTypeError,
    InvalidTaggedField,
    JsonFormatError,
    NullValueError,
    UnknownTagError,
    UnsupportedFieldError,
    ValueRangeError,
)
from codegen.runtime.wire import NO_TAGS
from generated.abort_transaction_record import AbortTransactionRecord
from generated.client_quota_record import ClientQuotaRecord, EntityData
from generated.consumer_group_member_metadata_value import (
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupMemberMetadataValue,
)
from generated.offset_commit_value import OffsetCommitValue
from generated.partition_change_record import PartitionChangeRecord
from generated.user_scram_credential_record import UserScramCredentialRecord

# Kafka's RequestHeader before 4.0 (v0 has no ClientId, which is ignorable), plus records
# fields, one nullable at v0 only, and a non-ignorable field absent at v0.
ENCODE_CHECKS_SPEC = {
    "type": "data",
    "name": "EncodeChecks",
    "validVersions": "0-2",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "RequestApiKey", "type": "int16", "versions": "0+"},
        {
            "name": "ClientId",
            "type": "string",
            "versions": "1+",
            "nullableVersions": "1+",
            "ignorable": True,
            "flexibleVersions": "none",
        },
        {"name": "Owner", "type": "string", "versions": "1+"},
        {"name": "Batches", "type": "records", "versions": "0+"},
        {"name": "OldBatches", "type": "records", "versions": "0+", "nullableVersions": "0"},
        {
            "name": "Parts",
            "type": "[]Part",
            "versions": "0+",
            "fields": [{"name": "Data", "type": "records", "versions": "0+"}],
        },
    ],
}


@pytest.fixture(scope="module")
def checks(codec_package: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    specs = tmp_path_factory.mktemp("encode_checks_specs")
    (specs / "EncodeChecks.json").write_text(json.dumps(ENCODE_CHECKS_SPEC))
    package = codec_package("encode_checks", [Path(specs)])
    return package.MESSAGES["EncodeChecks"]


def raised(fn: Any) -> tuple[type[BaseException], str]:
    """The exact type and text of what ``fn`` raises (the callers compare both)."""
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


# --------------------------------------------------------------------------- wrong Python types


def test_str_in_bytes_field_is_a_field_type_error() -> None:
    obj = UserScramCredentialRecord(name="u", salt="not bytes")
    assert raised(lambda: obj.encode(0)) == (
        FieldTypeError,
        "UserScramCredentialRecord v0, field salt: expected bytes, got str",
    )


def test_str_in_nested_bytes_field_names_the_path() -> None:
    obj = ConsumerGroupMemberMetadataValue(
        classic_member_metadata=ClassicMemberMetadata(
            supported_protocols=[ClassicProtocol(name="range", metadata="x")]
        )
    )
    assert raised(lambda: obj.encode(0)) == (
        FieldTypeError,
        "ConsumerGroupMemberMetadataValue v0, field "
        "classic_member_metadata.supported_protocols[0].metadata: expected bytes, got str",
    )


def test_str_in_records_field_is_a_field_type_error(checks: Any) -> None:
    obj = checks(batches=b"", old_batches=b"", parts=[checks._STRUCTS["Part"](data="x")])
    assert raised(lambda: obj.encode(2)) == (
        FieldTypeError,
        "EncodeChecks v2, field parts[0].data: expected records, got str",
    )


@pytest.mark.parametrize(
    ("value", "error", "text"),
    [
        (None, NullValueError, "None in a field that is not nullable at this version"),
        ("false", FieldTypeError, "expected bool, got str"),
        (2, FieldTypeError, "expected bool, got int"),
        (0, FieldTypeError, "expected bool, got int"),
    ],
)
def test_only_a_real_bool_goes_in_a_bool_field(value: Any, error: type, text: str) -> None:
    obj = ClientQuotaRecord(key="k", remove=value)
    assert raised(lambda: obj.encode(0)) == (error, f"ClientQuotaRecord v0, field remove: {text}")


@pytest.mark.parametrize("value", [True, False])
def test_bool_in_int_fields_is_refused(value: bool) -> None:
    obj = OffsetCommitValue(offset=value)
    assert raised(lambda: obj.encode(3)) == (
        FieldTypeError,
        "OffsetCommitValue v3, field offset: expected an int for int64, got bool",
    )
    # A tagged int field is checked before its default comparison (False == 0).
    tagged = PartitionChangeRecord(leader=value)
    assert raised(lambda: tagged.encode(0)) == (
        FieldTypeError,
        "PartitionChangeRecord v0, field leader: expected an int for int32, got bool",
    )


def test_bool_in_a_float_field_is_refused() -> None:
    obj = ClientQuotaRecord(key="k", value=True)
    assert raised(lambda: obj.encode(0)) == (
        FieldTypeError,
        "ClientQuotaRecord v0, field value: expected float64, got bool",
    )


@pytest.mark.parametrize(
    ("value", "got"), [("abc", "str"), ({1: 2}, "dict"), (b"\x01", "bytes"), (5, "int")]
)
def test_an_array_is_a_list_or_tuple(value: Any, got: str) -> None:
    obj = ClientQuotaRecord(key="k", entity=value)
    assert raised(lambda: obj.encode(0)) == (
        FieldTypeError,
        f"ClientQuotaRecord v0, field entity: expected a list or tuple for array, got {got}",
    )
    tagged = PartitionChangeRecord(replicas=value)  # a tagged nullable array
    assert raised(lambda: tagged.encode(0)) == (
        FieldTypeError,
        f"PartitionChangeRecord v0, field replicas: expected a list or tuple for array, got {got}",
    )


def test_a_tuple_is_written_as_an_array() -> None:
    as_list = ClientQuotaRecord(key="k", entity=[EntityData(entity_type="user")])
    as_tuple = ClientQuotaRecord(key="k", entity=(EntityData(entity_type="user"),))
    assert as_tuple.encode(0) == as_list.encode(0)


def test_nested_struct_errors_name_the_element() -> None:
    obj = ClientQuotaRecord(
        key="k", entity=[EntityData(entity_type="a"), EntityData(entity_type="x" * 40000)]
    )
    assert raised(lambda: obj.encode(0)) == (
        ValueRangeError,
        "ClientQuotaRecord v0, field entity[1].entity_type: "
        "string of 40000 UTF-8 bytes is too long to write (at most 32767)",
    )


# --------------------------------------------------------------------------- records default


def test_default_records_is_none_and_writing_it_names_the_field(checks: Any) -> None:
    # Kafka's generated constructors set records to null, and writing that null where the
    # field is not nullable fails (a NullPointerException in Kafka).
    obj = checks()
    assert obj.batches is None
    assert raised(lambda: obj.encode(0)) == (
        NullValueError,
        "EncodeChecks v0, field batches: None in a field that is not nullable at this version",
    )
    part = checks(batches=b"", old_batches=b"", parts=[checks._STRUCTS["Part"]()])
    assert raised(lambda: part.encode(1)) == (
        NullValueError,
        "EncodeChecks v1, field parts[0].data: None in a field that is not nullable at this version",
    )
    # Nullable at v0 only.
    assert checks(batches=b"").encode(0)
    assert raised(lambda: checks(batches=b"").encode(1)) == (
        NullValueError,
        "EncodeChecks v1, field old_batches: None in a field that is not nullable at this version",
    )


def test_every_encode_error_has_a_reason(checks: Any) -> None:
    # What no check names still says what Python said.
    class Odd(bytes):
        def __len__(self) -> int:
            raise OverflowError("odd length")

    error, text = raised(lambda: checks(batches=Odd(b"x"), old_batches=b"").encode(1))
    assert (error, text) == (
        EncodeError,
        "EncodeChecks v1: cannot encode: OverflowError: odd length",
    )


# --------------------------------------------------------------------------- absent fields


def test_ignorable_field_is_dropped_where_the_version_lacks_it(checks: Any) -> None:
    # RequestHeader.ClientId is "ignorable": Kafka drops it silently at v0, so do we.
    with_id = checks(client_id="app", batches=b"", old_batches=b"")
    without = checks(batches=b"", old_batches=b"")
    assert with_id.encode(0) == without.encode(0)
    assert raised(lambda: checks(owner="me", batches=b"").encode(0)) == (
        UnsupportedFieldError,
        "EncodeChecks v0, field owner: a non-default value cannot be written at this version, "
        "which lacks the field",
    )


# --------------------------------------------------------------------------- unknown tags


REPEATED = bytes.fromhex("02e80702a1a2e80702b1b2")  # tag 1000 twice


def test_a_repeated_unknown_tag_keeps_every_value() -> None:
    obj = AbortTransactionRecord.decode(REPEATED, 0)
    tags = obj.unknown_tags
    assert isinstance(tags, UnknownTags)
    assert tags.pairs == ((1000, b"\xa1\xa2"), (1000, b"\xb1\xb2"))
    # The mapping view: each tag once, with its last value.
    assert tags[1000] == b"\xb1\xb2"
    assert tags.get(1000) == b"\xb1\xb2"
    assert 1000 in tags
    assert 1001 not in tags
    assert len(tags) == 1
    assert list(tags) == [1000]
    assert dict(tags.items()) == {1000: b"\xb1\xb2"}
    assert AbortTransactionRecord.decode_row(REPEATED, 0)[-1].pairs == tags.pairs
    row, _ = AbortTransactionRecord.row_reader(0)(REPEATED, 0)
    assert row[-1] == tags


def test_a_repeated_unknown_tag_is_not_written() -> None:
    # Kafka 4.4.0 reads both values and cannot write them back: RawTaggedFieldWriter throws
    # "Invalid raw tag field list: tag 1000 comes after tag 1000, but is not higher than it."
    obj = AbortTransactionRecord.decode(REPEATED, 0)
    assert raised(lambda: obj.encode(0)) == (
        UnknownTagError,
        "AbortTransactionRecord v0, field unknown_tags: tag 1000 comes after tag 1000: "
        "unknown tags must be in ascending order, each tag once (as Kafka's writer requires)",
    )
    descending = AbortTransactionRecord.decode(bytes.fromhex("02e9070101e8070102"), 0)
    assert raised(lambda: descending.encode(0)) == (
        UnknownTagError,
        "AbortTransactionRecord v0, field unknown_tags: tag 1000 comes after tag 1001: "
        "unknown tags must be in ascending order, each tag once (as Kafka's writer requires)",
    )


def test_unknown_tags_follow_the_known_ones() -> None:
    # On the wire: unknown tag 1000 first, then tag 0 (reason "r"). Kafka writes the known
    # tags first, then the unknown ones (checked against Kafka in test_oracle_diff.py).
    data = bytes.fromhex("02" + "e80702a1a2" + "00020272")
    obj = AbortTransactionRecord.decode(data, 0)
    assert obj.reason == "r"
    assert obj.unknown_tags == {1000: b"\xa1\xa2"}
    assert obj.encode(0).hex() == "02" + "00020272" + "e80702a1a2"


def test_a_mapping_is_written_in_ascending_tag_order() -> None:
    obj = AbortTransactionRecord(unknown_tags={7: b"\x07", 5: b""})
    assert obj.encode(0).hex() == "02" + "0500" + "070107"
    assert AbortTransactionRecord.decode(obj.encode(0), 0) == obj


@pytest.mark.parametrize(
    ("tags", "error", "text"),
    [
        ({-1: b"x"}, ValueRangeError, "tag -1 is outside the tag range 0..2147483647"),
        ({2**31: b"x"}, ValueRangeError, "tag 2147483648 is outside the tag range 0..2147483647"),
        (
            {2**40: b"x"},
            ValueRangeError,
            "tag 1099511627776 is outside the tag range 0..2147483647",
        ),
        ({5: "x"}, FieldTypeError, "tag 5: expected bytes, got str"),
        ({"5": b"x"}, FieldTypeError, "tag '5' is a str, not an int"),
        ({True: b"x"}, FieldTypeError, "tag True is a bool, not an int"),
        (
            {0: b"x"},
            UnknownTagError,
            "tag 0 belongs to a field of this struct (unknown tags start at 1): set the field instead",
        ),
        (None, FieldTypeError, "expected a mapping of tag to bytes (or UnknownTags), got NoneType"),
        (
            [(5, b"x")],
            FieldTypeError,
            "expected a mapping of tag to bytes (or UnknownTags), got list",
        ),
    ],
)
def test_bad_unknown_tags_are_refused(tags: Any, error: type, text: str) -> None:
    obj = AbortTransactionRecord(unknown_tags=tags)
    assert raised(lambda: obj.encode(0)) == (
        error,
        f"AbortTransactionRecord v0, field unknown_tags: {text}",
    )


def test_encode_and_decode_take_the_same_tags() -> None:
    # The largest tag both sides take; one above it is refused on read as on write.
    top = AbortTransactionRecord(unknown_tags={2**31 - 1: b"\x01"})
    assert AbortTransactionRecord.decode(top.encode(0), 0) == top
    above = bytes.fromhex("01" + "8080808008" + "0101")  # tag 2**31
    with pytest.raises(InvalidTaggedField) as info:
        AbortTransactionRecord.decode(above, 0)
    assert str(info.value) == (
        "AbortTransactionRecord v0, field <tagged fields>, byte 7: "
        "tag 2147483648 is above 2147483647, the largest tag Kafka reads"
    )
    assert isinstance(info.value, DecodeError)


def test_unknown_tags_in_nested_structs_name_the_path() -> None:
    obj = ClientQuotaRecord(key="k", entity=[EntityData(unknown_tags={-5: b""})])
    assert raised(lambda: obj.encode(0)) == (
        ValueRangeError,
        "ClientQuotaRecord v0, field entity[0].unknown_tags: tag -5 is outside the tag range 0..2147483647",
    )


def test_unknown_tags_at_a_version_without_tagged_fields() -> None:
    obj = OffsetCommitValue(unknown_tags={9: b""})
    assert raised(lambda: obj.encode(3)) == (
        UnsupportedFieldError,
        "OffsetCommitValue v3, field unknown_tags: unknown tagged fields are set, but this "
        "version has no tagged fields",
    )
    assert OffsetCommitValue(unknown_tags={}).encode(3) == OffsetCommitValue().encode(3)


def test_unknown_tags_value_type() -> None:
    built = UnknownTags({9: b"b", 3: b"a"})
    assert built.pairs == ((3, b"a"), (9, b"b"))  # a mapping: ascending tags
    assert UnknownTags([(9, b"b"), (3, b"a")]).pairs == ((9, b"b"), (3, b"a"))
    assert built == {3: b"a", 9: b"b"}
    assert UnknownTags([(3, b"a"), (3, b"b")]) != {3: b"b"}  # a mapping holds each tag once
    assert UnknownTags() == NO_TAGS == {}
    assert not NO_TAGS
    assert pickle.loads(pickle.dumps(built)) == built
    with pytest.raises(AttributeError):
        built.pairs = ()  # type: ignore[misc]


# --------------------------------------------------------------------------- from_json


def test_from_json_refuses_null_in_a_non_nullable_field() -> None:
    obj = {"offset": None, "leaderEpoch": 1, "metadata": "", "commitTimestamp": 0}
    assert raised(lambda: OffsetCommitValue.from_json(obj, 3)) == (
        JsonFormatError,
        "OffsetCommitValue v3, field offset: OffsetCommitValue: field 'offset' is null, "
        "but it is not nullable in version 3",
    )


def test_from_json_null_where_the_field_is_nullable_at_other_versions(checks: Any) -> None:
    tree = {
        "requestApiKey": 1,
        "clientId": None,
        "owner": "",
        "batches": "",
        "oldBatches": None,
        "parts": [],
    }
    assert checks.from_json(tree, 0).old_batches is None
    assert raised(lambda: checks.from_json(tree, 1)) == (
        JsonFormatError,
        "EncodeChecks v1, field oldBatches: EncodeChecks: field 'oldBatches' is null, "
        "but it is not nullable in version 1",
    )
    nested = dict(tree, oldBatches="", parts=[{"data": ""}, {"data": None}])
    assert raised(lambda: checks.from_json(nested, 1)) == (
        JsonFormatError,
        "EncodeChecks v1, field parts[1].data: Part: field 'data' is null, "
        "but it is not nullable in version 1",
    )


def test_from_json_errors_name_the_json_path() -> None:
    tree = {
        "entity": [{"entityType": "user", "entityName": None}, {"entityType": 5}],
        "key": "k",
        "value": 1.0,
        "remove": False,
    }
    assert raised(lambda: ClientQuotaRecord.from_json(tree, 0)) == (
        JsonFormatError,
        "ClientQuotaRecord v0, field entity[1].entityType: EntityData: field 'entityType' "
        "expected a string, got int",
    )
    ints = {"partitionId": 0, "topicId": "AAAAAAAAAAAAAAAAAAAAAA", "isr": [1, "2"]}
    assert raised(lambda: PartitionChangeRecord.from_json(ints, 0)) == (
        JsonFormatError,
        "PartitionChangeRecord v0, field isr[1]: PartitionChangeRecord: field 'isr' "
        "expected an integer, got str",
    )
