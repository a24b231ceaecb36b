"""Errors raised by generated codecs. Stdlib only.

Every decode error carries the message name, the version, a field path such as
``topics[3].partitions[0].metadata`` and the byte offset where the problem was found; encode
errors carry the message, version and field path, JSON errors the path in JSON keys.
"""

from __future__ import annotations

from typing import Self


class KafkaCodecError(Exception):
    """Base of every error the codecs raise."""


class DecodeError(KafkaCodecError, ValueError):
    """Bytes that do not decode as the message at that version."""

    def __init__(
        self,
        reason: str,
        *,
        field: str = "",
        offset: int = -1,
        message: str = "",
        version: int = -1,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field
        self.offset = offset
        self.message = message
        self.version = version

    def located(self, message: str, version: int) -> DecodeError:
        """Fill in the message and version once, at the outermost decode call."""
        if not self.message:
            self.message = message
            self.version = version
        return self

    def within(self, parent: str, index: int | None = None) -> DecodeError:
        """Prefix the field path with the parent field (and array index)."""
        head = parent if index is None else f"{parent}[{index}]"
        self.field = f"{head}.{self.field}" if self.field else head
        return self

    def __str__(self) -> str:
        where = []
        if self.message:
            where.append(f"{self.message} v{self.version}")
        if self.field:
            where.append(f"field {self.field}")
        if self.offset >= 0:
            where.append(f"byte {self.offset}")
        return f"{', '.join(where)}: {self.reason}" if where else self.reason


class BufferUnderflow(DecodeError):
    """The bytes end before the value does."""


class InvalidLength(DecodeError):
    """A length or count that cannot be right (negative, too long, more than the bytes left)."""


class UnexpectedNull(DecodeError):
    """A null in a field that is not nullable at this version."""


class InvalidUtf8(DecodeError):
    """A string that is not UTF-8."""


class TrailingBytes(DecodeError):
    """Bytes left over after the message."""


class InvalidTaggedField(DecodeError):
    """A tagged field that is malformed or not valid at this version."""


class UnsupportedVersionError(KafkaCodecError, ValueError):
    """A version the message does not have, or a field the version cannot carry."""


class EncodeError(KafkaCodecError, ValueError):
    """A message that cannot be written at the version asked for."""

    def __init__(self, reason: str, *, field: str = "", message: str = "", version: int = -1):
        super().__init__(reason)
        self.reason = reason
        self.field = field
        self.message = message
        self.version = version

    def within(self, parent: str, index: int | None = None) -> Self:
        """Prefix the field path with the parent field (and array index)."""
        head = parent if index is None else f"{parent}[{index}]"
        self.field = f"{head}.{self.field}" if self.field else head
        return self

    def __str__(self) -> str:
        return _located(self.message, self.version, self.field, self.reason)


def _located(message: str, version: int, field: str, reason: str) -> str:
    head = f"{message} v{version}" if message else ""
    if field:
        head = f"{head}, field {field}" if head else f"field {field}"
    return f"{head}: {reason}" if head else reason


class NullValueError(EncodeError):
    """None in a field that is not nullable at this version."""


class ValueRangeError(EncodeError):
    """An integer outside its type's range, or a string that is too long."""


class FieldTypeError(EncodeError):
    """A value of the wrong Python type (a bool where an int goes, a str where bytes go, ...)."""


class UnknownTagError(EncodeError):
    """Unknown tagged fields that cannot be written: a tag repeated or out of order (Kafka's
    writer refuses both), or the tag of a field the struct knows."""


class UnsupportedFieldError(EncodeError, UnsupportedVersionError):
    """A non-default value in a field the version does not have."""


class JsonFormatError(KafkaCodecError, ValueError):
    """JSON that does not read as the message at that version.

    ``field`` is the path in the JSON document (JSON keys: ``topics[0].partitionIndex``);
    ``message`` and ``version`` are filled in by the top-level ``from_json``.
    """

    def __init__(self, reason: str, *, field: str = "", message: str = "", version: int = -1):
        super().__init__(reason)
        self.reason = reason
        self.field = field
        self.message = message
        self.version = version

    def within(self, parent: str, index: int | None = None) -> Self:
        """Prefix the field path with the parent key (and array index)."""
        head = parent if index is None else f"{parent}[{index}]"
        self.field = f"{head}.{self.field}" if self.field else head
        return self

    def located(self, message: str, version: int) -> Self:
        if not self.message:
            self.message = message
            self.version = version
        return self

    def __str__(self) -> str:
        return _located(self.message, self.version, self.field, self.reason)
