"""Schema-evolution lint: is a changed spec set still compatible with the old one?

``lint(old, new)`` compares two :class:`SpecSet` values (see :mod:`codegen.lint.model` to
load them from files, directories or a git ref) and returns every finding at once. The
rules are listed in :mod:`codegen.lint.rules` and documented in ``docs/lint.md``.
"""

from codegen.lint.config import ConfigError, FailOn, LintConfig, discover_config, load_config_file
from codegen.lint.engine import LintResult, lint
from codegen.lint.findings import Finding
from codegen.lint.model import InvalidSpecs, SpecSet, load_git_set, load_set, set_from_texts
from codegen.lint.rules import RULES, Category, Rule, Severity

__all__ = [
    "RULES",
    "Category",
    "ConfigError",
    "FailOn",
    "Finding",
    "InvalidSpecs",
    "LintConfig",
    "LintResult",
    "Rule",
    "Severity",
    "SpecSet",
    "discover_config",
    "lint",
    "load_config_file",
    "load_git_set",
    "load_set",
    "set_from_texts",
]
