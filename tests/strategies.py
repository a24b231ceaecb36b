"""Hypothesis strategies for instances of generated classes, built from the generator's IR.

``instances(message, module, version)`` draws valid objects of a generated top-level class at
one version:

- only fields present at that version get values; the others keep their defaults;
- ``None`` only where the field is nullable at that version;
- tagged fields are sometimes left at their default (so they are not written) and sometimes not;
- in flexible versions, every struct sometimes carries unknown tagged fields, with tags above
  every tag the struct knows (at any version);
- empty, small and (for fixed-width elements) longer-than-127 arrays; ASCII, non-ASCII and
  maximum-length (32767 UTF-8 bytes) strings; type minimum/maximum integers; uuids; bytes;
- string and bytes values come partly from a small pool, so map-key arrays get duplicates.

``records`` fields are raw bytes. Kafka's JSON form cannot carry record bytes (it writes ``""``,
see the oracle tests), so ``records_json_safe=True`` limits them to empty (or null) records.
"""

from __future__ import annotations

import copy
import math
import struct
import sys
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from hypothesis import strategies as st

from codegen.dumps.coordinator import COORDINATOR_TOPICS, record_types
from codegen.ir import INTEGER_RANGES, Field, FieldType, Message, Struct
from codegen.runtime import KafkaStruct, UnknownTags
from codegen.runtime.wire import NO_TAGS

MAX_STRING_BYTES = 0x7FFF
# 16383 two-byte characters and one ASCII letter: exactly the 32767-byte limit.
LONGEST_STRING = "\u00e9" * 16383 + "a"
STRING_POOL = ("", "a", "topic", "\u00e9t\u00e9", "\u20ac\U0001d11e", "\u65e5\u672c")
BYTES_POOL = (b"", b"\x00", b"\xff\xfe", bytes(range(16)))
EXTREME_UUIDS = (uuid.UUID(int=0), uuid.UUID(int=(1 << 128) - 1), uuid.UUID(int=1))
# Kafka's RawTaggedFieldWriter cannot write tag 2**31-1 (it is its end-of-tags sentinel).
MAX_UNKNOWN_TAG = (1 << 31) - 2


@dataclass(frozen=True)
class Options:
    """Knobs of the generated instances."""

    unknown_tags: bool = True
    records_json_safe: bool = False
    allow_infinity: bool = True
    small_arrays: int = 3  # most arrays have at most this many elements
    large_strings: bool = True


def integers(kind: str) -> st.SearchStrategy[int]:
    low, high = INTEGER_RANGES[kind]
    edges = sorted({low, high, 0, 1, -1 if low < 0 else 2, low + 1, high - 1})
    return st.one_of(st.sampled_from(edges), st.integers(low, high))


def floats(options: Options) -> st.SearchStrategy[float]:
    return st.one_of(
        st.sampled_from([0.0, -0.0, 1.0, -1.5, 1e300, 5e-324]),
        st.floats(allow_nan=False, allow_infinity=options.allow_infinity),
    )


def strings(options: Options) -> st.SearchStrategy[str]:
    parts: list[st.SearchStrategy[str]] = [
        st.sampled_from(STRING_POOL),
        st.text(max_size=6),
        st.text(max_size=6),
    ]
    if options.large_strings:
        # Rare: a string long enough for multi-byte length prefixes, and the longest one.
        parts.append(
            st.integers(0, 15).flatmap(
                lambda k: (
                    st.just(LONGEST_STRING if k == 0 else "x" * (120 + k))
                    if k < 3
                    else st.text(max_size=3)
                )
            )
        )
    return st.one_of(parts)


def binaries() -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.sampled_from(BYTES_POOL),
        st.binary(max_size=12),
        st.integers(0, 7).flatmap(
            lambda k: st.binary(min_size=126, max_size=130) if k == 0 else st.binary(max_size=4)
        ),
    )


def uuids() -> st.SearchStrategy[uuid.UUID]:
    return st.one_of(
        st.sampled_from(EXTREME_UUIDS),
        st.binary(min_size=16, max_size=16).map(lambda b: uuid.UUID(bytes=b)),
    )


