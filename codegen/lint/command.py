"""``python -m codegen lint``: the command line of the schema-evolution lint."""

from __future__ import annotations

from pathlib import Path

import click

from codegen.lint.config import ConfigError, FailOn, LintConfig, discover_config, load_config_file
from codegen.lint.engine import LintResult, invalid_result, lint
from codegen.lint.model import InvalidSpecs, SpecSet, load_git_set, load_set
from codegen.lint.report import RENDERERS, render_rules_json, render_rules_table, render_text

DEFAULT_SPEC_PATH = "message_specs"

_EPILOG = """\b
Examples:
  python -m codegen lint old/OffsetCommitValue.json new/OffsetCommitValue.json
  python -m codegen lint old_specs/ message_specs/
  python -m codegen lint --git origin/main                 # message_specs/ vs origin/main
  python -m codegen lint --git v0.1.0 message_specs/consumer_offsets  # one folder
  python -m codegen lint --format sarif --output lint.sarif --git origin/main
  python -m codegen lint --allow versions-removed old/ new/
  python -m codegen lint --select wire,downgrade --fail-on warning old/ new/
  python -m codegen lint --downgrade-report old/ new/
  python -m codegen lint --list-rules

\b
Exit status: 0 compatible, 1 a finding at or above --fail-on (default error:
a breaking change), 2 invalid input (spec errors, or two unrelated specs; with
--format json, github or sarif they are in the report too). Configuration:
[tool.kafka-specgen.lint] in the nearest pyproject.toml, or --config FILE; flags
replace its values. Suppress a finding in the new spec with a comment on its line
or the line above:  // lint: allow field-renamed -- nobody reads the JSON
Rules: docs/lint.md, or --list-rules.
"""


def _load(old: str | None, new: str | None, git_ref: str | None) -> tuple[SpecSet, SpecSet]:
    if git_ref is not None:
        path = Path(old or DEFAULT_SPEC_PATH)
        return load_git_set(git_ref, path), load_set(path)
    assert old is not None and new is not None
    return load_set(Path(old)), load_set(Path(new))


def _labels(old: str | None, new: str | None, git_ref: str | None) -> tuple[str, str]:
    if git_ref is not None:
        path = old or DEFAULT_SPEC_PATH
        return f"{git_ref}:{path}", path
    return old or "", new or ""


def _names(values: tuple[str, ...]) -> tuple[str, ...]:
    """Repeatable, comma-separated rule ids or categories."""
    return tuple(n.strip() for value in values for n in value.split(",") if n.strip())


def _config(
    config_file: str | None,
    no_config: bool,
    overrides: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], str | None],
) -> LintConfig:
    select, ignore, allow, fail_on = overrides
    try:
        if config_file is not None:
            base = load_config_file(Path(config_file))
        elif no_config:
            base = LintConfig()
        else:
            base = discover_config(Path.cwd())
        return base.override(
            select=_names(select),
            ignore=_names(ignore),
            allow=_names(allow),
            fail_on=None if fail_on is None else FailOn(fail_on),
        )
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None


def _emit(text: str, output: str | None) -> None:
    if output is not None:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)


def _report(result: LintResult, output_format: str, output: str | None, downgrade: bool) -> None:
    if result.invalid:
        # Spec errors always reach the terminal; other formats also carry them.
        click.echo(render_text(result), err=True, nl=False)
        if output_format == "text":
            if output is not None:
                _emit(render_text(result), output)
            return
    _emit(RENDERERS[output_format](result, downgrade), output)


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
    help="Output format; github prints workflow annotations. With --list-rules: text "
    "(a table) or json.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, writable=True),
    help="Write the report to FILE instead of standard output.",
)
@click.option(
    "--select",
    multiple=True,
    metavar="RULES",
    help="Report only these rule ids or categories (comma-separated, repeatable; "
    "default: every rule).",
)
@click.option(
    "--ignore",
    multiple=True,
    metavar="RULES",
    help="Never report these rule ids or categories (comma-separated, repeatable).",
)
@click.option(
    "--allow",
    "allow",
    multiple=True,
    metavar="RULE",
    help="Suppress every finding of RULE; suppressed findings are still listed (repeatable).",
)
@click.option(
    "--fail-on",
    type=click.Choice([f.value for f in FailOn]),
    default=None,
    help="Fail (exit 1) on findings of this severity or worse; error means breaking. "
    "[default: error]",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(exists=True, dir_okay=False),
    help="TOML configuration file (its [tool.kafka-specgen.lint] table, or its top level); "
    "default: the nearest pyproject.toml with that table.",
)
@click.option("--no-config", is_flag=True, help="Ignore pyproject.toml configuration.")
@click.option(
    "--downgrade-report",
    is_flag=True,
    help="Also report, per coordinator record type, which writer versions a reader "
    "of the old specs can read, and why.",
)
@click.option("--list-rules", is_flag=True, help="List the rules and exit.")
def lint_command(
    old: str | None,
    new: str | None,
    git_ref: str | None,
    output_format: str,
    output: str | None,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    allow: tuple[str, ...],
    fail_on: str | None,
    config_file: str | None,
    no_config: bool,
    downgrade_report: bool,
    list_rules: bool,
) -> None:
    """Check that the specs NEW are compatible with the specs OLD.

    OLD and NEW are spec files or directories; directories are compared spec by spec
    (paired by name, wherever they live below the directory), and added and removed specs
    are reported. Old and new readers and writers must keep understanding each other, and
    coordinator records must stay readable after a downgrade (KIP-915).
    """
    if list_rules:
        if output_format not in ("text", "json"):
            raise click.UsageError("--list-rules prints text (a table) or json")
        _emit(render_rules_json() if output_format == "json" else render_rules_table(), output)
        return
    if git_ref is not None and new is not None:
        raise click.UsageError("with --git give at most one PATH")
    if git_ref is None and (old is None or new is None):
        raise click.UsageError("give OLD and NEW, or --git REF [PATH]")
    config = _config(config_file, no_config, (select, ignore, allow, fail_on))
    try:
        old_set, new_set = _load(old, new, git_ref)
    except InvalidSpecs as exc:
        result = invalid_result(*_labels(old, new, git_ref), exc.problems)
    else:
        result = lint(old_set, new_set, config=config)
    _report(result, output_format, output, downgrade_report)
    raise SystemExit(result.exit_code)
