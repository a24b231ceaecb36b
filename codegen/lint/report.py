"""Render a lint result as text, JSON, GitHub workflow commands or SARIF 2.1.0."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from codegen import __version__
from codegen.lint.engine import LintResult
from codegen.lint.findings import Finding
from codegen.lint.records import RecordDowngrade
from codegen.lint.rules import RULES, Severity

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
DOCS = "docs/lint.md"
_SARIF_LEVEL = {Severity.BREAKING: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
_GITHUB_LEVEL = {Severity.BREAKING: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def _summary(result: LintResult) -> str:
    suppressed = sum(1 for f in result.findings if f.suppressed is not None)
    verdict = "breaking changes found" if result.breaking else "compatible"
    return (
        f"{result.old_label} -> {result.new_label}: {verdict} "
        f"({result.count(Severity.BREAKING)} breaking, {result.count(Severity.WARNING)} "
        f"warning, {result.count(Severity.INFO)} info, {suppressed} suppressed)"
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


def render_text(result: LintResult, downgrade: bool = False) -> str:
    lines = [str(f) for f in result.active()]
    lines += [
        f"{f}  (suppressed: {f.suppressed})" for f in result.findings if f.suppressed is not None
    ]
    lines.append(_summary(result))
    if downgrade:
        lines += _downgrade_text(result.downgrade)
    return "\n".join(lines) + "\n"


def _finding_json(f: Finding) -> dict[str, Any]:
    return {
        "rule": f.rule,
        "severity": f.severity.value,
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
        "compatible": not result.breaking,
        "summary": {s.value: result.count(s) for s in Severity}
        | {"suppressed": sum(1 for f in result.findings if f.suppressed is not None)},
        "findings": [_finding_json(f) for f in result.findings],
    }
    if downgrade:
        doc["downgrade"] = [_downgrade_json(r) for r in result.downgrade]
    return json.dumps(doc, indent=2) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(result: LintResult, downgrade: bool = False) -> str:
    """GitHub Actions workflow commands (``::error file=...,line=...,title=...::message``)."""
    lines = []
    for f in result.active():
        props = (
            f"file={_escape_property(_artifact_path(f.path))},line={f.line},"
            f"title={_escape_property(f'{f.rule} ({f.severity.value})')}"
        )
        lines.append(
            f"::{_GITHUB_LEVEL[f.severity]} {props}::{_escape_data(f'{f.json_path}: {f.message}')}"
        )
    lines.append(_summary(result))
    if downgrade:
        lines += _downgrade_text(result.downgrade)
    return "\n".join(lines) + "\n"


def _artifact_path(path: str) -> str:
    """A repository path: git ``REF:path`` labels lose the ref; separators become ``/``."""
    if ":" in path and path[1:3] != ":\\":
        path = path.split(":", 1)[1]
    return path.replace("\\", "/")


def _sarif_rules() -> list[dict[str, Any]]:
    return [
        {
            "id": rule.id,
            "name": "".join(part.capitalize() for part in rule.id.split("-")),
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": f"{rule.summary} Instead: {rule.instead}"},
            "help": {
                "text": rule.instead,
                "markdown": f"{rule.instead}\n\nSee `{DOCS}#{rule.id}`.",
            },
            "defaultConfiguration": {"level": _SARIF_LEVEL[rule.severity]},
            "properties": {"severity": rule.severity.value},
        }
        for rule in RULES.values()
    ]


def _sarif_result(f: Finding, index: dict[str, int]) -> dict[str, Any]:
    item: dict[str, Any] = {
        "ruleId": f.rule,
        "ruleIndex": index[f.rule],
        "level": _SARIF_LEVEL[f.severity],
        "message": {"text": f.message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": _artifact_path(f.path)},
                    "region": {"startLine": max(f.line, 1)},
                },
                "logicalLocations": [
                    {"fullyQualifiedName": f"{f.spec}{f.json_path[1:]}", "kind": "member"}
                ],
            }
        ],
        "properties": {"jsonPath": f.json_path, "severity": f.severity.value},
    }
    if f.suppressed is not None:
        item["suppressions"] = [
            {
                "kind": "inSource" if f.suppressed_by == "inline" else "external",
                "justification": f.suppressed,
            }
        ]
    return item


def render_sarif(result: LintResult, downgrade: bool = False) -> str:
    index = {rule_id: i for i, rule_id in enumerate(RULES)}
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "kafka-specgen-lint",
                "version": __version__,
                "informationUri": "https://kafka.apache.org/protocol",
                "rules": _sarif_rules(),
            }
        },
        "results": [_sarif_result(f, index) for f in result.findings],
    }
    if downgrade:
        run["properties"] = {"downgrade": [_downgrade_json(r) for r in result.downgrade]}
    doc = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(doc, indent=2) + "\n"


RENDERERS: dict[str, Callable[[LintResult, bool], str]] = {
    "text": render_text,
    "json": render_json,
    "github": render_github,
    "sarif": render_sarif,
}
