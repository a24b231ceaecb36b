"""What the forensics commands share to write their answers: the ``--output`` option, a text
at once or lines as they come, JSON lines, the bad-input exit status, the errors of damaged
input and how a group is named in a table."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Any, BinaryIO, Final

import click

from codegen.dumps.model import ReadError, error_line
from codegen.failures import EXIT_BAD_INPUT as FAILURE_EXIT_BAD_INPUT
from codegen.failures import EXIT_DAMAGE
from codegen.forensics.inputs import InputError
from codegen.text import utc_text

__all__ = [
    "EXIT_BAD_INPUT",
    "GROUP_OPTION",
    "OUTPUT_OPTION",
    "LineOutput",
    "ReadErrors",
    "emit",
    "group_cell",
    "indented_json",
    "json_bytes",
    "json_line",
    "jsonl",
    "no_groups",
    "require_groups",
    "time_cell",
]

EXIT_BAD_INPUT: Final = FAILURE_EXIT_BAD_INPUT
"""The input is not what the command reads (every command: :mod:`codegen.failures`)."""


def group_cell(group: str | None) -> str:
    """A group id in a table: ``-`` for none, and the empty id said in words."""
    if group is None:
        return "-"
    return '"" (empty group id)' if group == "" else group


def time_cell(ms: int) -> str:
    """A time in a table: UTC text, ``-`` (padded to a time's width) for none."""
    return utc_text(ms, none="-".ljust(24))


def no_groups(paths: tuple[str, ...]) -> str:
    """What ``groups`` and ``lag`` say of a dump without a group."""
    return (
        f"no group in {', '.join(paths)}: its __consumer_offsets partitions hold no group "
        "record and no committed offset"
    )


def require_groups(wanted: Iterable[str], found: set[str]) -> None:
    """An InputError for a ``--group`` not among the groups found."""
    missing = [g for g in wanted if g not in found]
    if missing:
        names = ", ".join(repr(g) for g in missing)
        raise InputError(f"group {names} is not in the dump; run without --group to list them")


class ReadErrors:
    """The errors a command's read found (segment errors, records that did not decode), each
    written on stderr once with ``dump``'s line (:func:`~codegen.dumps.model.error_line`), as
    they are found; exit 1 (:data:`~codegen.failures.EXIT_DAMAGE`) once the answer is written
    if there was any."""

    def __init__(self) -> None:
        self.errors: list[ReadError] = []
        """The list the read fills (its ``errors``)."""
        self._written = 0

    def write_new(self) -> None:
        """Write the errors found since the last call (with none, allocating nothing: no
        collection of the answer's objects starts here)."""
        while self._written < len(self.errors):
            click.echo(error_line(self.errors[self._written]), err=True)
            self._written += 1

    def finish(self) -> None:
        """Write the errors not written yet; exit 1 if there was any."""
        self.write_new()
        if self.errors:
            raise SystemExit(EXIT_DAMAGE)


GROUP_OPTION = click.option(
    "--group",
    "groups",
    metavar="G",
    multiple=True,
    help="Only this group (repeatable: only these groups).",
)

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
    encoded = _orjson(doc)
    return _standard_json(doc) if encoded is None else encoded.decode()


def json_bytes(doc: Any) -> bytes:
    """:func:`json_line` as UTF-8 bytes, for a command that writes bytes (orjson makes them:
    no decoding to text and encoding back)."""
    encoded = _orjson(doc)
    return _standard_json(doc).encode() if encoded is None else encoded


def _orjson(doc: Any) -> bytes | None:
    """``doc`` by orjson; None where it refuses it (integers past 64 bits, lone surrogates)."""
    import orjson  # the dumps extra; the lint's hook runs this CLI without it

    try:
        return orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return None


def _standard_json(doc: Any) -> str:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


class _NotPlain(Exception):
    """A value :func:`indented_json` leaves to the standard encoder."""


def indented_json(doc: Any, indent: int = 1) -> str:
    """``json.dumps(doc, indent=indent)``, the same text, written without the standard
    encoder's generators (a ``yield from`` a level for every piece: downgrade-check's report of
    1,299 blockers, 1.4 MB, took some 10 ms that way, some 7.5 here): strings by its C escaper,
    the rest as it writes them; a document holding anything but dicts with string keys, lists,
    tuples, strings, integers, booleans and None is left to it."""
    pieces: list[str] = []
    put = pieces.append

    def write(value: Any, level: int) -> None:
        if isinstance(value, str):
            put(encode_basestring_ascii(value))
        elif value is None:
            put("null")
        elif value is True:
            put("true")
        elif value is False:
            put("false")
        elif isinstance(value, int):
            put(int.__repr__(value))
        elif isinstance(value, dict):
            if not value:
                put("{}")
                return
            inner = "\n" + " " * (indent * (level + 1))
            before = "{" + inner
            for key, item in value.items():
                if not isinstance(key, str):
                    raise _NotPlain
                put(before)
                put(encode_basestring_ascii(key))
                put(": ")
                write(item, level + 1)
                before = "," + inner
            put("\n" + " " * (indent * level) + "}")
        elif isinstance(value, list | tuple):
            if not value:
                put("[]")
                return
            inner = "\n" + " " * (indent * (level + 1))
            before = "[" + inner
            for item in value:
                put(before)
                write(item, level + 1)
                before = "," + inner
            put("\n" + " " * (indent * level) + "]")
        else:
            raise _NotPlain

    try:
        write(doc, 0)
    except _NotPlain:
        return json.dumps(doc, indent=indent)
    return "".join(pieces)


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

    def _opened(self) -> BinaryIO:
        if self._file is None:
            if self.path is None:
                self._file = sys.stdout.buffer
            else:
                self._file = self.path.open("wb")
        return self._file

    def write_lines(self, lines: Iterable[bytes]) -> None:
        out = self._opened()
        for line in lines:
            out.write(line)
            out.write(b"\n")
            self.lines += 1

    def write_printed(self, lines: Callable[[Callable[[bytes | memoryview], object]], int]) -> None:
        """Lines a printer writes itself, given the output's write (text of whole lines, each
        ending with a newline); ``lines`` returns their count."""
        self.lines += lines(self._opened().write)

    def close(self) -> None:
        if self._file is None:
            return
        if self.path is None:
            self._file.flush()
        else:
            self._file.close()
