"""Render a lint result as text, JSON, GitHub workflow commands, SARIF 2.1.0 or JUnit XML,
and the rules.

Input that cannot be compared (spec errors, different messages) renders in the same formats:
its problems are findings of the ``input`` category and the exit status is 2.
"""

from __future__ import annotations

import hashlib
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

from codegen import __version__
from codegen.lint.engine import LintResult
from codegen.lint.findings import Finding, artifact_path
from codegen.lint.records import RecordDowngrade
from codegen.lint.rules import INPUT_RULES, RULES, Category, Rule, Severity
from codegen.text import plural

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
DOCS = "docs/lint.md"
# The project's [project.urls] in pyproject.toml (a test keeps them equal).
PROJECT_URL = "https://github.com/kafka-specgen/kafka-specgen"
DOCS_URL = f"{PROJECT_URL}/blob/main/{DOCS}"
_EXIT_DESCRIPTION = {0: "compatible", 1: "findings at or above --fail-on", 2: "invalid input"}
_SARIF_LEVEL = {Severity.BREAKING: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
_GITHUB_LEVEL = {Severity.BREAKING: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def _verdict(result: LintResult) -> str:
    if result.invalid:
        return f"invalid input ({plural(result.problems, 'problem')})"
    if result.breaking:
        return "breaking changes found"
    if result.failed:
        return f"failed (--fail-on {result.fail_on.value})"
    return "compatible"


def _passing_breaking(result: LintResult) -> str:
    """``; breaking json findings pass (fail-categories wire)`` when some breaking findings
    are of categories that do not fail."""
    passing = sorted(
        {
            f.category.value
            for f in result.active()
            if f.severity is Severity.BREAKING
            and f.category is not Category.INPUT
            and f.category not in result.fail_categories
        }
    )
    if not passing:
        return ""
    failing = ", ".join(c.value for c in Category if c in result.fail_categories)
    return f"; breaking {' and '.join(passing)} findings pass (fail-categories {failing})"


def _summary(result: LintResult) -> str:
    suppressed = sum(1 for f in result.findings if f.suppressed is not None)
    verdict = _verdict(result)
    if result.invalid:  # nothing was compared: no counts of a verdict
        return f"{result.old_label} -> {result.new_label}: {verdict}"
    return (
        f"{result.old_label} -> {result.new_label}: {verdict} "
        f"({result.count(Severity.BREAKING)} breaking, {result.count(Severity.WARNING)} "
        f"warning, {result.count(Severity.INFO)} info, {suppressed} suppressed"
        f"{_passing_breaking(result)})"
    )


def _downgrade_text(report: tuple[RecordDowngrade, ...]) -> list[str]:
    lines = ["", "Downgrade report: value versions a reader of the old specs can read"]
    if not report:
        lines.append("  (no coordinator record types)")
    for record in report:
        value = record.value or "no value spec"
        lines.append(f"  {record.namespace} record type {record.type_id}: {record.key} / {value}")
        for verdict in record.verdicts:
            mark = "readable" if verdict.readable else "NOT readable"
            span = verdict.versions
            word = "version" if span.lowest == span.highest else "versions"
            lines.append(f"    {word} {span}: {mark}: {verdict.reason}")
    return lines


def _problem_text(f: Finding) -> str:
    """An input problem as ``path:line: $.json.path: message``, shorter without a place."""
    if f.line > 0:
        return f"{f.path}:{f.line}: {f.json_path}: {f.message}"
    return f"{f.path}: {f.message}" if f.path else f.message


def render_text(result: LintResult, downgrade: bool = False) -> str:
    if result.invalid:
        lines = [_problem_text(f) for f in result.findings]
        return "\n".join([*lines, f"lint: {_verdict(result)}"]) + "\n"
    lines = [str(f) for f in result.active()]
    lines += [
        f"{f}  (suppressed: {f.suppressed})" for f in result.findings if f.suppressed is not None
    ]
    lines.append(_summary(result))
    if downgrade:
        lines += _downgrade_text(result.downgrade)
    return "\n".join(lines) + "\n"


def _finding_json(f: Finding, result: LintResult) -> dict[str, Any]:
    return {
        "rule": f.rule,
        "severity": f.severity.value,
        "category": f.category.value,
        "fails": result.fails(f),
        "message": f.message,
        "path": f.path,
        "line": f.line,
        "jsonPath": f.json_path,
        "spec": f.spec,
        "suppressed": f.suppressed is not None,
        "suppressionReason": f.suppressed,
        "suppressedBy": f.suppressed_by,
    }


def _downgrade_json(record: RecordDowngrade) -> dict[str, Any]:
    return {
        "namespace": record.namespace,
        "recordType": record.type_id,
        "key": record.key,
        "value": record.value,
        "readableVersions": [str(v) for v in record.readable_versions],
        "verdicts": [
            {"versions": str(v.versions), "readable": v.readable, "reason": v.reason}
            for v in record.verdicts
        ],
    }


def render_json(result: LintResult, downgrade: bool = False) -> str:
    doc: dict[str, Any] = {
        "old": result.old_label,
        "new": result.new_label,
        "compatible": not result.breaking and not result.invalid,
        "exitCode": result.exit_code,
        "failOn": result.fail_on.value,
        "failCategories": [c.value for c in Category if c in result.fail_categories],
        "summary": {s.value: result.count(s) for s in Severity}
        | {
            "suppressed": sum(1 for f in result.findings if f.suppressed is not None),
            "invalid": result.problems,
        },
        "findings": [_finding_json(f, result) for f in result.findings],
    }
    if downgrade:
        doc["downgrade"] = [_downgrade_json(r) for r in result.downgrade]
    return json.dumps(doc, indent=2) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _title(f: Finding) -> str:
    """``rule (severity, category)``; input that cannot be compared is no compatibility
    verdict."""
    if f.category is Category.INPUT:
        return f"{f.rule} (invalid input)"
    return f"{f.rule} ({f.severity.value}, {f.category.value})"


def _level(f: Finding, result: LintResult, levels: dict[Severity, str]) -> str:
    """The annotation level: a breaking finding that does not fail the lint (its category
    does not fail) is shown one level lower."""
    passes = not f.fails(Severity.BREAKING, result.fail_categories)
    if f.severity is Severity.BREAKING and passes and f.category is not Category.INPUT:
        return levels[Severity.WARNING]
    return levels[f.severity]


def render_github(result: LintResult, downgrade: bool = False) -> str:
    """GitHub Actions workflow commands (``::error file=...,line=...,title=...::message``)."""
    lines = []
    for f in result.active():
        place = (
            f"file={_escape_property(artifact_path(f.path))},line={max(f.line, 1)},"
            if f.path
            else ""
        )
        props = f"{place}title={_escape_property(_title(f))}"
        lines.append(
            f"::{_level(f, result, _GITHUB_LEVEL)} {props}::"
            f"{_escape_data(f'{f.json_path}: {f.message}')}"
        )
    lines.append(_summary(result))
    if downgrade:
        lines += _downgrade_text(result.downgrade)
    return "\n".join(lines) + "\n"


def _all_rules() -> list[Rule]:
    return [*RULES.values(), *INPUT_RULES.values()]


def _sarif_rules() -> list[dict[str, Any]]:
    return [
        {
            "id": rule.id,
            "name": "".join(part.capitalize() for part in rule.id.split("-")),
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": f"{rule.summary} Instead: {rule.instead}"},
            "help": {
                "text": rule.instead,
                "markdown": f"{rule.instead}\n\nSee [{DOCS}]({DOCS_URL}#{rule.id}).",
            },
            "helpUri": f"{DOCS_URL}#{rule.id}",
            "defaultConfiguration": {"level": _SARIF_LEVEL[rule.severity]},
            "properties": {"severity": rule.severity.value, "category": rule.category.value},
        }
        for rule in _all_rules()
    ]


FINGERPRINT = "kafkaSpecgenFinding/v1"
_INDEX = re.compile(r"\[\d+\]")


def fingerprint(f: Finding) -> str:
    """What identifies a finding whatever line it is on: rule, file, spec, place, message.

    Array indices are left out of the JSON path, so that a field added above another does
    not make the other's findings new; the message names the field.
    """
    parts = (f.rule, artifact_path(f.path), f.spec, _INDEX.sub("[]", f.json_path), f.message)
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _sarif_result(f: Finding, index: dict[str, int], result: LintResult) -> dict[str, Any]:
    item: dict[str, Any] = {
        "ruleId": f.rule,
        "ruleIndex": index[f.rule],
        "level": _level(f, result, _SARIF_LEVEL),
        "message": {"text": f.message},
        "properties": {
            "jsonPath": f.json_path,
            "severity": f.severity.value,
            "category": f.category.value,
        },
        "partialFingerprints": {FINGERPRINT: fingerprint(f)},
    }
    if f.path:
        location: dict[str, Any] = {
            "physicalLocation": {
                "artifactLocation": {"uri": artifact_path(f.path)},
                "region": {"startLine": max(f.line, 1)},
            }
        }
        if f.spec:
            location["logicalLocations"] = [
                {"fullyQualifiedName": f"{f.spec}{f.json_path[1:]}", "kind": "member"}
            ]
        item["locations"] = [location]
    if f.suppressed is not None:
        item["suppressions"] = [
            {
                "kind": "inSource" if f.suppressed_by == "inline" else "external",
                "justification": f.suppressed,
            }
        ]
    return item


def render_sarif(result: LintResult, downgrade: bool = False) -> str:
    index = {rule.id: i for i, rule in enumerate(_all_rules())}
    code = result.exit_code
    invocation: dict[str, Any] = {
        # Successful unless the input could not be compared; a breaking change is a result.
        "executionSuccessful": not result.invalid,
        "exitCode": code,
        "exitCodeDescription": _EXIT_DESCRIPTION[code],
    }
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "kafka-specgen-lint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": DOCS_URL,
                "rules": _sarif_rules(),
            }
        },
        "invocations": [invocation],
        "results": [_sarif_result(f, index, result) for f in result.findings],
    }
    if downgrade:
        run["properties"] = {"downgrade": [_downgrade_json(r) for r in result.downgrade]}
    doc = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(doc, indent=2) + "\n"


