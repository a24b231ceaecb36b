"""What specs have ever shipped: tags, field names, API keys, record type ids and the byte
layout of every version.

A comparison of two snapshots forgets what neither side has: a tag removed in one commit can
come back with another meaning in the next. The memory keeps every use. It is read from the
lock file beside the specs (``kafka-specgen-lint.lock``, written by ``--write-lock``), from the
lock at a git ref, and from the git history of the specs (:mod:`codegen.lint.history`); the
checks of :mod:`codegen.lint.retired` compare the new specs with it.

Each use records where it was first seen (a commit, a lock file, a folder), for the findings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from codegen.ir import Field, Message
from codegen.lint.layout import LayoutTextError, layout_text, message_layout, parse_layout
from codegen.versions import VersionRangeError, parse_versions_text, versions_text

LOCK_NAME = "kafka-specgen-lint.lock"
LOCK_FORMAT = 2  # 2 adds the layouts; a lock of format 1 is read as one without them
_FORMATS = (1, 2)
_ABOUT = (
    "Every tag, field name, apiKey, record type id and version layout these specs have used. "
    "Written by "
    "`kafka-specgen lint --write-lock`, checked by every lint (docs/lint.md, 'Memory'). "
    "Commit it; never remove entries."
)
_RECORD_SPEC_TYPES = frozenset({"coordinator-key", "coordinator-value"})


@dataclass(frozen=True, slots=True, order=True)
class TagUse:
    spec: str
    struct: str
    tag: int
    field: str
    type: str


@dataclass(frozen=True, slots=True, order=True)
class FieldUse:
    spec: str
    struct: str
    field: str
    type: str


@dataclass(frozen=True, slots=True, order=True)
class ApiKeyUse:
    spec_type: str
    api_key: int
    spec: str


@dataclass(frozen=True, slots=True, order=True)
class RecordTypeUse:
    namespace: str
    type_id: int
    key: str


@dataclass(frozen=True, slots=True, order=True)
class LayoutUse:
    """The byte layout a version of a spec had (:func:`codegen.lint.layout.layout_text`)."""

    spec: str
    version: int
    layout: str


Use = TagUse | FieldUse | ApiKeyUse | RecordTypeUse | LayoutUse
U = TypeVar("U", TagUse, FieldUse, ApiKeyUse, RecordTypeUse, LayoutUse)


class LockError(Exception):
    """A lock file that cannot be read; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Memory:
    """Every use, mapped to where it was first seen."""

    uses: Mapping[Use, str] = field(default_factory=dict)

    def __or__(self, other: Memory) -> Memory:
        merged = dict(other.uses)
        merged.update(self.uses)  # the first source wins
        return Memory(merged)

    def __len__(self) -> int:
        return len(self.uses)

    def of_type(self, kind: type[U]) -> list[U]:
        return sorted(u for u in self.uses if isinstance(u, kind))

    def missing_from(self, other: Memory) -> list[Use]:
        """The uses of this memory that ``other`` does not hold."""
        return sorted((u for u in self.uses if u not in other.uses), key=_use_key)

    def layouts(self, spec: str, version: int) -> list[LayoutUse]:
        """The layouts ``version`` of ``spec`` had."""
        return sorted(
            u
            for u in self.uses
            if isinstance(u, LayoutUse) and u.spec == spec and u.version == version
        )


def _use_key(use: Use) -> tuple[str, str]:
    return (type(use).__name__, repr(use))


def type_meaning(type_text: str) -> str:
    """What a type means for a reader: struct names left out (a renamed struct is the same)."""
    if type_text.startswith("[]"):
        return "[]" + type_meaning(type_text[2:])
    return type_text if type_text[:1].islower() else "struct"


# --------------------------------------------------------------------------- from specs


@dataclass(frozen=True, slots=True)
class SpecUses:
    """The uses of one spec, read from its IR message."""

    name: str
    spec_type: str
    api_key: int | None
    tags: tuple[TagUse, ...]
    fields: tuple[FieldUse, ...]


def spec_uses(message: Message) -> SpecUses:
    """The tags and field names of every struct of an IR message, and its apiKey."""
    tags: list[TagUse] = []
    fields: list[FieldUse] = []
    seen: set[str] = set()

    def walk(struct_name: str, struct_fields: Iterable[Field]) -> None:
        if struct_name in seen:
            return
        seen.add(struct_name)
        for f in struct_fields:
            text = f.type.spec_text
            fields.append(FieldUse(message.name, struct_name, f.name, text))
            if f.tag is not None:
                tags.append(TagUse(message.name, struct_name, f.tag, f.name, text))
            if f.struct is not None:
                walk(f.struct.name, f.struct.fields)

    walk(message.name, message.root.fields)
    return SpecUses(message.name, message.spec_type, message.api_key, tuple(tags), tuple(fields))


def memory_of(
    messages: Iterable[Message], record_types: Iterable[RecordTypeUse], source: str
) -> Memory:
    """The memory of IR messages and their record types."""
    uses: dict[Use, str] = {}
    for message in messages:
        found = spec_uses(message)
        named: list[Use] = [*found.tags, *found.fields]
        for use in named:
            uses.setdefault(use, source)
        if found.api_key is not None and found.spec_type not in _RECORD_SPEC_TYPES:
            uses.setdefault(ApiKeyUse(found.spec_type, found.api_key, found.name), source)
        for version in message.valid_versions.versions():
            text = layout_text(message_layout(message, version))
            uses.setdefault(LayoutUse(message.name, version, text), source)
    for record in record_types:
        uses.setdefault(record, source)
    return Memory(uses)


