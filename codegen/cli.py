"""Command line: ``python -m codegen {validate,generate,check,lint,dump,groups,lag,...}``."""

from __future__ import annotations

import gc
import importlib
import os
import shlex
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final, NoReturn

import click

from codegen import __version__
from codegen.commands import SUBCOMMANDS, extra_of
from codegen.errors import NoSpecsError, SpecErrors, display_path
from codegen.extras import MissingExtraError
from codegen.failures import GuardedCommand, InternalError, save_traceback
from codegen.gc_pause import Program, gc_paused
from codegen.project import (
    CONFIG_TABLE,
    DEFAULT_OUT,
    DEFAULT_SPECS,
    HookSettings,
    ProjectSettingsError,
    hook_settings,
)
from codegen.text import plural


class LazyGroup(click.Group):
    """The commands of :data:`SUBCOMMANDS` load on first use. One whose extra is not
    installed is still listed, and says what to install when run. Every command tells bad
    input from a bug (:class:`codegen.failures.GuardedCommand`)."""

    command_class = GuardedCommand

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *SUBCOMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in SUBCOMMANDS:
            self.add_command(load_subcommand(cmd_name), cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's own listing, from the summaries of the commands not loaded yet
        listed = [
            (name, self.commands.get(name) or click.Command(name, help=SUBCOMMANDS[name].summary))
            for name in self.list_commands(ctx)
        ]
        shown = [(name, cmd) for name, cmd in listed if not cmd.hidden]
        if shown:
            limit = formatter.width - 6 - max(len(name) for name, _ in shown)
            with formatter.section("Commands"):
                formatter.write_dl([(name, cmd.get_short_help_str(limit)) for name, cmd in shown])


@contextmanager
def _long_lived_imports() -> Iterator[None]:
    """As the process's program, imports with the cyclic garbage collector off, and what they
    made frozen after: the modules live as long as the process, yet each collection of the
    oldest generation during a run walked all their objects (on a 1 M-record dump, 60-70 ms
    of the collector's 80-90 ms in ``groups`` and ``lag``; 15 ms of a small dump's
    ``groups`` at import). A caller's objects are never frozen."""
    if not Program.running:
        yield
        return
    with gc_paused():
        try:
            yield
        finally:
            gc.freeze()


def load_subcommand(name: str) -> click.Command:
    """The command ``name`` of :data:`SUBCOMMANDS`, imported now."""
    sub = SUBCOMMANDS[name]
    try:
        with _long_lived_imports():
            module = importlib.import_module(sub.module)
    except MissingExtraError as exc:
        return _needs_extra(name, exc)
    command: click.Command = getattr(module, sub.attribute)
    return command


def _needs_extra(name: str, error: MissingExtraError) -> click.Command:
    text = error.text(f"python -m codegen {name}")

    def run() -> None:
        raise click.ClickException(text)

    settings = {"ignore_unknown_options": True, "allow_extra_args": True}
    return GuardedCommand(name, callback=run, help=text, context_settings=settings)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kafka-specgen")
def cli() -> None:
    """Kafka JSON message specs to byte-exact Python codecs, lint and topic-dump decoding.

    \b
    Examples:
      python -m codegen validate --specs message_specs
      python -m codegen generate --specs message_specs --out generated
      python -m codegen check    # in a project: the build hook's settings in pyproject.toml
      python -m codegen lint old_specs/ message_specs/
      python -m codegen dump /var/kafka/__consumer_offsets-0 --compacted
    """


specs_option = click.option(
    "--specs",
    "spec_dirs",
    type=click.Path(exists=True, path_type=Path),
    multiple=True,
    help="Spec file or folder (searched recursively); repeatable. Default: specs of "
    f"{CONFIG_TABLE} in the nearest pyproject.toml, else {DEFAULT_SPECS}.",
)


@dataclass(frozen=True, slots=True)
class Target:
    """What a command reads and writes: the flags given, else the hook's settings."""

    roots: list[Path]
    out: Path
    package: str | None
    settings: HookSettings | None  # where the specs came from, when not from --specs

    def folder(self) -> Path:
        from codegen.emit import OutputError, package_folder

        try:
            return package_folder(self.out, self.package)
        except OutputError as exc:
            raise click.BadParameter(str(exc), param_hint="--package") from None


def _target(spec_dirs: tuple[Path, ...], out: Path | None, package: str | None) -> Target:
    """Each flag given wins; what they leave out comes from the nearest pyproject.toml's
    hook table, else the defaults (relative to the working folder). ``package`` lies below
    ``out``: with --out given, only --package names it."""
    settings = None
    if not spec_dirs or out is None:
        try:
            settings = hook_settings(Path.cwd())
        except ProjectSettingsError as exc:
            raise click.UsageError(str(exc)) from None
    if settings is None:
        return Target(
            list(spec_dirs) or [Path(DEFAULT_SPECS)], out or Path(DEFAULT_OUT), package, None
        )
    return Target(
        list(spec_dirs) or list(settings.specs),
        out or settings.out,
        package if package is not None or out is not None else settings.package,
        None if spec_dirs else settings,
    )


def _no_specs(exc: NoSpecsError, target: Target) -> NoReturn:
    where = ""
    if target.settings is not None:
        where = f" (settings from {target.settings.pyproject} {CONFIG_TABLE})"
    raise click.UsageError(f"{exc}{where}") from None


def _load_or_exit(target: Target) -> int:
    from codegen.emit import load_messages

    try:
        return len(load_messages(target.roots))
    except SpecErrors as exc:
        _report(exc, "")
    except NoSpecsError as exc:
        _no_specs(exc, target)


@cli.command()
@specs_option
def validate(spec_dirs: tuple[Path, ...]) -> None:
    """Check specs: structure (JSON Schema) and every semantic rule; report all problems.

    Each problem prints as ``path:line: $.json.path: message``; exit 1 when there is any,
    exit 2 when a spec folder is missing or holds no spec.
    """
    count = _load_or_exit(_target(spec_dirs, None, None))
    click.echo(f"{plural(count, 'spec')} valid")


out_option = click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder of the generated package (or its parent when --package is given). Default: "
    f"out of {CONFIG_TABLE} in the nearest pyproject.toml, else {DEFAULT_OUT}.",
)
package_option = click.option(
    "--package",
    help="Dotted Python package name (e.g. myproject.kafka); modules go to OUT/<package path>, "
    "which must stay inside OUT.",
)


