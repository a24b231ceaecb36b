"""Bugs look like bugs (codegen/failures.py): every command of ``python -m codegen`` exits 2
with ``COMMAND: message`` only for bad input (a ``BadInputError``, click's usage errors, a file
the system will not read), and for anything else exits 70 with the traceback saved to a file
whose path it prints, and a line asking to report it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from codegen.cli import cli
from codegen.failures import (
    CRASH_DIR_VARIABLE,
    EXIT_BAD_INPUT,
    EXIT_INTERNAL_ERROR,
    REPORT_URL,
    GuardedCommand,
)

ROOT = Path(__file__).resolve().parent.parent
AIBULB = ROOT / "tests" / "data" / "forensics" / "aibulb"
SEGMENT = AIBULB / "__consumer_offsets-0" / "00000000000000000000.log"
SPECS = ROOT / "message_specs"

ARGS: dict[str, list[str]] = {
    "validate": ["--specs", str(SPECS)],
    "generate": ["--specs", str(SPECS), "--out", "{tmp}/out"],
    "check": ["--specs", str(SPECS), "--out", "{tmp}/out"],
    "lint": [str(SPECS), str(SPECS)],
    "dump": [str(SEGMENT)],
    "downgrade-check": [str(AIBULB), "--to", "3.9"],
    "groups": [str(AIBULB)],
    "lag": [str(AIBULB)],
    "transactions": [str(AIBULB)],
    "tiered": [str(AIBULB)],
}
"""Arguments each command parses (its callback is replaced in the tests below)."""


def _command(name: str) -> click.Command:
    ctx = click.Context(cli)
    command = cli.get_command(ctx, name)
    assert command is not None, name
    return command


def test_every_command_is_guarded() -> None:
    names = cli.list_commands(click.Context(cli))
    assert sorted(ARGS) == sorted(names)
    for name in names:
        assert isinstance(_command(name), GuardedCommand), name


def _run(args: list[str], tmp_path: Path) -> Any:
    return CliRunner().invoke(
        cli, [a.format(tmp=tmp_path) for a in args], env={CRASH_DIR_VARIABLE: str(tmp_path)}
    )


@pytest.mark.parametrize("name", sorted(ARGS))
def test_an_exception_in_any_command_is_an_internal_error(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ValueError (what numpy raises) from inside a command is a bug: exit 70, the traceback
    in a file, a request to report it; never exit 2."""

    def broken(**_: Any) -> None:
        raise ValueError("strides is incompatible with shape of requested array")

    monkeypatch.setattr(_command(name), "callback", broken)
    result = _run([name, *ARGS[name]], tmp_path)
    assert result.exit_code == EXIT_INTERNAL_ERROR, result.output
    lines = result.stderr.splitlines()
    assert lines[0] == (
        f"{name}: internal error: ValueError: strides is incompatible with shape of requested array"
    )
    assert (
        "this is a bug in kafka-specgen" in lines[1] and "not a problem with your input" in lines[1]
    )
    assert REPORT_URL in lines[2]
    (saved,) = tmp_path.glob(f"kafka-specgen-{name}-*.txt")
    assert str(saved) in lines[1]
    text = saved.read_text()
    assert "Traceback (most recent call last)" in text and "in broken" in text
    assert f"command: {name}" in text


def test_the_original_crash_would_now_read_as_a_bug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Numpy's error deep in a view (the --as-of crash of a real cluster, which read "groups:
    strides is incompatible ..." with exit 2) is an internal error. The commits go through the
    topic decoder's numpy path (the native passes declined, the engine's check in its pass
    too), where the error is injected."""
    import numpy as np

    from codegen.columnar import decode
    from codegen.dumps.views import commits, committed

    def strides(*_: Any) -> Any:
        return np.ndarray(shape=(-1,), dtype=">i2", buffer=b"", strides=(1,))

    monkeypatch.setattr(committed, "engine_checks", lambda *_: False)  # the pass's own check
    monkeypatch.setattr(commits, "native_commit_columns", lambda *_: None)
    monkeypatch.setattr(commits, "native_commit_flags", lambda *_: None)
    monkeypatch.setattr(decode, "_int16_read", strides)
    result = _run(["groups", str(AIBULB), "--as-of", "1"], tmp_path)
    assert result.exit_code == EXIT_INTERNAL_ERROR
    assert result.stderr.startswith("groups: internal error: ValueError: strides")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["groups", "{tmp}/nothing"], "groups: {tmp}/nothing: no such file or folder"),
        (["lag", str(AIBULB), "--as-of", "soon"], "lag: --as-of 'soon' is neither a log offset"),
        (["transactions", str(AIBULB), "--as-of", "x"], "transactions: --as-of 'x' is neither"),
        (["downgrade-check", str(AIBULB), "--to", "9.9"], "downgrade-check: unknown Kafka release"),
        (["groups", str(ROOT / "codegen")], "groups: expected __consumer_offsets-N"),
    ],
)
def test_bad_input_is_exit_2_with_no_traceback(
    args: list[str], message: str, tmp_path: Path
) -> None:
    result = _run(args, tmp_path)
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert result.stderr.startswith(message.format(tmp=tmp_path)), result.stderr
    assert not list(tmp_path.glob("kafka-specgen-*.txt"))


def test_a_file_the_system_refuses_is_the_users_to_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(**_: Any) -> None:
        raise PermissionError(13, "Permission denied", "/var/kafka-logs/orders-0")

    monkeypatch.setattr(_command("lag"), "callback", refused)
    result = _run(["lag", str(AIBULB)], tmp_path)
    assert result.exit_code == EXIT_BAD_INPUT
    assert result.stderr == (
        "lag: cannot read or write /var/kafka-logs/orders-0: Permission denied\n"
    )


def test_the_program_reports_a_bug_with_its_exit_code(tmp_path: Path) -> None:
    """The real program: a bug injected through Python's startup hook (``sitecustomize``)."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import codegen.forensics.groups as g\n"
        "def broken(*a, **k):\n"
        "    raise KeyError('a bug')\n"
        "g.group_reports = broken\n"
        "import codegen.forensics.groups_command as c\n"
        "c.group_reports = broken\n"
    )
    env = {
        "PYTHONPATH": f"{hook}{':'}{ROOT}",
        CRASH_DIR_VARIABLE: str(tmp_path),
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(
        [sys.executable, "-m", "codegen", "groups", str(AIBULB)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == EXIT_INTERNAL_ERROR, done.stderr
    assert done.stderr.startswith("groups: internal error: KeyError: 'a bug'")
    (saved,) = tmp_path.glob("kafka-specgen-groups-*.txt")
    assert "KeyError: 'a bug'" in saved.read_text()
