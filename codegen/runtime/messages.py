"""The base classes of generated structs and messages: the public codec API (decode, read,
reader, row readers, encode, JSON) and the diagnosis of a value that cannot be written. Stdlib
only."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from codegen.gc_pause import gc_paused
from codegen.runtime.errors import (
    DecodeError,
    EncodeError,
    FieldTypeError,
    JsonFormatError,
    NullValueError,
    UnsupportedVersionError,
    ValueRangeError,
)
from codegen.runtime.wire import (
    INT_RANGES,
    MAX_STRING_LENGTH,
    BytesLike,
    Reader,
    RowReader,
    StructError,
    Writer,
    buffer_bytes,
    trailing,
    wrong_type_reason,
)
from codegen.versions import VersionRange


@dataclass(frozen=True, slots=True)
class FieldInfo:
    """What the write-error diagnosis needs to know about a field (not used on hot paths)."""

    attr: str
    kind: str
    element: str  # element kind of an array, "" otherwise
    versions: VersionRange
    nullable: VersionRange
    struct: str  # struct class name for struct fields and struct arrays, "" otherwise


_PY_TYPES: dict[str, type | tuple[type, ...]] = {
    "bool": bool,
    "float64": (float, int),
    "string": str,
    "bytes": (bytes, bytearray, memoryview),
    "records": (bytes, bytearray, memoryview),
    "uuid": uuid.UUID,
    "array": (list, tuple),
}


class KafkaStruct:
    """Base of every generated class: JSON conversion and write-error diagnosis."""

    __slots__ = ()
    _FIELDS: ClassVar[tuple[FieldInfo, ...]] = ()
    ROW_FIELDS: ClassVar[tuple[str, ...]] = ()  # what a row holds: the fields, then unknown_tags
    _STRUCTS: ClassVar[Mapping[str, type[KafkaStruct]]] = {}

    def to_json(self, version: int) -> dict[str, Any]:
        """Kafka's JsonConverter form of this object at ``version``."""
        raise NotImplementedError

    @classmethod
    def from_json(cls, obj: object, version: int) -> Self:
        """Read Kafka's JsonConverter form at ``version``."""
        return cls._from_json(obj, version)

    @classmethod
    def _from_json(cls, obj: object, version: int) -> Self:
        raise NotImplementedError

    def _diagnose(self, version: int, path: str) -> EncodeError | None:
        for info in self._FIELDS:
            if version not in info.versions:
                continue
            value = getattr(self, info.attr)
            where = f"{path}{info.attr}"
            problem = _check_value(self, value, info.kind, info, version, where)
            if problem is not None:
                return problem
        return None


def _check_value(
    owner: KafkaStruct, value: object, kind: str, info: FieldInfo, version: int, where: str
) -> EncodeError | None:
    if value is None:
        if version in info.nullable:
            return None
        return NullValueError("None in a field that is not nullable at this version", field=where)
    if kind in INT_RANGES:
        if isinstance(value, bool) or not isinstance(value, int):
            return FieldTypeError(wrong_type_reason(kind, value), field=where)
        low, high = INT_RANGES[kind]
        if not low <= value <= high:
            return ValueRangeError(
                f"{value} is outside the {kind} range {low}..{high}", field=where
            )
        return None
    if kind == "struct":
        child_cls = owner._STRUCTS.get(info.struct)
        if child_cls is None or not isinstance(value, child_cls):
            return FieldTypeError(
                f"expected a {info.struct}, got {type(value).__name__}", field=where
            )
        return value._diagnose(version, f"{where}.")
    expected = _PY_TYPES.get(kind)
    if expected is not None and (
        not isinstance(value, expected) or (kind == "float64" and isinstance(value, bool))
    ):
        return FieldTypeError(wrong_type_reason(kind, value), field=where)
    if kind == "string":
        assert isinstance(value, str)
        try:
            data = value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return FieldTypeError(f"string is not encodable as UTF-8: {exc.reason}", field=where)
        if len(data) > MAX_STRING_LENGTH:
            return ValueRangeError(f"string of {len(data)} UTF-8 bytes is too long", field=where)
    if kind == "array":
        assert isinstance(value, (list, tuple))
        element_info = FieldInfo(
            info.attr, info.element, "", info.versions, VersionRange.NONE, info.struct
        )
        for i, item in enumerate(value):
            problem = _check_value(
                owner, item, info.element, element_info, version, f"{where}[{i}]"
            )
            if problem is not None:
                return problem
    return None


