"""Small spec builders for lint tests: specs are written to a temporary folder and linted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codegen.lint import LintResult, lint, load_set


def field(name: str, type: str = "int32", versions: str = "0+", **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type, "versions": versions, **extra}


def message(
    fields: list[dict[str, Any]],
    *,
    name: str = "Sample",
    type: str = "data",
    valid: str = "0-2",
    flexible: str = "none",
    api_key: int | None = None,
    common: list[dict[str, Any]] | None = None,
    unstable: bool = False,
) -> str:
    doc: dict[str, Any] = {"name": name, "type": type}
    if api_key is not None:
        doc["apiKey"] = api_key
    doc |= {"validVersions": valid, "flexibleVersions": flexible}
    if unstable:
        doc["latestVersionUnstable"] = True
    doc["fields"] = fields
    if common is not None:
        doc["commonStructs"] = common
    return json.dumps(doc, indent=2) + "\n"


def write(root: Path, specs: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in specs.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def run(
    tmp_path: Path,
    old: dict[str, str] | str,
    new: dict[str, str] | str,
    allow: tuple[str, ...] = (),
) -> LintResult:
    """Lint two single specs (str) or two folders of specs (dict of file name -> text)."""
    if isinstance(old, str) and isinstance(new, str):
        old_path = write(tmp_path / "old", {"Sample.json": old}) / "Sample.json"
        new_path = write(tmp_path / "new", {"Sample.json": new}) / "Sample.json"
    else:
        assert isinstance(old, dict) and isinstance(new, dict)
        old_path, new_path = write(tmp_path / "old", old), write(tmp_path / "new", new)
    return lint(load_set(old_path), load_set(new_path), allow)


def found(result: LintResult) -> list[tuple[str, str, str]]:
    """The active findings as ``(rule, json path, message)``."""
    return [(f.rule, f.json_path, f.message) for f in result.active()]
