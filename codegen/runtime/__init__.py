"""The small runtime that generated codecs call. Stdlib only.

Generated modules hold straight-line per-version code; what they share lives here:
the base classes with the public API, unsigned varints, tagged-field sections,
JSON value conversions, and the construction of precise errors (only on failure paths).
"""

from __future__ import annotations

import base64
import binascii
import gc
import math
import operator
import struct
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from importlib import import_module
from typing import Any, ClassVar, Final, Self

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
    "use_backend",
]

new = object.__new__
_set = object.__setattr__
StructError = struct.error
MAX_STRING_LENGTH = 0x7FFF
ZERO_UUID = uuid.UUID(int=0)
# Tags are Java ints in Kafka: a tag read above this one is a negative int there.
MAX_TAG = 0x7FFFFFFF
# Kafka 4.4.0's generated readers refuse, before allocating, an array of more elements and a
# tagged-field section of more fields than these (equal counts are read).
MAX_ARRAY_LENGTH = 1_000_000
MAX_TAGGED_FIELDS = 10_000

# What the public readers take: any buffer, as the native engine does (the generated reads
# index and slice bytes, so a message's readers copy any other buffer to bytes first).
BytesLike = bytes | bytearray | memoryview
Reader = Callable[[BytesLike, int], tuple[Any, int]]
Writer = Callable[[Any, list[bytes]], None]
RowReader = Callable[[BytesLike, int], tuple[tuple[Any, ...], int]]

# ----------------------------------------------------------------------------- fixed arrays

_ARRAY_STRUCTS: dict[str, tuple[struct.Struct, ...]] = {}


def _array_structs(fmt: str) -> tuple[struct.Struct, ...]:
    structs = _ARRAY_STRUCTS.get(fmt)
    if structs is None:
        structs = tuple(struct.Struct(f">{n}{fmt}") for n in range(64))
        _ARRAY_STRUCTS[fmt] = structs
    return structs


def array_unpackers(fmt: str) -> tuple[Callable[[bytes, int], tuple[Any, ...]], ...]:
    """``unpack_from`` of 0..63 values of ``fmt``: arrays of fixed-width values by count."""
    return tuple(s.unpack_from for s in _array_structs(fmt))


def array_packers(fmt: str) -> tuple[Callable[..., bytes], ...]:
    return tuple(s.pack for s in _array_structs(fmt))


# ----------------------------------------------------------------------------- unknown tags


class UnknownTags(Mapping[int, bytes]):
    """Tagged fields a struct's spec does not know: ``(tag, raw bytes)`` pairs, in wire order.

    ``pairs`` holds every tagged field as read, a repeated tag included (Kafka's readers keep
    them all too). The mapping view is ``dict(pairs)``: each tag once, in the order it first
    appears, with the value it last had, so ``tags[t]``, ``get``, ``in``, ``len`` and iteration
    count a repeated tag once. Built from a mapping, the pairs are in ascending tag order (a
    mapping has no wire order); built from pairs, they keep their order. Immutable.
    """

    __slots__ = ("_by_tag", "pairs")
    pairs: tuple[tuple[int, bytes], ...]
    _by_tag: dict[int, bytes]

    def __init__(self, tags: Mapping[int, bytes] | Iterable[tuple[int, bytes]] = ()) -> None:
        if isinstance(tags, UnknownTags):
            pairs = tags.pairs
        elif isinstance(tags, Mapping):
            pairs = tuple(sorted(tags.items(), key=lambda pair: pair[0]))
        else:
            pairs = tuple((tag, value) for tag, value in tags)
        _set(self, "pairs", pairs)
        _set(self, "_by_tag", dict(pairs))

    @classmethod
    def of_read(cls, pairs: list[tuple[int, bytes]]) -> UnknownTags:
        """What a reader collected (checked tags, bytes values): no copy, no checks."""
        self = new(cls)
        _set(self, "pairs", tuple(pairs))
        _set(self, "_by_tag", dict(pairs))
        return self

    def __getitem__(self, tag: int) -> bytes:
        return self._by_tag[tag]

    def __contains__(self, tag: object) -> bool:
        return tag in self._by_tag

    def __iter__(self) -> Iterator[int]:
        return iter(self._by_tag)

    def __len__(self) -> int:
        return len(self._by_tag)

    def __eq__(self, other: object) -> bool:
        """Equal to UnknownTags with the same pairs in the same order, and to any other
        mapping holding the same pairs (which needs each tag to appear once)."""
        if isinstance(other, UnknownTags):
            return self.pairs == other.pairs
        if isinstance(other, Mapping):
            return len(self.pairs) == len(self._by_tag) and self._by_tag == dict(other.items())
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.pairs)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("UnknownTags is immutable")

    def __reduce__(self) -> tuple[type[UnknownTags], tuple[tuple[tuple[int, bytes], ...]]]:
        return (UnknownTags, (self.pairs,))

    def __repr__(self) -> str:
        return f"UnknownTags({list(self.pairs)!r})"


