"""A finding: one rule broken at one place, with what to do instead."""

from __future__ import annotations

from dataclasses import dataclass, replace

from codegen.lint.rules import DEFAULT_FAIL_CATEGORIES, Category, Severity, rule


def artifact_path(path: str) -> str:
    """A repository path: git ``REF:path`` labels lose the ref; separators become ``/``."""
    if ":" in path and path[1:3] != ":\\":
        path = path.split(":", 1)[1]
    return path.replace("\\", "/")


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str
    message: str
    path: str
    line: int
    json_path: str
    spec: str
    suppressed: str | None = None  # the reason, when the finding is suppressed
    suppressed_by: str | None = None  # "allow" (command line) or "inline" (spec comment)
    rel: str = ""  # the spec's path inside its compared folder, for per-path ignores

    @property
    def severity(self) -> Severity:
        return rule(self.rule).severity

    @property
    def category(self) -> Category:
        return rule(self.rule).category

    def fails(
        self, threshold: Severity, categories: frozenset[Category] = DEFAULT_FAIL_CATEGORIES
    ) -> bool:
        """True when the finding makes the lint fail at ``--fail-on threshold`` when
        ``categories`` fail (``fail-categories``)."""
        return (
            self.suppressed is None
            and self.category in categories
            and self.severity.rank >= threshold.rank
        )

    @property
    def counts(self) -> bool:
        """True when the finding makes the lint fail by default: breaking, on the wire."""
        return self.fails(Severity.BREAKING)

    def suppress(self, reason: str, by: str) -> Finding:
        return replace(self, suppressed=reason, suppressed_by=by)

    def sort_key(self) -> tuple[str, int, str, str, str]:
        return (self.path, self.line, self.json_path, self.rule, self.message)

    def __str__(self) -> str:
        return (
            f"{self.path}:{self.line}: {self.json_path}: {self.severity.value} "
            f"[{self.rule}] ({self.category.value}) {self.message}"
        )
