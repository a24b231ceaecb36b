"""``python -m codegen lag``."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from pathlib import Path

import click

from codegen.failures import GuardedCommand
from codegen.forensics.burrow import DEFAULT_MIN_COMMITS, DEFAULT_WINDOW
from codegen.forensics.inputs import parse_as_of
from codegen.forensics.lag import GroupLag, lag_chunks
from codegen.forensics.lag_json import write_group_lines
from codegen.forensics.output import (
    GROUP_OPTION,
    OUTPUT_OPTION,
    LineOutput,
    ReadErrors,
    group_cell,
    no_groups,
    require_groups,
    time_cell,
)
from codegen.forensics.shares import in_flight_text
from codegen.gc_pause import freeze_survivors
from codegen.text import plural

__all__ = ["lag_command", "render_lag_table"]


def render_lag_table(reports: list[GroupLag]) -> str:
    """One line per group, one per partition under it."""
    out: list[str] = []
    for g in reports:
        out.append(f"{group_cell(g.group)}  {g.status or 'no status'}  (now {time_cell(g.now)})")
        for p in g.partitions:
            last = p.history.newest()
            end = "-" if p.log_end_offset is None else str(p.log_end_offset)
            lag = "-" if p.lag is None else str(p.lag)
            deleted = "" if p.live else "  offset deleted"
            source = f" from {p.log_end_source}" if p.log_end_source else ""
            out.append(
                f"  {p.topic}-{p.partition}  {p.status or '-':<5}  committed {last.offset} "
                f"at {time_cell(last.commit_timestamp)}  log end {end}{source}  lag {lag}  "
                f"{plural(len(p.history), 'commit')}{deleted}  ({p.reason})"
            )
        for sp in g.share_partitions:
            end = "-" if sp.log_end_offset is None else str(sp.log_end_offset)
            source = f" from {sp.log_end_source}" if sp.log_end_source else ""
            lag = "-" if sp.lag is None else str(sp.lag)
            out.append(
                f"  {sp.state.topic_label}-{sp.state.partition}  share  start offset "
                f"{sp.state.start_offset}  log end {end}{source}  lag {lag}  "
                f"{in_flight_text(sp.state.in_flight)}"
            )
    return "\n".join(out)


@click.command("lag", cls=GuardedCommand)
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@GROUP_OPTION
@click.option(
    "--as-of",
    "as_of",
    metavar="TIME|OFFSET",
    help="Replay up to a log offset (digits) or an ISO-8601 time; the time is also the 'now' "
    "of the status. Default: the end of the dump.",
)
@click.option(
    "--window",
    type=click.IntRange(min=1),
    default=DEFAULT_WINDOW,
    show_default=True,
    help="Commits per partition the status is evaluated over.",
)
@click.option(
    "--min-commits",
    type=click.IntRange(min=1),
    default=DEFAULT_MIN_COMMITS,
    show_default=True,
    help="Commits a partition needs in its window before it is judged (fewer: OK, "
    "incomplete; Burrow's minimum-complete). At most the window.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "jsonl", "html"]),
    default="table",
    show_default=True,
    help="table: a line per group and partition; jsonl: one JSON object per group with every "
    "commit (groups by __consumer_offsets partition, then name, each partition written once "
    "read); html: the report (groups, offsets and lag with plots) as one self-contained file.",
)
@OUTPUT_OPTION
def lag_command(
    paths: tuple[str, ...],
    groups: tuple[str, ...],
    as_of: str | None,
    window: int,
    min_commits: int,
    fmt: str,
    output: Path | None,
) -> None:
    """Committed offsets over time, lag and a Burrow-like status (OK, WARN, ERR, STOP, REWIND,
    STALL).

    PATH... are broker log dirs (one per broker), partition folders or segments, and globs:
    they are merged. Lag is taken against each data partition's log end, read from its
    segments, from its empty segments (the active segment's base offset), or from a broker's
    replication-offset-checkpoint when the segments are elsewhere (lag now only); a partition
    on several replicas takes the highest, and each line says where its log end came from.
    The status rules are in docs/forensics.md.

    Exit status: 0; 1 when some of the input could not be read (a batch not read, an offset
    commit that did not decode: each is said on stderr as dump says it, and the answer is that
    of what was read); 1 also for --format html without
    the report extra (said before any work); 2 when PATH holds no __consumer_offsets (the error
    says what it holds).

    \b
    Examples:
      python -m codegen lag /var/kafka-logs
      python -m codegen lag broker-1/kafka-logs broker-2/kafka-logs --group my-app
      python -m codegen lag /var/kafka-logs --group my-app --window 5 --format jsonl
      python -m codegen lag /var/kafka-logs --format html --output report.html
    """
    if fmt == "html":
        from codegen.forensics.report import html_report  # --format html only

        html_report(paths, groups, as_of, window, output)
        return
    out = LineOutput(output)
    damage = ReadErrors()
    try:
        point = parse_as_of(as_of) if as_of is not None else None
        one = groups[0] if len(groups) == 1 else None
        chunks: Iterable[list[GroupLag]] = lag_chunks(
            list(paths), one, point, window, damage.errors, min_commits
        )
        if len(groups) > 1:  # a few groups: all found before a line is written
            chunks = [_chunks_of(chunks, groups)]
        for chunk in chunks:
            # a partition's reports, made with the collector paused: none walked by it again
            freeze_survivors()
            damage.write_new()  # a partition's errors, found as it was read
            if fmt == "jsonl":
                out.write_printed(partial(write_group_lines, chunk))
            elif chunk:
                out.write_lines([render_lag_table(chunk).encode()])
            del chunk  # freed before the next partition is read (lag_chunks)
        if not out.lines:
            out.write_lines([b"" if fmt == "jsonl" else no_groups(paths).encode()])
    finally:  # an --output file written so far is closed on an error too
        out.close()
        damage.write_new()
    damage.finish()


def _chunks_of(chunks: Iterable[list[GroupLag]], wanted: tuple[str, ...]) -> list[GroupLag]:
    """The groups of ``wanted`` among the chunks'; a group named that is in none is an
    InputError."""
    kept = [g for chunk in chunks for g in chunk if g.group in wanted]
    require_groups(wanted, {g.group for g in kept})
    return kept
