"""Read a spec file the way Kafka's generator does, keeping line numbers.

Kafka parses specs with Jackson's ALLOW_COMMENTS and FAIL_ON_TRAILING_TOKENS. We blank
``//`` and ``/* */`` comments out in place (so every character keeps its line) and parse
the rest as strict JSON with a small positional parser that records the line of every
value by its JSON path (``$.fields[3].name``), so any later stage can say where a
problem is.

Nesting is bounded (:data:`MAX_DEPTH`): Kafka's specs nest at most 9 levels, and
every later stage walks the value recursively, so a deeper file is a spec error here
rather than a ``RecursionError`` anywhere downstream.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_WHITESPACE = " \t\n\r"
_SURROGATE = re.compile("[\ud800-\udfff]")
# The standard library's words for a fault inside a string, and ours.
_STRING_FAULTS = {
    "Unterminated string starting at": "the string that starts here has no closing quote",
    "Invalid control character at": "a control character (a newline, a tab) inside a string; "
    "write it as \\n or \\t",
    "Invalid \\escape": "an invalid escape sequence in a string",
    "Invalid \\uXXXX escape": "an invalid \\uXXXX escape in a string",
}
# Objects and arrays inside each other; Apache Kafka's deepest spec has 9 levels.
MAX_DEPTH = 64


class SpecSyntaxError(ValueError):
    """The file is not JSON with comments; ``line`` and ``column`` (1-based, in characters;
    0 when unknown) are where the fault is: for a missing ``}``, ``]``, ``,`` or ``:``,
    right after the value it should follow."""

    def __init__(self, message: str, line: int, json_path: str = "$", column: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.json_path = json_path
        self.column = column

    @property
    def problem(self) -> str:
        """The message as a spec problem prints it."""
        at = f" at column {self.column}" if self.column else ""
        return f"invalid JSON{at}: {self.message}"


class SpecTooDeepError(SpecSyntaxError):
    """Valid JSON, but nested deeper than :data:`MAX_DEPTH`."""

    @property
    def problem(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class SpecText:
    """A parsed spec file: its JSON value and the line of every JSON path in it."""

    path: Path
    text: str
    value: Any
    lines: dict[str, int]

    def line_of(self, json_path: str) -> int:
        """The line of ``json_path``, or of its nearest ancestor that has one."""
        probe = json_path
        while probe:
            if probe in self.lines:
                return self.lines[probe]
            probe = _parent(probe)
        return 1


def _parent(json_path: str) -> str:
    if json_path == "$":
        return ""
    cut = max(json_path.rfind("."), json_path.rfind("["))
    return json_path[:cut] if cut > 0 else "$"


def blank_comments(text: str) -> str:
    """Replace comments outside strings with spaces, keeping newlines."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            in_string = c != '"'
            i += 1
        elif c == '"':
            in_string = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                line, column = text.count("\n", 0, i) + 1, i - text.rfind("\n", 0, i)
                raise SpecSyntaxError("unterminated /* comment", line, column=column)
            end += 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        else:
            out.append(c)
            i += 1
    return "".join(out)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0
        self.lines: dict[str, int] = {}

    def line(self, pos: int | None = None) -> int:
        return self.text.count("\n", 0, self.pos if pos is None else pos) + 1

    def column(self, pos: int) -> int:
        return pos - self.text.rfind("\n", 0, pos)

    def fail(self, message: str, pos: int | None = None, json_path: str = "$") -> SpecSyntaxError:
        at = self.pos if pos is None else pos
        return SpecSyntaxError(message, self.line(at), json_path, self.column(at))

    def found(self) -> str:
        """What stands at ``pos``, for a message."""
        if self.pos >= len(self.text):
            return "the end of the file"
        return f"{self.text[self.pos]!r}"

    def skip(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in _WHITESPACE:
            pos += 1
        self.pos = pos

    def parse_document(self) -> Any:
        self.skip()
        value = self.value("$")
        self.skip()
        if self.pos != len(self.text):
            raise self.fail("unexpected text after the JSON document")
        return value

    def value(self, path: str) -> Any:
        self.skip()
        self.lines[path] = self.line()
        if self.pos >= len(self.text):
            raise self.fail("unexpected end of file, expected a value")
        c = self.text[self.pos]
        if c in "{[":
            if self.depth == MAX_DEPTH:
                raise SpecTooDeepError(
                    f"objects and arrays nested deeper than {MAX_DEPTH} levels; "
                    "Kafka specs nest only a few levels",
                    self.line(),
                    path,
                )
            self.depth += 1
            value = self.obj(path) if c == "{" else self.array(path)
            self.depth -= 1
            return value
        if c == '"':
            return self.string(path)
        for word, val in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return val
        m = _NUMBER.match(self.text, self.pos)
        if m is None:
            raise self.fail(f"unexpected character {c!r}")
        try:
            number = json.loads(m.group())
        except ValueError:  # more digits than int() converts (sys.get_int_max_str_digits)
            message = f"number with {len(m.group())} characters is too long"
            raise self.fail(message, json_path=path) from None
        self.pos = m.end()
        return number

    def string(self, path: str) -> str:
        """The string at ``pos``; a lone surrogate (``\\ud800``) cannot be written as UTF-8."""
        start = self.pos
        try:
            value, self.pos = scanstring(self.text, start + 1, True)
        except json.JSONDecodeError as exc:
            message = _STRING_FAULTS.get(exc.msg, exc.msg)
            raise self.fail(message, exc.pos, path) from None
        lone = _SURROGATE.search(value)
        if lone is not None:
            raise self.fail(
                f"\\u{ord(lone.group()):04x} is half of a UTF-16 surrogate pair, not a character",
                start,
                path,
            )
        return str(value)

    def expect(self, char: str, after: str) -> None:
        """``char`` next; when missing, the fault is where it belongs: right after ``after``."""
        end = self.pos
        self.skip()
        if self.text[self.pos : self.pos + 1] != char:
            raise self.fail(f"expected {char!r} after {after}, found {self.found()}", end)
        self.pos += 1

    def separator(self, close: str, after: str) -> bool:
        """After a member: True for ``,`` (another follows), False for ``close``; else the
        fault is right after the member, where one of them belongs."""
        end = self.pos
        self.skip()
        c = self.text[self.pos : self.pos + 1]
        if c in (",", close) and c:
            self.pos += 1
            return c == ","
        raise self.fail(f"expected ',' or {close!r} after {after}, found {self.found()}", end)

    def obj(self, path: str) -> dict[str, Any]:
        self.pos += 1
        result: dict[str, Any] = {}
        self.skip()
        if self.text[self.pos : self.pos + 1] == "}":
            self.pos += 1
            return result
        while True:
            self.skip()
            if self.text[self.pos : self.pos + 1] != '"':
                raise self.fail(f"expected a quoted key, found {self.found()}")
            key_line = self.line()
            key = self.string(path)
            # A repeated key keeps its last value, as Jackson does.
            self.expect(":", f"the key {key!r}")
            child = f"{path}.{key}"
            result[key] = self.value(child)
            self.lines[child] = key_line
            if not self.separator("}", f"the value of {key!r}"):
                return result

    def array(self, path: str) -> list[Any]:
        self.pos += 1
        result: list[Any] = []
        self.skip()
        if self.text[self.pos : self.pos + 1] == "]":
            self.pos += 1
            return result
        while True:
            result.append(self.value(f"{path}[{len(result)}]"))
            if not self.separator("]", f"element {len(result) - 1} of the array"):
                return result


def parse_spec_text(text: str, path: Path) -> SpecText:
    """Parse spec text; raise SpecSyntaxError with the line of the problem."""
    parser = _Parser(blank_comments(text))
    try:
        value = parser.parse_document()
    except json.JSONDecodeError as exc:  # inside a string: its own position
        raise parser.fail(exc.msg, exc.pos) from exc
    except IndexError as exc:
        raise parser.fail("unexpected end of file", len(parser.text)) from exc
    return SpecText(path=path, text=text, value=value, lines=parser.lines)


def read_spec_file(path: Path) -> SpecText:
    return parse_spec_text(path.read_text(encoding="utf-8"), path)
