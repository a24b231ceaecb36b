"""Topic maps: which message the keys and values of a user's topics hold, and how their version
is known.

A topic map is a table of topic names or glob patterns (``sensors``, ``sensors-*``) to a key
and a value side, each a message of a codec package with one way of knowing its version:

- ``version = 2``: every record holds the bare message at that version;
- ``version = "prefix"``: an int16 version (big-endian) in front of the message, as Kafka's own
  coordinator records carry it;
- ``header = "schema-version"``: the record header of that name holds the version as decimal
  text (``2``).

It lives in ``pyproject.toml`` or in a file of its own, in the same shape::

    [tool.kafka-specgen]          # in a file of its own: no heading (package and topics at the top)
    package = "myproject.kafka"   # the codec package the messages are in (optional)

    [tool.kafka-specgen.topics]
    "sensors" = { value = { message = "SensorReading", version = 2 } }
    "audit" = { value = { message = "SensorReading", header = "schema-version" } }

    [tool.kafka-specgen.topics."sensors-*"]   # an entry as a table (inline ones take one line)
    key = { message = "SensorKey", version = 0 }
    value = { message = "SensorReading", version = "prefix" }

The map is validated when it is loaded against the package's ``MESSAGES``: an unknown message,
a fixed version outside the message's valid versions, an unknown setting or an entry with
neither side are errors naming the entry. A topic takes the entry of its own name, else the one
glob pattern matching it; a topic two patterns match is an error naming both.

This module is the one definition the command line (``dump --topics``), the Python API
(:mod:`codegen.dumps.user_topics`) and Spark (``kafka-log``'s ``topics`` option) share. It needs
only the standard library and the codec package.
"""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from codegen.dumps import storage
from codegen.dumps.packages import SHIPPED_PACKAGE, PackageError, package_messages
from codegen.dumps.pyproject_map import PYPROJECT_TABLE, pyproject_with_map
from codegen.dumps.storage import RemotePath
from codegen.runtime import KafkaMessage

__all__ = [
    "PREFIX",
    "PREFIX_SIZE",
    "HeaderShapeError",
    "MessageSide",
    "TopicEntry",
    "TopicMap",
    "TopicMapError",
    "find_topic_map",
    "header_values",
    "header_version",
    "load_topic_map",
    "missing_header",
    "parse_topic_map",
    "prefix_error",
    "side_version",
    "topic_map_option",
]

PREFIX: Final = "prefix"
"""``version = "prefix"``: an int16 version in front of the message."""
_SIDES: Final = ("key", "value")
_SIDE_KEYS: Final = frozenset({"message", "version", "header"})
_ROOT_KEYS: Final = frozenset({"package", "topics"})
_GLOB_CHARS: Final = frozenset("*?[")
PREFIX_SIZE: Final = 2
"""Bytes of the int16 version prefix."""


class TopicMapError(ValueError):
    """A topic map that cannot be used: the text names the file and the entry."""


@dataclass(frozen=True, slots=True)
class MessageSide:
    """The message a key or value holds, and how its version is known: exactly one of
    ``version`` (fixed), ``prefix`` (an int16 in front) or ``header`` (a header's text)."""

    message: str
    version: int | None = None
    prefix: bool = False
    header: str | None = None

    @property
    def framing(self) -> str:
        """``fixed``, ``prefix`` or ``header``."""
        if self.prefix:
            return "prefix"
        return "header" if self.header is not None else "fixed"

    def describe(self) -> str:
        if self.prefix:
            return f"{self.message}, int16 version prefix"
        if self.header is not None:
            return f"{self.message}, version in header {self.header!r}"
        return f"{self.message} v{self.version}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"message": self.message}
        if self.header is not None:
            out["header"] = self.header
        else:
            out["version"] = PREFIX if self.prefix else self.version
        return out


