"""Decode options, parsed case-insensitively in one place (like Spark's ``ProtobufOptions``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Mode", "UdfOptions"]


class Mode(StrEnum):
    """What a decoder does with a record that does not decode."""

    FAILFAST = "FAILFAST"
    """Raise :class:`~spark_udfs.errors.MalformedKafkaRecordError` naming the record's position and
    the reason. Example: ``decode_offset_commit_value("value", mode="failfast")``."""
    PERMISSIVE = "PERMISSIVE"
    """Give a null struct and the reason in ``_decode_error``. Example:
    ``decode_offset_commit_value("value", mode="PERMISSIVE")``."""

    @classmethod
    def parse(cls, value: str | Mode) -> Mode:
        if isinstance(value, Mode):
            return value
        try:
            return cls(str(value).strip().upper())
        except ValueError:
            raise ValueError(
                f"unknown mode {value!r}: use FAILFAST (the default) or PERMISSIVE"
            ) from None


@dataclass(frozen=True, slots=True)
class UdfOptions:
    """Options of the decode functions.

    - ``mode``: ``FAILFAST`` (default) or ``PERMISSIVE``, any case. ``{"mode": "permissive"}``
    - ``version``: decode every value at this version, the bytes holding no version prefix.
      ``{"version": "3"}``. Default: read the version from the bytes (int16 prefix of coordinator
      records and consumer-protocol data, the frame of metadata records).
    """

    mode: Mode = Mode.FAILFAST
    version: int | None = None

    @classmethod
    def from_map(cls, options: Mapping[str, object] | None = None, **kwargs: object) -> UdfOptions:
        merged = {str(k).lower(): v for k, v in dict(options or {}).items()}
        merged.update({k.lower(): v for k, v in kwargs.items() if v is not None})
        unknown = set(merged) - {"mode", "version"}
        if unknown:
            raise ValueError(f"unknown option(s): {', '.join(sorted(unknown))}")
        mode = Mode.parse(str(merged.get("mode", Mode.FAILFAST)))
        raw = merged.get("version")
        version = None if raw is None else int(str(raw))
        return cls(mode=mode, version=version)
