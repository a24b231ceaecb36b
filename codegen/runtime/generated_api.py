"""What generated code may use of the runtime: exactly the names below, and no others.

The templates import this module (``from codegen.runtime import generated_api as _rt``, and a
few names by themselves); tests/test_runtime_interface.py checks that the generated modules use
every name of ``__all__`` and nothing else of the runtime, and an import-linter contract keeps
``generated`` from importing the runtime's other modules. A name added here is a promise to
every package generated since: it stays. Stdlib only.

The names: the base classes and what a module declares (``KafkaMessage``, ``KafkaStruct``,
``FieldInfo``, ``BytesLike``, ``UnknownTags``, ``VersionRange``, ``MessageIndex``,
``install_backend``); the readers' helpers and the errors they build on failure paths; the
writers' helpers; Kafka's JSON form of each value type (``json_*``, ``b64``, ``uuid_json``,
``float_json``); the errors caught and re-raised with their place.
"""

from __future__ import annotations

from codegen.runtime.backends import install as install_backend
from codegen.runtime.errors import DecodeError, EncodeError, JsonFormatError
from codegen.runtime.index import MessageIndex
from codegen.runtime.json_values import (
    b64,
    float_json,
    json_bool,
    json_bytes,
    json_float,
    json_int,
    json_item_error,
    json_list,
    json_missing,
    json_null,
    json_object,
    json_str,
    json_struct_version,
    json_uuid,
    uuid_json,
)
from codegen.runtime.messages import FieldInfo, KafkaMessage, KafkaStruct
from codegen.runtime.wire import (
    NO_TAGS,
    SEQUENCE,
    UVARINT_1,
    ZERO_UUID,
    BytesLike,
    StructError,
    UnknownTags,
    array_packers,
    array_unpackers,
    bad_length,
    bad_tag,
    bad_utf8,
    buffer_bytes,
    checked_offset,
    encode_tagged,
    end_of_buffer,
    index_of,
    new,
    no_unknown_tags,
    read_uuid,
    read_uvarint,
    short_read,
    string_too_long,
    tag_size_mismatch,
    too_long_to_write,
    too_many,
    too_many_tags,
    underflow,
    unexpected_null,
    unsupported_field,
    uvarint,
    wrong_value,
)
from codegen.versions import VersionRange

__all__ = [
    "NO_TAGS",
    "SEQUENCE",
    "UVARINT_1",
    "ZERO_UUID",
    "BytesLike",
    "DecodeError",
    "EncodeError",
    "FieldInfo",
    "JsonFormatError",
    "KafkaMessage",
    "KafkaStruct",
    "MessageIndex",
    "StructError",
    "UnknownTags",
    "VersionRange",
    "array_packers",
    "array_unpackers",
    "b64",
    "bad_length",
    "bad_tag",
    "bad_utf8",
    "buffer_bytes",
    "checked_offset",
    "encode_tagged",
    "end_of_buffer",
    "float_json",
    "index_of",
    "install_backend",
    "json_bool",
    "json_bytes",
    "json_float",
    "json_int",
    "json_item_error",
    "json_list",
    "json_missing",
    "json_null",
    "json_object",
    "json_str",
    "json_struct_version",
    "json_uuid",
    "new",
    "no_unknown_tags",
    "read_uuid",
    "read_uvarint",
    "short_read",
    "string_too_long",
    "tag_size_mismatch",
    "too_long_to_write",
    "too_many",
    "too_many_tags",
    "underflow",
    "unexpected_null",
    "unsupported_field",
    "uuid_json",
    "uvarint",
    "wrong_value",
]
