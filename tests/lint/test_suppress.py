"""``--allow RULE`` and ``// lint: allow RULE -- reason`` comments in the new spec."""

from __future__ import annotations

from pathlib import Path

from tests.lint.helpers import found, run

OLD = """{
  "name": "Sample", "type": "data", "validVersions": "0-2", "flexibleVersions": "none",
  "fields": [
    { "name": "A", "type": "int32", "versions": "0+" }
  ]
}
"""


def _new(comment: str) -> str:
    return f"""{{
  "name": "Sample", "type": "data", "validVersions": "0-2", "flexibleVersions": "none",
  "fields": [
    {comment}
    {{ "name": "Alpha", "type": "int32", "versions": "0+" }}
  ]
}}
"""


def test_inline_suppression_with_reason(tmp_path: Path) -> None:
    result = run(tmp_path, OLD, _new("// lint: allow field-renamed -- the JSON form is unused"))
    assert found(result) == []
    (finding,) = result.findings
    assert (finding.rule, finding.suppressed, finding.suppressed_by) == (
        "field-renamed",
        "the JSON form is unused",
        "inline",
    )
    assert result.exit_code == 0


def test_inline_suppression_on_the_same_line(tmp_path: Path) -> None:
    new = _new("").replace(
        '"versions": "0+" }', '"versions": "0+" } // lint: allow field-renamed -- fine'
    )
    assert found(run(tmp_path, OLD, new)) == []


def test_suppression_without_reason_is_a_finding_and_ignored(tmp_path: Path) -> None:
    result = run(tmp_path, OLD, _new("// lint: allow field-renamed"))
    assert [(r, p) for r, p, _ in found(result)] == [
        ("suppression-without-reason", "$"),
        ("field-renamed", "$.fields[0].name"),
    ]
    assert found(result)[0][2] == (
        "the suppression of field-renamed gives no reason, so it is ignored; write "
        "`// lint: allow RULE -- why this is fine`"
    )
    # the rename still counts: it fails where json findings fail
    assert result.active()[1].suppressed is None
    assert result.exit_code == 0  # json does not fail by default
    from codegen.lint import Category, LintConfig, lint, load_set

    strict = LintConfig(fail_categories=frozenset({Category.WIRE, Category.JSON}), base=tmp_path)
    assert (
        lint(load_set(tmp_path / "old"), load_set(tmp_path / "new"), config=strict).exit_code == 1
    )


def test_suppression_of_unknown_rule(tmp_path: Path) -> None:
    result = run(tmp_path, OLD, _new("// lint: allow field-renamed, no-such-rule -- reason"))
    assert found(result) == [
        (
            "suppression-unknown-rule",
            "$",
            "the suppression names no-such-rule, which is not a lint rule; see "
            "`python -m codegen lint --list-rules` for the rule ids",
        ),
    ]
    assert result.findings[0].line == 4


def test_suppression_two_lines_above_does_not_apply(tmp_path: Path) -> None:
    new = _new("// lint: allow field-renamed -- reason\n")
    assert [r for r, _, _ in found(run(tmp_path, OLD, new))] == ["field-renamed"]


def test_allow_on_the_command_line(tmp_path: Path) -> None:
    result = run(tmp_path, OLD, _new(""), allow=("field-renamed",))
    assert found(result) == []
    assert result.findings[0].suppressed_by == "allow"
    assert result.exit_code == 0


def test_comment_text_inside_a_string_is_not_a_suppression(tmp_path: Path) -> None:
    new = _new("").replace(
        '"name": "Alpha"', '"about": "// lint: allow field-renamed -- x", "name": "Alpha"'
    )
    assert [r for r, _, _ in found(run(tmp_path, OLD, new))] == ["field-renamed"]


def test_a_deselected_style_rule_does_not_hide_why_a_suppression_was_ignored(
    tmp_path: Path,
) -> None:
    from codegen.lint import Category, LintConfig, lint, load_set

    run(tmp_path, OLD, _new("// lint: allow field-renamed"))
    both = frozenset({Category.WIRE, Category.JSON})
    config = LintConfig(select=("wire", "json"), fail_categories=both, base=tmp_path)
    result = lint(load_set(tmp_path / "old"), load_set(tmp_path / "new"), config=config)
    assert [f.rule for f in result.active()] == ["field-renamed"]  # the style rule is gone
    assert result.active()[0].message.endswith(
        "keep the name A (not suppressed: the `lint: allow field-renamed` comment on line 4 "
        "gives no reason; add `-- why this is fine`)"
    )
    assert result.exit_code == 1
