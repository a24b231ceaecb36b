"""How a command of ``python -m codegen`` fails: one mechanism for all of them.

- **Damaged input** (exit :data:`EXIT_DAMAGE`, 1): the input was read but some of it could not
  be: a batch not read (a segment error) or a record that did not decode. Each is reported on
  stderr before the answer (or before the part of it read with it) and reading goes on: the
  answer is that of what was read. (A missing extra, said in one line before any work, exits
  1 too: ``codegen.cli``.)
- **Bad input** (exit 2): what the user gave is not what the command reads: a path, an option,
  data that is not Kafka's. The code says so by raising :class:`~codegen.errors.BadInputError`
  (or click's usage errors); the command prints ``COMMAND: message``, the message saying what
  was expected and what was found. A file the system refuses to read or write (permissions,
  a full disk: an ``OSError`` naming the file) is the user's to fix too.
- **A bug** (exit :data:`EXIT_INTERNAL_ERROR`, 70: ``EX_SOFTWARE`` of ``sysexits.h``): any
  other exception. The traceback is saved to a file (in the system's temporary folder, or
  ``$KAFKA_SPECGEN_CRASH_DIR``) whose path is printed, with a line asking to report it. A bug
  is never reported as bad input: numpy's and the standard library's own ``ValueError`` s are
  not the user's.

Every command is a :class:`GuardedCommand` (``codegen.cli`` makes it the group's command
class; each subcommand module declares it; a test checks all of them).
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import traceback
from pathlib import Path
from typing import IO, Any, Final

import click

from codegen import __version__
from codegen.commands import extra_of
from codegen.errors import BadInputError
from codegen.extras import MissingExtraError

__all__ = [
    "CRASH_DIR_VARIABLE",
    "EXIT_BAD_INPUT",
    "EXIT_DAMAGE",
    "EXIT_INTERNAL_ERROR",
    "REPORT_URL",
    "BadInput",
    "GuardedCommand",
    "InternalError",
    "save_traceback",
]

EXIT_DAMAGE: Final = 1
"""Something was reported as an error: a segment error or a record that did not decode."""
EXIT_BAD_INPUT: Final = 2
EXIT_INTERNAL_ERROR: Final = 70
REPORT_URL: Final = "https://github.com/kafka-specgen/kafka-specgen/issues"
CRASH_DIR_VARIABLE: Final = "KAFKA_SPECGEN_CRASH_DIR"


class BadInput(click.ClickException):
    """Bad input, as a command prints it: ``COMMAND: message``, exit 2."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, command: str, message: str) -> None:
        super().__init__(message)
        self.command = command

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"{self.command}: {self.format_message()}", file=file, err=file is None)


class InternalError(click.ClickException):
    """A bug, as a command prints it: what failed, where the traceback is, and the request to
    report it; exit :data:`EXIT_INTERNAL_ERROR`."""

    exit_code = EXIT_INTERNAL_ERROR

    def __init__(self, command: str, error: BaseException, saved: Path | None) -> None:
        super().__init__(f"{type(error).__name__}: {error}")
        self.command = command
        self.saved = saved
        self.error = error

    def show(self, file: IO[Any] | None = None) -> None:
        where = (
            f"the traceback is in {self.saved}"
            if self.saved is not None
            else "the traceback could not be saved; it follows"
        )
        lines = [
            f"{self.command}: internal error: {self.format_message()}",
            f"{self.command}: this is a bug in kafka-specgen {__version__}, not a problem with "
            f"your input; {where}",
            f"{self.command}: please report it at {REPORT_URL} with that traceback and the "
            "command you ran",
        ]
        for line in lines:
            click.echo(line, file=file, err=file is None)
        if self.saved is None:
            text = "".join(traceback.format_exception(self.error))
            click.echo(text.rstrip(), file=file, err=file is None)


def save_traceback(
    command: str, error: BaseException, argv: list[str] | None = None
) -> Path | None:
    """Write ``error``'s traceback, the command line and the versions to a new file in
    ``$KAFKA_SPECGEN_CRASH_DIR`` (else the system's temporary folder); its path, or None when
    it cannot be written."""
    folder = os.environ.get(CRASH_DIR_VARIABLE) or tempfile.gettempdir()
    args = sys.argv if argv is None else argv
    text = (
        f"kafka-specgen {__version__}, Python {platform.python_version()} "
        f"({platform.platform()})\n"
        f"command: {command}\n"
        f"argv: {args!r}\n\n" + "".join(traceback.format_exception(error))
    )
    try:
        fd, name = tempfile.mkstemp(prefix=f"kafka-specgen-{command}-", suffix=".txt", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError:
        return None
    return Path(name)


def _missing_extra(command: str, error: ImportError) -> bool:
    """Whether ``error`` is a library of an extra that is not installed (not a bug)."""
    if isinstance(error, MissingExtraError):
        return True
    if not isinstance(error, ModuleNotFoundError) or not error.name:
        return False
    return extra_of(command, error.name.partition(".")[0]) is not None


class GuardedCommand(click.Command):
    """A command whose failures are told apart (see the module doc)."""

    def invoke(self, ctx: click.Context) -> Any:
        name = self.name or ctx.info_name or "kafka-specgen"
        try:
            return super().invoke(ctx)
        except BadInputError as exc:
            raise BadInput(name, str(exc)) from None
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except ImportError as exc:
            if _missing_extra(name, exc):
                raise  # codegen.cli.main names the extra to install
            raise InternalError(name, exc, save_traceback(name, exc)) from exc
        except BrokenPipeError:
            raise  # the reader of the output went away (``| head``)
        except OSError as exc:
            if exc.filename is None:
                raise InternalError(name, exc, save_traceback(name, exc)) from exc
            reason = exc.strerror or str(exc)
            raise BadInput(name, f"cannot read or write {exc.filename}: {reason}") from None
        except Exception as exc:
            raise InternalError(name, exc, save_traceback(name, exc)) from exc
