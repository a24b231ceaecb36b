"""``validate``, ``generate`` and ``check`` on bad input: the exit status and the exact message.

Spec folders that are missing or empty, package names that are not Python names or lead out
of ``--out``, output folders holding files the generator did not write, specs that nest too
deep for the reader, and folder names and texts that must not break the generated code.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from codegen import __version__
from codegen.cli import cli
from codegen.emit import GENERATED_HEADER
from codegen.specfile import MAX_DEPTH

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "message_specs" / "consumer_offsets" / "OffsetCommitValue.json"


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _specs(tmp_path: Path) -> Path:
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / SPEC.name).write_text(SPEC.read_text())
    return folder


def _last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


# --------------------------------------------------------------------------- spec folders


@pytest.mark.parametrize("command", ["validate", "generate", "check"])
def test_empty_spec_folder_is_a_usage_error(tmp_path: Path, command: str) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    extra = ["--out", str(tmp_path / "out")] if command != "validate" else []
    code, _, err = _invoke(command, "--specs", str(empty), *extra)
    assert code == 2
    assert _last_line(err) == (
        f"Error: {empty}: no spec files (*.json) in this folder; expected Kafka JSON message specs"
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["validate", "generate"])
def test_missing_default_spec_folder_is_a_usage_error(
    tmp_path: Path, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no message_specs/ here
    code, _, err = _invoke(command)
    assert code == 2
    assert _last_line(err) == (
        "Error: message_specs: no such file or folder; expected a spec file or a folder of "
        "Kafka JSON message specs (*.json)"
    )
    assert not (tmp_path / "generated").exists()


# --------------------------------------------------------------------------- --package


def test_package_with_a_path_is_rejected_and_nothing_is_touched(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.py").write_text("x = 1\n")
    out = tmp_path / "out"
    code, _, err = _invoke(
        "generate", "--specs", str(_specs(tmp_path)), "--out", str(out), "--package", f"a.{victim}"
    )
    assert code == 2
    assert _last_line(err) == (
        f"Error: Invalid value for --package: package name 'a.{victim}' is not a dotted "
        f"Python name: '{victim}' is not an identifier (ASCII letters, digits and underscores, "
        "not starting with a digit, not a keyword); use a name such as myproject.kafka"
    )
    assert sorted(p.name for p in victim.iterdir()) == ["keep.py"]
    assert not out.exists()


@pytest.mark.parametrize("package", ["a.class", "a..b", "1a", "a.b-c", ""])
def test_package_that_is_not_a_python_name_is_rejected(tmp_path: Path, package: str) -> None:
    code, _, err = _invoke(
        "generate", "--specs", str(_specs(tmp_path)), "--out", str(tmp_path), "--package", package
    )
    assert code == 2
    assert f"package name {package!r} is not a dotted Python name" in err


def test_package_through_a_symlink_out_of_out_is_rejected(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.py").write_text("x = 1\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "pkg").symlink_to(outside, target_is_directory=True)
    code, _, err = _invoke(
        "generate", "--specs", str(_specs(tmp_path)), "--out", str(out), "--package", "pkg"
    )
    assert code == 2
    assert _last_line(err) == (
        f"Error: Invalid value for --package: {out / 'pkg'} resolves to {outside}, outside the "
        f"output folder {out}; remove the symbolic link or choose another --out"
    )
    assert sorted(p.name for p in outside.iterdir()) == ["keep.py"]


def test_dotted_package_goes_below_out(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, stdout, _ = _invoke(
        "generate", "--specs", str(_specs(tmp_path)), "--out", str(out), "--package", "my_app.kafka"
    )
    assert code == 0, stdout
    assert (out / "my_app" / "kafka" / "offset_commit_value.py").is_file()


# --------------------------------------------------------------------------- output ownership


def test_generate_removes_only_its_own_stale_modules(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    stale = out / "removed_record.py"
    stale.write_text(f"{GENERATED_HEADER}0.0.1 from specs/RemovedRecord.json\n")
    mine = out / "helpers.py"
    mine.write_text("# hand-written helpers\n")
    code, _, err = _invoke("generate", "--specs", str(_specs(tmp_path)), "--out", str(out))
    assert code == 0, err
    assert not stale.exists()
    assert mine.read_text() == "# hand-written helpers\n"
    assert (out / "offset_commit_value.py").is_file()


def test_generate_never_overwrites_a_file_it_did_not_write(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "__init__.py").write_text('"""My package."""\n')
    code, _, err = _invoke("generate", "--specs", str(_specs(tmp_path)), "--out", str(out))
    assert code == 1
    assert _last_line(err) == (
        f"Error: not overwriting {out / '__init__.py'}: not written by kafka-specgen (no "
        "'# Generated by kafka-specgen' first line); move it away or choose another output "
        "folder; nothing written"
    )
    assert (out / "__init__.py").read_text() == '"""My package."""\n'
    assert sorted(p.name for p in out.iterdir()) == ["__init__.py"]


def test_generate_never_writes_through_a_symlinked_module(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.py"
    target.write_text(f"{GENERATED_HEADER}but somewhere else\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "offset_commit_value.py").symlink_to(target)
    code, _, err = _invoke("generate", "--specs", str(_specs(tmp_path)), "--out", str(out))
    assert code == 1
    assert f"not overwriting {out / 'offset_commit_value.py'}" in err
    assert target.read_text() == f"{GENERATED_HEADER}but somewhere else\n"


def test_check_ignores_files_generate_leaves_alone(tmp_path: Path) -> None:
    specs, out = _specs(tmp_path), tmp_path / "out"
    assert _invoke("generate", "--specs", str(specs), "--out", str(out))[0] == 0
    (out / "helpers.py").write_text("# hand-written helpers\n")
    (out / "removed_record.py").write_text(f"{GENERATED_HEADER}0.0.1\n")
    code, _, err = _invoke("check", "--specs", str(specs), "--out", str(out))
    assert code == 1
    assert err.splitlines()[0] == "extra (no longer generated): removed_record.py"
    (out / "removed_record.py").unlink()
    assert _invoke("check", "--specs", str(specs), "--out", str(out))[0] == 0


# --------------------------------------------------------------------------- nesting depth


def test_validate_and_generate_report_a_too_deep_spec(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "Deep.json").write_text('{"a":' + "[" * 3000)
    expected = (
        f"{specs / 'Deep.json'}:1: $.a{'[0]' * (MAX_DEPTH - 1)}: objects and arrays nested "
        f"deeper than {MAX_DEPTH} levels; Kafka specs nest only a few levels"
    )
    code, _, err = _invoke("validate", "--specs", str(specs))
    assert (code, err.splitlines()) == (1, [expected, "1 problem in the specs"])
    code, _, err = _invoke("generate", "--specs", str(specs), "--out", str(tmp_path / "out"))
    assert (code, err.splitlines()) == (
        1,
        [expected, "1 problem in the specs; nothing written"],
    )


# --------------------------------------------------------------------------- text in the code


def test_folder_names_and_about_texts_cannot_break_the_generated_code(tmp_path: Path) -> None:
    folder = 'odd "topic"\\\nfolder'
    specs = tmp_path / "specs" / folder
    specs.mkdir(parents=True)
    about = 'NUL\x00 bell\x07 escape\x1b quote" backslash\\'
    spec = {
        "name": "OddText",
        "type": "data",
        "validVersions": "0",
        "flexibleVersions": "none",
        "fields": [{"name": "A", "type": "int32", "versions": "0+", "about": about}],
    }
    (specs / "OddText.json").write_text(json.dumps(spec))
    out = tmp_path / "odd_codecs"
    code, _, err = _invoke("generate", "--specs", str(tmp_path / "specs"), "--out", str(out))
    assert code == 0, err
    module = (out / "odd_text.py").read_text()
    # The header comment stays one line: the newline of the folder name is escaped.
    assert module.splitlines()[0] == (
        f'{GENERATED_HEADER}{__version__} from specs/odd "topic"\\\\nfolder/OddText.json'
    )
    sys.path.insert(0, str(tmp_path))
    try:
        package = importlib.import_module("odd_codecs")
        odd = importlib.import_module("odd_codecs.odd_text").OddText
        schemas = importlib.import_module("odd_codecs._spark_schemas")
    finally:
        sys.path.remove(str(tmp_path))
    assert package.MESSAGES["OddText"] is odd
    folders = schemas.FOLDERS
    assert folders == {"OddText": folder}
    assert 'NUL\\x00 bell\\x07 escape\\x1b quote\\" backslash\\\\ Versions 0+.' in module


# --------------------------------------------------------------------------- the hook's settings

HOOK_PROJECT = """\
[project]
name = "myproject"
version = "1.0.0"