@dataclass(frozen=True, slots=True)
class TopicEntry:
    """One entry of a map: a topic name or glob pattern and its key and value sides (either may
    be None: that side is read as raw bytes)."""

    pattern: str
    key: MessageSide | None
    value: MessageSide | None

    @property
    def is_glob(self) -> bool:
        return any(c in _GLOB_CHARS for c in self.pattern)

    def matches(self, topic: str) -> bool:
        if self.is_glob:
            return fnmatch.fnmatchcase(topic, self.pattern)
        return topic == self.pattern

    @property
    def name(self) -> str:
        """The record name of the entry's records: the value's message, else the key's."""
        side = self.value or self.key
        assert side is not None  # validated: an entry has a side
        return side.message

    def to_json(self) -> dict[str, Any]:
        return {s: side.to_json() for s in _SIDES if (side := getattr(self, s)) is not None}


@dataclass(frozen=True, slots=True)
class TopicMap:
    """A validated topic map: its entries (in the order written), the codec package their
    messages are in, and where it was read from (for error messages)."""

    entries: tuple[TopicEntry, ...]
    package: str = SHIPPED_PACKAGE
    source: str = "topic map"

    def entry_for(self, topic: str | None) -> TopicEntry | None:
        """The entry of ``topic``: the one of its own name, else the one glob pattern matching
        it, else None. Two patterns matching it is a :class:`TopicMapError`."""
        if topic is None:
            return None
        for entry in self.entries:
            if not entry.is_glob and entry.pattern == topic:
                return entry
        found = [e for e in self.entries if e.is_glob and e.matches(topic)]
        if len(found) > 1:
            names = " and ".join(f'"{e.pattern}"' for e in found)
            raise TopicMapError(
                f"{self.source}: topic {topic!r} matches two entries, {names}: add an entry "
                "for the topic itself, or narrow a pattern"
            )
        return found[0] if found else None

    def entries_for(self, topics: Sequence[str | None]) -> dict[str, TopicEntry]:
        """``{topic: entry}`` for those of ``topics`` the map has (checked as
        :meth:`entry_for`)."""
        out: dict[str, TopicEntry] = {}
        for topic in topics:
            entry = self.entry_for(topic)
            if topic is not None and entry is not None:
                out[topic] = entry
        return out

    @property
    def reads_headers(self) -> bool:
        """Whether an entry takes a version from a record header."""
        sides = [s for e in self.entries for s in (e.key, e.value) if s is not None]
        return any(s.header is not None for s in sides)

    def messages(self) -> list[str]:
        """The messages the map names, in order, each once."""
        names = [s.message for e in self.entries for s in (e.key, e.value) if s is not None]
        return list(dict.fromkeys(names))

    def to_json(self) -> str:
        """The ``topics`` table as JSON (the form ``kafka-log``'s ``topics`` option takes)."""
        return json.dumps({e.pattern: e.to_json() for e in self.entries}, separators=(",", ":"))


# ------------------------------------------------------------------------------------ reading


def _side(
    raw: object,
    where: str,
    messages: Mapping[str, type[KafkaMessage]],
    package: str,
) -> MessageSide:
    if not isinstance(raw, Mapping):
        raise TopicMapError(
            f'{where}: expected a table such as {{ message = "MyMessage", version = 0 }}, '
            f"got {raw!r}"
        )
    unknown = sorted(set(raw) - _SIDE_KEYS)
    if unknown:
        raise TopicMapError(
            f"{where}: unknown setting(s) {', '.join(unknown)}; a side has message and one of "
            'version (a number or "prefix") and header'
        )
    message = raw.get("message")
    if not isinstance(message, str) or not message:
        raise TopicMapError(f'{where}: give the message, a spec name: message = "MyMessage"')
    cls = messages.get(message)
    if cls is None:
        raise TopicMapError(f"{where}: {_no_message(message, messages, package)}")
    has_version, header = "version" in raw, raw.get("header")
    if has_version == ("header" in raw):
        raise TopicMapError(
            f"{where}: give exactly one of version = N (every record at that version), "
            'version = "prefix" (an int16 version in front of the message) and header = "name" '
            "(a record header holding the version)"
        )
    if not has_version:
        if not isinstance(header, str) or not header:
            raise TopicMapError(f"{where}: header must be a header name, got {header!r}")
        return MessageSide(message, header=header)
    version = raw["version"]
    if version == PREFIX:
        return MessageSide(message, prefix=True)
    if isinstance(version, bool) or not isinstance(version, int):
        raise TopicMapError(f'{where}: version must be a number or "prefix", got {version!r}')
    try:
        cls.given_version(version)
    except ValueError as exc:
        raise TopicMapError(f"{where}: {exc}") from None
    return MessageSide(message, version=version)


