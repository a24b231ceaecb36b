"""``python -m codegen lint``: the command line of the schema-evolution lint."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from codegen.errors import SpecProblem
from codegen.failures import GuardedCommand
from codegen.lint.config import ConfigError, FailOn, LintConfig, discover_config, load_config_file
from codegen.lint.engine import LintResult, invalid_result, lint
from codegen.lint.history import HistoryError, history_memory
from codegen.lint.memory import LOCK_NAME, Memory, lock_text
from codegen.lint.model import (
    InvalidSpecs,
    SpecSet,
    git_location,
    is_archive,
    load_git_set,
    load_set,
)
from codegen.lint.report import RENDERERS, render_rules_json, render_rules_table, render_text
from codegen.lint.retired import set_memory

DEFAULT_SPEC_PATH = "message_specs"
DEFAULT_REF = "HEAD"

_EPILOG = """\b
Examples:
  kafka-specgen lint                                     # [tool.kafka-specgen.lint] paths vs HEAD
  python -m codegen lint old/OffsetCommitValue.json new/OffsetCommitValue.json
  python -m codegen lint old_specs/ message_specs/
  python -m codegen lint kafka-clients-3.9.0.jar kafka-clients-4.4.0.jar
  python -m codegen lint --git origin/main                 # message_specs/ vs origin/main
  python -m codegen lint --git v0.1.0..v0.2.0 message_specs  # two refs, no working tree
  python -m codegen lint --git HEAD ../specs-repo/specs     # the repository of PATH
  python -m codegen lint --write-lock message_specs        # remember every tag, field, key
  python -m codegen lint --format sarif --output lint.sarif --git origin/main
  python -m codegen lint --format junit --output lint.xml --git origin/main
  python -m codegen lint --allow versions-removed old/ new/
  python -m codegen lint --select wire,json --fail-on warning old/ new/
  python -m codegen lint --fail-categories wire-json old/ new/   # renames fail too
  python -m codegen lint --downgrade-report old/ new/
  python -m codegen lint --list-rules