# The unknown tags of a struct that has none: immutable, so one shared value.
NO_TAGS = UnknownTags()


def unknown_tags_read(pairs: list[tuple[int, bytes]]) -> UnknownTags:
    """The unknown tags a reader collected, ``NO_TAGS`` for none (what the native engine calls)."""
    return UnknownTags.of_read(pairs) if pairs else NO_TAGS


# ----------------------------------------------------------------------------- varints

UVARINT_1 = tuple(bytes((i,)) for i in range(128))


def uvarint(value: int) -> bytes:
    """Unsigned LEB128, at most 5 bytes (Kafka's 32-bit unsigned varint)."""
    if value < 0x80:
        return UVARINT_1[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_uvarint(buf: bytes, offset: int, field: str) -> tuple[int, int]:
    """Read an unsigned varint at ``offset``; return (value, next offset)."""
    value = 0
    shift = 0
    start = offset
    end = len(buf)
    while True:
        if offset >= end:
            raise BufferUnderflow(
                "the bytes end inside an unsigned varint", field=field, offset=start
            )
        b = buf[offset]
        offset += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, offset
        shift += 7
        if shift > 28:
            raise InvalidLength("unsigned varint longer than 5 bytes", field=field, offset=start)


# ----------------------------------------------------------------------------- buffers


def buffer_bytes(buf: BytesLike) -> bytes:
    """The bytes of a buffer that is not ``bytes`` (a bytearray, a memoryview, a slice of one),
    for the generated reads. Refused as the native engine refuses them: an object that is not
    a buffer (TypeError) and a buffer that is not contiguous (BufferError)."""
    try:
        view = memoryview(buf)
    except TypeError:
        raise TypeError(f"a bytes-like object is required, not '{type(buf).__name__}'") from None
    if not view.c_contiguous:
        raise BufferError("memoryview: underlying buffer is not C-contiguous")
    return view.tobytes()


# ----------------------------------------------------------------------------- decode errors


def short_read(buf: bytes, offset: int, sizes: tuple[tuple[str, int], ...]) -> BufferUnderflow:
    """The error for a fixed-width run that ran past the end: name the field that did."""
    have = len(buf) - offset
    at = offset
    for name, size in sizes:
        if at + size > len(buf):
            return BufferUnderflow(
                f"needs {size} bytes, only {max(len(buf) - at, 0)} left", field=name, offset=at
            )
        at += size
    return BufferUnderflow(
        f"needs more than the {have} bytes left", field=sizes[0][0], offset=offset
    )


def underflow(field: str, offset: int, length: int, buf: bytes) -> BufferUnderflow:
    return BufferUnderflow(
        f"length {length} runs past the end ({len(buf) - offset} bytes left)",
        field=field,
        offset=offset,
    )


def bad_length(field: str, offset: int, length: int, buf: bytes) -> DecodeError:
    """A length prefix that is negative (null where null is not allowed) or runs past the end."""
    if length < 0:
        return UnexpectedNull(
            "null in a field that is not nullable at this version", field=field, offset=offset
        )
    return underflow(field, offset, length, buf)


def end_of_buffer(field: str, offset: int) -> BufferUnderflow:
    return BufferUnderflow("the bytes end here", field=field, offset=offset)


def unexpected_null(field: str, offset: int) -> UnexpectedNull:
    return UnexpectedNull(
        "null in a field that is not nullable at this version", field=field, offset=offset
    )


def string_too_long(field: str, offset: int, length: int) -> InvalidLength:
    return InvalidLength(
        f"string length {length} is above {MAX_STRING_LENGTH}", field=field, offset=offset
    )


def too_many(field: str, offset: int, count: int, buf: bytes, size: int) -> InvalidLength:
    """An array count that cannot fit the bytes left (elements of ``size`` bytes or more),
    else one above Kafka's limit: the reads check both with one test."""
    if count * size > len(buf) - offset:
        reason = f"array of {count} elements cannot fit in the {len(buf) - offset} bytes left"
    else:
        reason = f"array of {count} elements is above {MAX_ARRAY_LENGTH}, the most Kafka reads"
    return InvalidLength(reason, field=field, offset=offset)


def too_many_tags(offset: int, count: int) -> InvalidTaggedField:
    return InvalidTaggedField(
        f"{count} tagged fields are above {MAX_TAGGED_FIELDS}, the most Kafka reads",
        field="<tagged fields>",
        offset=offset,
    )


def checked_offset(size: int, offset: object) -> int:
    """The offset a public reader was given, as an int from 0 to ``size`` (the buffer's
    length in bytes): a TypeError for what is not an integer, a BufferUnderflow for what is
    outside the buffer. The native engine calls this for what its own test does not pass,
    so both backends refuse alike."""
    try:
        at = operator.index(offset)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"offset must be an integer, not '{type(offset).__name__}'") from None
    if not 0 <= at <= size:
        raise BufferUnderflow(
            f"offset {at} is outside the buffer ({size} bytes)", field="", offset=at
        )
    return at


