"""The examples of the README and docs/ run or are checked as written.

- A file's ```python blocks run in order in one fresh interpreter from the project root (later
  blocks use names from earlier ones), as a reader would paste them. A block right after a
  ``<!-- not run: why -->`` line is an illustration (placeholder paths or values) and is left
  out; every file must still have something to run (a failure otherwise, never a skip), so a doc
  cannot quietly stop being checked. Those left out are still compiled.
- Every ```toml block is parsed as TOML (Python's ``tomllib``, as a user's ``pyproject.toml``
  would be); one holding a topic map is read as one, its messages checked against no package.
- Every shell block (```bash, ```sh) parses (``bash -n``). In it, every call of the project's
  commands (``python -m codegen ...``, ``kafka-specgen ...``, ``python -m spark_udfs.demo``)
  names a command that exists and only options it has, and ``make`` only targets the Makefile
  has; a call whose every path is in the repository (and which writes nothing) is run, and must
  exit as the block says (0, or any exit when it ends in ``|| echo``).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from replay_support import CACHE_ENV

ROOT = Path(__file__).resolve().parent.parent
_BLOCK = re.compile(
    r"(?:^(?P<note><!-- not run:[^\n]*-->)\n)?^```python\n(?P<code>.*?)^```$", re.M | re.S
)
# Files whose examples start a Spark session.
SPARK_DOCS = {"README.md", "docs/forensics.md", "docs/spark.md"}
# Every page: a new page's examples run without anyone listing it here.
DOCS = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))]


def runnable_blocks(text: str) -> tuple[list[str], int]:
    """The code of the blocks to run, and how many were marked as not run."""
    run: list[str] = []
    skipped = 0
    for m in _BLOCK.finditer(text):
        if m.group("note"):
            skipped += 1
        else:
            run.append(m.group("code"))
    return run, skipped


def test_block_markers_are_recognised() -> None:
    text = (
        "x\n```python\na = 1\n```\n<!-- not run: placeholder -->\n```python\nb(\n```\n"
        "```python\nprint(a)\n```\n"
    )
    assert runnable_blocks(text) == (["a = 1\n", "print(a)\n"], 1)


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(d, marks=[pytest.mark.spark, pytest.mark.spark_connect])
        if d in SPARK_DOCS
        else d
        for d in DOCS
    ],
)
def test_examples_run(doc: str, request: pytest.FixtureRequest) -> None:
    blocks, skipped = runnable_blocks((ROOT / doc).read_text())
    assert blocks, (
        f"{doc}: every example is marked as not run ({skipped})"
        if skipped
        else f"{doc} has no Python examples"
    )
    script = "\n".join(blocks)
    # The replay examples read the jars the set-up fetched, and fetch nothing.
    env = {**os.environ, **CACHE_ENV}
    if doc in SPARK_DOCS:
        # The spark_connect pass: get_session() connects to the run's server (SPARK_REMOTE).
        url = request.getfixturevalue("spark_connect_url")
        if url is not None:
            env["SPARK_REMOTE"] = url
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert proc.returncode == 0, f"{doc} examples failed:\n{proc.stderr[-3000:]}"


# --------------------------------------------------------------------------- TOML and shell

_FENCED = re.compile(r"^```(?P<lang>[a-z]*)\n(?P<code>.*?)^```$", re.M | re.S)
_SHELL = {"bash", "sh", "shell"}


def fenced_blocks(text: str, languages: set[str]) -> list[str]:
    return [m.group("code") for m in _FENCED.finditer(text) if m.group("lang") in languages]


def _all_blocks(languages: set[str]) -> list[tuple[str, int, str]]:
    return [
        (doc, i, code)
        for doc in DOCS
        for i, code in enumerate(fenced_blocks((ROOT / doc).read_text(), languages))
    ]


def test_every_python_block_compiles() -> None:
    """The blocks marked as not run are still Python."""
    for doc, i, code in _all_blocks({"python"}):
        compile(code, f"{doc} python block {i}", "exec")


@pytest.mark.parametrize(("doc", "index", "code"), _all_blocks({"toml"}))
def test_toml_blocks_parse(doc: str, index: int, code: str) -> None:
    from codegen.dumps.pyproject_map import PYPROJECT_TABLE

    document = tomllib.loads(code)
    table: Any = document
    for part in PYPROJECT_TABLE:
        table = table.get(part, {})
    topics = table.get("topics") if isinstance(table, dict) else None
    if topics is None and "topics" in document:
        topics = document["topics"]
    if topics is not None:  # a topic map: entries with key/value sides of the known settings
        assert isinstance(topics, dict) and topics, (doc, index)
        for pattern, entry in topics.items():
            assert set(entry) <= {"key", "value"} and entry, (doc, index, pattern)
            for side in entry.values():
                assert set(side) <= {"message", "version", "header"}, (doc, index, pattern)
                assert ("version" in side) != ("header" in side), (doc, index, pattern)


def _logical_lines(code: str) -> list[str]:
    """Shell lines with continuations joined, comments and blank lines left out."""
    joined = code.replace("\\\n", " ")
    out = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            out.append(line)
    return out


def _command_options(argv: list[str]) -> tuple[str, set[str]] | None:
    """(the command's name, its options) of a call of the project's commands, or None."""
    import click

    from codegen.cli import cli

    if argv[:3] in (["python", "-m", "codegen"], [".venv/bin/python", "-m", "codegen"]):
        args = argv[3:]
    elif argv[:1] == ["kafka-specgen"]:
        args = argv[1:]
    elif argv[1:3] == ["-m", "spark_udfs.demo"]:
        from spark_udfs.demo import _parser

        return "spark_udfs.demo", set(_parser()._option_string_actions)
    else:
        return None
    name = args[0]
    ctx = click.Context(cli)
    command = cli.get_command(ctx, name)
    assert command is not None, f"no command {name!r}"
    options = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
    return name, options | {"--help"}


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z][\w-]*):", text, re.M))


def _runnable(argv: list[str]) -> bool:
    """A call of the command line that reads only the repository and writes nothing."""
    if argv[:3] != ["python", "-m", "codegen"] or argv[3] not in ("dump", "downgrade-check"):
        return False
    paths = [a for a in argv[4:] if "/" in a and not a.startswith("-")]
    return bool(paths) and all((ROOT / a).exists() for a in paths) and "--output" not in argv


@pytest.mark.parametrize(("doc", "index", "code"), _all_blocks(_SHELL))
def test_shell_blocks_parse_and_name_real_commands(doc: str, index: int, code: str) -> None:
    checked = subprocess.run(["bash", "-n"], input=code, capture_output=True, text=True)
    assert checked.returncode == 0, f"{doc} shell block {index}: {checked.stderr}"
    targets = _make_targets()
    for line in _logical_lines(code):
        command, _, fallback = line.partition("||")
        words = shlex.split(command, comments=True)
        while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):  # VAR=value before the command
            words = words[1:]
        if not words:
            continue
        if words[0] == "make":
            for word in words[1:]:
                assert "=" in word or word in targets, f"{doc}: make has no target {word!r}"
            continue
        found = _command_options(words)
        if found is None:
            continue
        name, options = found
        used = {w.split("=", 1)[0] for w in words if w.startswith("--")}
        assert used <= options, f"{doc}: {name} has no option {sorted(used - options)}"
        if _runnable(words):
            run = subprocess.run(
                [sys.executable, *words[1:]], cwd=ROOT, capture_output=True, text=True, timeout=600
            )
            assert fallback or run.returncode == 0, f"{doc}: {line}\n{run.stderr[-2000:]}"
            assert "Traceback" not in run.stderr, f"{doc}: {line}\n{run.stderr[-2000:]}"