class InstanceBuilder:
    """Strategies for the classes of one generated module, built from its message's IR."""

    def __init__(self, message: Message, module: ModuleType, options: Options | None = None):
        self.message = message
        self.module = module
        self.options = options or Options()
        self._cache: dict[tuple[str, int], st.SearchStrategy[Any]] = {}

    def cls(self, struct: Struct) -> type[Any]:
        cls: type[Any] = getattr(self.module, struct.name)
        return cls

    def struct(self, struct: Struct, version: int) -> st.SearchStrategy[Any]:
        key = (struct.name, version)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        # Self-reference cannot happen in Kafka specs; deferred keeps construction lazy anyway.
        self._cache[key] = st.deferred(lambda: self._cache[key])
        cls = self.cls(struct)
        fields: dict[str, st.SearchStrategy[Any]] = {}
        for f in struct.fields:
            if version in f.versions:
                fields[f.attr] = self.field(f, version, cls)
        if self.options.unknown_tags and version in self.message.flexible_versions:
            fields["unknown_tags"] = unknown_tags(struct)
        strategy = st.fixed_dictionaries(fields).map(lambda kw: cls(**kw))
        self._cache[key] = strategy
        return strategy

    def field(self, f: Field, version: int, owner: type[Any]) -> st.SearchStrategy[Any]:
        value = self.value(f.type, f, version)
        if f.nullable_in(version):
            value = st.one_of(st.none(), value, value)
        if f.tagged_in(version):
            attr = f.attr
            default = st.builds(lambda: getattr(owner(), attr))  # a fresh default each time
            value = st.one_of(default, value)
        return value

    def value(self, t: FieldType, f: Field, version: int) -> st.SearchStrategy[Any]:
        kind = t.kind
        if kind in INTEGER_RANGES:
            return integers(kind)
        if kind == "bool":
            return st.booleans()
        if kind == "float64":
            return floats(self.options)
        if kind == "uuid":
            return uuids()
        if kind == "string":
            return strings(self.options)
        if kind == "bytes":
            return binaries()
        if kind == "records":
            if self.options.records_json_safe:
                return st.just(b"")
            return binaries()
        if kind == "struct":
            assert f.struct is not None
            return self.struct(f.struct, version)
        assert kind == "array" and t.element is not None
        element = self.value(t.element, f, version)
        small = st.lists(element, max_size=self.options.small_arrays)
        if t.element.is_fixed:
            # Sometimes more than 127 elements: a two-byte compact length prefix.
            large = st.lists(element, min_size=127, max_size=129)
            return st.integers(0, 9).flatmap(lambda k: large if k == 0 else small)
        return small


def unknown_tags(struct: Struct) -> st.SearchStrategy[dict[int, bytes]]:
    known = [f.tag for f in struct.fields if f.tag is not None]
    first = max(known) + 1 if known else 0
    tags = st.one_of(st.integers(first, first + 4), st.sampled_from([first + 127, MAX_UNKNOWN_TAG]))
    payload = st.one_of(st.binary(max_size=5), st.binary(min_size=127, max_size=129))
    return st.one_of(st.just({}), st.dictionaries(tags, payload, min_size=1, max_size=3))


def instances(
    message: Message, module: ModuleType, version: int, options: Options | None = None
) -> st.SearchStrategy[Any]:
    """Valid instances of the message's top-level class at ``version``."""
    return InstanceBuilder(message, module, options).struct(message.root, version)


# --------------------------------------------------------------------------- views of instances


def _walk(obj: Any, struct: Struct, version: int, visit: Any) -> None:
    visit(obj, struct)
    for f in struct.fields:
        if f.struct is None or version not in f.versions:
            continue
        value = getattr(obj, f.attr)
        if value is None:
            continue
        children = value if f.type.kind == "array" else [value]
        for child in children:
            _walk(child, f.struct, version, visit)


def without_unknown_tags(obj: Any, message: Message, version: int) -> Any:
    """A deep copy with every struct's unknown tags dropped."""
    out = copy.deepcopy(obj)

    def visit(o: Any, _s: Struct) -> None:
        o.unknown_tags = {}

    _walk(out, message.root, version, visit)
    return out


def json_view(obj: Any, message: Message, version: int) -> Any:
    """What survives Kafka's JSON form: no unknown tags, and record bytes become empty."""
    out = without_unknown_tags(obj, message, version)

    def visit(o: Any, s: Struct) -> None:
        for f in s.fields:
            if f.type.kind == "records" and getattr(o, f.attr) is not None:
                setattr(o, f.attr, b"")

    _walk(out, message.root, version, visit)
    return out


