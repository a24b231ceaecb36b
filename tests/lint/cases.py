"""One small spec pair per lint rule, with the exact findings it must give."""

from __future__ import annotations

from dataclasses import dataclass

from codegen.lint import set_from_texts
from codegen.lint.memory import LOCK_NAME, lock_text
from codegen.lint.retired import set_memory
from tests.lint.helpers import field as f
from tests.lint.helpers import message as m


@dataclass(frozen=True)
class Case:
    id: str
    old: dict[str, str] | str
    new: dict[str, str] | str


def _tagged(name: str, tag: int, type: str = "int32", **extra: object) -> dict[str, object]:
    return f(name, type, "0+", taggedVersions="0+", tag=tag, **extra)


def _record(
    key_fields: list[dict[str, object]],
    value_fields: list[dict[str, object]],
    *,
    type_id: int = 3,
    value_valid: str = "0",
    value_flexible: str = "0+",
    key_flexible: str = "none",
    prefix: str = "Group",
) -> dict[str, str]:
    """A data-model coordinator record: key version = record type id."""
    return {
        f"{prefix}Key.json": m(
            key_fields, name=f"{prefix}Key", valid=str(type_id), flexible=key_flexible
        ),
        f"{prefix}Value.json": m(
            value_fields, name=f"{prefix}Value", valid=value_valid, flexible=value_flexible
        ),
    }


def _coordinator(
    key_fields: list[dict[str, object]],
    value_fields: list[dict[str, object]],
    *,
    type_id: int = 3,
    prefix: str = "Group",
) -> dict[str, str]:
    """A coordinator-model record: apiKey = record type id, key at version 0."""
    return {
        f"{prefix}Key.json": m(
            key_fields, name=f"{prefix}Key", type="coordinator-key", api_key=type_id, valid="0"
        ),
        f"{prefix}Value.json": m(
            value_fields,
            name=f"{prefix}Value",
            type="coordinator-value",
            api_key=type_id,
            valid="0",
            flexible="0+",
        ),
    }


def _locked(specs: dict[str, str], *retired: dict[str, str]) -> dict[str, str]:
    """``specs`` with the lock a team would have committed: their uses and those of the
    ``retired`` specs (what earlier commits had)."""
    memory = set_memory(set_from_texts("specs", specs), "specs")
    for more in retired:
        memory = memory | set_memory(set_from_texts("retired", more), "retired")
    return {**specs, LOCK_NAME: lock_text(memory)}


_BASE = [f("A"), f("B", "string")]
_TOPICS = [f("Topics", "[]Topic", fields=[f("Name", "string"), f("Partition")])]

