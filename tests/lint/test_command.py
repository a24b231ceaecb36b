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

ROOT = Path(__file__).resolve().parents[2]

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
    assert "[field-type-changed] (wire) field A type changed from int32 to int64" in out


def test_allow_makes_it_pass(tmp_path: Path) -> None:
    code, _, _ = _invoke("--allow", "field-type-changed", *_pair(tmp_path, BREAKING))
    assert code == 0


def test_unknown_allow_rule_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = _invoke("--allow", "nope", *_pair(tmp_path, BREAKING))
    assert code == 2
    assert "--allow: unknown rule 'nope'; see `python -m codegen lint --list-rules`" in err


def test_invalid_spec_exits_2_with_the_spec_errors(tmp_path: Path) -> None:
    bad = message([field("A", "int33")])
    code, _, err = _invoke(*_pair(tmp_path, bad))
    assert code == 2
    assert "Sample.json:7: $.fields[0].type: unknown type 'int33'" in err
    assert "lint: invalid input (1 problem)" in err


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


# --------------------------------------------------------------------------- invalid input


SARIF_SCHEMA = Path(__file__).with_name("sarif-2.1.0-subset.schema.json")


def _sarif_errors(doc: object) -> list[str]:
    import jsonschema

    schema = json.loads(SARIF_SCHEMA.read_text())
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())
    return sorted(e.message for e in validator.iter_errors(doc))


def test_invalid_spec_in_json(tmp_path: Path) -> None:
    code, out, err = _invoke("--format", "json", *_pair(tmp_path, message([field("A", "int33")])))
    assert code == 2
    assert "lint: invalid input (1 problem)" in err
    doc = json.loads(out)
    assert (doc["compatible"], doc["exitCode"]) == (False, 2)
    assert doc["summary"] == {"breaking": 0, "warning": 0, "info": 0, "suppressed": 0, "invalid": 1}
    (finding,) = doc["findings"]
    assert finding["rule"] == "invalid-spec"
    assert finding["path"].endswith("new/Sample.json")
    assert (finding["line"], finding["jsonPath"]) == (7, "$.fields[0].type")
    assert finding["message"] == "unknown type 'int33'"


def test_invalid_spec_in_github(tmp_path: Path) -> None:
    code, out, _ = _invoke("--format", "github", *_pair(tmp_path, message([field("A", "int33")])))
    assert code == 2
    first, summary = out.splitlines()
    assert first.startswith("::error file=")
    assert first.endswith(
        "new/Sample.json,line=7,title=invalid-spec (invalid input)::$.fields[0].type: unknown type 'int33'"
    )
    # input that cannot be compared is no compatibility verdict
    assert "breaking" not in out
    assert "invalid input (1 problem)" in summary


def test_invalid_spec_in_sarif_is_written_to_the_output_file(tmp_path: Path) -> None:
    target = tmp_path / "lint.sarif"
    bad = message([field("A", "int33")])
    code, out, _ = _invoke("--format", "sarif", "-o", str(target), *_pair(tmp_path, bad))
    assert (code, out) == (2, "")
    doc = json.loads(target.read_text())
    assert _sarif_errors(doc) == []
    run = doc["runs"][0]
    assert run["invocations"] == [
        {"executionSuccessful": False, "exitCode": 2, "exitCodeDescription": "invalid input"}
    ]
    (result,) = run["results"]
    assert result["ruleId"] == "invalid-spec"
    assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "invalid-spec"
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 7}


