"""Suppressions: ``--allow RULE`` and ``// lint: allow RULE[, RULE] -- reason`` in a spec.

An inline suppression applies to findings on its own line or on the line below it, in the
new spec. Without a reason it is ignored and reported; a rule id that does not exist is
reported too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from codegen.lint.findings import Finding
from codegen.lint.model import SpecSet, SpecView
from codegen.lint.rules import RULES
from codegen.specfile import blank_comments

_ALLOW = re.compile(
    r"lint:\s*allow\s+(?P<rules>[A-Za-z0-9_,\s-]+?)\s*(?:--\s*(?P<reason>.*?))?\s*$"
)


@dataclass(frozen=True, slots=True)
class InlineSuppression:
    line: int
    rules: tuple[str, ...]
    reason: str


def _comments(text: str) -> Iterable[tuple[int, str]]:
    """``(line, comment text)`` for every comment, found where blanking changed the text."""
    blanked = blank_comments(text).split("\n")
    for number, (raw, blank) in enumerate(zip(text.split("\n"), blanked, strict=True), start=1):
        if raw == blank:
            continue
        start = next(i for i, (a, b) in enumerate(zip(raw, blank, strict=True)) if a != b)
        yield number, raw[start:].lstrip("/*").strip().removesuffix("*/").strip()


def inline_suppressions(
    view: SpecView,
) -> tuple[list[InlineSuppression], list[InlineSuppression], list[Finding]]:
    """The valid suppressions of a spec, those ignored for want of a reason, and findings
    for the broken ones."""
    valid: list[InlineSuppression] = []
    ignored: list[InlineSuppression] = []
    problems: list[Finding] = []
    for line, comment in _comments(view.text):
        match = _ALLOW.search(comment)
        if match is None:
            continue
        names = tuple(n.strip() for n in re.split(r"[\s,]+", match["rules"]) if n.strip())
        unknown = [n for n in names if n not in RULES]
        for name in unknown:
            problems.append(
                Finding(
                    "suppression-unknown-rule",
                    f"the suppression names {name}, which is not a lint rule; see "
                    "`python -m codegen lint --list-rules` for the rule ids",
                    view.path,
                    line,
                    "$",
                    view.name,
                    rel=view.rel,
                )
            )
        reason = (match["reason"] or "").strip()
        if not reason:
            ignored.append(InlineSuppression(line, names, ""))
            problems.append(
                Finding(
                    "suppression-without-reason",
                    f"the suppression of {', '.join(names)} gives no reason, so it is ignored; "
                    "write `// lint: allow RULE -- why this is fine`",
                    view.path,
                    line,
                    "$",
                    view.name,
                    rel=view.rel,
                )
            )
            continue
        known = tuple(n for n in names if n in RULES)
        if known:
            valid.append(InlineSuppression(line, known, reason))
    return valid, ignored, problems


def apply_suppressions(
    findings: list[Finding], new_set: SpecSet, allow: Iterable[str]
) -> list[Finding]:
    allowed = set(allow)
    by_path: dict[str, list[InlineSuppression]] = {}
    ignored_by_path: dict[str, list[InlineSuppression]] = {}
    extra: list[Finding] = []
    for view in new_set.specs:
        valid, ignored, problems = inline_suppressions(view)
        by_path[view.path] = valid
        ignored_by_path[view.path] = ignored
        extra.extend(problems)
    result: list[Finding] = []
    for finding in [*findings, *extra]:
        if finding.rule in allowed:
            result.append(finding.suppress("allowed on the command line", "allow"))
            continue
        match = next(
            (
                s
                for s in by_path.get(finding.path, [])
                if finding.rule in s.rules and s.line in (finding.line, finding.line - 1)
            ),
            None,
        )
        if match is not None:
            result.append(finding.suppress(match.reason, "inline"))
            continue
        result.append(_explain_ignored(finding, ignored_by_path.get(finding.path, [])))
    return sorted(result, key=Finding.sort_key)


def _explain_ignored(finding: Finding, ignored: list[InlineSuppression]) -> Finding:
    """The finding, saying why a suppression meant for it did not apply.

    The explanation is part of the finding itself, so it shows whatever rules are selected
    (``suppression-without-reason`` may be deselected).
    """
    match = next(
        (
            s
            for s in ignored
            if finding.rule in s.rules and s.line in (finding.line, finding.line - 1)
        ),
        None,
    )
    if match is None:
        return finding
    note = (
        f" (not suppressed: the `lint: allow {finding.rule}` comment on line {match.line} "
        "gives no reason; add `-- why this is fine`)"
    )
    return replace(finding, message=finding.message + note)