def render_junit(result: LintResult, downgrade: bool = False) -> str:
    """A JUnit XML report: a test suite per spec file, a test case per finding.

    A finding that fails the lint (at ``--fail-on``) is a ``failure``, input that cannot be
    compared an ``error``, a suppressed finding ``skipped`` with its reason; findings below
    the threshold pass. A compatible run without findings is one passing case.
    """
    suites = ET.Element("testsuites", name="kafka-specgen-lint")
    by_file: dict[str, list[Finding]] = {}
    for f in result.findings:
        by_file.setdefault(artifact_path(f.path) or result.new_label, []).append(f)
    if not by_file:
        by_file[result.new_label] = []
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for path, findings in by_file.items():
        suite = ET.SubElement(suites, "testsuite", name=path)
        counts = {"tests": max(len(findings), 1), "failures": 0, "errors": 0, "skipped": 0}
        if not findings:
            ET.SubElement(suite, "testcase", name="compatible", classname=path)
        for f in findings:
            case = ET.SubElement(
                suite,
                "testcase",
                name=f"{f.rule} {f.json_path}",
                classname=f.spec or path,
                file=path,
                line=str(max(f.line, 1)),
            )
            label = "" if f.category is Category.INPUT else f"({f.category.value}) "
            text = f"{f.path}:{f.line}: {f.json_path}: {label}{f.message}"
            if f.category is Category.INPUT:
                ET.SubElement(case, "error", message=f.message, type=f.rule).text = text
                counts["errors"] += 1
            elif f.suppressed is not None:
                ET.SubElement(case, "skipped", message=f"suppressed: {f.suppressed}")
                counts["skipped"] += 1
            elif result.fails(f):
                ET.SubElement(case, "failure", message=f.message, type=f.rule).text = text
                counts["failures"] += 1
            else:
                ET.SubElement(case, "system-out").text = f"{f.severity.value}: {text}"
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        suites.set(key, str(value))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, "unicode") + "\n"


RENDERERS: dict[str, Callable[[LintResult, bool], str]] = {
    "text": render_text,
    "json": render_json,
    "github": render_github,
    "sarif": render_sarif,
    "junit": render_junit,
}


# --------------------------------------------------------------------------- --list-rules


def _rule_row(rule: Rule) -> dict[str, str]:
    return {
        "id": rule.id,
        "category": rule.category.value,
        "severity": rule.severity.value,
        "description": rule.summary,
    }


def render_rules_table() -> str:
    """Every selectable rule: id, category, severity and a one-line description."""
    rows = [_rule_row(r) for r in RULES.values()]
    columns = ("id", "category", "severity", "description")
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in columns[:-1]}

    def line(values: dict[str, str]) -> str:
        cells = [values[c].ljust(widths[c]) for c in columns[:-1]]
        return "  ".join([*cells, values["description"]])

    header = line({c: c.upper() for c in columns})
    return "\n".join([header, *(line(r) for r in rows)]) + "\n"


def render_rules_json() -> str:
    return json.dumps([_rule_row(r) for r in RULES.values()], indent=2) + "\n"