def data_record_types(specs: Iterable[tuple[Message, str]]) -> list[RecordTypeUse]:
    """Record type ids of specs seen one by one (history): coordinator keys and data keys.

    A data spec ``XKey`` is a record key when ``XValue`` is known in its folder; in history
    the two may come from different commits, so every ``XKey`` data spec whose name has a
    ``Value`` partner anywhere in ``specs`` counts.
    """
    listed = list(specs)
    values = {(ns, m.name) for m, ns in listed}
    found: list[RecordTypeUse] = []
    for message, ns in listed:
        if message.spec_type == "coordinator-key" and message.api_key is not None:
            found.append(RecordTypeUse(ns, message.api_key, message.name))
        elif (
            message.spec_type == "data"
            and message.name.endswith("Key")
            and (ns, message.name[:-3] + "Value") in values
        ):
            found.extend(
                RecordTypeUse(ns, v, message.name) for v in message.valid_versions.versions()
            )
    return found


# --------------------------------------------------------------------------- the lock file


def lock_text(memory: Memory) -> str:
    """The lock file: sorted, one use per line, so that a diff shows what was added."""
    specs: dict[str, dict[str, Any]] = {}
    for tag in memory.of_type(TagUse):
        per = specs.setdefault(tag.spec, {}).setdefault("tags", {}).setdefault(tag.struct, {})
        per.setdefault(str(tag.tag), []).append(f"{tag.field} {tag.type}")
    for f in memory.of_type(FieldUse):
        per = specs.setdefault(f.spec, {}).setdefault("fields", {}).setdefault(f.struct, {})
        per.setdefault(f.field, []).append(f.type)
    api_keys: dict[str, dict[str, list[str]]] = {}
    for a in memory.of_type(ApiKeyUse):
        api_keys.setdefault(a.spec_type, {}).setdefault(str(a.api_key), []).append(a.spec)
    records: dict[str, dict[str, list[str]]] = {}
    for r in memory.of_type(RecordTypeUse):
        records.setdefault(r.namespace, {}).setdefault(str(r.type_id), []).append(r.key)
    layouts: dict[str, dict[int, list[str]]] = {}
    for u in memory.of_type(LayoutUse):
        layouts.setdefault(u.spec, {}).setdefault(u.version, []).append(u.layout)
    for spec, per_version in layouts.items():
        # versions with the same layouts share an entry: {"0-3": [...], "4": [...]}
        grouped: dict[tuple[str, ...], list[int]] = {}
        for version, texts in sorted(per_version.items()):
            grouped.setdefault(tuple(sorted(texts)), []).append(version)
        specs.setdefault(spec, {})["layouts"] = {
            versions_text(versions): list(texts) for texts, versions in grouped.items()
        }
    doc = {
        "about": _ABOUT,
        "format": LOCK_FORMAT,
        "apiKeys": api_keys,
        "recordTypes": records,
        "specs": specs,
    }
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def _table(doc: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = doc.get(key, {})
    if not isinstance(value, dict):
        raise LockError(f"{where}: '{key}' is not an object")
    return value


def _names(value: object, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise LockError(f"{where}: expected a list of strings")
    return value


def _number(text: str, where: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise LockError(f"{where}: '{text}' is not a number") from None


def parse_lock(text: str, where: str, source: str = "the lock") -> Memory:
    """A lock file's memory, its uses from ``source``; LockError (naming ``where``) when it
    is not a lock file."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LockError(f"{where}: not a lock file: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") not in _FORMATS:
        raise LockError(f"{where}: not a lock file of format {LOCK_FORMAT}")
    uses: dict[Use, str] = {}
    api_keys = _table(doc, "apiKeys", where)
    for spec_type in api_keys:
        for key, specs in _table(api_keys, spec_type, where).items():
            for spec in _names(specs, f"{where}: apiKeys.{spec_type}.{key}"):
                uses[ApiKeyUse(spec_type, _number(key, where), spec)] = source
    records = _table(doc, "recordTypes", where)
    for ns in records:
        for type_id, keys in _table(records, ns, where).items():
            for key in _names(keys, f"{where}: recordTypes.{ns}.{type_id}"):
                uses[RecordTypeUse(ns, _number(type_id, where), key)] = source
    for spec, body in _table(doc, "specs", where).items():
        where_spec = f"{where}: specs.{spec}"
        if not isinstance(body, dict):
            raise LockError(f"{where_spec}: not an object")
        tag_table = _table(body, "tags", where_spec)
        for struct in tag_table:
            for tag, entries in _table(tag_table, struct, where_spec).items():
                for entry in _names(entries, f"{where_spec}.tags.{struct}.{tag}"):
                    name, _, type_text = entry.partition(" ")
                    uses[TagUse(spec, struct, _number(tag, where_spec), name, type_text)] = source
        field_table = _table(body, "fields", where_spec)
        for struct in field_table:
            for name, types in _table(field_table, struct, where_spec).items():
                for type_text in _names(types, f"{where_spec}.fields.{struct}.{name}"):
                    uses[FieldUse(spec, struct, name, type_text)] = source
        for versions, texts in _table(body, "layouts", where_spec).items():
            at = f"{where_spec}.layouts.{versions}"
            for text in _names(texts, at):
                try:
                    parse_layout(text)
                    numbers = parse_versions_text(versions)
                except (LayoutTextError, VersionRangeError) as exc:
                    raise LockError(f"{at}: {exc}") from None
                for version in numbers:
                    uses[LayoutUse(spec, version, text)] = source
    return Memory(uses)
