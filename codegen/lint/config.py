"""Lint configuration: ``[tool.kafka-specgen.lint]`` in pyproject.toml, or a ``--config`` file.

The table (or the whole ``--config`` TOML file, which may also hold the table) has these keys:

* ``select``: rule ids or categories to report (default: every rule);
* ``ignore``: rule ids or categories never to report;
* ``allow``: rule ids whose findings are reported as suppressed (the same as ``--allow``);
* ``fail-on``: the lowest severity that fails the lint: ``error`` (breaking findings, the
  default), ``warning`` or ``info``;
* ``fail-categories``: the categories whose findings fail the lint: a preset (``wire``, the
  default; ``wire-json``; ``all``) or a list of categories;
* ``exclude``: glob patterns of spec paths whose findings are not reported;
* ``per-path-ignores``: a table of glob pattern -> rule ids or categories not reported for
  the specs the pattern matches;
* ``paths``: the spec folders (or files) to lint when the command names none, relative to
  the folder of the configuration file;
* ``against``: the git ref the working tree is compared with when the command names no
  input (default ``HEAD``).

Patterns match spec paths relative to the folder of the configuration file, and the path of
a spec inside the compared folder. Command-line flags replace the value of the same key.
"""

from __future__ import annotations

import enum
import fnmatch
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from codegen.lint.findings import Finding, artifact_path
from codegen.lint.rules import (
    DEFAULT_FAIL_CATEGORIES,
    PRESETS,
    RULES,
    Category,
    Severity,
    categories_named,
    rules_matching,
)

PYPROJECT = "pyproject.toml"
TABLE = ("tool", "kafka-specgen", "lint")
LIST_RULES_HINT = "see `python -m codegen lint --list-rules`"
KEYS = (
    "select",
    "ignore",
    "allow",
    "fail-on",
    "fail-categories",
    "exclude",
    "per-path-ignores",
    "paths",
    "against",
)


