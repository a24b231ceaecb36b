"""A value read as an older release's generated class reads it, from that release's spec.

Early-access records changed layout before their release at the same version
(:attr:`~codegen.forensics.releases.RecordTypeReads.layout_differs`): an older release's class
reads the newer bytes by its own fields. Whether that read fails depends on the bytes, not
only on the layouts: 4.0's ``ShareGroupMetadataValue`` v0 is ``Epoch`` and then the tagged
fields, so 4.4's ``MetadataHash`` is read as a count of tagged fields, and a hash whose first
byte is zero reads as none. :func:`read_error` walks a value as Kafka's ``MessageDataGenerator``
writes ``read()``: fixed-width fields, length-prefixed strings, bytes and arrays (the lengths
checked before reading as ``ByteBufferAccessor`` does), nested structs and the tagged-field
section (an unknown tag's bytes skipped by ``readUnknownTaggedField``). Bytes after the last
field are not looked at (``CoordinatorRecordSerde`` does not either).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = ["read_error"]

_FIXED: Final[dict[str, int]] = {
    "int8": 1,
    "bool": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "float64": 8,
    "uuid": 16,
}
_MAX_STRING: Final = 0x7FFF


class _ReadError(Exception):
    """What the Java reader throws: its message (``getMessage()``, None for a buffer underflow),
    which ``CoordinatorRecordSerde`` quotes."""

    def __init__(self, message: str | None) -> None:
        super().__init__(message)
        self.message = message


def _java_int(value: int) -> int:
    """``value`` as Java's int arithmetic leaves it (its low 32 bits, signed)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


class _Reader:
    def __init__(self, body: bytes, spec: Mapping[str, Any], version: int) -> None:
        self.buf = body
        self.pos = 0
        self.spec = spec
        self.version = version
        flexible = _span(spec.get("flexibleVersions"))
        self.flexible = flexible is not None and flexible[0] <= version <= flexible[1]

    @property
    def remaining(self) -> int:
        return len(self.buf) - self.pos

    def take(self, n: int) -> bytes:
        if n > self.remaining:
            raise _ReadError(None)  # java.nio.BufferUnderflowException
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def unsigned_varint(self) -> int:
        """As ``ByteUtils.readUnsignedVarint``: a Java int, so a fifth byte's bits past the 32nd
        are lost and bit 31 makes it negative (a negative count reads no fields)."""
        value = 0
        for i in range(5):
            b = self.take(1)[0]
            value |= (b & 0x7F) << (7 * i)
            if not b & 0x80:
                return _java_int(value)
        raise _ReadError(
            "Varint is too long, the most significant bit "
            f"in the 5th byte is set, converted value: {value & 0xFFFFFFFF:x}"  # a Java int
        )

    def length(self, prefix: str) -> int:
        """A length prefix: a varint of length + 1 when flexible, else int16/int32."""
        if self.flexible:
            return _java_int(self.unsigned_varint() - 1)
        return int(struct.unpack(">" + prefix, self.take(struct.calcsize(prefix)))[0])

    def struct_fields(self, fields: Sequence[Mapping[str, Any]], name: str) -> None:
        tagged: dict[int, Mapping[str, Any]] = {}
        for f in fields:
            if not _present(f, "versions", self.version):
                continue
            if _present(f, "taggedVersions", self.version):
                tagged[int(f["tag"])] = f
                continue
            self.field(f)
        if not self.flexible:
            return
        for _ in range(self.unsigned_varint()):
            tag = self.unsigned_varint()
            size = self.unsigned_varint()
            if tag in tagged:
                self.field(tagged[tag])
            else:
                self.byte_array(size)

    def byte_array(self, size: int) -> None:
        if size < 0:
            raise _ReadError(str(size))  # new byte[size]: java.lang.NegativeArraySizeException
        if size > self.remaining:
            raise _ReadError(
                f"Error reading byte array of {size} byte(s): only "
                f"{self.remaining} byte(s) available"
            )
        self.pos += size

    def field(self, f: Mapping[str, Any]) -> None:
        kind = str(f["type"])
        name = str(f["name"])
        name = name[:1].lower() + name[1:]  # the generated class's field, named in errors
        nullable = _present(f, "nullableVersions", self.version)
        if kind.startswith("[]"):
            n = self.length("i")
            if n < 0:
                self.null(name, nullable)
                return
            if n > self.remaining:
                raise _ReadError(
                    f"Tried to allocate a collection of size {n}, "
                    f"but there are only {self.remaining} bytes remaining."
                )
            element = kind[2:]
            for _ in range(n):
                self.value(element, f, name)
            return
        if kind[:1].isupper() and nullable and self.take(1)[0] >= 0x80:
            return  # a nullable struct's marker byte: -1 is null
        self.value(kind, f, name, nullable)

    def value(self, kind: str, f: Mapping[str, Any], name: str, nullable: bool = False) -> None:
        if kind in _FIXED:
            self.take(_FIXED[kind])
        elif kind == "string":
            n = self.length("h")
            if n < 0:
                self.null(name, nullable)
            elif n > _MAX_STRING:
                raise _ReadError(f"string field {name} had invalid length {n}")
            else:
                self.byte_array(n)  # readString reads an array of its length first
        elif kind in ("bytes", "records"):
            n = self.length("i")
            if n < 0:
                self.null(name, nullable)
            else:
                self.byte_array(n)
        else:
            self.nested(kind, f)

    def nested(self, kind: str, f: Mapping[str, Any]) -> None:
        spec: Mapping[str, Any] = f
        if not f.get("fields"):
            common = [s for s in self.spec.get("commonStructs", ()) if s["name"] == kind]
            spec = common[0] if common else {"fields": []}
        versions = _span(spec.get("versions"))
        if versions is not None and not versions[0] <= self.version <= versions[1]:
            raise _ReadError(f"Can't read version {self.version} of {kind}")
        self.struct_fields(spec.get("fields", ()), kind)

    def null(self, name: str, nullable: bool) -> None:
        if not nullable:
            raise _ReadError(f"non-nullable field {name} was serialized as null")


def read_error(spec: Mapping[str, Any], version: int, body: bytes) -> str | None:
    """What ``spec``'s generated class throws reading ``body`` (a value after its version) at
    ``version``, as ``CoordinatorRecordSerde`` reports it; None when it reads."""
    reader = _Reader(body, spec, version)
    try:
        reader.struct_fields(spec.get("fields", ()), str(spec.get("name", "")))
    except _ReadError as exc:
        cause = "null" if exc.message is None else exc.message
        return (
            f"java.lang.RuntimeException: Could not read record with version {version} from "
            f"value's buffer due to: {cause}."
        )
    return None


def _span(text: object) -> tuple[int, int] | None:
    if text is None or text == "none":
        return None
    s = str(text)
    if s.endswith("+"):
        return int(s[:-1]), 2**15
    low, _, high = s.partition("-")
    return int(low), int(high or low)


def _present(f: Mapping[str, Any], key: str, version: int) -> bool:
    span = _span(f.get(key))
    return span is not None and span[0] <= version <= span[1]