class KafkaMessage(KafkaStruct):
    """Base of every generated top-level message: the public codec API."""

    __slots__ = ()
    SPEC_NAME: ClassVar[str]
    SPEC_TYPE: ClassVar[str]
    API_KEY: ClassVar[int | None]
    LOWEST_VERSION: ClassVar[int]
    HIGHEST_VERSION: ClassVar[int]
    VALID_VERSIONS: ClassVar[VersionRange]
    FLEXIBLE_VERSIONS: ClassVar[VersionRange]
    _READERS: ClassVar[Mapping[int, Reader]]
    _WRITERS: ClassVar[Mapping[int, Writer]]
    _ROW_READERS: ClassVar[Mapping[int, RowReader]]
    _MANY_OBJECTS: ClassVar[bool] = False  # has arrays of structs: decode pauses the GC

    @classmethod
    def decode(cls, data: BytesLike, version: int) -> Self:
        """Decode ``data`` (any buffer) at ``version``; every byte must belong to the message."""
        result: Self = cls._decode_whole(cls._READERS, data, version)
        return result

    @classmethod
    def _decode_whole(cls, readers: Mapping[int, Reader], data: BytesLike, version: int) -> Any:
        reader = readers.get(version)
        if reader is None:
            raise cls._no_version(version)
        if type(data) is not bytes:
            data = buffer_bytes(data)
        try:
            if cls._MANY_OBJECTS:  # arrays of structs: many objects, no cycles
                with gc_paused():
                    obj, end = reader(data, 0)
            else:
                obj, end = reader(data, 0)
        except DecodeError as exc:
            raise exc.located(cls.SPEC_NAME, version) from None
        if end != len(data):
            raise trailing(cls.SPEC_NAME, version, end, len(data))
        return obj

    @classmethod
    def reader(cls, version: int) -> Callable[[BytesLike, int], tuple[Self, int]]:
        """The generated reader of ``version``, for hot loops: ``reader(buf, offset)``.

        It returns ``(message, next_offset)`` like :meth:`read`, without the per-call version
        lookup; ``buf`` is any buffer (``bytes`` is read without a copy). Its DecodeErrors carry
        the field path and byte offset; the message name and version are filled in by
        ``error.located(...)`` (as ``read`` and ``decode`` do).
        """
        reader: Callable[[BytesLike, int], tuple[Self, int]] = cls._at_version(
            cls._READERS, version
        )
        return reader

    @classmethod
    def decode_row(cls, data: BytesLike, version: int) -> tuple[Any, ...]:
        """Decode ``data`` at ``version`` into a row: a tuple of the field values.

        The row holds what :meth:`decode` would put in the message's attributes, in
        ``ROW_FIELDS`` order (unknown tags last, as a read-only mapping); nested structs are
        rows too, arrays are lists. Same checks and errors as :meth:`decode`, fewer objects.
        """
        row: tuple[Any, ...] = cls._decode_whole(cls._ROW_READERS, data, version)
        return row

    @classmethod
    def row_reader(cls, version: int) -> RowReader:
        """The generated row reader of ``version``: ``row_reader(buf, offset) -> (row, end)``.

        The hot-loop form of :meth:`decode_row`, as :meth:`reader` is of :meth:`decode`.
        """
        reader: RowReader = cls._at_version(cls._ROW_READERS, version)
        return reader

    @classmethod
    def read(cls, buf: BytesLike, offset: int, version: int) -> tuple[Self, int]:
        """Decode one message at ``offset`` of ``buf`` (any buffer); return it and the offset
        after it."""
        reader = cls._READERS.get(version)
        if reader is None:
            raise cls._no_version(version)
        if type(buf) is not bytes:
            buf = buffer_bytes(buf)
        try:
            result: tuple[Self, int] = reader(buf, offset)
        except DecodeError as exc:
            raise exc.located(cls.SPEC_NAME, version) from None
        return result

    def encode(self, version: int) -> bytes:
        """The message's bytes at ``version``, exactly as Kafka writes them."""
        writer = self._WRITERS.get(version)
        if writer is None:
            raise self._no_version(version)
        out: list[bytes] = []
        try:
            writer(self, out)
            return b"".join(out)  # in the try: a str where bytes go fails here
        except EncodeError as exc:
            exc.message, exc.version = self.SPEC_NAME, version
            raise
        except (
            StructError,
            AssertionError,  # a None the writer narrowed away (see write.py.j2)
            AttributeError,
            TypeError,
            OverflowError,
            UnicodeEncodeError,
            ValueError,
        ) as exc:
            problem = self._diagnose(version, "") or EncodeError(
                f"cannot encode: {type(exc).__name__}: {exc}"
            )
            problem.message, problem.version = self.SPEC_NAME, version
            raise problem from exc

    @classmethod
    def from_json(cls, obj: object, version: int) -> Self:
        """Read Kafka's JsonConverter form at ``version``; JsonFormatErrors name the JSON path."""
        try:
            return cls._from_json(obj, version)
        except JsonFormatError as exc:
            raise exc.located(cls.SPEC_NAME, version) from None

    @classmethod
    def _at_version(cls, table: Mapping[int, Any], version: int) -> Any:
        """The entry of a per-version table (readers, row readers), or the version error."""
        entry = table.get(version)
        if entry is None:
            raise cls._no_version(version)
        return entry

    @classmethod
    def given_version(cls, version: int) -> int:
        """``version`` when the message has it; an UnsupportedVersionError otherwise.

        The rule for a version a reader is told (a topic map's ``version = N``, a column or
        SQL function's version argument): the bytes are said to be that version, and no
        version the spec lacks can be read, as Kafka's generated ``read`` refuses one.
        """
        if isinstance(version, bool) or version not in cls.VALID_VERSIONS:
            raise cls._no_version(version)
        return version

    @classmethod
    def written_version(cls, version: int) -> tuple[int, bool]:
        """The version to read bytes written at ``version`` with, and whether that is newer
        than the spec; an UnsupportedVersionError when they cannot be read.

        The rule for a version that comes with the record (an int16 prefix, a header): one
        the spec has is read as itself; one above the newest is read with the newest when
        that one is flexible (KIP-915: a newer version only adds tagged fields, which are
        skipped); anything else cannot be read.
        """
        if version in cls.VALID_VERSIONS:
            return version, False
        if version > cls.HIGHEST_VERSION and cls.HIGHEST_VERSION in cls.FLEXIBLE_VERSIONS:
            return cls.HIGHEST_VERSION, True
        if version > cls.HIGHEST_VERSION >= cls.LOWEST_VERSION:
            raise UnsupportedVersionError(
                f"version {version} of {cls.SPEC_NAME} is newer than the newest known "
                f"({cls.HIGHEST_VERSION}), which is not flexible, so it cannot be read"
            )
        raise cls._no_version(version)

    @classmethod
    def _no_version(cls, version: int) -> UnsupportedVersionError:
        return UnsupportedVersionError(
            f"{cls.SPEC_NAME} has no version {version} (valid versions: {cls.VALID_VERSIONS})"
        )
