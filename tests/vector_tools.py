"""Helpers for checking the byte vectors in ``tests/data/vectors/vectors.jsonl`` against our codecs.

Three things live here: loading the vectors, stripping the framing a vector's ``encoding``
describes (version prefixes, request/response headers, size frames), and one tolerant comparison
of a decoded object with what a source asserts (spec names, JSON names or snake_case keys; bytes as
hex, base64 or ``{"hex": ...}``; positional tuples in spec field order).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import re
import struct
import sys
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpus import ROOT, data_path

from codegen.runtime import BufferUnderflow, KafkaMessage, KafkaStruct
from codegen.runtime.errors import DecodeError

SHIPPED_SPECS = ROOT / "message_specs"

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def load_vectors(*categories: str) -> list[dict[str, Any]]:
    """The vectors of ``categories``, in file order (one JSON object per line)."""
    with data_path("vectors/vectors.jsonl").open(encoding="utf-8") as fh:
        vectors = [json.loads(line) for line in fh if line.strip()]
    return [v for v in vectors if v["category"] in categories]


# ----------------------------------------------------------------------------- names

_ACRONYM_END = re.compile(r"([A-Z]+)([A-Z][a-z])")
_WORD_START = re.compile(r"([a-z0-9])([A-Z])")


def snake(name: str) -> str:
    """``CommitTimestamp``, ``commitTimestamp`` and ``commit_timestamp`` -> ``commit_timestamp``."""
    s = _ACRONYM_END.sub(r"\1_\2", name)
    s = _WORD_START.sub(r"\1_\2", s)
    return s.lower()


# ----------------------------------------------------------------------------- codec sets


def import_package(out_dir: Path) -> Mapping[str, type[KafkaMessage]]:
    """Import a package written by ``write_package`` and return its ``MESSAGES`` index."""
    parent = str(out_dir.parent)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    module = __import__(out_dir.name)
    messages: Mapping[str, type[KafkaMessage]] = module.MESSAGES
    return messages


def coordinator_types(
    messages: Mapping[str, type[KafkaMessage]], folder: str
) -> dict[tuple[str, int], type[KafkaMessage]]:
    """(spec type, record type id) -> class for the coordinator records of one shipped folder."""
    out: dict[tuple[str, int], type[KafkaMessage]] = {}
    for path in sorted((SHIPPED_SPECS / folder).glob("*.json")):
        cls = messages[path.stem]
        assert cls.API_KEY is not None
        out[(cls.SPEC_TYPE, cls.API_KEY)] = cls
    return out


def read_record_type(data: bytes) -> tuple[int, bytes]:
    """Split a coordinator record key or value into its int16 prefix and its body.

    The prefix is not part of any spec, so this is the one read the codecs do not do themselves.
    """
    if len(data) < 2:
        raise BufferUnderflow(
            f"needs 2 bytes for the int16 prefix, only {len(data)} left", field="version", offset=0
        )
    return _I16.unpack_from(data)[0], data[2:]


# ----------------------------------------------------------------------------- framing


@dataclass
class Frame:
    """What ``encoding`` put around the message body, and the body itself."""

    body: bytes
    prefix_version: int | None = None
    size: int | None = None
    header: Any = None  # the decoded RequestHeader/ResponseHeader, when there is one
    header_version: int | None = None
    header_bytes: bytes = b""
    extra: dict[str, Any] = field(default_factory=dict)


BODY_ONLY = frozenset(
    {
        "body only (no int16 version prefix)",
        "body after the int16 version field",
        "request body only (no request header)",
        "request body only",
        "response body only (no response header)",
        "response body only",
        "response body only (no header)",
        "raw record key",
        "raw record value",
    }
)
VERSION_PREFIXED = frozenset(
    {
        "int16 version prefix + body",
        "int16 version + body",
        "int16 version + body (JoinGroup protocol metadata / GroupMetadataValue member "
        "subscription)",
    }
)
FRAMED_REQUEST = "framed: int32 size + request header (v1, or v2 for flexible) + body"
UNFRAMED_REQUEST = "request header v2 + body (NOT size-framed)"
FRAMED_RESPONSE = "framed: int32 size + response header + body"
UNFRAMED_API_VERSIONS_RESPONSE = (
    "response: correlation id + body (response header v0 for ApiVersions; no size frame)"
)


def request_header_version(cls: type[KafkaMessage], version: int) -> int:
    """Kafka's rule: header v2 for flexible request versions, v1 otherwise."""
    return 2 if version in cls.FLEXIBLE_VERSIONS else 1


def response_header_version(cls: type[KafkaMessage], version: int) -> int:
    """Header v1 for flexible responses, v0 otherwise; ApiVersions always answers with v0."""
    if cls.SPEC_NAME == "ApiVersionsResponse":
        return 0
    return 1 if version in cls.FLEXIBLE_VERSIONS else 0