[tool.hatch.build.hooks.kafka-specgen]
specs = "specs"
out = "src/myproject"
package = "kafka"
"""


def _hook_project(tmp_path: Path) -> Path:
    project = tmp_path / "myproject"
    project.mkdir()
    (project / "pyproject.toml").write_text(HOOK_PROJECT)
    _specs(project)
    (project / "src" / "myproject").mkdir(parents=True)
    return project


def test_commands_without_flags_use_the_hook_settings_of_the_nearest_pyproject(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _hook_project(tmp_path)
    monkeypatch.chdir(project / "src")  # a subfolder: the nearest pyproject.toml is above
    assert _invoke("validate") == (0, "1 spec valid\n", "")
    code, out, _ = _invoke("generate")
    written = project / "src" / "myproject" / "kafka"
    assert code == 0 and out.startswith("wrote 4 modules to myproject/kafka in "), out
    assert (written / "offset_commit_value.py").is_file()
    assert _invoke("check") == (0, "myproject/kafka is up to date\n", "")


def test_check_drift_prints_the_command_that_fixes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _hook_project(tmp_path)
    monkeypatch.chdir(project)
    code, _, err = _invoke("check")
    assert code == 1
    assert err.splitlines() == [
        "missing: __init__.py",
        "missing: _spark_schemas.py",
        "missing: offset_commit_value.py",
        "missing: py.typed",
        "run: python -m codegen generate",
    ]
    assert _invoke("generate")[0] == 0
    assert _invoke("check")[0] == 0
    # Flags given: the hint repeats them, quoted for the shell.
    other = tmp_path / "other out"
    code, _, err = _invoke("check", "--out", str(other), "--package", "codecs")
    assert code == 1
    assert (
        err.splitlines()[-1] == f"run: python -m codegen generate --out '{other}' --package codecs"
    )
    assert _invoke("generate", "--out", str(other), "--package", "codecs")[0] == 0
    assert (other / "codecs" / "offset_commit_value.py").is_file()
    assert _invoke("check", "--out", str(other), "--package", "codecs")[0] == 0


def test_missing_specs_of_the_hook_settings_name_the_pyproject(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _hook_project(tmp_path)
    (project / "specs" / SPEC.name).unlink()
    (project / "specs").rmdir()
    monkeypatch.chdir(project)
    code, _, err = _invoke("check")
    assert code == 2
    assert _last_line(err) == (
        "Error: specs: no such file or folder; expected a spec file or a folder of Kafka JSON "
        f"message specs (*.json) (settings from {project / 'pyproject.toml'} "
        "[tool.hatch.build.hooks.kafka-specgen])"
    )


def test_hook_settings_outside_the_project_are_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _hook_project(tmp_path)
    (project / "pyproject.toml").write_text(
        HOOK_PROJECT.replace('"src/myproject"', '"../elsewhere"')
    )
    monkeypatch.chdir(project)
    code, _, err = _invoke("generate")
    assert code == 2
    assert _last_line(err) == (
        f"Error: {project / 'pyproject.toml'}: out = '../elsewhere' under "
        f"[tool.hatch.build.hooks.kafka-specgen] resolves to {tmp_path / 'elsewhere'}, outside "
        f"the project {project}; give a folder inside it"
    )
    assert not (tmp_path / "elsewhere").exists()


def test_out_given_leaves_the_hook_package_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hook's package lies below the hook's out: with --out given, only --package names one.
    project = _hook_project(tmp_path)
    monkeypatch.chdir(project)
    other = tmp_path / "elsewhere"
    assert _invoke("generate", "--out", str(other))[0] == 0
    assert (other / "offset_commit_value.py").is_file()
    assert not (other / "kafka").exists()