def _no_message(message: str, messages: Mapping[str, type[KafkaMessage]], package: str) -> str:
    """The error of a message the package lacks, with what to do: name the package that holds
    it when the shipped codecs were searched (no package given), else check the name."""
    known = ", ".join(sorted(messages)[:20]) + (", ..." if len(messages) > 20 else "")
    if package == SHIPPED_PACKAGE:
        return (
            f"no message named {message!r} in the shipped codecs ({package!r}), where a map "
            "that names no package looks: name the package your specs were generated into, "
            'package = "myproject.codecs" at the top of the map file (in pyproject.toml under '
            "[tool.kafka-specgen]), or give it with --package (kafka-log: the package option)"
        )
    return (
        f"no message named {message!r} in the codec package {package!r}; it has {known} "
        "(check the message's spec name, or the map's package)"
    )


def parse_topic_map(
    topics: Mapping[str, Any], package: str | None = None, source: str = "topic map"
) -> TopicMap:
    """A :class:`TopicMap` from its ``topics`` table (topic or pattern -> ``{key, value}``),
    validated against ``package`` (default: the shipped codecs)."""
    package = package or SHIPPED_PACKAGE
    if not isinstance(topics, Mapping) or not topics:
        raise TopicMapError(
            f"{source}: the topics table is empty or not a table; give entries such as "
            '"sensors" = { value = { message = "MyMessage", version = 0 } }'
        )
    try:
        messages = package_messages(package)
    except PackageError as exc:
        raise TopicMapError(f"{source}: {exc}") from None
    entries: list[TopicEntry] = []
    for pattern, raw in topics.items():
        where = f'{source}: topics."{pattern}"'
        if not isinstance(pattern, str) or not pattern:
            raise TopicMapError(f"{source}: a topic name must be text, got {pattern!r}")
        if not isinstance(raw, Mapping):
            raise TopicMapError(f"{where}: expected a table with key and/or value, got {raw!r}")
        unknown = sorted(set(raw) - set(_SIDES))
        if unknown:
            raise TopicMapError(
                f"{where}: unknown setting(s) {', '.join(unknown)}; an entry has key and/or value"
            )
        if not raw:
            raise TopicMapError(f"{where}: give a key or a value side (or both)")
        key, value = (
            _side(raw[s], f"{where}.{s}", messages, package) if s in raw else None for s in _SIDES
        )
        entries.append(TopicEntry(pattern, key, value))
    return TopicMap(tuple(entries), package, source)


def _root(document: Mapping[str, Any], path: Path | RemotePath) -> Mapping[str, Any]:
    """The table holding ``package`` and ``topics``: ``[tool.kafka-specgen]`` of a
    pyproject.toml, else the file's top level."""
    if path.name != "pyproject.toml":
        return document
    table: Any = document
    for part in PYPROJECT_TABLE:
        table = table.get(part, {}) if isinstance(table, Mapping) else {}
    if not isinstance(table, Mapping) or "topics" not in table:
        raise TopicMapError(
            f"{path}: no [tool.kafka-specgen.topics] table; add one (docs/dumps.md, "
            '"Your own topics")'
        )
    return table


