"""One case per rule: a small spec pair and the exact findings it gives."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from codegen.lint import RULES, Severity
from codegen.lint.rules import DEFAULT_FAIL_CATEGORIES
from tests.lint.cases import CASES, EXPECTED, Case
from tests.lint.helpers import field, found, message, run
from tests.lint.helpers import field as f
from tests.lint.helpers import message as m

_SUPPRESSION_RULES = {"suppression-without-reason", "suppression-unknown-rule"}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule_case(tmp_path: Path, case: Case) -> None:
    result = run(tmp_path, case.old, case.new)
    assert found(result) == EXPECTED[case.id]
    assert case.id in {rule for rule, _, _ in EXPECTED[case.id]}
    # a breaking finding fails by default when its category does (fail-categories: wire)
    rule = RULES[case.id]
    fails = rule.severity is Severity.BREAKING and rule.category in DEFAULT_FAIL_CATEGORIES
    assert result.exit_code == (1 if fails else 0)


def test_every_rule_has_a_case() -> None:
    assert {c.id for c in CASES} | _SUPPRESSION_RULES == set(RULES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_each_side_against_itself_is_clean(tmp_path: Path, case: Case) -> None:
    assert found(run(tmp_path / "old", case.old, case.old)) == []
    assert found(run(tmp_path / "new", case.new, case.new)) == []


def test_a_widening_change_fails_backwards(tmp_path: Path) -> None:
    narrow = message([field("A"), field("B", "string")], valid="0-2")
    wide = message([field("A"), field("B", "string"), field("C", versions="3+")], valid="0-3")
    assert found(run(tmp_path / "fwd", narrow, wide)) == []
    assert [r for r, _, _ in found(run(tmp_path / "back", wide, narrow))] == [
        "highest-version-lowered"
    ]


def test_new_field_in_new_version_and_field_ended_before_new_version_pass(tmp_path: Path) -> None:
    old = message([field("A"), field("B", "string")], valid="0-2")
    new = message([field("A"), field("B", "string", "0-2"), field("C", "int64", "3+")], valid="0-3")
    assert found(run(tmp_path, old, new)) == []


def test_removing_the_trailing_field_terminates_and_is_reported(tmp_path: Path) -> None:
    # Kafka's checker loops forever on this one (kafka-reference D.3, item 2).
    old = message([field("A"), field("B"), field("C")])
    new = message([field("A"), field("B")])
    assert [r for r, _, _ in found(run(tmp_path, old, new))] == [
        "field-removed-from-existing-version"
    ]


def test_tagged_field_added_in_the_middle_is_compatible(tmp_path: Path) -> None:
    # Kafka's checker pairs it with an unrelated field by position (D.3, item 3).
    tagged = field("T", "int32", "0+", taggedVersions="0+", tag=0)
    old = message([field("A"), field("B", "int64")], flexible="0+")
    new = message([field("A"), tagged, field("B", "int64")], flexible="0+")
    assert found(run(tmp_path, old, new)) == []


def test_making_a_field_nullable_in_a_new_version_is_compatible(tmp_path: Path) -> None:
    # Kafka's checker flags this with a nonsense message (D.3, item 4).
    old = message([field("A"), field("B", "string")], valid="0-2")
    new = message([field("A"), field("B", "string", nullableVersions="3+")], valid="0-3")
    assert found(run(tmp_path, old, new)) == []


def test_common_struct_fields_are_checked(tmp_path: Path) -> None:
    # Kafka's checker never looks at common-struct fields (D.3, item 5).
    common = [{"name": "Member", "versions": "0+", "fields": [field("Id", "string")]}]
    changed = [{"name": "Member", "versions": "0+", "fields": [field("Id", "int32")]}]
    fields = [field("Members", "[]Member")]
    result = run(tmp_path, message(fields, common=common), message(fields, common=changed))
    assert found(result) == [
        (
            "field-type-changed",
            "$.commonStructs[0].fields[0].type",
            "field Id type changed from string to int32; keep the type and add a new field in a "
            "new version instead",
        ),
    ]


def test_inline_struct_field_added_to_existing_version(tmp_path: Path) -> None:
    old = message([field("Topics", "[]Topic", fields=[field("Name", "string")])])
    new = message([field("Topics", "[]Topic", fields=[field("Name", "string"), field("Id")])])
    assert found(run(tmp_path, old, new)) == [
        (
            "field-added-to-existing-version",
            "$.fields[0].fields[1]",
            "non-tagged field Id was added to existing versions 0-2; add it in a new version, or "
            "as a tagged field in a flexible version",
        ),
    ]


def test_tagged_field_renamed_is_paired_by_tag(tmp_path: Path) -> None:
    old = message([field("A"), field("T", taggedVersions="0+", tag=0)], flexible="0+")
    new = message([field("A"), field("Total", taggedVersions="0+", tag=0)], flexible="0+")
    assert [(r, p) for r, p, _ in found(run(tmp_path, old, new))] == [
        ("field-renamed", "$.fields[1].name")
    ]


def test_findings_carry_path_and_line(tmp_path: Path) -> None:
    old = message([field("A"), field("B", "string")])
    new = message([field("A", "int64"), field("B", "string")])
    (finding,) = run(tmp_path, old, new).findings
    assert finding.path.endswith("new/Sample.json")
    assert new.splitlines()[finding.line - 1].strip() == "{"
    assert new.splitlines()[finding.line].strip() == '"name": "A",'
    assert str(finding).endswith(
        "$.fields[0].type: breaking [field-type-changed] (wire) field A type changed from int32 to "
        "int64; keep the type and add a new field in a new version instead"
    )


_PYTHON_VALUES = re.compile(r"\bNone\b|\bTrue\b|\bFalse\b|\[\]|'[^'\s]*'|EmptyArray|EmptyStruct")

_FIELDS = [f("A"), f("B", "string")]
_VALUE_CHANGES = [
    (
        m([f("A", default="-1"), f("B", "string")]),
        m([f("A"), f("B", "string")]),
        'field A default changed from "-1" to no default (so 0); readers fill in the default '
        'for versions without the field: keep "-1"',
    ),
    (
        m([f("A"), f("B", "bool")]),
        m([f("A"), f("B", "bool", default="true")]),
        'field B default changed from no default (so false) to "true"; readers fill in the '
        "default for versions without the field: keep no default (so false)",
    ),
    (
        m([f("A"), f("B", "string", nullableVersions="0+", default="null")]),
        m([f("A"), f("B", "string", nullableVersions="0+")]),
        'field B default changed from "null" to no default (so ""); readers fill in the '
        'default for versions without the field: keep "null"',
    ),
    (
        m([f("A"), f("B", "[]int32", nullableVersions="0+", default="null")]),
        m([f("A"), f("B", "[]int32", nullableVersions="0+")]),
        'field B default changed from "null" to no default (so empty); readers fill in the '
        'default for versions without the field: keep "null"',
    ),
]


_VALUE_CHANGES.append(
    (
        m(_FIELDS, type="coordinator-value", api_key=3, valid="0", flexible="0+"),
        m(_FIELDS, type="coordinator-value", api_key=4, valid="0", flexible="0+"),
        "apiKey changed from 3 to 4; the record type id is on the wire, keep 3",
    )
)
_VALUE_CHANGES.append(
    (
        m(_FIELDS),
        m(_FIELDS, api_key=5),
        "apiKey changed from no apiKey to 5; the apiKey is on the wire, keep no apiKey",
    )
)


@pytest.mark.parametrize(("old", "new", "expected"), _VALUE_CHANGES)
def test_values_read_as_spec_text(tmp_path: Path, old: str, new: str, expected: str) -> None:
    assert [msg for _, _, msg in found(run(tmp_path, old, new))] == [expected]
    assert _PYTHON_VALUES.search(expected) is None


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_messages_show_no_python_values(tmp_path: Path, case: Case) -> None:
    for _, _, text in found(run(tmp_path, case.old, case.new)):
        assert _PYTHON_VALUES.search(text) is None, text


def test_a_spec_left_without_versions_reads_as_removed(tmp_path: Path) -> None:
    # Kafka 4.0+ ships removed requests as stubs with "validVersions": "none" and no fields;
    # like Kafka's generator, the lint has no message for them, so the spec is gone.
    old = {"Sample.json": message([field("A")], type="request", api_key=7)}
    stub = {"name": "Sample", "type": "request", "apiKey": 7, "validVersions": "none"}
    result = run(tmp_path, old, {"Sample.json": json.dumps(stub)})
    assert [(r, p) for r, p, _ in found(result)] == [("spec-removed", "$")]
    assert found(run(tmp_path / "same", {"Sample.json": json.dumps(stub)}, {})) == []