def bad_utf8(field: str, offset: int, exc: UnicodeDecodeError) -> InvalidUtf8:
    return InvalidUtf8(
        f"invalid UTF-8 ({exc.reason} at byte {offset + exc.start})", field=field, offset=offset
    )


def bad_tag(field: str, offset: int, reason: str) -> InvalidTaggedField:
    return InvalidTaggedField(reason, field=field, offset=offset)


def tag_size_mismatch(field: str, offset: int, size: int, used: int) -> InvalidTaggedField:
    return InvalidTaggedField(
        f"tagged field declares {size} bytes but its value takes {used}", field=field, offset=offset
    )


def trailing(message: str, version: int, offset: int, total: int) -> TrailingBytes:
    return TrailingBytes(
        f"{total - offset} bytes left after the message",
        field="",
        offset=offset,
        message=message,
        version=version,
    )


_UUID_SAFE_UNKNOWN = uuid.SafeUUID.unknown


def read_uuid(raw: bytes) -> uuid.UUID:
    """A UUID from 16 big-endian bytes, without the checks of ``UUID(bytes=...)`` (5x faster)."""
    if len(raw) != 16:
        raise ValueError("a uuid needs 16 bytes")
    value = new(uuid.UUID)
    _set(value, "int", int.from_bytes(raw))
    _set(value, "is_safe", _UUID_SAFE_UNKNOWN)
    return value


# ----------------------------------------------------------------------------- encoding


def encode_tagged(
    out: list[bytes], known: list[tuple[int, bytes]], unknown: object, first_unknown: int
) -> None:
    """Write a tagged-field section as Kafka's generated writers do: the known tags (ascending),
    then the unknown ones (``RawTaggedFieldWriter``), which must be in ascending order."""
    pairs = unknown_pairs(unknown, first_unknown)
    out.append(uvarint(len(known) + len(pairs)))
    for tag, payload in known:
        out.append(uvarint(tag))
        out.append(uvarint(len(payload)))
        out.append(payload)
    for tag, payload in pairs:
        out.append(uvarint(tag))
        out.append(uvarint(len(payload)))
        out.append(payload)