class FailOn(enum.Enum):
    """``--fail-on`` names; ``error`` is the ``breaking`` severity."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def severity(self) -> Severity:
        return {
            FailOn.ERROR: Severity.BREAKING,
            FailOn.WARNING: Severity.WARNING,
            FailOn.INFO: Severity.INFO,
        }[self]


class ConfigError(Exception):
    """A configuration that cannot be used; the message says where and what to do."""


def unknown_rule_message(name: str, categories: bool = True) -> str:
    what = "rule or category" if categories else "rule"
    return f"unknown {what} '{name}'; {LIST_RULES_HINT}"


def check_categories(names: Iterable[str], where: str) -> frozenset[Category]:
    """The categories of presets and category names, or ConfigError for an unknown name."""
    found = categories_named(tuple(names))
    if isinstance(found, str):
        presets = ", ".join(PRESETS)
        raise ConfigError(
            f"{where}: unknown category or preset '{found}'; use a preset ({presets}) or "
            f"categories ({', '.join(c.value for c in Category if c is not Category.INPUT)})"
        )
    return found


def check_rule_names(names: Iterable[str], where: str, categories: bool = True) -> tuple[str, ...]:
    """The names, or ConfigError for the first one that is no rule id (nor category)."""
    result = tuple(names)
    for name in result:
        known = rules_matching(name) if categories else ([name] if name in RULES else [])
        if not known:
            raise ConfigError(f"{where}: {unknown_rule_message(name, categories)}")
    return result


@dataclass(frozen=True, slots=True)
class LintConfig:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    fail_on: FailOn = FailOn.ERROR
    exclude: tuple[str, ...] = ()
    per_path_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    base: Path = field(default_factory=Path.cwd)  # the folder patterns are relative to
    source: str | None = None  # the file the configuration was read from
    paths: tuple[str, ...] = ()  # spec paths, relative to ``base``
    against: str | None = None  # the default git ref
    fail_categories: frozenset[Category] = DEFAULT_FAIL_CATEGORIES

    def spec_paths(self) -> list[Path]:
        """``paths`` as paths relative to the working directory."""
        return [Path(os.path.relpath((self.base / p).resolve(), Path.cwd())) for p in self.paths]

    def __post_init__(self) -> None:
        check_rule_names(self.select, "select")
        check_rule_names(self.ignore, "ignore")
        check_rule_names(self.allow, "allow", categories=False)
        for pattern, names in self.per_path_ignores:
            check_rule_names(names, f"per-path-ignores.{pattern}")

    def enabled(self) -> frozenset[str]:
        """The rule ids reported: ``select`` (or every rule) minus ``ignore``."""
        selected = {r for name in self.select for r in rules_matching(name)} or set(RULES)
        ignored = {r for name in self.ignore for r in rules_matching(name)}
        return frozenset(selected - ignored)

    def _paths(self, finding: Finding) -> list[str]:
        path = artifact_path(finding.path)
        candidates = [path]
        absolute, base = Path(path).resolve(), self.base.resolve()
        if absolute.is_relative_to(base):
            candidates.append(absolute.relative_to(base).as_posix())
        if finding.rel:
            candidates.append(finding.rel)
        return candidates

    def path_ignores(self, finding: Finding) -> bool:
        """True when ``exclude`` or ``per-path-ignores`` drops the finding."""
        if not self.exclude and not self.per_path_ignores:
            return False
        paths = self._paths(finding)

        def matches(pattern: str) -> bool:
            return any(fnmatch.fnmatchcase(p, pattern) for p in paths)

        if any(matches(pattern) for pattern in self.exclude):
            return True
        return any(
            finding.rule in {r for name in names for r in rules_matching(name)}
            for pattern, names in self.per_path_ignores
            if matches(pattern)
        )

    def kept(self, findings: Iterable[Finding]) -> list[Finding]:
        """The findings reported: of an enabled rule and not ignored by path."""
        enabled = self.enabled()
        return [f for f in findings if f.rule in enabled and not self.path_ignores(f)]

    def override(
        self,
        *,
        select: tuple[str, ...] = (),
        ignore: tuple[str, ...] = (),
        allow: tuple[str, ...] = (),
        fail_on: FailOn | None = None,
        fail_categories: tuple[str, ...] = (),
    ) -> LintConfig:
        """This configuration with the command-line values that were given."""
        return replace(
            self,
            select=check_rule_names(select, "--select") or self.select,
            ignore=check_rule_names(ignore, "--ignore") or self.ignore,
            allow=check_rule_names(allow, "--allow", categories=False) or self.allow,
            fail_on=self.fail_on if fail_on is None else fail_on,
            fail_categories=(
                check_categories(fail_categories, "--fail-categories")
                if fail_categories
                else self.fail_categories
            ),
        )


def _strings(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of strings, got {_toml_text(value)}")
    return tuple(value)


def _toml_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array" if value else "[]"
    return str(value)


def config_from_table(table: Mapping[str, object], where: str, base: Path) -> LintConfig:
    """A configuration from the lint table; ``where`` names it in errors."""
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ConfigError(
            f"{where}: unknown key '{unknown[0]}'; the keys are {', '.join(KEYS)} (docs/lint.md)"
        )
    fail_on = FailOn.ERROR
    if "fail-on" in table:
        value = table["fail-on"]
        names = [f.value for f in FailOn]
        if value not in names:
            raise ConfigError(
                f"{where}: fail-on is {_toml_text(value)}; use one of {', '.join(names)}"
            )
        fail_on = FailOn(value)
    fail_categories = DEFAULT_FAIL_CATEGORIES
    if "fail-categories" in table:
        value = table["fail-categories"]
        where_key = f"{where}: fail-categories"
        given = (value,) if isinstance(value, str) else _strings(value, where_key)
        fail_categories = check_categories(given, where_key)
    against = table.get("against")
    if against is not None and (not isinstance(against, str) or not against):
        raise ConfigError(f"{where}: against is {_toml_text(against)}; give a git ref")
    per_path: list[tuple[str, tuple[str, ...]]] = []
    raw = table.get("per-path-ignores", {})
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: per-path-ignores: expected a table of pattern = [rules]")
    for pattern, names in raw.items():
        key = f"{where}: per-path-ignores.{pattern}"
        per_path.append((pattern, check_rule_names(_strings(names, key), key)))
    return LintConfig(
        select=check_rule_names(_strings(table.get("select", []), f"{where}: select"), where),
        ignore=check_rule_names(_strings(table.get("ignore", []), f"{where}: ignore"), where),
        allow=check_rule_names(
            _strings(table.get("allow", []), f"{where}: allow"), where, categories=False
        ),
        fail_on=fail_on,
        exclude=_strings(table.get("exclude", []), f"{where}: exclude"),
        per_path_ignores=tuple(per_path),
        base=base,
        source=where,
        paths=_strings(table.get("paths", []), f"{where}: paths"),
        against=against,
        fail_categories=fail_categories,
    )


def _read_toml(path: Path) -> dict[str, object]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the configuration: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def _lint_table(doc: Mapping[str, object]) -> Mapping[str, object] | None:
    node: object = doc
    for key in TABLE:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    if not isinstance(node, dict):
        return None
    return node


def load_config_file(path: Path) -> LintConfig:
    """``--config FILE``: the lint table of FILE, or FILE's top level when it has none."""
    doc = _read_toml(path)
    table = _lint_table(doc)
    where = f"{path} [{'.'.join(TABLE)}]" if table is not None else str(path)
    return config_from_table(table if table is not None else doc, where, path.parent.resolve())


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml from ``start`` upwards that has the lint table."""
    for folder in (start.resolve(), *start.resolve().parents):
        candidate = folder / PYPROJECT
        if candidate.is_file() and _lint_table(_read_toml(candidate)) is not None:
            return candidate
    return None


def discover_config(start: Path) -> LintConfig:
    """The configuration found from ``start`` upwards; the defaults when there is none."""
    found = find_pyproject(start)
    if found is None:
        return LintConfig(base=start.resolve())
    table = _lint_table(_read_toml(found))
    assert table is not None
    return config_from_table(table, f"{found} [{'.'.join(TABLE)}]", found.parent)