def unframe(
    data: bytes,
    encoding: str,
    cls: type[KafkaMessage] | None,
    version: int | None,
    headers: Mapping[str, type[KafkaMessage]],
) -> Frame:
    """Strip what ``encoding`` says; decode headers with our header codecs."""
    if encoding in BODY_ONLY:
        return Frame(body=data)
    if encoding in VERSION_PREFIXED:
        prefix, body = read_record_type(data)
        return Frame(body=body, prefix_version=prefix)
    assert cls is not None and version is not None, encoding
    size: int | None = None
    rest = data
    if encoding in (FRAMED_REQUEST, FRAMED_RESPONSE):
        (size,) = _I32.unpack_from(data)
        rest = data[4:]
        assert size == len(rest), f"size field {size} != {len(rest)} bytes after it"
    if encoding in (FRAMED_REQUEST, UNFRAMED_REQUEST):
        header_cls = headers["RequestHeader"]
        header_version = request_header_version(cls, version)
    elif encoding in (FRAMED_RESPONSE, UNFRAMED_API_VERSIONS_RESPONSE):
        header_cls = headers["ResponseHeader"]
        header_version = response_header_version(cls, version)
    else:
        raise AssertionError(f"unknown encoding {encoding!r}")
    header, end = header_cls.read(rest, 0, header_version)
    return Frame(
        body=rest[end:],
        size=size,
        header=header,
        header_version=header_version,
        header_bytes=rest[:end],
    )


# ----------------------------------------------------------------------------- comparison


def decode_bytes_text(text: str) -> set[bytes]:
    """Every reading of ``text`` as bytes: hex and base64 (a source may use either)."""
    readings: set[bytes] = set()
    with contextlib.suppress(ValueError):
        readings.add(bytes.fromhex(text))
    with contextlib.suppress(binascii.Error, ValueError):
        readings.add(base64.b64decode(text, validate=True))
    return readings


def fields_in_version(obj: KafkaStruct, version: int) -> list[str]:
    """The attributes ``obj`` carries at ``version``, in spec (wire) order."""
    return [info.attr for info in obj._FIELDS if version in info.versions]


_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def lookup(obj: Any, path: str) -> Any:
    """Follow ``members[0].clientId`` (any spelling of the names) from ``obj``."""
    value = obj
    for m in _STEP.finditer(path):
        if m.group(2) is not None:
            value = value[int(m.group(2))]
        else:
            name = snake(m.group(1))
            if not hasattr(value, name):
                raise AssertionError(f"{type(value).__name__} has no field {m.group(1)!r}")
            value = getattr(value, name)
    return value


def assert_matches(actual: Any, expected: Any, version: int, path: str = "$") -> None:
    """Assert ``actual`` (a decoded object or value) shows everything ``expected`` asserts.

    Keys may be spec names, JSON names, snake_case or dotted paths; ``_type`` is the class name
    and ``_version`` is skipped (the caller checks it); ``_positional`` and lists against a struct
    are values in spec field order; bytes may be given as hex, base64 or ``{"hex": ...}``.
    """
    if isinstance(expected, dict) and set(expected) == {"hex"} and isinstance(expected["hex"], str):
        assert isinstance(actual, bytes), f"{path}: expected bytes, got {actual!r}"
        assert actual == bytes.fromhex(expected["hex"]), f"{path}: {actual.hex()} != {expected}"
        return
    if isinstance(actual, KafkaStruct):
        if isinstance(expected, list):
            names = fields_in_version(actual, version)
            assert len(names) == len(expected), f"{path}: fields {names} vs values {expected}"
            for name, value in zip(names, expected, strict=True):
                assert_matches(getattr(actual, name), value, version, f"{path}.{name}")
            return
        assert isinstance(expected, dict), f"{path}: {expected!r} against {actual!r}"
        for key, value in expected.items():
            if key == "_type":
                assert type(actual).__name__ == value, f"{path}: {type(actual).__name__} != {value}"
            elif key == "_version":
                continue
            elif key == "_positional":
                assert_matches(actual, value, version, path)
            else:
                assert_matches(lookup(actual, key), value, version, f"{path}.{key}")
        return
    if isinstance(expected, list):
        assert isinstance(actual, list), f"{path}: expected a list, got {actual!r}"
        assert len(actual) == len(expected), (
            f"{path}: {len(actual)} items, expected {len(expected)}"
        )
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_matches(a, e, version, f"{path}[{i}]")
        return
    if isinstance(actual, bytes) and isinstance(expected, str):
        assert actual in decode_bytes_text(expected), f"{path}: {actual.hex()} is not {expected!r}"
        return
    if isinstance(actual, uuid.UUID) and isinstance(expected, str):
        assert str(actual) == expected or actual.bytes == base64.urlsafe_b64decode(expected + "==")
        return
    assert (
        type(actual) is type(expected)
        or expected is None
        or actual is None
        or (
            isinstance(actual, int | float)
            and isinstance(expected, int | float)
            and not isinstance(actual, bool)
            and not isinstance(expected, bool)
        )
    ), f"{path}: {actual!r} ({type(actual).__name__}) vs {expected!r}"
    assert actual == expected, f"{path}: {actual!r} != {expected!r}"


def expect_decode_error(exc: BaseException) -> DecodeError:
    """Narrow a caught exception to a ``DecodeError`` (or fail)."""
    assert isinstance(exc, DecodeError), f"{type(exc).__name__}: {exc}"
    return exc