def unknown_pairs(unknown: object, first_unknown: int) -> tuple[tuple[int, bytes], ...]:
    """The unknown tags of a struct whose known tags are below ``first_unknown``, checked.

    Kafka's writer refuses a tag that is not above the one before it ("Invalid raw tag field
    list"), so a repeated tag or one out of order is an error here too; so is a tag the struct
    knows (it would read back as that field) and one outside 0..2**31-1 (what readers take).
    """
    if isinstance(unknown, UnknownTags):
        pairs = unknown.pairs
    elif isinstance(unknown, Mapping):
        pairs = tuple(unknown.items())
        if all(type(tag) is int for tag, _ in pairs):
            pairs = tuple(sorted(pairs, key=_tag_of))
    else:
        raise FieldTypeError(
            f"expected a mapping of tag to bytes (or UnknownTags), got {type(unknown).__name__}",
            field="unknown_tags",
        )
    checked: list[tuple[int, bytes]] = []
    previous = -1
    for tag, payload in pairs:
        if type(tag) is not int:
            raise FieldTypeError(
                f"tag {tag!r} is a {type(tag).__name__}, not an int", field="unknown_tags"
            )
        if not 0 <= tag <= MAX_TAG:
            raise ValueRangeError(
                f"tag {tag} is outside the tag range 0..{MAX_TAG}", field="unknown_tags"
            )
        if tag < first_unknown:
            raise UnknownTagError(
                f"tag {tag} belongs to a field of this struct (unknown tags start at "
                f"{first_unknown}): set the field instead",
                field="unknown_tags",
            )
        if tag <= previous:
            raise UnknownTagError(
                f"tag {tag} comes after tag {previous}: unknown tags must be in ascending order, "
                "each tag once (as Kafka's writer requires)",
                field="unknown_tags",
            )
        if type(payload) is not bytes:
            if not isinstance(payload, (bytes, bytearray, memoryview)):
                raise FieldTypeError(
                    f"tag {tag}: expected bytes, got {type(payload).__name__}", field="unknown_tags"
                )
            payload = bytes(payload)
        checked.append((tag, payload))
        previous = tag
    return tuple(checked)


def _tag_of(pair: tuple[int, bytes]) -> int:
    return pair[0]


def no_unknown_tags(unknown: object) -> None:
    """At a version without a tagged-field section: an empty mapping, or the error."""
    if not isinstance(unknown, Mapping):
        raise FieldTypeError(
            f"expected a mapping of tag to bytes (or UnknownTags), got {type(unknown).__name__}",
            field="unknown_tags",
        )
    if unknown:
        raise UnsupportedFieldError(
            "unknown tagged fields are set, but this version has no tagged fields",
            field="unknown_tags",
        )


def unsupported_field(field: str) -> UnsupportedFieldError:
    return UnsupportedFieldError(
        "a non-default value cannot be written at this version, which lacks the field",
        field=field,
    )


SEQUENCE = (list, tuple)


def index_of(items: Iterable[object], item: object) -> int:
    """The index of ``item`` (by identity): the array element a write failed on."""
    for i, candidate in enumerate(items):
        if candidate is item:
            return i
    return -1


def wrong_value(field: str, value: object, kind: str) -> EncodeError:
    """The error for ``value`` in a field of ``kind`` that the writer's type check refused."""
    if value is None:
        return NullValueError("None in a field that is not nullable at this version", field=field)
    return FieldTypeError(_wrong_type_reason(kind, value), field=field)


def _wrong_type_reason(kind: str, value: object) -> str:
    got = type(value).__name__
    if kind in _INT_RANGES:
        return f"expected an int for {kind}, got {got}"
    if kind == "array":
        return f"expected a list or tuple for array, got {got}"
    return f"expected {kind}, got {got}"