def load_topic_map(path: str | Path | RemotePath, default_package: str | None = None) -> TopicMap:
    """Read and validate the map of a TOML file: ``[tool.kafka-specgen]`` of a
    ``pyproject.toml``, else the file's top level (``package`` and a ``[topics]`` table).

    The messages are those of the file's ``package``, else of ``default_package``, else of the
    shipped codecs. ``path`` may be a URL of object storage (:mod:`codegen.dumps.storage`).
    """
    path = storage.path(path)
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TopicMapError(f"cannot read the topic map {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise TopicMapError(f"{path}: not valid TOML: {exc}") from None
    root = _root(document, path)
    unknown = sorted(set(root) - _ROOT_KEYS)
    if unknown and path.name != "pyproject.toml":
        raise TopicMapError(
            f"{path}: unknown setting(s) {', '.join(unknown)}; a topic map file holds package "
            "and a [topics] table"
        )
    named = root.get("package")
    if named is not None and not isinstance(named, str):
        raise TopicMapError(f"{path}: package must be a dotted module name, got {named!r}")
    if "topics" not in root:
        raise TopicMapError(f"{path}: no [topics] table")
    return parse_topic_map(root["topics"], named or default_package, str(path))


def find_topic_map(folder: str | Path = ".", default_package: str | None = None) -> TopicMap | None:
    """The map of ``folder``'s ``pyproject.toml`` when it has a ``[tool.kafka-specgen.topics]``
    table (:func:`codegen.dumps.pyproject_map.pyproject_with_map`), else None."""
    path = pyproject_with_map(folder)
    return None if path is None else load_topic_map(path, default_package)


def topic_map_option(text: str, default_package: str | None = None) -> TopicMap:
    """The map an option gives: JSON of the ``topics`` table (``{"sensors": {"value":
    {"message": "M", "version": 2}}}``), JSON of the whole map (``{"package": "mycodecs",
    "topics": {...}}``), or the path of a TOML file (:func:`load_topic_map`)."""
    text = text.strip()
    if not text.startswith("{"):
        return load_topic_map(text, default_package)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TopicMapError(f"the topics option is not valid JSON: {exc}") from None
    source = "the topics option"
    if isinstance(document, dict) and _is_root(document):
        named = document.get("package")
        if named is not None and not isinstance(named, str):
            raise TopicMapError(f"{source}: package must be a dotted module name, got {named!r}")
        return parse_topic_map(document["topics"], named or default_package, source)
    return parse_topic_map(document, default_package, source)


def _is_root(document: Mapping[str, Any]) -> bool:
    """Whether JSON holds a whole map (package and topics) rather than the topics table."""
    topics = document.get("topics")
    return (
        set(document) <= _ROOT_KEYS
        and isinstance(topics, Mapping)
        and not set(topics) & set(_SIDES)
    )


# ------------------------------------------------------------------------------------ versions
#
# One rule for the version of a side, whichever path reads it (dump, the Python API, kafka-log):
# a version the map gives must be one the message has (KafkaMessage.given_version, checked when
# the map is loaded); a version written with the record (an int16 prefix, a header) is read by
# KafkaMessage.written_version (a newer one with the newest when that is flexible, KIP-915).
# The column and SQL functions of spark_udfs apply the same two rules to their version argument
# and to a prefix. A header names its version as the plain decimal text of an int16.

_VERSION_TEXT: Final = re.compile(r"-?(?:0|[1-9][0-9]{0,4})")
_INT16: Final = range(-(1 << 15), 1 << 15)


def prefix_error(size: int) -> str:
    """The error of bytes too short to hold the int16 version prefix."""
    return f"could not read the int16 version prefix ({size} byte(s))"


def header_version(name: str, value: bytes | None) -> int:
    """The version a header's value names: the decimal text of an int16, as ``str(version)``
    writes it (no sign but ``-``, no padding, no leading zero); ValueError with the record's
    error otherwise."""
    if value is None:
        raise ValueError(f"header {name!r} is null: it must name the version")
    text = value.decode("ascii", "replace")
    if not _VERSION_TEXT.fullmatch(text) or text == "-0" or int(text) not in _INT16:
        raise ValueError(f"header {name!r} is {value!r}, not a version number")
    return int(text)


def missing_header(name: str) -> str:
    """The record error of a record without the header naming its version."""
    return f"no header {name!r} naming the version"


class HeaderShapeError(TypeError):
    """Headers in a shape no client gives: the text says which shapes are read."""


def _header_pair(header: object) -> tuple[object, object]:
    if isinstance(header, Mapping):  # an Arrow or Spark row: {"key": ..., "value": ...}
        if "key" in header:
            return header["key"], header.get("value")
    elif isinstance(header, (tuple, list)) and len(header) == 2:
        return header[0], header[1]
    elif hasattr(header, "key") and hasattr(header, "value"):  # codegen.dumps.Header, a client's
        return header.key, header.value
    raise HeaderShapeError(
        f"a record header must be a (key, value) pair, a mapping with key and value, or a "
        f"Header; got {type(header).__name__} {header!r:.60}"
    )


def header_values(headers: object, name: str) -> list[bytes | None]:
    """The values of the headers named ``name``, in order, from headers in any shape Kafka
    clients give them: None (no headers, as confluent-kafka's ``headers()``), a sequence of
    ``(key, value)`` pairs with a ``str`` or ``bytes`` key (kafka-python, confluent-kafka),
    of mappings ``{"key": .., "value": ..}`` (Arrow and Spark rows) or of objects with ``key``
    and ``value`` (``codegen.dumps.Header``), or a mapping ``{key: value}``. A ``bytes`` key
    is read as UTF-8, as Kafka writes header keys; a ``str`` value as its UTF-8 bytes."""
    if headers is None:
        return []
    pairs: Iterable[tuple[object, object]]
    if isinstance(headers, Mapping):
        pairs = headers.items()
    elif isinstance(headers, Iterable) and not isinstance(headers, (str, bytes, bytearray)):
        pairs = map(_header_pair, headers)
    else:
        raise HeaderShapeError(
            f"record headers must be a sequence of headers or a mapping, got "
            f"{type(headers).__name__} {headers!r:.60}"
        )
    found: list[bytes | None] = []
    for key, value in pairs:
        if isinstance(key, (bytes, bytearray, memoryview)):
            key = bytes(key).decode("utf-8", "replace")
        if key != name:
            continue
        if value is None or isinstance(value, bytes):
            found.append(value)
        elif isinstance(value, str):
            found.append(value.encode("utf-8"))
        elif isinstance(value, (bytearray, memoryview)):
            found.append(bytes(value))
        else:
            raise HeaderShapeError(
                f"header {name!r} has a value of type {type(value).__name__}: give bytes"
            )
    return found


def side_version(
    side: MessageSide, cls: type[KafkaMessage], data: bytes, headers: object = None
) -> tuple[int, int]:
    """(the version ``side`` says ``data`` is at, where its message starts) for a record's key
    or value bytes: the map's version, the int16 prefix or the last header naming it. Raises
    ValueError with the record's error text (a short prefix, a missing or malformed header, a
    given version the message lacks)."""
    if side.prefix:
        if len(data) < PREFIX_SIZE:
            raise ValueError(prefix_error(len(data)))
        return int.from_bytes(data[:PREFIX_SIZE], "big", signed=True), PREFIX_SIZE
    if side.header is not None:
        found = header_values(headers, side.header)
        if not found:
            raise ValueError(missing_header(side.header))
        return header_version(side.header, found[-1]), 0
    assert side.version is not None
    return cls.given_version(side.version), 0
