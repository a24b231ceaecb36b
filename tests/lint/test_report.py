"""Output formats: text, JSON, GitHub workflow commands and SARIF 2.1.0."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from codegen.lint import LintResult
from codegen.lint.report import render_github, render_json, render_sarif, render_text
from codegen.lint.rules import INPUT_RULES, RULES
from tests.lint.helpers import field, message, run

SCHEMA = Path(__file__).with_name("sarif-2.1.0-subset.schema.json")


@pytest.fixture
def result(tmp_path: Path) -> LintResult:
    key = message([field("Id", "string", "3")], name="GroupKey", valid="3")
    old = {
        "GroupKey.json": key,
        "GroupValue.json": message(
            [field("A"), field("B", "string")], name="GroupValue", valid="0-1"
        ),
    }
    new = {
        "GroupKey.json": key,
        "GroupValue.json": message(
            [field("A", "int64"), field("B", "string"), field("C", "int32", "2+")],
            name="GroupValue",
            valid="0-2",
            flexible="2+",
        ),
    }
    return run(tmp_path, old, new, allow=("coordinator-value-made-flexible",))


def _sarif(result: LintResult, downgrade: bool = False) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(render_sarif(result, downgrade))
    return doc


def test_sarif_is_valid(result: LintResult) -> None:
    doc = _sarif(result, downgrade=True)
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())
    assert sorted(e.message for e in validator.iter_errors(doc)) == []


def test_sarif_content(result: LintResult) -> None:
    run = _sarif(result)["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [*RULES, *INPUT_RULES]
    assert all(r["help"]["text"] and r["shortDescription"]["text"] for r in rules)
    by_rule = {r["ruleId"]: r for r in run["results"]}
    typed = by_rule["field-type-changed"]
    assert typed["level"] == "error"
    assert rules[typed["ruleIndex"]]["id"] == "field-type-changed"
    location = typed["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"].endswith("new/GroupValue.json")
    assert location["region"]["startLine"] == 7
    assert by_rule["coordinator-value-made-flexible"]["suppressions"] == [
        {"kind": "external", "justification": "allowed on the command line"}
    ]
    assert by_rule["coordinator-value-made-flexible"]["level"] == "note"


def test_json(result: LintResult) -> None:
    doc = json.loads(render_json(result, downgrade=True))
    assert doc["compatible"] is False
    assert doc["failCategories"] == ["wire"]
    assert doc["summary"] == {"breaking": 2, "warning": 0, "info": 0, "suppressed": 1, "invalid": 0}
    first = doc["findings"][0]
    assert set(first) == {
        "rule",
        "severity",
        "category",
        "fails",
        "message",
        "path",
        "line",
        "jsonPath",
        "spec",
        "suppressed",
        "suppressionReason",
        "suppressedBy",
    }
    assert [(f["rule"], f["jsonPath"]) for f in doc["findings"]] == [
        ("coordinator-value-not-flexible", "$.validVersions"),
        ("coordinator-value-made-flexible", "$.flexibleVersions"),
        ("field-type-changed", "$.fields[0].type"),
    ]
    (record,) = doc["downgrade"]
    assert record["recordType"] == 3
    assert record["readableVersions"] == []


def test_github(result: LintResult) -> None:
    lines = render_github(result).splitlines()
    assert lines[0].startswith("::error file=")
    assert (
        ",line=7,title=field-type-changed (breaking%2C wire)::$.fields[0].type: field A type "
        in (lines[1])
    )
    assert len([line for line in lines if line.startswith("::")]) == 2
    assert "breaking changes found (2 breaking, 0 warning, 0 info, 1 suppressed)" in lines[-1]


def test_github_escapes() -> None:
    from codegen.lint.report import _escape_data, _escape_property

    assert _escape_data("a%b\nc") == "a%25b%0Ac"
    assert _escape_property("x:y,z") == "x%3Ay%2Cz"


def test_text(result: LintResult) -> None:
    text = render_text(result, downgrade=True)
    lines = text.splitlines()
    assert lines[1].endswith(
        "GroupValue.json:7: $.fields[0].type: breaking [field-type-changed] (wire) field A type changed "
        "from int32 to int64; keep the type and add a new field in a new version instead"
    )
    assert "(suppressed: allowed on the command line)" in text
    assert "Downgrade report" in text
    assert "    versions 0-1: NOT readable: the non-tagged fields differ" in text


def test_junit(result: LintResult) -> None:
    import xml.etree.ElementTree as ET

    from codegen.lint.report import render_junit

    root = ET.fromstring(render_junit(result))
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("3", "2", "1")
    (suite,) = root
    assert suite.get("name", "").endswith("new/GroupValue.json")
    cases = {case.get("name"): case for case in suite}
    failure = cases["field-type-changed $.fields[0].type"].find("failure")
    assert failure is not None
    assert failure.get("type") == "field-type-changed"
    assert failure.get("message", "").startswith("field A type changed from int32 to int64")
    skipped = cases["coordinator-value-made-flexible $.flexibleVersions"].find("skipped")
    assert skipped is not None
    assert skipped.get("message") == "suppressed: allowed on the command line"


def test_junit_of_a_compatible_run_is_one_passing_case() -> None:
    import xml.etree.ElementTree as ET

    from codegen.lint.report import render_junit

    root = ET.fromstring(render_junit(LintResult("old", "new", (), ())))
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("1", "0", "0")
    (case,) = root.iter("testcase")
    assert (case.get("name"), list(case)) == ("compatible", [])


def test_junit_below_fail_on_passes_and_input_is_an_error(tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    from codegen.errors import SpecProblem
    from codegen.lint.engine import invalid_result
    from codegen.lint.report import render_junit

    tagged = field("T", versions="0+", taggedVersions="0+", tag=0)
    widened = run(
        tmp_path,
        message([field("A"), tagged], flexible="0+"),
        message([field("A")], flexible="0+"),
    )
    root = ET.fromstring(render_junit(widened))
    assert root.get("failures") == "0"
    (case,) = root.iter("testcase")
    out = case.find("system-out")
    assert out is not None and (out.text or "").startswith("warning: ")
    invalid = invalid_result("a", "b", [SpecProblem("b/X.json", 3, "$.name", "bad name")])
    root = ET.fromstring(render_junit(invalid))
    assert (root.get("errors"), root.get("failures")) == ("1", "0")
    error = next(root.iter("error"))
    assert (error.get("type"), error.text) == ("invalid-spec", "b/X.json:3: $.name: bad name")


def test_sarif_fingerprints_survive_moved_lines(tmp_path: Path) -> None:
    """Comments and blank lines above a finding move it; its fingerprint stays."""
    old = message([field("A"), field("B", "string"), field("C")])
    new = message([field("A"), field("B", "int64"), field("C", "int64")])
    moved = new.replace('"fields": [', '"fields": [\n    // a note\n\n', 1)
    first = _sarif(run(tmp_path, old, new))["runs"][0]["results"]
    second = _sarif(run(tmp_path, old, moved))["runs"][0]["results"]  # the same files, edited
    lines = [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in first]
    moved_lines = [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in second]
    assert [m - n for m, n in zip(moved_lines, lines, strict=True)] == [3, 3]
    prints = [r["partialFingerprints"]["kafkaSpecgenFinding/v1"] for r in first]
    assert prints == [r["partialFingerprints"]["kafkaSpecgenFinding/v1"] for r in second]
    assert len(set(prints)) == 2  # two findings, two fingerprints
