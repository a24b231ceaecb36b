"""``lint(old, new)``: findings, suppressions and the downgrade report in one result."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from codegen.lint.checks import compare_sets
from codegen.lint.findings import Finding
from codegen.lint.model import SpecSet
from codegen.lint.records import RecordDowngrade, downgrade_report
from codegen.lint.rules import Severity
from codegen.lint.suppress import apply_suppressions


@dataclass(frozen=True, slots=True)
class LintResult:
    old_label: str
    new_label: str
    findings: tuple[Finding, ...]
    downgrade: tuple[RecordDowngrade, ...]

    @property
    def breaking(self) -> bool:
        return any(f.counts for f in self.findings)

    @property
    def exit_code(self) -> int:
        return 1 if self.breaking else 0

    def active(self) -> list[Finding]:
        return [f for f in self.findings if f.suppressed is None]

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.active() if f.severity is severity)


def lint(old: SpecSet, new: SpecSet, allow: Iterable[str] = ()) -> LintResult:
    """Compare two spec sets; never raises on a finding."""
    findings = apply_suppressions(compare_sets(old, new), new, allow)
    return LintResult(old.label, new.label, tuple(findings), tuple(downgrade_report(old, new)))
