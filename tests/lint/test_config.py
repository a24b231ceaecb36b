"""Configuration: rule selection, categories, ``--fail-on``, per-path ignores, ``--list-rules``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from codegen.lint import RULES, Category, LintConfig, Severity, lint, load_set
from codegen.lint.command import lint_command
from codegen.lint.config import ConfigError, FailOn, config_from_table, discover_config
from codegen.lint.rules import CATEGORIES, INPUT_RULES
from tests.lint.helpers import field, message, write

BASE = message([field("A"), field("B", "string")])
# field-type-changed (wire, breaking) and field-renamed (json, breaking)
TWO_BREAKS = message([field("A", "int64"), field("Bee", "string")])
# tagged-field-removed (wire, warning) only: TAGGED -> UNTAGGED
TAGGED = message([field("A"), field("T", versions="0+", taggedVersions="0+", tag=0)], flexible="0+")
UNTAGGED = message([field("A")], flexible="0+")
# spec-added (style, info) only, in folder mode
ADDED = {"Sample.json": BASE, "Extra.json": message([field("X")], name="Extra")}


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(lint_command, list(args))
    return result.exit_code, result.stdout, result.stderr


def _folders(root: Path, new: dict[str, str] | str, old: str = BASE) -> tuple[str, str]:
    news = new if isinstance(new, dict) else {"Sample.json": new}
    return str(write(root / "old", {"Sample.json": old})), str(write(root / "new", news))


def _rules(out: str) -> list[str]:
    return re.findall(r": (?:breaking|warning|info) \[([a-z-]+)\]", out)


def test_every_rule_has_one_of_the_four_categories() -> None:
    assert CATEGORIES == ("wire", "json", "code", "style")
    assert {r.category.value for r in RULES.values()} == set(CATEGORIES)
    assert {r.category for r in INPUT_RULES.values()} == {Category.INPUT}


def test_list_rules_table() -> None:
    code, out, _ = _invoke("--list-rules")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "CATEGORY", "SEVERITY", "DESCRIPTION"]
    assert len(lines) == 1 + len(RULES)
    row = next(line for line in lines if line.startswith("field-renamed "))
    assert row.split()[:3] == ["field-renamed", "json", "breaking"]
    assert row.endswith(RULES["field-renamed"].summary)


def test_list_rules_json() -> None:
    code, out, _ = _invoke("--list-rules", "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert [r["id"] for r in rows] == list(RULES)
    assert rows[0] == {
        "id": "spec-removed",
        "category": "wire",
        "severity": "breaking",
        "description": "A spec in the old set is missing from the new set.",
    }


def test_list_rules_rejects_sarif() -> None:
    code, _, err = _invoke("--list-rules", "--format", "sarif")
    assert code == 2
    assert "--list-rules prints text (a table) or json" in err


@pytest.mark.parametrize("flag", ["--select", "--ignore", "--allow"])
def test_unknown_rule_points_to_list_rules(tmp_path: Path, flag: str) -> None:
    code, _, err = _invoke(flag, "no-such-rule", *_folders(tmp_path, TWO_BREAKS))
    assert code == 2
    assert "unknown rule" in err
    assert "'no-such-rule'; see `python -m codegen lint --list-rules`" in err


def test_allow_takes_rule_ids_not_categories(tmp_path: Path) -> None:
    code, _, err = _invoke("--allow", "wire", *_folders(tmp_path, TWO_BREAKS))
    assert code == 2
    assert "--allow: unknown rule 'wire'" in err


def test_select_by_category(tmp_path: Path) -> None:
    pair = _folders(tmp_path, TWO_BREAKS)
    code, out, _ = _invoke("--select", "json", *pair)
    # reported, but json findings do not fail by default (fail-categories: wire)
    assert code == 0
    assert _rules(out) == ["field-renamed"]
    assert "; breaking json findings pass (fail-categories wire))" in out
    code, out, _ = _invoke("--select", "json", "--fail-categories", "wire-json", *pair)
    assert code == 1
    assert "breaking changes found (1 breaking, 0 warning, 0 info, 0 suppressed)" in out


@pytest.mark.parametrize(
    ("given", "code"),
    [
        ((), 1),  # the default: wire
        (("wire",), 1),
        (("json",), 1),  # field-renamed fails; field-type-changed is wire
        (("wire-json",), 1),
        (("all",), 1),
        (("code,style",), 0),
        (("code", "json"), 1),
    ],
)
def test_fail_categories_presets_and_names(
    tmp_path: Path, given: tuple[str, ...], code: int
) -> None:
    pair = _folders(tmp_path, TWO_BREAKS)
    flags = [arg for name in given for arg in ("--fail-categories", name)]
    assert _invoke(*flags, *pair)[0] == code


def test_fail_categories_of_a_rename_alone(tmp_path: Path) -> None:
    pair = _folders(tmp_path, message([field("A"), field("Bee", "string")]))
    assert _invoke(*pair)[0] == 0
    assert _invoke("--fail-categories", "wire-json", *pair)[0] == 1
    assert _invoke("--fail-categories", "json", *pair)[0] == 1
    assert _invoke("--fail-categories", "code", *pair)[0] == 0


def test_unknown_fail_category(tmp_path: Path) -> None:
    code, _, err = _invoke("--fail-categories", "wires", *_folders(tmp_path, TWO_BREAKS))
    assert code == 2
    assert (
        "--fail-categories: unknown category or preset 'wires'; use a preset (wire, "
        "wire-json, all) or categories (wire, json, code, style)"
    ) in err


def test_fail_categories_in_the_configuration() -> None:
    table = {"fail-categories": "wire-json"}
    assert config_from_table(table, "x", Path()).fail_categories == {Category.WIRE, Category.JSON}
    table = {"fail-categories": ["code"]}
    assert config_from_table(table, "x", Path()).fail_categories == {Category.CODE}
    assert LintConfig().fail_categories == {Category.WIRE}
    with pytest.raises(ConfigError, match="fail-categories: unknown category or preset 'x'"):
        config_from_table({"fail-categories": ["x"]}, "x", Path())


def test_select_by_id_and_ignore_by_category(tmp_path: Path) -> None:
    pair = _folders(tmp_path, TWO_BREAKS)
    code, out, _ = _invoke(
        "--select", "field-type-changed,field-renamed", "--ignore", "json", *pair
    )
    assert code == 1
    assert _rules(out) == ["field-type-changed"]
    code, out, _ = _invoke("--ignore", "wire", "--ignore", "json", *pair)
    assert code == 0
    assert _rules(out) == []


def test_fail_on_default_is_error(tmp_path: Path) -> None:
    pair = _folders(tmp_path, UNTAGGED, TAGGED)
    code, out, _ = _invoke(*pair)
    assert (code, _rules(out)) == (0, ["tagged-field-removed"])
    code, out, _ = _invoke("--fail-on", "warning", *pair)
    assert code == 1
    assert "failed (--fail-on warning) (0 breaking, 1 warning, 0 info, 0 suppressed)" in out
    code, _, _ = _invoke("--fail-on", "info", *pair)
    assert code == 1


def test_fail_on_info(tmp_path: Path) -> None:
    pair = _folders(tmp_path, ADDED)
    assert _invoke(*pair)[0] == 0
    assert _invoke("--fail-on", "warning", *pair)[0] == 0
    assert _invoke("--fail-on", "info", *pair)[0] == 1


def test_suppressed_findings_never_fail(tmp_path: Path) -> None:
    pair = _folders(tmp_path, UNTAGGED, TAGGED)
    assert _invoke("--fail-on", "info", "--allow", "tagged-field-removed", *pair)[0] == 0


def _pyproject(root: Path, body: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "pyproject.toml"
    path.write_text(f'[project]\nname = "x"\n\n[tool.kafka-specgen.lint]\n{body}\n')
    return path


def test_pyproject_found_from_a_subfolder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    _pyproject(project, 'select = ["json"]\nfail-on = "warning"\nfail-categories = "wire-json"')
    pair = _folders(project / "specs", TWO_BREAKS)
    (project / "sub" / "deeper").mkdir(parents=True)
    monkeypatch.chdir(project / "sub" / "deeper")
    code, out, _ = _invoke(*pair)
    assert (code, _rules(out)) == (1, ["field-renamed"])
    # a flag replaces the value of the same key
    code, out, _ = _invoke("--select", "wire", *pair)
    assert _rules(out) == ["field-type-changed"]
    code, out, _ = _invoke("--fail-categories", "wire", *pair)
    assert (code, _rules(out)) == (0, ["field-renamed"])
    # and --no-config ignores the file
    code, out, _ = _invoke("--no-config", *_folders(project / "w", UNTAGGED, TAGGED))
    assert code == 0


def test_pyproject_without_the_table_is_skipped(tmp_path: Path) -> None:
    outer = _pyproject(tmp_path, 'ignore = ["wire"]')
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "pyproject.toml").write_text('[project]\nname = "inner"\n')
    config = discover_config(inner)
    assert config.source == f"{outer} [tool.kafka-specgen.lint]"
    assert config.ignore == ("wire",)


def test_cli_fail_on_overrides_the_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _pyproject(tmp_path, 'fail-on = "warning"')
    monkeypatch.chdir(tmp_path)
    pair = _folders(tmp_path / "w", UNTAGGED, TAGGED)
    assert _invoke(*pair)[0] == 1
    assert _invoke("--fail-on", "error", *pair)[0] == 0


def test_config_file_option(tmp_path: Path) -> None:
    config = tmp_path / "lint.toml"
    config.write_text('allow = ["field-renamed"]\nignore = ["field-type-changed"]\n')
    code, out, _ = _invoke("--config", str(config), *_folders(tmp_path, TWO_BREAKS))
    assert code == 0
    assert "(suppressed: allowed on the command line)" in out
    assert _rules(out) == ["field-renamed"]


def test_config_file_with_the_table(tmp_path: Path) -> None:
    config = _pyproject(tmp_path / "cfg", 'select = ["field-type-changed"]')
    code, out, _ = _invoke("--config", str(config), *_folders(tmp_path, TWO_BREAKS))
    assert (code, _rules(out)) == (1, ["field-type-changed"])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            'select = ["nope"]',
            "unknown rule or category 'nope'; see `python -m codegen lint --list-rules`",
        ),
        ('fail-on = "breaking"', 'fail-on is "breaking"; use one of error, warning, info'),
        ("select = 3", "select: expected a list of strings, got 3"),
        (
            'severity = "x"',
            "unknown key 'severity'; the keys are select, ignore, allow, fail-on, "
            "fail-categories, exclude, per-path-ignores",
        ),
        (
            '[tool.kafka-specgen.lint.per-path-ignores]\n"a/*" = ["wyre"]',
            "per-path-ignores.a/*: unknown rule or category 'wyre'",
        ),
        ("select = [", "invalid TOML"),
    ],
)
def test_bad_config_is_a_usage_error(tmp_path: Path, body: str, message: str) -> None:
    config = _pyproject(tmp_path / "cfg", body)
    code, _, err = _invoke("--config", str(config), *_folders(tmp_path, TWO_BREAKS))
    assert code == 2
    assert message in err
    assert str(config) in err


def test_per_path_ignores_by_rule_and_exclude(tmp_path: Path) -> None:
    specs_old = tmp_path / "old"
    specs_new = tmp_path / "new"
    write(specs_old / "legacy", {"L.json": message([field("A")], name="L")})
    write(specs_old / "group", {"Sample.json": BASE})
    write(specs_new / "legacy", {"L.json": message([field("A", "int64")], name="L")})
    write(specs_new / "group", {"Sample.json": TWO_BREAKS})
    old_set, new_set = load_set(specs_old), load_set(specs_new)

    def rules(config: LintConfig) -> list[tuple[str, str]]:
        return [(f.spec, f.rule) for f in lint(old_set, new_set, config=config).findings]

    everything = [
        ("L", "field-type-changed"),
        ("Sample", "field-type-changed"),
        ("Sample", "field-renamed"),
    ]
    assert sorted(rules(LintConfig(base=tmp_path))) == sorted(everything)
    # a pattern relative to the config folder, and one relative to the compared folder
    by_rule = config_from_table(
        {"per-path-ignores": {"new/group/*.json": ["json"], "legacy/*": ["field-type-changed"]}},
        "test",
        tmp_path,
    )
    assert rules(by_rule) == [("Sample", "field-type-changed")]
    excluded = config_from_table({"exclude": ["*/legacy/*"]}, "test", tmp_path)
    assert sorted(rules(excluded)) == sorted(everything[1:])


def test_fail_on_names() -> None:
    assert [f.severity for f in FailOn] == [Severity.BREAKING, Severity.WARNING, Severity.INFO]
    with pytest.raises(ConfigError, match="fail-on is 2"):
        config_from_table({"fail-on": 2}, "x", Path())


def test_config_made_in_python_checks_its_rule_names() -> None:
    with pytest.raises(ConfigError, match="select: unknown rule or category 'nope'"):
        LintConfig(select=("nope",))
    with pytest.raises(ConfigError, match="allow: unknown rule 'json'"):
        LintConfig(allow=("json",))
    with pytest.raises(ConfigError, match=r"per-path-ignores.a/\*: unknown rule or category 'x'"):
        LintConfig(per_path_ignores=(("a/*", ("x",)),))
