"""What the forensics commands share to write their answers: the ``--output`` option, a text
at once or lines as they come, JSON lines, the bad-input exit status and how a group is named
in a table."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO, Final

import click

from codegen.failures import EXIT_BAD_INPUT as FAILURE_EXIT_BAD_INPUT

__all__ = [
    "EXIT_BAD_INPUT",
    "OUTPUT_OPTION",
    "LineOutput",
    "emit",
    "group_cell",
    "json_line",
    "jsonl",
]

EXIT_BAD_INPUT: Final = FAILURE_EXIT_BAD_INPUT
"""The input is not what the command reads (every command: :mod:`codegen.failures`)."""


def group_cell(group: str | None) -> str:
    """A group id in a table: ``-`` for none, and the empty id said in words."""
    if group is None:
        return "-"
    return '"" (empty group id)' if group == "" else group


OUTPUT_OPTION = click.option(
    "--output",
    "-o",
    "output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report to FILE instead of standard output.",
)


def jsonl(docs: Iterable[Any]) -> str:
    """Compact JSON lines, UTF-8 text as the dump's jsonl (orjson; the standard encoder for
    what orjson refuses: integers past 64 bits, lone surrogates)."""
    return "\n".join(map(json_line, docs))


def json_line(doc: Any) -> str:
    """One compact JSON line (no newline), as :func:`jsonl` writes each."""
    import orjson  # the dumps extra; the lint's hook runs this CLI without it

    try:
        return orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def emit(text: str, output: Path | None) -> None:
    """``text`` to standard output, or to ``output`` (``--output``), ending with a newline."""
    if output is None:
        click.echo(text, nl=not text.endswith("\n"))
    else:
        output.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")


class LineOutput:
    """Standard output, or ``--output`` opened at the first line (nothing written on an error
    before it): lines written as they come, each ending with a newline."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.lines = 0
        self._file: BinaryIO | None = None

    def write_lines(self, lines: Iterable[bytes]) -> None:
        if self._file is None:
            if self.path is None:
                self._file = sys.stdout.buffer
            else:
                self._file = self.path.open("wb")
        out: BinaryIO = self._file
        for line in lines:
            out.write(line)
            out.write(b"\n")
            self.lines += 1

    def close(self) -> None:
        if self._file is None:
            return
        if self.path is None:
            self._file.flush()
        else:
            self._file.close()