def _report(exc: SpecErrors, what: str) -> NoReturn:
    for problem in exc.problems:
        click.echo(str(problem), err=True)
    click.echo(f"{plural(len(exc.problems), 'problem')} in the specs{what}", err=True)
    sys.exit(1)


@cli.command()
@specs_option
@out_option
@package_option
def generate(spec_dirs: tuple[Path, ...], out: Path | None, package: str | None) -> None:
    """Generate one codec module per spec, plus the MESSAGES index.

    Generated modules the specs no longer produce are removed; a .py file the generator
    did not write (no "# Generated by kafka-specgen" first line) is never overwritten or
    removed. Without flags, specs, out and package come from the build hook's table in the
    nearest pyproject.toml. Exit 1 on spec errors or such a file in the way, 2 on a bad
    --package or a spec folder without specs.
    """
    from codegen.emit import OutputError, write_package

    target = _target(spec_dirs, out, package)
    folder = target.folder()
    started = time.perf_counter()
    try:
        files = write_package(target.roots, folder)
    except SpecErrors as exc:
        _report(exc, "; nothing written")
    except NoSpecsError as exc:
        _no_specs(exc, target)
    except OutputError as exc:
        raise click.ClickException(f"{exc}; nothing written") from None
    took = time.perf_counter() - started
    click.echo(f"wrote {plural(len(files), 'module')} to {display_path(folder)} in {took:.1f}s")


@cli.command()
@specs_option
@out_option
@package_option
def check(spec_dirs: tuple[Path, ...], out: Path | None, package: str | None) -> None:
    """Fail when the generated package differs from what generate would write.

    Changed, missing and extra files are all reported, then the generate command that fixes
    them. Without flags, specs, out and package come from the build hook's table in the
    nearest pyproject.toml.
    """
    from codegen.emit import check_package

    target = _target(spec_dirs, out, package)
    folder = target.folder()
    try:
        drift = check_package(target.roots, folder)
    except SpecErrors as exc:
        _report(exc, "")
    except NoSpecsError as exc:
        _no_specs(exc, target)
    if drift.clean:
        click.echo(f"{display_path(folder)} is up to date")
        return
    for line in drift.lines():
        click.echo(line, err=True)
    # The same flags: what they leave out, generate reads from the same pyproject.toml.
    flags = [a for root in spec_dirs for a in ("--specs", str(root))]
    flags += ["--out", str(out)] if out is not None else []
    flags += ["--package", package] if package is not None else []
    click.echo(f"run: {shlex.join(['python', '-m', 'codegen', 'generate', *flags])}", err=True)
    sys.exit(1)