CASES: list[Case] = [
    Case(
        "spec-removed",
        {"A.json": m(_BASE, name="A"), "B.json": m(_BASE, name="B")},
        {"A.json": m(_BASE, name="A")},
    ),
    Case(
        "spec-added",
        {"A.json": m(_BASE, name="A")},
        {"A.json": m(_BASE, name="A"), "B.json": m(_BASE, name="B")},
    ),
    Case("spec-renamed", m(_BASE), m(_BASE, name="Example")),
    Case(
        "spec-type-changed",
        m(_BASE, type="request", api_key=90),
        m(_BASE, type="response", api_key=90),
    ),
    Case(
        "api-key-changed",
        m(_BASE, type="request", api_key=90),
        m(_BASE, type="request", api_key=91),
    ),
    Case(
        "flexible-versions-changed",
        m(_BASE, valid="0-4", flexible="3+"),
        m(_BASE, valid="0-4", flexible="4+"),
    ),
    Case("highest-version-lowered", m(_BASE, valid="0-3"), m(_BASE, valid="0-2")),
    Case("lowest-version-lowered", m(_BASE, valid="1-3"), m(_BASE, valid="0-3")),
    Case("versions-removed", m(_BASE, valid="0-3"), m(_BASE, valid="2-3")),
    # version 2 is not released yet: it may change (here it gains a field)
    Case(
        "unstable-version-changed",
        m(_BASE, type="request", api_key=90, unstable=True),
        m([*_BASE, f("C", "int64", "2+")], type="request", api_key=90),
    ),
    # versions 0-1 come back, but not with the layout the lock remembers
    Case(
        "version-layout-changed",
        _locked({"Sample.json": m(_BASE, valid="2-3")}, {"Sample.json": m(_BASE, valid="0-3")}),
        {
            "Sample.json": m(
                [f("Id", "int64", "0-1"), f("A", versions="2+"), f("B", "string")], valid="0-3"
            )
        },
    ),
    Case("field-type-changed", m(_BASE), m([f("A", "int64"), f("B", "string")])),
    Case(
        "tagged-field-type-changed",
        m([f("A"), _tagged("T", 0)], flexible="0+"),
        m([f("A"), _tagged("T", 0, "int64")], flexible="0+"),
    ),
    Case("field-versions-changed", m(_BASE), m([f("A", versions="1+"), f("B", "string")])),
    Case("field-added-to-existing-version", m(_BASE), m([*_BASE, f("C", "int64")])),
    Case("field-removed-from-existing-version", m(_BASE), m([f("A")])),
    Case(
        "field-tagging-changed",
        m([f("A"), f("T")], flexible="0+"),
        m([f("A"), _tagged("T", 0)], flexible="0+"),
    ),
    Case("fields-reordered", m(_BASE), m([f("B", "string"), f("A")])),
    Case("field-renamed", m(_BASE), m([f("Alpha"), f("B", "string")])),
    Case(
        "struct-renamed",
        m(_TOPICS),
        m([f("Topics", "[]TopicData", fields=[f("Name", "string"), f("Partition")])]),
    ),
    Case(
        "nullability-narrowed",
        m([f("A"), f("B", "string", nullableVersions="0+")]),
        m([f("A"), f("B", "string", nullableVersions="2+")]),
    ),
    Case("nullability-widened", m(_BASE), m([f("A"), f("B", "string", nullableVersions="1+")])),
    Case(
        "default-changed",
        m([f("A", default="-1"), f("B", "string")]),
        m([f("A", default="0"), f("B", "string")]),
    ),
    Case(
        "tagged-default-changed",
        m([f("A"), _tagged("T", 0, default="-1")], flexible="0+"),
        m([f("A"), _tagged("T", 0, default="0")], flexible="0+"),
    ),
    Case(
        "tag-changed",
        m([f("A"), _tagged("T", 0), _tagged("U", 1, "string")], flexible="0+"),
        m([f("A"), _tagged("T", 1), _tagged("U", 0, "string")], flexible="0+"),
    ),
    Case(
        "tag-reused",
        m([f("A"), _tagged("T", 0)], flexible="0+"),
        m([f("A"), _tagged("Note", 0, "string")], flexible="0+"),
    ),
    Case(
        "tagged-field-removed",
        m([f("A"), _tagged("T", 0)], flexible="0+"),
        m([f("A")], flexible="0+"),
    ),
    Case(
        "field-flexible-versions-changed",
        m([f("A"), f("Id", "string", flexibleVersions="none")], flexible="0+"),
        m([f("A"), f("Id", "string")], flexible="0+"),
    ),
    Case("ignorable-changed", m(_BASE), m([f("A", ignorable=True), f("B", "string")])),
    Case(
        "map-key-changed",
        m(_TOPICS),
        m([f("Topics", "[]Topic", fields=[f("Name", "string", mapKey=True), f("Partition")])]),
    ),
    Case("entity-type-changed", m(_BASE), m([f("A"), f("B", "string", entityType="topicName")])),
    Case(
        "coordinator-key-flexible",
        _record([f("Id", "string", "3")], _BASE),
        _record([f("Id", "string", "3")], _BASE, key_flexible="0+"),
    ),
    Case(
        "coordinator-key-changed",
        _coordinator([f("Id", "string", "0")], _BASE),
        _coordinator([f("Id", "string", "0"), f("Member", "string", "0")], _BASE),
    ),
    Case(
        "coordinator-value-not-flexible",
        _record([f("Id", "string", "3")], _BASE, value_valid="0-1", value_flexible="none"),
        _record(
            [f("Id", "string", "3")],
            [*_BASE, f("C", "int64", "2+")],
            value_valid="0-2",
            value_flexible="none",
        ),
    ),
    Case(
        "coordinator-value-untagged-change",
        _record([f("Id", "string", "3")], _BASE),
        _record([f("Id", "string", "3")], [*_BASE, f("C", "int64", "1+")], value_valid="0-1"),
    ),
    Case(
        "coordinator-value-made-flexible",
        _record([f("Id", "string", "3")], _BASE, value_valid="0-1", value_flexible="none"),
        _record([f("Id", "string", "3")], _BASE, value_valid="0-2", value_flexible="2+"),
    ),
    Case(
        "record-type-added",
        _coordinator([f("Id", "string", "0")], _BASE),
        {
            **_coordinator([f("Id", "string", "0")], _BASE),
            **_coordinator([f("Id", "string", "0")], _BASE, type_id=4, prefix="Member"),
        },
    ),
    Case(
        "record-type-removed",
        {
            **_coordinator([f("Id", "string", "0")], _BASE),
            **_coordinator([f("Id", "string", "0")], _BASE, type_id=4, prefix="Member"),
        },
        _coordinator([f("Id", "string", "0")], _BASE),
    ),
    Case(
        "coordinator-model-changed",
        _record([f("Id", "string", "3")], _BASE),
        _coordinator([f("Id", "string", "0")], _BASE),
    ),  # The old folder's lock remembers what an earlier commit had and the old specs no longer do.
    Case(
        "field-name-reused",
        _locked({"Sample.json": m([f("A")])}, {"Sample.json": m([f("A"), f("Label", "string")])}),
        {"Sample.json": m([f("A"), f("Label", versions="3+")], valid="0-3")},
    ),
    Case(
        "api-key-reused",
        _locked(
            {"Keep.json": m(_BASE, name="Keep")},
            {"Old.json": m(_BASE, name="OldRequest", type="request", api_key=90)},
        ),
        {
            "Keep.json": m(_BASE, name="Keep"),
            "New.json": m(_BASE, name="NewRequest", type="request", api_key=90),
        },
    ),
    Case(
        "record-type-reused",
        _locked(
            _coordinator([f("Id", "string", "0")], _BASE),
            _coordinator([f("Id", "string", "0")], _BASE, type_id=4, prefix="Member"),
        ),
        {
            **_coordinator([f("Id", "string", "0")], _BASE),
            **_coordinator([f("Id", "string", "0")], _BASE, type_id=4, prefix="Session"),
        },
    ),
    Case(
        "lock-outdated",
        _locked(
            {"Sample.json": m(_BASE)},
            {"Gone.json": m(_BASE, name="GoneRequest", type="request", api_key=91)},
        ),
        _locked({"Sample.json": m(_BASE)}),
    ),
]


