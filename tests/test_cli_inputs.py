"""``validate``, ``generate`` and ``check`` on bad input: the exit status and the exact message.

Spec folders that are missing or empty, and specs that nest too deep for the reader.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from codegen.cli import cli
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
    assert (code, err.splitlines()) == (1, [expected, "1 problem(s) in the specs"])
    code, _, err = _invoke("generate", "--specs", str(specs), "--out", str(tmp_path / "out"))
    assert (code, err.splitlines()) == (
        1,
        [expected, "1 problem(s) in the specs; nothing written"],
    )