class WithoutPandas:
    """A finder that fails ``import pandas``: the command line runs as where the ``dumps``
    extra alone is installed (pandas comes with ``spark``), for no command uses pandas.

    Where pandas is installed, pyarrow imports it on its first conversion of a Python value
    (``pa.array`` of a list, ``pa.scalar``, a compute function given a Python value, the import
    of ``pyarrow.dataset`` that ``Table.group_by`` makes): about 0.3 CPU s of every command
    that computes a view, more than the view itself takes on a small dump. Without pandas,
    pyarrow skips its pandas checks; the import system asks this finder first.
    """

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(
                f"No module named {name!r} (the command line runs without pandas)", name=name
            )


def _native_library_settings(command: str) -> None:
    """Settings the native libraries read once, as they load; a user's own win, and so does a
    library loaded before (an in-process caller's):

    - Arrow's buffers come from the C library's allocator: pyarrow's default, mimalloc, gives
      the pages of each freed chunk back to the system and faults them in again for the next,
      about 0.4 s of system time in ``lag`` on a 1 M-record dump, and holds 50-80 MB more;
    - OpenBLAS (loaded by numpy) starts one thread, not one per core: its threads spin as they
      start, about 0.1 CPU s of every command, and no command does linear algebra;
    - a command that reads logs (``command``, as typed) keeps the memory it frees
      (:func:`_keep_freed_memory`).
    """
    if "pyarrow" not in sys.modules:
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    reads_logs = command in SUBCOMMANDS and SUBCOMMANDS[command].extra == "dumps"
    if reads_logs:
        _keep_freed_memory()


_MALLOPT: Final = {
    -1: 256 << 20,  # M_TRIM_THRESHOLD: up to 256 MiB free at the heap's top stays
    -2: 64 << 20,  # M_TOP_PAD: the heap grows 64 MiB at a time
    -3: 32 << 20,  # M_MMAP_THRESHOLD: blocks below 32 MiB (glibc's most) come from the heap
}
"""glibc's ``mallopt`` parameters (``malloc.h``) a log-reading command sets."""


def _keep_freed_memory() -> None:
    """glibc's allocator keeps what a command frees for its next allocations: the views free
    and allocate buffers of megabytes per chunk and per partition, which by default go back to
    the system and fault in again (``lag`` on 16 M records: 480 k page faults and 1.4 s of
    system time, against 335 k and 0.9 s so; ``groups`` 0.86 -> 0.75 s; peak memory 20-60 MB
    more). Left as it is where the user tunes the allocator (``MALLOC_*``, ``GLIBC_TUNABLES``)
    and off glibc."""
    if "GLIBC_TUNABLES" in os.environ or any(k.startswith("MALLOC_") for k in os.environ):
        return
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        libc = None
    if not libc or not libc.startswith("glibc"):
        return
    import ctypes  # numpy imports it anyway

    mallopt = ctypes.CDLL(None).mallopt
    for parameter, value in _MALLOPT.items():
        mallopt(parameter, value)


def main() -> None:
    command = next((a for a in sys.argv[1:] if not a.startswith("-")), "")
    _native_library_settings(command)
    finder = WithoutPandas()
    if "pandas" not in sys.modules:
        sys.meta_path.insert(0, finder)
    was_running, Program.running = Program.running, True
    try:
        cli()
    except MissingExtraError as exc:  # e.g. generate without jinja2
        click.echo(f"Error: {exc.text(f'python -m codegen {command}'.rstrip())}", err=True)
        sys.exit(1)
    except ModuleNotFoundError as exc:
        # The one guard of every import a command makes: a library of an extra, wherever it
        # is imported, is named with the extra that brings it.
        missing = exc.name.partition(".")[0] if exc.name else None
        extra = extra_of(command, missing)
        if extra is None:  # no extra brings it: a bug
            failure = InternalError(command or "kafka-specgen", exc, save_traceback(command, exc))
            failure.show()
            sys.exit(failure.exit_code)
        error = MissingExtraError(f"python -m codegen {command}".rstrip(), extra, missing)
        click.echo(f"Error: {error}", err=True)
        sys.exit(1)
    finally:
        Program.running = was_running
        if finder in sys.meta_path:  # an in-process caller gets its import system back
            sys.meta_path.remove(finder)
