"""``python -m codegen lint``: arguments, exit codes, output files and ``--git``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from codegen.lint.command import lint_command
from codegen.specfile import MAX_DEPTH
from tests.lint.helpers import field, message, write

OLD = message([field("A"), field("B", "string")])
BREAKING = message([field("A", "int64"), field("B", "string")])
COMPATIBLE = message([field("A"), field("B", "string"), field("C", versions="3+")], valid="0-3")


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(lint_command, list(args))
    return result.exit_code, result.stdout, result.stderr


def _pair(tmp_path: Path, new: str) -> tuple[str, str]:
    old = write(tmp_path / "old", {"Sample.json": OLD})
    newer = write(tmp_path / "new", {"Sample.json": new})
    return str(old), str(newer)


def test_compatible_exits_0(tmp_path: Path) -> None:
    code, out, _ = _invoke(*_pair(tmp_path, COMPATIBLE))
    assert code == 0
    assert "compatible (0 breaking, 0 warning, 0 info, 0 suppressed)" in out


def test_breaking_exits_1(tmp_path: Path) -> None:
    code, out, _ = _invoke(*_pair(tmp_path, BREAKING))
    assert code == 1
    assert "[field-type-changed] field A type changed from int32 to int64" in out


def test_allow_makes_it_pass(tmp_path: Path) -> None:
    code, _, _ = _invoke("--allow", "field-type-changed", *_pair(tmp_path, BREAKING))
    assert code == 0


def test_unknown_allow_rule_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = _invoke("--allow", "nope", *_pair(tmp_path, BREAKING))
    assert code == 2
    assert "unknown rule nope" in err


def test_invalid_spec_exits_2_with_the_spec_errors(tmp_path: Path) -> None:
    bad = message([field("A", "int33")])
    code, _, err = _invoke(*_pair(tmp_path, bad))
    assert code == 2
    assert "Sample.json:7: $.fields[0].type: unknown type 'int33'" in err
    assert "lint: invalid input (1 problems)" in err


def test_missing_arguments_exit_2() -> None:
    code, _, err = _invoke("only-one")
    assert code == 2
    assert "give OLD and NEW, or --git REF [PATH]" in err


def test_output_file_and_format(tmp_path: Path) -> None:
    target = tmp_path / "report.sarif"
    code, out, _ = _invoke("--format", "sarif", "--output", str(target), *_pair(tmp_path, BREAKING))
    assert code == 1
    assert out == ""
    assert json.loads(target.read_text())["version"] == "2.1.0"


def test_downgrade_report_flag(tmp_path: Path) -> None:
    code, out, _ = _invoke("--downgrade-report", *_pair(tmp_path, COMPATIBLE))
    assert code == 0
    assert "Downgrade report" in out


def test_help_has_examples() -> None:
    code, out, _ = _invoke("--help")
    assert code == 0
    assert "python -m codegen lint --git origin/main" in out
    assert "--downgrade-report" in out


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.mark.parametrize(("new", "expected"), [(COMPATIBLE, 0), (BREAKING, 1)])
def test_git_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new: str, expected: int) -> None:
    repo = tmp_path / "repo"
    specs = write(repo / "message_specs", {"Sample.json": OLD})
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "specs")
    (specs / "Sample.json").write_text(new)
    monkeypatch.chdir(repo)
    code, out, _ = _invoke("--git", "HEAD")
    assert code == expected
    assert "HEAD:message_specs -> message_specs" in out
    code, _, _ = _invoke("--git", "HEAD", "message_specs/Sample.json")
    assert code == expected


def test_git_mode_bad_ref(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    write(repo / "message_specs", {"Sample.json": OLD})
    _git(repo, "init", "-q")
    monkeypatch.chdir(repo)
    code, _, err = _invoke("--git", "no-such-ref")
    assert code == 2
    assert "git ls-tree" in err


def test_too_deep_spec_exits_2_with_the_spec_error(tmp_path: Path) -> None:
    old, new = _pair(tmp_path, '{"a":' + "[" * 3000)
    code, _, err = _invoke(old, new)
    assert code == 2
    assert err.splitlines() == [
        f"{Path(new) / 'Sample.json'}:1: $.a{'[0]' * (MAX_DEPTH - 1)}: objects and arrays "
        f"nested deeper than {MAX_DEPTH} levels; Kafka specs nest only a few levels",
        "lint: invalid input (1 problems)",
    ]


def test_git_mode_reads_non_ascii_names_and_reports_non_utf8_specs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    specs = write(repo / "message_specs", {"Sample.json": OLD, "Café.json": OLD})
    latin = OLD.replace("Sample", "Latin").encode() + b"\xe9"  # e-acute in Latin-1
    (specs / "Latin1.json").write_bytes(latin)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "specs")
    monkeypatch.chdir(repo)
    code, _, err = _invoke("--git", "HEAD")
    assert code == 2
    assert err.splitlines() == [
        "HEAD:message_specs/Latin1.json:1: $: cannot read the file: 'utf-8' codec can't decode "
        f"byte 0xe9 in position {len(latin) - 1}: unexpected end of data",
        "HEAD:message_specs/Sample.json:2: $.name: spec name Sample is already used by "
        "HEAD:message_specs/Café.json",
        "lint: invalid input (2 problems)",
    ]
