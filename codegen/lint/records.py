"""Coordinator records: which specs are record keys and values, and record type ids.

Two models exist (kafka-reference C.2 and C.6):

* the data model: ``"type": "data"`` specs named ``XKey``/``XValue``; the record type id
  is the key's version, and the key is written at that version;
* the coordinator model: ``coordinator-key``/``coordinator-value`` specs whose apiKey is
  the record type id; the key is written at version 0.

Record type ids are unique per folder (one coordinator per folder), so a record type is
``(folder, id)``. Both models write the same bytes for the same layout.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from codegen.lint.layout import message_layout, same_wire, unreadable_reason
from codegen.lint.model import SpecSet, SpecView
from codegen.versions import VersionRange


class Role(enum.Enum):
    NONE = "none"
    KEY = "key"
    VALUE = "value"


def roles(specs: SpecSet) -> dict[str, Role]:
    """The record role of every spec of the set (a single file's partner may lie beside it)."""
    names = {(v.namespace, v.name) for v in specs.specs} | specs.neighbours
    result: dict[str, Role] = {}
    for view in specs.specs:
        spec_type, name, ns = view.message.spec_type, view.name, view.namespace
        if spec_type == "coordinator-key":
            result[name] = Role.KEY
        elif spec_type == "coordinator-value":
            result[name] = Role.VALUE
        elif spec_type == "data" and name.endswith("Key") and (ns, name[:-3] + "Value") in names:
            result[name] = Role.KEY
        elif spec_type == "data" and name.endswith("Value") and (ns, name[:-5] + "Key") in names:
            result[name] = Role.VALUE
        else:
            result[name] = Role.NONE
    return result


@dataclass(frozen=True, slots=True)
class RecordType:
    namespace: str
    type_id: int
    key: SpecView
    key_version: int
    value: SpecView | None

    @property
    def label(self) -> str:
        where = "" if self.namespace == "." else f" of {self.namespace}"
        return f"record type {self.type_id}{where} ({self.key.name})"


def record_types(specs: SpecSet) -> dict[tuple[str, int], RecordType]:
    role = roles(specs)
    by_name = {(v.namespace, v.name): v for v in specs.specs}
    values_by_key = {
        (v.namespace, v.message.api_key): v
        for v in specs.specs
        if v.message.spec_type == "coordinator-value"
    }
    table: dict[tuple[str, int], RecordType] = {}
    for view in specs.specs:
        if role[view.name] is not Role.KEY:
            continue
        ns = view.namespace
        partner = by_name.get((ns, view.name[:-3] + "Value")) if view.name.endswith("Key") else None
        if view.message.spec_type == "coordinator-key":
            api_key = view.message.api_key
            assert api_key is not None
            value = values_by_key.get((ns, api_key), partner)
            table[(ns, api_key)] = RecordType(ns, api_key, view, 0, value)
        else:
            for type_id in view.message.valid_versions.versions():
                table[(ns, type_id)] = RecordType(ns, type_id, view, type_id, partner)
    return table


def follow_moves(
    old_types: dict[tuple[str, int], RecordType], new_set: SpecSet
) -> dict[tuple[str, int], RecordType]:
    """The old record types keyed by the folder their key spec has in the new set.

    A folder reorganisation moves a key spec (found by name) to another namespace; its
    record types are the same ones, not a removal and an addition.
    """
    new_folder = {v.name: v.namespace for v in new_set.specs}
    return {
        (new_folder.get(record.key.name, ns), type_id): record
        for (ns, type_id), record in old_types.items()
    }


def key_layout_changed(old: RecordType, new: RecordType) -> bool:
    return not same_wire(
        message_layout(old.key.message, old.key_version),
        message_layout(new.key.message, new.key_version),
    )


# --------------------------------------------------------------------------- downgrade report


@dataclass(frozen=True, slots=True)
class VersionVerdict:
    versions: VersionRange
    readable: bool
    reason: str


@dataclass(frozen=True, slots=True)
class RecordDowngrade:
    """For one record type: which value versions a new writer may write for an old reader."""

    namespace: str
    type_id: int
    key: str
    value: str | None
    verdicts: tuple[VersionVerdict, ...]

    @property
    def readable_versions(self) -> list[VersionRange]:
        return [v.versions for v in self.verdicts if v.readable]


def _value_verdict(old: RecordType, new: RecordType, version: int) -> tuple[bool, str]:
    assert old.value is not None and new.value is not None
    old_valid = old.value.message.valid_versions
    if version in old_valid:
        reason = unreadable_reason(new.value.message, version, old.value.message, version)
        if reason is None:
            return True, "same layout in both specs"
        return False, reason
    if version < old_valid.lowest:
        return False, f"old readers know only versions {old_valid}"
    highest = old_valid.highest
    if highest not in old.value.message.flexible_versions:
        return False, (
            f"old readers parse version {version} as their highest version {highest}, "
            "which is not flexible, so they cannot skip new fields"
        )
    reason = unreadable_reason(new.value.message, version, old.value.message, highest)
    if reason is None:
        return True, (
            f"KIP-915: old readers parse it as version {highest}; new tagged fields "
            "are kept as unknown tags"
        )
    return False, f"old readers parse it as version {highest}, but {reason}"


def _group(verdicts: list[tuple[int, bool, str]]) -> tuple[VersionVerdict, ...]:
    grouped: list[VersionVerdict] = []
    for version, readable, reason in verdicts:
        last = grouped[-1] if grouped else None
        if (
            last is not None
            and last.readable == readable
            and last.reason == reason
            and last.versions.highest == version - 1
        ):
            grouped[-1] = VersionVerdict(
                VersionRange(last.versions.lowest, version), readable, reason
            )
        else:
            grouped.append(VersionVerdict(VersionRange.single(version), readable, reason))
    return tuple(grouped)


def _downgrade_one(old: RecordType | None, new: RecordType) -> tuple[VersionVerdict, ...]:
    valid = (
        new.value.message.valid_versions
        if new.value is not None
        else VersionRange.single(new.key_version)
    )
    if old is None:
        return (
            VersionVerdict(
                valid,
                False,
                "unknown record type for old readers: KIP-915 readers (3.5+) "
                "skip it, older readers fail; the records are lost on "
                "downgrade",
            ),
        )
    if key_layout_changed(old, new):
        return (VersionVerdict(valid, False, "the key layout changed"),)
    if old.value is None or new.value is None:
        return (VersionVerdict(valid, True, "key only; the key layout is unchanged"),)
    return _group([(v, *_value_verdict(old, new, v)) for v in valid.versions()])


def downgrade_report(old_set: SpecSet, new_set: SpecSet) -> list[RecordDowngrade]:
    """For each record type of the new set, the value versions old readers can read."""
    old_types = follow_moves(record_types(old_set), new_set)
    new_types = record_types(new_set)
    report: list[RecordDowngrade] = []
    for ident in sorted(new_types):
        new = new_types[ident]
        old = old_types.get(ident)
        report.append(
            RecordDowngrade(
                namespace=new.namespace,
                type_id=new.type_id,
                key=new.key.name,
                value=None if new.value is None else new.value.name,
                verdicts=_downgrade_one(old, new),
            )
        )
    return report
