"""``lint(old, new)``: findings, suppressions and the downgrade report in one result."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from codegen.errors import SpecProblem
from codegen.lint.config import FailOn, LintConfig
from codegen.lint.findings import Finding
from codegen.lint.memory import Memory
from codegen.lint.model import SpecSet
from codegen.lint.records import RecordDowngrade, downgrade_report
from codegen.lint.retired import lock_findings, retired_findings, set_memory
from codegen.lint.rules import DEFAULT_FAIL_CATEGORIES, Category, Severity
from codegen.lint.sets import compare_sets
from codegen.lint.suppress import apply_suppressions

EXIT_COMPATIBLE, EXIT_FAILED, EXIT_INVALID = 0, 1, 2


@dataclass(frozen=True, slots=True)
class LintResult:
    old_label: str
    new_label: str
    findings: tuple[Finding, ...]
    downgrade: tuple[RecordDowngrade, ...]
    fail_on: FailOn = FailOn.ERROR
    fail_categories: frozenset[Category] = DEFAULT_FAIL_CATEGORIES

    @property
    def invalid(self) -> bool:
        """True when the input could not be compared (spec errors, different messages)."""
        return any(f.category is Category.INPUT for f in self.findings)

    @property
    def breaking(self) -> bool:
        """A breaking finding of a category that fails (``fail-categories``)."""
        return any(f.fails(Severity.BREAKING, self.fail_categories) for f in self.findings)

    @property
    def failed(self) -> bool:
        return any(f.fails(self.fail_on.severity, self.fail_categories) for f in self.findings)

    def fails(self, finding: Finding) -> bool:
        """True when ``finding`` makes this lint fail (its fail-on and fail-categories)."""
        return finding.fails(self.fail_on.severity, self.fail_categories)

    @property
    def exit_code(self) -> int:
        if self.invalid:
            return EXIT_INVALID
        return EXIT_FAILED if self.failed else EXIT_COMPATIBLE

    def active(self) -> list[Finding]:
        return [f for f in self.findings if f.suppressed is None]

    def count(self, severity: Severity) -> int:
        """Active findings of ``severity``; input problems are counted apart (``problems``)."""
        return sum(
            1 for f in self.active() if f.severity is severity and f.category is not Category.INPUT
        )

    @property
    def problems(self) -> int:
        return sum(1 for f in self.findings if f.category is Category.INPUT)


def lint(
    old: SpecSet,
    new: SpecSet,
    allow: Iterable[str] = (),
    config: LintConfig | None = None,
    history: Memory | None = None,
) -> LintResult:
    """Compare two spec sets; never raises on a finding.

    ``config`` selects the rules and paths reported and the severity that fails;
    ``allow`` adds to its ``allow`` list. The memory of retired uses is the old set, the
    locks of both sets and ``history`` (:func:`codegen.lint.history.history_memory`).
    """
    settings = LintConfig() if config is None else config
    memory = set_memory(old, old.label)
    for more in (history, old.lock, new.lock):
        if more is not None:
            memory = memory | more
    found = compare_sets(old, new, memory)
    if any(f.category is Category.INPUT for f in found):
        return LintResult(
            old.label, new.label, tuple(found), (), settings.fail_on, settings.fail_categories
        )
    found = sorted(
        [*found, *retired_findings(old, new, memory), *lock_findings(old, new)],
        key=Finding.sort_key,
    )
    findings = apply_suppressions(found, new, (*settings.allow, *allow))
    kept = tuple(settings.kept(findings))
    downgrade = tuple(downgrade_report(old, new))
    return LintResult(
        old.label, new.label, kept, downgrade, settings.fail_on, settings.fail_categories
    )


def invalid_result(old_label: str, new_label: str, problems: Iterable[SpecProblem]) -> LintResult:
    """The result of input that cannot be compared: one ``invalid-spec`` finding a problem."""
    findings = tuple(
        Finding("invalid-spec", p.message, p.path, p.line, p.json_path, "") for p in problems
    )
    return LintResult(old_label, new_label, findings, ())
