"""Spec problems, reported all at once as ``path:line: $.json.path: message``, and the base
of every error that is the user's to fix (:class:`BadInputError`).

A spec folder that is missing or holds no spec is not a problem in a spec: it is
:class:`NoSpecsError`, raised before any file is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


class BadInputError(Exception):
    """What the user gave is not what the code reads: a path, an option, data that is not
    Kafka's. The message says what was expected and what was found. The commands exit 2 on it
    (``codegen.failures``); any other exception is a bug, never reported as bad input."""


@dataclass(frozen=True, slots=True, order=True)
class SpecProblem:
    """One problem in one spec file."""

    path: str
    line: int
    json_path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.json_path}: {self.message}"


class SpecErrors(Exception):
    """Every problem found in a spec set; raised once, after all files were checked."""

    def __init__(self, problems: list[SpecProblem]) -> None:
        self.problems = sorted(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class NoSpecsError(Exception):
    """A spec root that does not exist or holds no spec file: nothing to check or generate."""


@dataclass(slots=True)
class ProblemLog:
    """Collects problems while a stage runs over many files."""

    problems: list[SpecProblem] = field(default_factory=list)

    def add(self, path: Path | str, line: int, json_path: str, message: str) -> None:
        self.problems.append(SpecProblem(display_path(path), line, json_path, message))

    def raise_if_any(self) -> None:
        if self.problems:
            raise SpecErrors(self.problems)


def display_path(path: Path | str) -> str:
    """A path relative to the working directory when it lies below it."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)