def comparable_json(value: Any) -> Any:
    """A JSON tree compared as JSON: bool is not a number; 1.0 and 1 are the same number."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float):
        if value.is_integer() and math.copysign(1.0, value) > 0:
            return ("n", int(value))
        return ("n", value)
    if isinstance(value, int):
        return ("n", value)
    if isinstance(value, list):
        return [comparable_json(v) for v in value]
    assert isinstance(value, dict)
    return {k: comparable_json(v) for k, v in value.items()}


def exact_form(value: Any) -> Any:
    """A comparable form of a decoded value: exact types, float bits (NaN included), dict order,
    every slot, and whether unknown tags are the shared ``NO_TAGS``."""
    if isinstance(value, KafkaStruct):
        slots: tuple[str, ...] = type(value).__slots__
        return (type(value).__qualname__, tuple((s, exact_form(getattr(value, s))) for s in slots))
    if isinstance(value, list):
        return ("list", tuple(exact_form(v) for v in value))
    if isinstance(value, tuple):
        return ("tuple", tuple(exact_form(v) for v in value))
    if isinstance(value, UnknownTags):
        pairs = tuple((tag, exact_form(raw)) for tag, raw in value.pairs)
        return ("UnknownTags", pairs, value is NO_TAGS)
    if isinstance(value, dict):
        return ("dict", tuple((k, exact_form(v)) for k, v in value.items()))
    if isinstance(value, float):
        return ("float", struct.pack(">d", value))
    if isinstance(value, uuid.UUID):
        return ("uuid", value.int, value.is_safe)
    return (type(value).__name__, value)


def has_unknown_tags(obj: Any, message: Message, version: int) -> bool:
    found = False

    def visit(o: Any, _s: Struct) -> None:
        nonlocal found
        found = found or bool(o.unknown_tags)

    _walk(obj, message.root, version, visit)
    return found


def row_of(value: Any) -> Any:
    """What a row reader gives for a decoded object: structs as tuples in ROW_FIELDS order."""
    if isinstance(value, KafkaStruct):
        return tuple(row_of(getattr(value, attr)) for attr in value.ROW_FIELDS)
    if isinstance(value, list):
        return [row_of(item) for item in value]
    if isinstance(value, Mapping):
        return dict(value)
    return value


def plain_row(value: Any) -> Any:
    """A row with its read-only tag mappings as plain dicts, to compare with ``row_of``."""
    if isinstance(value, tuple):
        return tuple(plain_row(item) for item in value)
    if isinstance(value, list):
        return [plain_row(item) for item in value]
    if isinstance(value, Mapping):
        return dict(value)
    return value


# --------------------------------------------------------------------------- coordinator records


def coordinator_message_classes() -> list[type]:
    """Every key and value class of the coordinator topics' record types, by name."""
    classes: dict[str, type] = {}
    for topic in COORDINATOR_TOPICS:
        for rt in record_types(topic).values():
            for cls in (rt.key_class, rt.value_class):
                classes[cls.__name__] = cls
    return [classes[name] for name in sorted(classes)]


@cache
def _shipped() -> dict[str, Message]:
    from codegen.emit import load_messages

    return {
        m.name: m for m in load_messages([Path(__file__).resolve().parent.parent / "message_specs"])
    }


def _encoded(prefix: int, version: int) -> Callable[[Any], bytes]:
    """An instance's bytes at ``version`` behind an int16 (the record type or value version)."""
    return lambda obj: struct.pack(">h", prefix) + obj.encode(version)


def coordinator_records(topic: str) -> st.SearchStrategy[tuple[bytes | None, bytes | None]]:
    """A key and value of any record type of the shipped package's coordinator ``topic`` at
    any value version (and one above the newest flexible one), or odd ones: tombstones,
    unknown types and versions, trailing bytes, cut keys, no key."""
    pairs: list[st.SearchStrategy[tuple[bytes | None, bytes | None]]] = []
    for rt in record_types(topic).values():
        key_message = _shipped()[rt.key_class.SPEC_NAME]
        value_message = _shipped()[rt.value_class.SPEC_NAME]
        key_version = rt.key_class.LOWEST_VERSION
        keys = instances(key_message, sys.modules[rt.key_class.__module__], key_version).map(
            _encoded(rt.id, key_version)
        )
        value_versions = list(value_message.valid_versions.versions())
        if rt.newest_flexible is not None:  # a newer version, read with the newest
            value_versions.append(rt.newest_flexible + 1)
        for version in value_versions:
            known = min(version, value_message.valid_versions.versions()[-1])
            values = instances(value_message, sys.modules[rt.value_class.__module__], known).map(
                _encoded(version, known)
            )
            pairs.append(st.tuples(keys, values))
        pairs.append(st.tuples(keys, st.none()))  # tombstone
        odd_value = st.one_of(
            st.binary(max_size=6),
            st.just(b"\x01\x00"),  # version 256
            st.just(b"\x7f\xff"),  # an unknown version
        )
        pairs.append(st.tuples(keys, odd_value))
        pairs.append(st.tuples(keys.map(lambda k: k + b"\x00"), odd_value))  # trailing bytes
        pairs.append(st.tuples(keys.map(lambda k: k[: len(k) // 2]), st.none()))  # cut short
    pairs.append(st.tuples(st.none(), st.one_of(st.none(), st.just(b"\x00\x00"))))  # no key
    pairs.append(st.tuples(st.just(b"\x00\x63\x00\x01g"), st.binary(max_size=4)))  # unknown type
    pairs.append(st.tuples(st.binary(max_size=3), st.binary(max_size=3)))
    return st.one_of(*pairs)


def _mutated(pair: tuple[bytes | None, bytes | None], flip: int, cut: bool) -> Any:
    """A record with a byte of its value flipped (flip: where and by what; 0: none) and the
    value cut in half (cut)."""
    key, value = pair
    if value and flip:
        i = flip % len(value)
        value = value[:i] + bytes([value[i] ^ ((flip >> 8) % 255 + 1)]) + value[i + 1 :]
    if value and cut:
        value = value[: len(value) // 2]
    return key, value


def drawn_coordinator_records(
    topic: str,
) -> st.SearchStrategy[list[tuple[bytes | None, bytes | None]]]:
    """1 to 10 records of :func:`coordinator_records`, some mutated: a flipped byte, a cut
    value."""
    mutated = st.builds(
        _mutated, coordinator_records(topic), st.integers(0, 1 << 16), st.booleans()
    )
    return st.lists(st.one_of(coordinator_records(topic), mutated), min_size=1, max_size=10)
