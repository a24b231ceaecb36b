"""Command line: ``python -m codegen {validate,generate,check,lint,dump}``."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import NoReturn

import click

from codegen import __version__
from codegen.errors import SpecErrors

DEFAULT_SPECS = Path("message_specs")
DEFAULT_OUT = Path("generated")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kafka-specgen")
def cli() -> None:
    """Kafka JSON message specs to byte-exact Python codecs, lint and topic-dump decoding.

    \b
    Examples:
      python -m codegen validate --specs message_specs
      python -m codegen generate --specs message_specs --out generated
      python -m codegen check
      python -m codegen lint old_specs/ message_specs/
      python -m codegen dump /var/kafka/__consumer_offsets-0 --compacted
    """


specs_option = click.option(
    "--specs",
    "spec_dirs",
    type=click.Path(exists=True, path_type=Path),
    multiple=True,
    help="Spec file or folder (searched recursively); repeatable. Default: message_specs.",
)


def _out_dir(out: Path, package: str | None) -> Path:
    return out.joinpath(*package.split(".")) if package else out


def _roots(spec_dirs: tuple[Path, ...]) -> list[Path]:
    return list(spec_dirs) or [DEFAULT_SPECS]


def _load_or_exit(roots: list[Path]) -> int:
    from codegen.emit import load_messages

    try:
        return len(load_messages(roots))
    except SpecErrors as exc:
        _report(exc, "")


@cli.command()
@specs_option
def validate(spec_dirs: tuple[Path, ...]) -> None:
    """Check specs: structure (JSON Schema) and every semantic rule; report all problems.

    Each problem prints as ``path:line: $.json.path: message``; exit 1 when there is any.
    """
    count = _load_or_exit(_roots(spec_dirs))
    click.echo(f"{count} spec(s) valid")


out_option = click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_OUT,
    show_default=True,
    help="Folder of the generated package (or its parent when --package is given).",
)
package_option = click.option(
    "--package", help="Dotted package name; modules go to OUT/<package path>."
)


def _report(exc: SpecErrors, what: str) -> NoReturn:
    for problem in exc.problems:
        click.echo(str(problem), err=True)
    click.echo(f"{len(exc.problems)} problem(s) in the specs{what}", err=True)
    sys.exit(1)


@cli.command()
@specs_option
@out_option
@package_option
def generate(spec_dirs: tuple[Path, ...], out: Path, package: str | None) -> None:
    """Generate one codec module per spec, plus the MESSAGES index.

    The output folder is owned by the generator: .py files it did not write are removed.
    """
    from codegen.emit import write_package

    roots = _roots(spec_dirs)
    target = _out_dir(out, package)
    started = time.perf_counter()
    try:
        files = write_package(roots, target)
    except SpecErrors as exc:
        _report(exc, "; nothing written")
    took = time.perf_counter() - started
    click.echo(f"wrote {len(files)} module(s) to {target} in {took:.1f}s")


@cli.command()
@specs_option
@out_option
@package_option
def check(spec_dirs: tuple[Path, ...], out: Path, package: str | None) -> None:
    """Fail when the generated package differs from what generate would write.

    Changed, missing and extra files are all reported; run generate to fix them.
    """
    from codegen.emit import check_package

    target = _out_dir(out, package)
    try:
        drift = check_package(_roots(spec_dirs), target)
    except SpecErrors as exc:
        _report(exc, "")
    if drift.clean:
        click.echo(f"{target} is up to date")
        return
    for line in drift.lines():
        click.echo(line, err=True)
    click.echo("run: python -m codegen generate", err=True)
    sys.exit(1)


def _register_subcommands() -> None:
    # Each subcommand lives with the stage it drives; registering here keeps --help complete.
    from codegen.lint.command import lint_command

    cli.add_command(lint_command)
    from codegen.dumps.command import dump_command

    cli.add_command(dump_command)

    # Group forensics over __consumer_offsets dumps (codegen/forensics).
    from codegen.forensics.command import downgrade_check_command, groups_command, lag_command

    cli.add_command(downgrade_check_command)
    cli.add_command(groups_command)
    cli.add_command(lag_command)


def main() -> None:
    _register_subcommands()
    cli()
