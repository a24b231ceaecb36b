"""``python -m codegen lint``: the command line of the schema-evolution lint."""

from __future__ import annotations

from pathlib import Path

import click

from codegen.lint.engine import lint
from codegen.lint.model import InvalidSpecs, SpecSet, load_git_set, load_set
from codegen.lint.report import RENDERERS
from codegen.lint.rules import RULES

EXIT_COMPATIBLE, EXIT_BREAKING, EXIT_INVALID = 0, 1, 2
DEFAULT_SPEC_PATH = "message_specs"

_EPILOG = """\b
Examples:
  python -m codegen lint old/OffsetCommitValue.json new/OffsetCommitValue.json
  python -m codegen lint old_specs/ message_specs/
  python -m codegen lint --git origin/main                 # message_specs/ vs origin/main
  python -m codegen lint --git v1.2.0 message_specs/group  # one folder
  python -m codegen lint --format sarif --output lint.sarif --git origin/main
  python -m codegen lint --allow versions-removed old/ new/
  python -m codegen lint --downgrade-report old/ new/

\b
Exit status: 0 compatible, 1 a breaking change was found, 2 invalid input
(the spec errors are printed). Suppress a finding in the new spec with a comment
on its line or the line above:  // lint: allow field-renamed -- nobody reads the JSON
Rules: docs/lint.md.
"""


def _load(old: str | None, new: str | None, git_ref: str | None) -> tuple[SpecSet, SpecSet]:
    if git_ref is not None:
        if new is not None:
            raise click.UsageError("with --git give at most one PATH")
        path = Path(old or DEFAULT_SPEC_PATH)
        return load_git_set(git_ref, path), load_set(path)
    if old is None or new is None:
        raise click.UsageError("give OLD and NEW, or --git REF [PATH]")
    return load_set(Path(old)), load_set(Path(new))


@click.command("lint", epilog=_EPILOG)
@click.argument("old", required=False, metavar="OLD")
@click.argument("new", required=False, metavar="NEW")
@click.option(
    "--git",
    "git_ref",
    metavar="REF",
    help="Compare the working tree with git REF; OLD is then the PATH to compare "
    f"(default {DEFAULT_SPEC_PATH}).",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(sorted(RENDERERS)),
    default="text",
    show_default=True,
    help="Output format; github prints workflow annotations.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, writable=True),
    help="Write the report to FILE instead of standard output.",
)
@click.option(
    "--allow",
    "allow",
    multiple=True,
    metavar="RULE",
    help="Suppress every finding of RULE (repeatable).",
)
@click.option(
    "--downgrade-report",
    is_flag=True,
    help="Also report, per coordinator record type, which writer versions a reader "
    "of the old specs can read, and why.",
)
def lint_command(
    old: str | None,
    new: str | None,
    git_ref: str | None,
    output_format: str,
    output: str | None,
    allow: tuple[str, ...],
    downgrade_report: bool,
) -> None:
    """Check that the specs NEW are compatible with the specs OLD.

    OLD and NEW are spec files or directories; directories are compared spec by spec
    (paired by name), and added and removed specs are reported. Old and new readers and
    writers must keep understanding each other, and coordinator records must stay
    readable after a downgrade (KIP-915).
    """
    unknown = [rule for rule in allow if rule not in RULES]
    if unknown:
        raise click.BadParameter(
            f"unknown rule {', '.join(unknown)}; see docs/lint.md", param_hint="--allow"
        )
    try:
        old_set, new_set = _load(old, new, git_ref)
    except InvalidSpecs as exc:
        for problem in exc.problems:
            click.echo(problem, err=True)
        click.echo(f"lint: invalid input ({len(exc.problems)} problems)", err=True)
        raise SystemExit(EXIT_INVALID) from None
    result = lint(old_set, new_set, allow)
    text = RENDERERS[output_format](result, downgrade_report)
    if output is not None:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
    raise SystemExit(result.exit_code)
