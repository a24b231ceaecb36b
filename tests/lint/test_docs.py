"""docs/lint.md says what the code does: every rule's section, the config keys, the examples."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from codegen.lint.config import KEYS, FailOn, config_from_table
from codegen.lint.rules import CATEGORIES, INPUT_RULES, RULES
from tests.lint.cases import EXPECTED

DOC = (Path(__file__).resolve().parents[2] / "docs" / "lint.md").read_text()
SECTIONS = {
    m["id"]: m["body"]
    for m in re.finditer(r"^### `(?P<id>[a-z-]+)`\n(?P<body>.*?)(?=^##|\Z)", DOC, re.M | re.S)
}


def test_every_rule_has_a_section_in_code_order() -> None:
    assert list(SECTIONS) == list(RULES)


@pytest.mark.parametrize("rule_id", list(RULES))
def test_rule_section(rule_id: str) -> None:
    rule, body = RULES[rule_id], SECTIONS[rule_id]
    assert f"**Severity:** {rule.severity.value}\n" in body
    assert f"**Category:** {rule.category.value}\n" in body
    assert f"**Catches:** {rule.summary}\n" in body
    assert f"**Instead:** {rule.instead}\n" in body
    for rule_of, path, message in EXPECTED.get(rule_id, []):
        if rule_of == rule_id:
            shown = f"{path}: {rule.severity.value} [{rule_id}] ({rule.category.value}) {message}"
            assert f"{shown}\n" in body


def test_categories_input_rules_and_config_keys_are_documented() -> None:
    for category in CATEGORIES:
        assert f"`{category}` (" in DOC
    for rule_id in INPUT_RULES:
        assert f"`{rule_id}`" in DOC
    table = DOC[DOC.index("[tool.kafka-specgen.lint]\nselect") :]
    for key in KEYS:
        assert re.search(rf"^\[?(tool\.kafka-specgen\.lint\.)?{key}\]? ?=?", table, re.M), key


def test_the_configuration_example_loads() -> None:
    (block,) = re.findall(r"^```toml\n(.*?)^```$", DOC, re.M | re.S)
    table = tomllib.loads(block)["tool"]["kafka-specgen"]["lint"]
    config = config_from_table(table, "docs/lint.md", Path.cwd())
    assert config.fail_on is FailOn.WARNING
    assert "field-renamed" in config.enabled() and "entity-type-changed" not in config.enabled()
    assert dict(config.per_path_ignores) == {
        "message_specs/share_group_state/*.json": ("json",),
        "*/cluster_metadata/*": ("struct-renamed", "style"),
    }