def test_git_error_in_sarif_has_no_location(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    write(repo / "message_specs", {"Sample.json": OLD})
    _git(repo, "init", "-q")
    monkeypatch.chdir(repo)
    code, out, err = _invoke("--format", "sarif", "--git", "no-such-ref")
    assert code == 2
    assert "git ls-tree" in err
    doc = json.loads(out)
    assert _sarif_errors(doc) == []
    (result,) = doc["runs"][0]["results"]
    assert "locations" not in result
    assert result["message"]["text"].startswith("git ls-tree -r -z --name-only no-such-ref")


@pytest.mark.parametrize(("new", "code"), [(COMPATIBLE, 0), (BREAKING, 1)])
def test_sarif_invocation(tmp_path: Path, new: str, code: int) -> None:
    status, out, _ = _invoke("--format", "sarif", *_pair(tmp_path, new))
    assert status == code
    doc = json.loads(out)
    assert _sarif_errors(doc) == []
    (invocation,) = doc["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is True
    assert invocation["exitCode"] == code


def test_sarif_information_uri_is_the_project_docs_page() -> None:
    import tomllib

    from codegen.lint.engine import LintResult
    from codegen.lint.report import DOCS_URL, PROJECT_URL, render_sarif

    urls = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
    assert urls["Homepage"] == PROJECT_URL
    assert urls["Lint rules"] == DOCS_URL == f"{PROJECT_URL}/blob/main/docs/lint.md"
    driver = json.loads(render_sarif(LintResult("a", "b", (), ())))["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == DOCS_URL
    assert driver["rules"][0]["helpUri"] == f"{DOCS_URL}#spec-removed"
    # the anchor is a heading of the docs page
    assert "### `spec-removed`" in (ROOT / "docs" / "lint.md").read_text()


# --------------------------------------------------------------------------- single files


def _record_folders(tmp_path: Path, value_change: str) -> tuple[Path, Path]:
    """Data-model GroupKey/GroupValue in old/ and new/, the value changed in new/."""
    key = message([field("Group", "string", "3")], name="GroupKey", valid="3")
    value = message(
        [field("A"), field("B", "string")], name="GroupValue", valid="0-1", flexible="0+"
    )
    changed = message(
        [field("A"), field("B", "string"), field("C", versions=value_change)],
        name="GroupValue",
        valid="0-2",
        flexible="0+",
    )
    old = write(tmp_path / "old", {"GroupKey.json": key, "GroupValue.json": value})
    new = write(tmp_path / "new", {"GroupKey.json": key, "GroupValue.json": changed})
    return old, new


def test_single_file_value_gets_the_record_role_of_its_folder(tmp_path: Path) -> None:
    old, new = _record_folders(tmp_path, "2+")
    expected = "[coordinator-value-untagged-change] (wire) version 2 of GroupValue changes the non-tagged fields of version 1 (adds C)"
    code, out, _ = _invoke(str(old), str(new))
    assert code == 1 and expected in out
    code, out, _ = _invoke(str(old / "GroupValue.json"), str(new / "GroupValue.json"))
    assert code == 1
    assert expected in out


def test_single_file_without_its_key_is_a_plain_data_spec(tmp_path: Path) -> None:
    old, new = _record_folders(tmp_path, "2+")
    (old / "GroupKey.json").unlink()
    (new / "GroupKey.json").unlink()
    for args in (
        [str(old), str(new)],
        [str(old / "GroupValue.json"), str(new / "GroupValue.json")],
    ):
        code, out, _ = _invoke(*args)
        assert code == 0, out


def test_git_single_file_value_gets_the_record_role(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = _record_folders(tmp_path, "2+")
    repo = tmp_path / "repo"
    specs = repo / "message_specs"
    specs.mkdir(parents=True)
    for spec in old.iterdir():
        (specs / spec.name).write_text(spec.read_text())
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "specs")
    (specs / "GroupValue.json").write_text((new / "GroupValue.json").read_text())
    monkeypatch.chdir(repo)
    for path in ("message_specs/GroupValue.json", "./message_specs/GroupValue.json"):
        code, out, _ = _invoke("--git", "HEAD", path)
        assert code == 1, path
        assert "[coordinator-value-untagged-change]" in out


def test_different_messages_stop_with_exit_2(tmp_path: Path) -> None:
    fetch = message([field("Topic", "string")], name="FetchRequest", type="request", api_key=1)
    produce = message([field("Acks", "int16")], name="ProduceRequest", type="request", api_key=0)
    old = write(tmp_path / "old", {"FetchRequest.json": fetch}) / "FetchRequest.json"
    new = write(tmp_path / "new", {"ProduceRequest.json": produce}) / "ProduceRequest.json"
    code, out, err = _invoke(str(old), str(new))
    assert (code, out) == (2, "")
    assert err.splitlines()[0].endswith(
        "ProduceRequest.json:1: $: these are different messages: "
        f"{old} is FetchRequest (request, apiKey 1) and {new} is ProduceRequest (request, "
        "apiKey 0); compare two versions of the same spec, or two folders (specs are paired by name)"
    )
    assert err.splitlines()[1] == "lint: invalid input (1 problem)"
    code, out, _ = _invoke("--format", "json", str(old), str(new))
    assert code == 2
    assert [f["rule"] for f in json.loads(out)["findings"]] == ["different-messages"]


def test_data_specs_with_no_field_in_common_are_different_messages(tmp_path: Path) -> None:
    a = write(tmp_path / "a", {"A.json": message([field("X")], name="A")}) / "A.json"
    b = write(tmp_path / "b", {"B.json": message([field("Y")], name="B")}) / "B.json"
    code, _, err = _invoke(str(a), str(b))
    assert code == 2
    assert "these are different messages: " in err


# --------------------------------------------------------------------------- folder moves


def test_git_mode_pairs_specs_moved_to_another_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = message([field("Group", "string", "3")], name="GroupKey", valid="3")
    value = message([field("A"), field("B", "string")], name="GroupValue", valid="0", flexible="0+")
    plain = message([field("A")], name="Plain")
    repo = tmp_path / "repo"
    write(
        repo / "message_specs" / "consumer_offsets",
        {"GroupKey.json": key, "GroupValue.json": value},
    )
    write(repo / "message_specs" / "misc", {"Plain.json": plain})
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "specs")
    _git(repo, "mv", "message_specs/consumer_offsets", "message_specs/group")
    _git(repo, "mv", "message_specs/misc/Plain.json", "message_specs/group/Plain.json")
    monkeypatch.chdir(repo)
    code, out, _ = _invoke("--git", "HEAD", "--fail-on", "info", "--downgrade-report")
    assert code == 0, out
    assert "compatible (0 breaking, 0 warning, 0 info, 0 suppressed)" in out
    assert "group record type 3: GroupKey / GroupValue" in out
    assert "version 0: readable: same layout in both specs" in out
    # a breaking change in a moved spec is still found, at its new place
    moved = repo / "message_specs" / "group" / "GroupValue.json"
    moved.write_text(moved.read_text().replace('"type": "int32"', '"type": "int64"', 1))
    code, out, _ = _invoke("--git", "HEAD")
    assert code == 1
    assert (
        "message_specs/group/GroupValue.json:7: $.fields[0].type: breaking [field-type-changed]"
        in out
    )


def test_too_deep_spec_exits_2_with_the_spec_error(tmp_path: Path) -> None:
    old, new = _pair(tmp_path, '{"a":' + "[" * 3000)
    code, _, err = _invoke(old, new)
    assert code == 2
    assert err.splitlines() == [
        f"{Path(new) / 'Sample.json'}:1: $.a{'[0]' * (MAX_DEPTH - 1)}: objects and arrays "
        f"nested deeper than {MAX_DEPTH} levels; Kafka specs nest only a few levels",
        "lint: invalid input (1 problem)",
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


def test_junit_output_file(tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    target = tmp_path / "lint.xml"
    code, out, _ = _invoke("--format", "junit", "-o", str(target), *_pair(tmp_path, BREAKING))
    assert (code, out) == (1, "")
    root = ET.parse(target).getroot()
    assert (root.get("tests"), root.get("failures")) == ("1", "1")
    failure = next(root.iter("failure"))
    assert failure.get("type") == "field-type-changed"


# --------------------------------------------------------------------------- archives


def _archives(tmp_path: Path, new: str) -> tuple[Path, Path]:
    import tarfile
    import zipfile

    old_zip = tmp_path / "old.jar"
    with zipfile.ZipFile(old_zip, "w") as zipped:
        zipped.writestr("common/message/Sample.json", OLD)
        zipped.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    spec = write(tmp_path / "src" / "common" / "message", {"Sample.json": new})
    new_tar = tmp_path / "new.tar.gz"
    with tarfile.open(new_tar, "w:gz") as tarred:
        tarred.add(spec / "Sample.json", arcname="common/message/Sample.json")
    return old_zip, new_tar


@pytest.mark.parametrize(("new", "expected"), [(COMPATIBLE, 0), (BREAKING, 1)])
def test_archives_on_both_sides(tmp_path: Path, new: str, expected: int) -> None:
    old_zip, new_tar = _archives(tmp_path, new)
    code, out, _ = _invoke(str(old_zip), str(new_tar))
    assert code == expected, out
    if expected:
        assert (
            f"{new_tar}!/common/message/Sample.json:7: $.fields[0].type: breaking "
            "[field-type-changed]" in out
        )
    # an archive against a folder pairs the same specs
    code, _, _ = _invoke(str(old_zip), str(tmp_path / "src"))
    assert code == expected


def test_an_oversized_or_broken_archive_is_invalid_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codegen.lint import model

    old_zip, new_tar = _archives(tmp_path, COMPATIBLE)
    monkeypatch.setattr(model, "MAX_ARCHIVE_MEMBER", 100)
    code, _, err = _invoke(str(old_zip), str(new_tar))
    assert code == 2
    assert f"{old_zip}!/common/message/Sample.json:1: $: larger than 100 bytes; no spec is" in err
    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"PK\x03\x04 not really")
    code, _, err = _invoke(str(broken), str(new_tar))
    assert code == 2
    assert "cannot read the archive" in err