def too_long_to_write(field: str, length: int) -> ValueRangeError:
    return ValueRangeError(
        f"string of {length} UTF-8 bytes is too long to write (at most {MAX_STRING_LENGTH})",
        field=field,
    )


# ----------------------------------------------------------------------------- JSON values


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


_URL_SAFE: Final = bytes.maketrans(b"+/", b"-_")


def uuid_json(value: uuid.UUID) -> str:
    """The uuid as Kafka's JSON writes it: URL-safe base64 without padding (22 characters)."""
    return binascii.b2a_base64(value.bytes, newline=False).translate(_URL_SAFE)[:22].decode("ascii")


def json_missing(cls: str, key: str, version: int) -> JsonFormatError:
    return JsonFormatError(
        f"{cls}: unable to locate field '{key}', which is mandatory in version {version}",
        field=key,
    )


def json_null(cls: str, key: str, version: int) -> JsonFormatError:
    return JsonFormatError(
        f"{cls}: field '{key}' is null, but it is not nullable in version {version}", field=key
    )


def json_int(node: object, cls: str, key: str, low: int, high: int) -> int:
    if isinstance(node, bool) or not isinstance(node, int):
        if isinstance(node, float) and node.is_integer():
            node = int(node)
        else:
            raise JsonFormatError(
                f"{cls}: field '{key}' expected an integer, got {type(node).__name__}", field=key
            )
    if not low <= node <= high:
        raise JsonFormatError(
            f"{cls}: field '{key}' value {node} is out of range {low}..{high}", field=key
        )
    return node


_NON_FINITE_JSON = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def float_json(value: float) -> float | str:
    """A float64 as Kafka's JsonConverter prints it: non-finite values become the strings
    ``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` (Jackson's default)."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def json_float(node: object, cls: str, key: str) -> float:
    """A float64 from JSON. Unlike Kafka's reader, this also takes JSON integers and the
    non-finite strings Kafka's writer prints, so every to_json output reads back."""
    if isinstance(node, str) and node in _NON_FINITE_JSON:
        return _NON_FINITE_JSON[node]
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        raise JsonFormatError(
            f"{cls}: field '{key}' expected a number, got {type(node).__name__}", field=key
        )
    try:
        return float(node)
    except OverflowError:
        raise JsonFormatError(
            f"{cls}: field '{key}' value {node} is too large for a float64", field=key
        ) from None


def json_struct_version(cls: str, version: int) -> JsonFormatError:
    """An inline struct given at a version it does not have (Kafka's converters' text)."""
    return JsonFormatError(f"Can't read version {version} of {cls}")


def json_bool(node: object, cls: str, key: str) -> bool:
    if not isinstance(node, bool):
        raise JsonFormatError(
            f"{cls}: field '{key}' expected a boolean, got {type(node).__name__}", field=key
        )
    return node


def json_str(node: object, cls: str, key: str) -> str:
    if not isinstance(node, str):
        raise JsonFormatError(
            f"{cls}: field '{key}' expected a string, got {type(node).__name__}", field=key
        )
    return node


def json_bytes(node: object, cls: str, key: str) -> bytes:
    if not isinstance(node, str):
        raise JsonFormatError(
            f"{cls}: field '{key}' expected a base64 string, got {type(node).__name__}", field=key
        )
    try:
        return base64.b64decode(node, validate=True)
    except (binascii.Error, ValueError) as exc:  # ValueError: not ASCII
        raise JsonFormatError(
            f"{cls}: field '{key}' is not valid base64: {exc}", field=key
        ) from exc


def json_uuid(node: object, cls: str, key: str) -> uuid.UUID:
    text = json_str(node, cls, key)
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise JsonFormatError(
            f"{cls}: field '{key}' is not a base64url uuid: {exc}", field=key
        ) from exc
    if len(raw) != 16:
        raise JsonFormatError(f"{cls}: field '{key}' is not a 16-byte uuid", field=key)
    return uuid.UUID(bytes=raw)