# The exact findings of each case, as (rule, JSON path, message).
EXPECTED: dict[str, list[tuple[str, str, str]]] = {
    "spec-removed": [
        (
            "spec-removed",
            "$",
            "spec B (data) is missing from the new specs; keep it and retire its versions "
            "over releases instead",
        ),
    ],
    "spec-added": [
        ("spec-added", "$", "new spec B (data)"),
    ],
    "spec-renamed": [
        (
            "spec-renamed",
            "$.name",
            "spec Sample was renamed to Example; the generated class and module names "
            "change: keep Sample",
        ),
    ],
    "spec-type-changed": [
        (
            "spec-type-changed",
            "$.type",
            "type changed from request to response; keep request and add a new spec for the "
            "new kind of message",
        ),
    ],
    "api-key-changed": [
        (
            "api-key-changed",
            "$.apiKey",
            "apiKey changed from 90 to 91; the apiKey is on the wire, keep 90",
        ),
    ],
    "flexible-versions-changed": [
        (
            "flexible-versions-changed",
            "$.flexibleVersions",
            "flexibleVersions changed from 3+ to 4+, so existing versions 3 change their "
            "wire format; keep 3+ for existing versions",
        ),
    ],
    "highest-version-lowered": [
        (
            "highest-version-lowered",
            "$.validVersions",
            "the highest version was lowered from 3 to 2 (validVersions 0-3 -> 0-2); writers "
            "may already use version 3, keep it",
        ),
    ],
    "lowest-version-lowered": [
        (
            "lowest-version-lowered",
            "$.validVersions",
            "version 0 comes back (validVersions 1-3 -> 0-3), and nothing records the layout it "
            "had (no git history or lock holds it); retired version numbers may have had "
            "another layout: check it, or lint with the git history or a lock",
        ),
    ],
    "versions-removed": [
        (
            "versions-removed",
            "$.validVersions",
            "versions 0-1 were removed (validVersions 0-3 -> 2-3); old writers and stored "
            "data may use them: keep them until nothing does",
        ),
    ],
    "unstable-version-changed": [
        (
            "unstable-version-changed",
            "$.validVersions",
            "version 2 of Sample was not released: marked latestVersionUnstable, so Kafka may "
            "change or remove it; its bytes change: 2 non-tagged fields became 3",
        ),
    ],
    "version-layout-changed": [
        (
            "version-layout-changed",
            "$.validVersions",
            "versions 0-1 of Sample come back (validVersions 2-3 -> 0-3) with another layout "
            "than in the lock: field Id was int32 and is int64; readers of that release read "
            "these bytes differently: give them the layout they had",
        ),
    ],
    "field-type-changed": [
        (
            "field-type-changed",
            "$.fields[0].type",
            "field A type changed from int32 to int64; keep the type and add a new field in "
            "a new version instead",
        ),
    ],
    "tagged-field-type-changed": [
        (
            "tagged-field-type-changed",
            "$.fields[1].type",
            "field T type changed from int32 to int64; never change a tag's type, use a new tag",
        ),
    ],
    "field-versions-changed": [
        (
            "field-versions-changed",
            "$.fields[0].versions",
            "field A versions changed from 0+ to 1+, which changes existing versions 0; only "
            "extend a field into new versions or end it before a new version",
        ),
    ],
    "field-added-to-existing-version": [
        (
            "field-added-to-existing-version",
            "$.fields[2]",
            "non-tagged field C was added to existing versions 0-2; add it in a new version, "
            "or as a tagged field in a flexible version",
        ),
    ],
    "field-removed-from-existing-version": [
        (
            "field-removed-from-existing-version",
            "$.fields",
            "field B (string, versions 0+) was removed, but versions 0-2 still exist; keep "
            "it and end its versions before a new version instead",
        ),
    ],
    "field-tagging-changed": [
        (
            "field-tagging-changed",
            "$.fields[1].taggedVersions",
            "field T changed between tagged and non-tagged in existing versions 0-2; make it "
            "tagged only from a new version on",
        ),
    ],
    "fields-reordered": [
        (
            "fields-reordered",
            "$.fields[0]",
            "field B now comes before A; the order of non-tagged fields is the wire order of "
            "existing versions 0-2: keep the old order",
        ),
    ],
    "field-renamed": [
        (
            "field-renamed",
            "$.fields[0].name",
            "field A was renamed to Alpha in versions 0-2 (the same bytes: paired by its place "
            "in the layout); the JSON key changes from a to alpha and the attribute from a to "
            "alpha: keep the name A",
        ),
    ],
    "struct-renamed": [
        (
            "struct-renamed",
            "$.fields[0].type",
            "struct Topic of field Topics was renamed to TopicData; the generated class name "
            "changes: keep Topic",
        ),
    ],
    "nullability-narrowed": [
        (
            "nullability-narrowed",
            "$.fields[1].nullableVersions",
            "field B is no longer nullable in versions 0-1 (nullableVersions 0+ -> 2+); old "
            "writers may send null and new readers reject it: keep it nullable in existing "
            "versions",
        ),
    ],
    "nullability-widened": [
        (
            "nullability-widened",
            "$.fields[1].nullableVersions",
            "field B became nullable in existing versions 1-2 (nullableVersions none -> 1+); "
            "old readers reject a null: make it nullable only from a new version on",
        ),
    ],
    "default-changed": [
        (
            "default-changed",
            "$.fields[0].default",
            'field A default changed from "-1" to "0"; readers fill in the default for '
            'versions without the field: keep "-1"',
        ),
    ],
    "tagged-default-changed": [
        (
            "tagged-default-changed",
            "$.fields[1].default",
            'tagged field T default changed from "-1" to "0"; a tagged field equal to its '
            'default is not written, so omitted values now read differently: keep "-1"',
        ),
    ],
    "tag-changed": [
        (
            "tag-changed",
            "$.fields[1].tag",
            "field T tag changed from 0 to 1, which was the tag of field U (string); the tag is "
            "on the wire, keep 0",
        ),
        (
            "tag-changed",
            "$.fields[2].tag",
            "field U tag changed from 1 to 0, which was the tag of field T (int32); the tag is "
            "on the wire, keep 1",
        ),
    ],
    "tag-reused": [
        (
            "tagged-field-removed",
            "$.fields",
            "tagged field T (tag 0) was removed; old writers still write tag 0, so never use "
            "it again: keep the field and stop setting it (tags stay contiguous; the lock and "
            "the git history remember the tag)",
        ),
        (
            "tag-reused",
            "$.fields[1].tag",
            "tag 0 belonged to field T (int32) and now belongs to Note (string); old writers "
            "still write it with the old meaning: never reuse a tag, use tag 1",
        ),
    ],
    "tagged-field-removed": [
        (
            "tagged-field-removed",
            "$.fields",
            "tagged field T (tag 0) was removed; old writers still write tag 0, so never use "
            "it again: keep the field and stop setting it (tags stay contiguous; the lock and "
            "the git history remember the tag)",
        ),
    ],
    "field-flexible-versions-changed": [
        (
            "field-flexible-versions-changed",
            "$.fields[1].flexibleVersions",
            "field Id flexibleVersions changed from none to 0+ in existing versions; its "
            "encoding changes: keep the override",
        ),
    ],
    "ignorable-changed": [
        (
            "ignorable-changed",
            "$.fields[0].ignorable",
            "field A ignorable changed from false to true; writers now silently drop values "
            "in versions without it",
        ),
    ],
    "map-key-changed": [
        (
            "map-key-changed",
            "$.fields[0].fields[0].mapKey",
            "field Name mapKey changed from false to true; the generated collection API and "
            "equality change",
        ),
    ],
    "entity-type-changed": [
        (
            "entity-type-changed",
            "$.fields[1].entityType",
            "field B entityType changed from unknown to topicName; keep it, tools rely on it",
        ),
    ],
    "coordinator-key-flexible": [
        (
            "coordinator-key-flexible",
            "$.flexibleVersions",
            "the record key GroupKey became flexible (flexibleVersions none -> 0+); key "
            "bytes identify the record for compaction, keep none",
        ),
    ],
    "coordinator-key-changed": [
        (
            "coordinator-key-changed",
            "$.fields[1]",
            "field Member was added to the record key GroupKey; the key bytes change, so old "
            "and new records no longer compact together: add a new record type instead",
        ),
    ],
    "coordinator-value-not-flexible": [
        (
            "coordinator-value-not-flexible",
            "$.validVersions",
            "version 2 of GroupValue changes its fields (adds C), but version 1 is not "
            "flexible; first release a flexible version with the same fields, then add "
            "tagged fields",
        ),
    ],
    "coordinator-value-untagged-change": [
        (
            "coordinator-value-untagged-change",
            "$.validVersions",
            "version 1 of GroupValue changes the non-tagged fields of version 0 (adds C); "
            "KIP-915 readers parse newer versions as version 0 and would misread it: add "
            "tagged fields instead",
        ),
    ],
    "coordinator-value-made-flexible": [
        (
            "coordinator-value-made-flexible",
            "$.flexibleVersions",
            "version 2 of GroupValue is its first flexible version; readers older than "
            "KIP-915 (Kafka 3.5) cannot read it, so keep writing version 1 until a tagged "
            "field is needed and a downgrade below this release is ruled out",
        ),
    ],
    "record-type-added": [
        ("spec-added", "$", "new spec MemberKey (coordinator-key)"),
        (
            "record-type-added",
            "$.apiKey",
            "new record type 4 (MemberKey): readers older than KIP-915 (Kafka 3.5) fail on "
            "it and newer readers skip it, so a downgrade loses these records; write them "
            "only once a downgrade below this release is ruled out",
        ),
        ("spec-added", "$", "new spec MemberValue (coordinator-value)"),
    ],
    "record-type-removed": [
        (
            "spec-removed",
            "$",
            "spec MemberKey (coordinator-key) is missing from the new specs; keep it and "
            "retire its versions over releases instead",
        ),
        (
            "record-type-removed",
            "$.apiKey",
            "record type 4 (MemberKey) is gone; stored records of this type can no longer be "
            "read: keep its key and value specs",
        ),
        (
            "spec-removed",
            "$",
            "spec MemberValue (coordinator-value) is missing from the new specs; keep it and "
            "retire its versions over releases instead",
        ),
    ],
    "coordinator-model-changed": [
        (
            "coordinator-model-changed",
            "$.type",
            "GroupKey moved from type data to coordinator-key; the wire layout is compared "
            "record type by record type",
        ),
        (
            "coordinator-model-changed",
            "$.type",
            "GroupValue moved from type data to coordinator-value; the wire layout is "
            "compared record type by record type",
        ),
    ],
    "field-name-reused": [
        (
            "field-name-reused",
            "$.fields[1].name",
            "field Label (int32) takes the name of a retired field Label (string) of Sample in the lock; JSON readers and code written for the old field would take the new one for it: give the new field another name, or bring Label back as string",
        ),
    ],
    "api-key-reused": [
        ("spec-added", "$", "new spec NewRequest (request)"),
        (
            "api-key-reused",
            "$.apiKey",
            "apiKey 90 was request OldRequest in the lock and now is NewRequest; old clients and brokers still send and expect OldRequest under it: never reuse an apiKey, take an unused one",
        ),
    ],
    "record-type-reused": [
        ("spec-added", "$", "new spec SessionKey (coordinator-key)"),
        (
            "record-type-added",
            "$.apiKey",
            "new record type 4 (SessionKey): readers older than KIP-915 (Kafka 3.5) fail on it and newer readers skip it, so a downgrade loses these records; write them only once a downgrade below this release is ruled out",
        ),
        (
            "record-type-reused",
            "$.apiKey",
            "record type 4 (SessionKey) was the type of MemberKey records in the lock; stored records of that type (compacted topics keep them) would be read as SessionKey: never reuse a record type id, take an unused one",
        ),
        ("spec-added", "$", "new spec SessionValue (coordinator-value)"),
    ],
    "lock-outdated": [
        (
            "lock-outdated",
            "$",
            "the lock lost 6 uses that the old lock holds (apiKey 91 of request GoneRequest, field GoneRequest.A (int32), field GoneRequest.B (string) and 3 more); a lock only grows: put them back (`kafka-specgen lint --write-lock PATH` merges the git history back in)",
        ),
    ],
}
