"""The wire: what generated readers and writers call to read and write Kafka's binary format.

Unsigned varints, arrays of fixed-width values, tagged-field sections and the unknown tags they
carry, buffers and offsets as the public readers take them, and the errors of a failed read or
write, built only on the failure paths. Stdlib only.
"""

from __future__ import annotations

import operator
import struct
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from codegen.runtime.errors import (
    BufferUnderflow,
    DecodeError,
    EncodeError,
    FieldTypeError,
    InvalidLength,
    InvalidTaggedField,
    InvalidUtf8,
    NullValueError,
    TrailingBytes,
    UnexpectedNull,
    UnknownTagError,
    UnsupportedFieldError,
    ValueRangeError,
)

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

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}

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
    """Unsigned LEB128: Kafka's unsigned varint (5 bytes at most for a 32-bit value; the record
    format's zig-zag varlongs take up to 10)."""
    if value < 0x80:
        return UVARINT_1[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_uvarint(buf: bytes, offset: int, field: str, max_bytes: int = 5) -> tuple[int, int]:
    """Read an unsigned varint (LEB128: Kafka's 32-bit one, or of at most ``max_bytes`` bytes) at
    ``offset``; return (value, next offset). BufferUnderflow where the bytes end inside it,
    InvalidLength where it takes more bytes; ``field`` names the place in both."""
    value = 0
    shift = 0
    start = offset
    end = len(buf)
    last = 7 * (max_bytes - 1)  # the shift of the last byte it may take
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
        if shift > last:
            raise InvalidLength(
                f"unsigned varint longer than {max_bytes} bytes", field=field, offset=start
            )


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
    return FieldTypeError(wrong_type_reason(kind, value), field=field)


def wrong_type_reason(kind: str, value: object) -> str:
    got = type(value).__name__
    if kind in INT_RANGES:
        return f"expected an int for {kind}, got {got}"
    if kind == "array":
        return f"expected a list or tuple for array, got {got}"
    return f"expected {kind}, got {got}"


def too_long_to_write(field: str, length: int) -> ValueRangeError:
    return ValueRangeError(
        f"string of {length} UTF-8 bytes is too long to write (at most {MAX_STRING_LENGTH})",
        field=field,
    )
