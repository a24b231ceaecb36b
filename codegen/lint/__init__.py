"""Schema-evolution lint: is a changed spec set still compatible with the old one?

``lint(old, new)`` compares two :class:`SpecSet` values (see :mod:`codegen.lint.model` to
load them from files, directories or a git ref) and returns every finding at once; the
memory of retired uses (:mod:`codegen.lint.memory`) comes from the sets' lock files and the
``history`` argument. The rules are listed in :mod:`codegen.lint.rules` and documented
in ``docs/lint.md``.
"""

from codegen.lint.config import ConfigError, FailOn, LintConfig, discover_config, load_config_file
from codegen.lint.engine import LintResult, lint
from codegen.lint.findings import Finding
from codegen.lint.memory import LOCK_NAME, Memory, lock_text, parse_lock
from codegen.lint.model import InvalidSpecs, SpecSet, load_git_set, load_set, set_from_texts
from codegen.lint.retired import set_memory
from codegen.lint.rules import RULES, Category, Rule, Severity

__all__ = [
    "LOCK_NAME",
    "RULES",
    "Category",
    "ConfigError",
    "FailOn",
    "Finding",
    "InvalidSpecs",
    "LintConfig",
    "LintResult",
    "Memory",
    "Rule",
    "Severity",
    "SpecSet",
    "discover_config",
    "lint",
    "load_config_file",
    "load_git_set",
    "load_set",
    "lock_text",
    "parse_lock",
    "set_from_texts",
    "set_memory",
]
