"""The small runtime that generated codecs call. Stdlib only.

Generated modules hold straight-line per-version code; what they share lives in this package,
one module a job:

- :mod:`codegen.runtime.errors`: the errors codecs raise;
- :mod:`codegen.runtime.wire`: varints, fixed arrays, tagged-field sections and unknown tags,
  buffers, and the errors of a failed read or write (built only on failure paths);
- :mod:`codegen.runtime.json_values`: Kafka's JsonConverter form of each field type;
- :mod:`codegen.runtime.messages`: the base classes with the public codec API;
- :mod:`codegen.runtime.index`: a package's index (spec name -> class, loaded on first use);
- :mod:`codegen.runtime.backends`: which backend reads (the native engine or the generated
  Python readers).

:mod:`codegen.runtime.generated_api` lists exactly what generated code may use. This module is
the face for people using generated codecs: the names of ``__all__``.
"""

from __future__ import annotations

from codegen.runtime import backends as backends
from codegen.runtime.backends import (
    BackendError,
    NativeFallbackWarning,
    backend,
    use_backend,
)
from codegen.runtime.errors import (
    BufferUnderflow,
    DecodeError,
    EncodeError,
    FieldTypeError,
    InvalidLength,
    InvalidTaggedField,
    InvalidUtf8,
    JsonFormatError,
    KafkaCodecError,
    NullValueError,
    TrailingBytes,
    UnexpectedNull,
    UnknownTagError,
    UnsupportedFieldError,
    UnsupportedVersionError,
    ValueRangeError,
)
from codegen.runtime.index import MessageIndex, MessageKind
from codegen.runtime.messages import KafkaMessage, KafkaStruct
from codegen.runtime.wire import BytesLike, UnknownTags
from codegen.versions import VersionRange

__all__ = [
    "BackendError",
    "BufferUnderflow",
    "BytesLike",
    "DecodeError",
    "EncodeError",
    "FieldTypeError",
    "InvalidLength",
    "InvalidTaggedField",
    "InvalidUtf8",
    "JsonFormatError",
    "KafkaCodecError",
    "KafkaMessage",
    "KafkaStruct",
    "MessageIndex",
    "MessageKind",
    "NativeFallbackWarning",
    "NullValueError",
    "TrailingBytes",
    "UnexpectedNull",
    "UnknownTagError",
    "UnknownTags",
    "UnsupportedFieldError",
    "UnsupportedVersionError",
    "ValueRangeError",
    "VersionRange",
    "backend",
    "backends",
    "use_backend",
]