def json_list(node: object, cls: str, key: str) -> list[Any]:
    if not isinstance(node, list):
        raise JsonFormatError(
            f"{cls}: field '{key}' expected a JSON array, got {type(node).__name__}", field=key
        )
    return node


def json_item_error(exc: JsonFormatError, key: str, index: int, is_struct: bool) -> JsonFormatError:
    """The error of an array element: the path gets the element's index."""
    if is_struct:
        return exc.within(key, index)
    exc.field = f"{key}[{index}]"
    return exc


def json_object(node: object, cls: str) -> dict[str, Any]:
    if not isinstance(node, dict):
        raise JsonFormatError(f"{cls}: expected a JSON object, got {type(node).__name__}")
    return node


# ----------------------------------------------------------------------------- classes


@dataclass(frozen=True, slots=True)
class FieldInfo:
    """What the write-error diagnosis needs to know about a field (not used on hot paths)."""

    attr: str
    kind: str
    element: str  # element kind of an array, "" otherwise
    versions: VersionRange
    nullable: VersionRange
    struct: str  # struct class name for struct fields and struct arrays, "" otherwise


_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}
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
    if kind in _INT_RANGES:
        if isinstance(value, bool) or not isinstance(value, int):
            return FieldTypeError(_wrong_type_reason(kind, value), field=where)
        low, high = _INT_RANGES[kind]
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
        return FieldTypeError(_wrong_type_reason(kind, value), field=where)
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
        # Decoding arrays of structs allocates many objects and no cycles: pausing the cyclic
        # garbage collector meanwhile saves it from scanning them again and again.
        pause = cls._MANY_OBJECTS and gc.isenabled()
        if pause:
            gc.disable()
        try:
            obj, end = reader(data, 0)
        except DecodeError as exc:
            raise exc.located(cls.SPEC_NAME, version) from None
        finally:
            if pause:
                gc.enable()
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
    def _no_version(cls, version: int) -> UnsupportedVersionError:
        return UnsupportedVersionError(
            f"{cls.SPEC_NAME} has no version {version} (valid versions: {cls.VALID_VERSIONS})"
        )


# ----------------------------------------------------------------------------- the index


@dataclass(frozen=True, slots=True)
class MessageKind:
    """What a spec is, known without importing its module: its class's ``SPEC_TYPE`` and
    ``API_KEY``, and the folder its spec came from (the topic family, ``consumer_offsets``)."""

    spec_type: str
    api_key: int | None
    folder: str


class MessageIndex(Mapping[str, type[KafkaMessage]]):
    """Spec name -> generated class, importing each module on first use.

    ``kinds`` (spec name -> ``(SPEC_TYPE, API_KEY, folder)``) lets a reader pick the classes
    it needs, such as one topic's record types, without importing the others; packages
    generated before it was written have none (:attr:`kinds` is then None).
    """

    def __init__(
        self,
        package: str,
        modules: Mapping[str, str],
        kinds: Mapping[str, tuple[str, int | None, str]] | None = None,
    ) -> None:
        self._package = package
        self._modules = dict(modules)
        self._loaded: dict[str, type[KafkaMessage]] = {}
        self._kinds = None if kinds is None else {n: MessageKind(*k) for n, k in kinds.items()}

    @property
    def kinds(self) -> Mapping[str, MessageKind] | None:
        """Spec name -> :class:`MessageKind` of every spec, or None (an older package)."""
        return self._kinds

    def __getitem__(self, name: str) -> type[KafkaMessage]:
        cls = self._loaded.get(name)
        if cls is None:
            module = import_module(f"{self._package}.{self._modules[name]}")
            cls = getattr(module, name)
            self._loaded[name] = cls
        return cls

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)


# Imported last: the backends module reads NO_TAGS, KafkaStruct and unknown_tags_read from here.
from codegen.runtime import backends as backends  # noqa: E402
from codegen.runtime.backends import (  # noqa: E402
    BackendError,
    NativeFallbackWarning,
    backend,
    use_backend,
)