\b
Exit status: 0 compatible, 1 a finding of a failing category (--fail-categories,
default wire: bytes and stored data) at or above --fail-on (default error: a
breaking change), 2 invalid input (spec errors, git errors, or two unrelated
specs; with --format json, github, sarif or junit they are in the report too).
Categories: wire (bytes, stored data), json (JSON keys and values), code (the
generated Python API), style (entityType, suppression comments).
Configuration: [tool.kafka-specgen.lint] in the nearest pyproject.toml, or
--config FILE; flags replace its values. With --git, the lint also remembers what
the specs held in every earlier commit (and in their kafka-specgen-lint.lock):
a retired tag, field name, apiKey or record type id may not come back with another
meaning. Suppress a finding in the new spec with a comment on its line or the line
above:  // lint: allow field-renamed -- nobody reads the JSON
Rules: docs/lint.md, or --list-rules.
"""


@dataclass(frozen=True, slots=True)
class GitRefs:
    """``--git REF`` (REF against the working tree) or ``--git A..B`` (two refs)."""

    old: str
    new: str | None  # None: the working tree

    @staticmethod
    def parse(text: str) -> GitRefs:
        if "..." in text:
            raise click.UsageError(f"--git {text}: use A..B (two refs), not A...B")
        old, dots, new = text.partition("..")
        if dots and (not old or not new):
            raise click.UsageError(f"--git {text}: give both refs, as in v1.0..v1.1")
        return GitRefs(old, new if dots else None)

    def history_revs(self) -> list[str]:
        """The commits whose history is remembered: both sides' (the working tree's is HEAD)."""
        return [self.old, self.new or "HEAD"]


def _git_sides(path: Path, refs: GitRefs, history: bool) -> tuple[SpecSet, SpecSet, Memory | None]:
    """The old and new spec sets of PATH at the refs, found in the repository of PATH."""
    repo, inside = git_location(path)
    old_set = load_git_set(refs.old, Path(inside), repo)
    new_set = load_set(path) if refs.new is None else load_git_set(refs.new, Path(inside), repo)
    memory = None
    if history:
        try:
            memory = history_memory(repo, refs.history_revs(), inside)
        except HistoryError as exc:
            raise InvalidSpecs([SpecProblem("", 0, "$", str(exc))]) from None
    return old_set, new_set, memory


def _git_labels(path: Path, refs: GitRefs) -> tuple[str, str]:
    shown = path.as_posix()
    return f"{refs.old}:{shown}", shown if refs.new is None else f"{refs.new}:{shown}"


def _merge(results: list[LintResult]) -> LintResult:
    """One result of several spec paths."""
    if len(results) == 1:
        return results[0]
    return LintResult(
        ", ".join(r.old_label for r in results),
        ", ".join(r.new_label for r in results),
        tuple(f for r in results for f in r.findings),
        tuple(d for r in results for d in r.downgrade),
        results[0].fail_on,
        results[0].fail_categories,
    )


def _names(values: tuple[str, ...]) -> tuple[str, ...]:
    """Repeatable, comma-separated rule ids or categories."""
    return tuple(n.strip() for value in values for n in value.split(",") if n.strip())


def _config(
    config_file: str | None,
    no_config: bool,
    overrides: tuple[
        tuple[str, ...], tuple[str, ...], tuple[str, ...], str | None, tuple[str, ...]
    ],
) -> LintConfig:
    select, ignore, allow, fail_on, fail_categories = overrides
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
            fail_categories=_names(fail_categories),
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


def _spec_paths(given: tuple[str, ...], config: LintConfig, must_exist: bool) -> list[Path]:
    """PATHs from the command line, else ``paths`` of the configuration, else message_specs."""
    if given:
        return [Path(p) for p in given]
    if config.paths:
        return config.spec_paths()
    default = Path(DEFAULT_SPEC_PATH)
    if must_exist and not default.exists():
        raise click.UsageError(
            f"no spec path given and ./{DEFAULT_SPEC_PATH} does not exist; name the spec "
            'folder (kafka-specgen lint --git HEAD PATH), or set paths = ["..."] in '
            "[tool.kafka-specgen.lint] of pyproject.toml"
        )
    return [default]


def _write_locks(paths: list[Path], history: bool) -> int:
    """``--write-lock``: the lock of each path, grown by its specs and git history."""
    for path in paths:
        if is_archive(path):
            raise click.UsageError(
                f"{path}: --write-lock writes into a spec folder, not an archive"
            )
        specs = load_set(path)
        memory = set_memory(specs, specs.label)
        if specs.lock is not None:
            memory = specs.lock | memory
        note = ""
        if history:
            try:
                repo, inside = git_location(path)
                memory = memory | history_memory(repo, ["HEAD"], inside)
            except (InvalidSpecs, HistoryError):
                note = " (no git history: not in a repository, or no commit yet)"
        folder = path.parent if path.is_file() else path
        target = folder / LOCK_NAME
        added = len(memory) - (0 if specs.lock is None else len(specs.lock))
        target.write_text(lock_text(memory), encoding="utf-8")
        click.echo(f"{target}: {len(memory)} uses, {added} new{note}")
    return 0


def _run(
    paths: tuple[str, ...], refs: GitRefs | None, history: bool, config: LintConfig
) -> LintResult:
    if refs is None:
        old, new = (Path(p) for p in paths)
        try:
            return lint(load_set(old), load_set(new), config=config)
        except InvalidSpecs as exc:
            return invalid_result(str(old), str(new), exc.problems)
    results = []
    for path in _spec_paths(paths, config, must_exist=refs.new is None):
        try:
            old_set, new_set, memory = _git_sides(path, refs, history)
        except InvalidSpecs as exc:
            results.append(invalid_result(*_git_labels(path, refs), exc.problems))
            continue
        results.append(lint(old_set, new_set, config=config, history=memory))
    return _merge(results)


@click.command("lint", cls=GuardedCommand, epilog=_EPILOG)
@click.argument("paths", nargs=-1, metavar="[OLD NEW | PATH...]")
@click.option(
    "--git",
    "git_refs",
    metavar="REF|A..B",
    help="Compare the working tree with git REF, or ref A with ref B; the arguments are then "
    "the spec PATHs (default: paths of the configuration, else "
    f"{DEFAULT_SPEC_PATH}), found in their own repository from any folder.",
)
@click.option(
    "--no-history",
    is_flag=True,
    help="With --git or --write-lock: do not read the git history of the specs (the locks "
    "are still read).",
)
@click.option(
    "--write-lock",
    is_flag=True,
    help=f"Write {LOCK_NAME} in each spec folder PATH: every tag, field name, apiKey and "
    "record type id its specs, its lock and its git history ever held. Commit it.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(sorted(RENDERERS)),
    default="text",
    show_default=True,
    help="Output format; github prints workflow annotations, junit a JUnit XML test report. "
    "With --list-rules: text (a table) or json.",
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
    "--fail-categories",
    multiple=True,
    metavar="CATEGORIES",
    help="The categories whose findings fail (exit 1): a preset, wire (the bytes and stored "
    "data; the default), wire-json (also the JSON form) or all (also the generated API), or "
    "categories (comma-separated, repeatable).",
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
    paths: tuple[str, ...],
    git_refs: str | None,
    no_history: bool,
    write_lock: bool,
    output_format: str,
    output: str | None,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    allow: tuple[str, ...],
    fail_on: str | None,
    fail_categories: tuple[str, ...],
    config_file: str | None,
    no_config: bool,
    downgrade_report: bool,
    list_rules: bool,
) -> None:
    """Check that the specs NEW are compatible with the specs OLD.

    OLD and NEW are spec files, directories or zip/jar/tar archives; directories and
    archives are compared spec by spec
    (paired by name, wherever they live below the directory), and added and removed specs
    are reported. Old and new readers and writers must keep understanding each other, and
    coordinator records must stay readable after a downgrade (KIP-915). Without OLD and NEW
    the working tree is compared with the configuration's `against` ref (default HEAD).
    """
    if list_rules:
        if output_format not in ("text", "json"):
            raise click.UsageError("--list-rules prints text (a table) or json")
        _emit(render_rules_json() if output_format == "json" else render_rules_table(), output)
        return
    config = _config(config_file, no_config, (select, ignore, allow, fail_on, fail_categories))
    if write_lock:
        if git_refs is not None:
            raise click.UsageError("--write-lock writes the locks of the working tree; drop --git")
        try:
            raise SystemExit(_write_locks(_spec_paths(paths, config, True), not no_history))
        except InvalidSpecs as exc:
            result = invalid_result("", ", ".join(paths), exc.problems)
            _report(result, output_format, output, False)
            raise SystemExit(result.exit_code) from None
    refs: GitRefs | None = None
    if git_refs is not None:
        refs = GitRefs.parse(git_refs)
    elif not paths:
        refs = GitRefs(config.against or DEFAULT_REF, None)
    elif len(paths) != 2:
        raise click.UsageError(
            "give OLD and NEW, or --git REF [PATH] (more PATHs may follow), or no argument "
            "(the configured paths against HEAD)"
        )
    result = _run(paths, refs, not no_history, config)
    _report(result, output_format, output, downgrade_report)
    raise SystemExit(result.exit_code)
