"""``python -m codegen groups`` and ``python -m codegen lag``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Final

import click

from codegen.failures import GuardedCommand
from codegen.forensics.burrow import DEFAULT_MIN_COMMITS, DEFAULT_WINDOW
from codegen.forensics.groups import GroupEvent, GroupReport, group_reports, parse_as_of
from codegen.forensics.inputs import InputError, discover
from codegen.forensics.lag import (
    GroupLag,
    lag_chunks,
    lag_reports,
)
from codegen.forensics.lag_json import group_lines
from codegen.forensics.output import (
    OUTPUT_OPTION,
    LineOutput,
    emit,
    group_cell,
    json_line,
)
from codegen.forensics.shares import DELIVERY_STATES, InFlightBatch
from codegen.gc_pause import gc_paused
from codegen.text import plural, utc_text

__all__ = [
    "groups_command",
    "lag_command",
    "lag_json_lines",
    "render_groups_table",
    "render_lag_table",
]


def _format_event(e: GroupEvent) -> str:
    detail = " ".join(f"{k}={v}" for k, v in e.detail.items())
    return f"    {e.offset:>8}  {_time(e.timestamp)}  {e.kind:<19} {detail}".rstrip()


def _time(ms: int) -> str:
    return utc_text(ms, none="-".ljust(24))


def render_groups_table(reports: list[GroupReport]) -> str:
    """One block per group: its state, members, assignors and timeline."""
    return "\n".join(map(_group_block, reports))


def _group_block(r: GroupReport) -> str:
    """A group's block of :func:`render_groups_table`."""
    out: list[str] = []
    gen = f"generation {r.generation}" if r.type == "classic" else f"epoch {r.epoch}"
    kind = r.type or "deleted"
    out.append(
        f"{group_cell(r.group)}  (partition {r.partition}, {kind}, {r.state}, "
        f"protocol {r.protocol or '-'}, {gen if r.type else '-'}, "
        f"{plural(len(r.members), 'member')}, "
        f"{plural(r.committed_offsets, 'committed offset')})"
    )
    for m in r.members:
        assignment = ", ".join(
            f"{t}:{','.join(map(str, ps))}" for t, ps in sorted(m["assignment"].items())
        )
        epoch = "" if m["memberEpoch"] is None else f" epoch {m['memberEpoch']}"
        out.append(
            f"  member {m['memberId']}  client {m['clientId']}@{m['clientHost']}{epoch}"
            f"  [{assignment}]"
        )
    if r.inventory is not None:
        inv = r.inventory
        switch = f"; cooperative switch: {inv.cooperative_switch}" if inv.cooperative_switch else ""
        out.append(
            f"  assignors: chosen {inv.chosen or '-'} (over time: "
            f"{', '.join(inv.chosen_over_time) or '-'}){switch}: {inv.why}"
        )
    for sp in r.share_partitions:
        out.append(
            f"  share partition {sp.topic_label}-{sp.partition}  start offset "
            f"{sp.start_offset}  state epoch {sp.state_epoch}  leader epoch "
            f"{sp.leader_epoch}  {_in_flight(sp.in_flight)}"
        )
    out.append("  timeline:")
    out.extend(_format_event(e) for e in r.events)
    return "\n".join(out)


def _no_groups(paths: tuple[str, ...]) -> str:
    return (
        f"no group in {', '.join(paths)}: its __consumer_offsets partitions hold no group "
        "record and no committed offset"
    )


@click.command("groups", cls=GuardedCommand)
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option(
    "--group",
    "groups",
    metavar="G",
    multiple=True,
    help="Only this group (repeatable: only these groups).",
)
@click.option(
    "--as-of",
    "as_of",
    metavar="TIME|OFFSET",
    help="Replay up to a log offset (digits) or an ISO-8601 time (UTC unless a zone is given). "
    "Default: the end of the dump.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "jsonl", "html"]),
    default="table",
    show_default=True,
    help="table: one block per group; jsonl: one JSON object per group; html: the report "
    "(groups, offsets and lag with plots) as one self-contained file.",
)
@OUTPUT_OPTION
def groups_command(
    paths: tuple[str, ...],
    groups: tuple[str, ...],
    as_of: str | None,
    fmt: str,
    output: Path | None,
) -> None:
    """Each group of a __consumer_offsets dump at a point in time, and its timeline.

    Type (classic, consumer, share, streams), state, protocol or assignor, generation or
    epoch, members, the assignor inventory (KIP-726) and the timeline: rebalances, members
    joining and leaving, protocol conversions, assignor changes, offset deletions, group
    deletion, and consumer-protocol member epochs with per-partition assignment epochs
    (KAFKA-19779). PATH... are broker log dirs, __consumer_offsets-N folders or segments, and
    globs (several brokers' dirs are merged). See docs/forensics.md.

    Exit status: 0, or 2 when PATH holds no __consumer_offsets (the error says what it holds).

    \b
    Examples:
      python -m codegen groups /var/kafka-logs
      python -m codegen groups /var/kafka-logs/__consumer_offsets-7 --group my-app --as-of 1200
      python -m codegen groups 'images/broker-*/kafka-logs' --format jsonl
      python -m codegen groups /var/kafka-logs --as-of 2024-05-01T12:00:00Z --format jsonl
      python -m codegen groups /var/kafka-logs --format html --output report.html
    """
    if fmt == "html":
        _html_report(paths, groups, as_of, DEFAULT_WINDOW, output)
        return
    point = parse_as_of(as_of) if as_of is not None else None
    one = groups[0] if len(groups) == 1 else None
    # The replay's objects, the reports and their lines' parts: many objects, no cycles; the
    # collector paused from the replay to the last line (a collection between them walked them
    # all: about 20 ms at 1 M records).
    with gc_paused():
        reports = _only(group_reports(list(paths), one, point), groups)
        if not reports:
            emit("" if fmt == "jsonl" else _no_groups(paths), output)
        else:  # a group at a time: a large report is never one string
            out = LineOutput(output)
            text = (json_line(r.to_json()) if fmt == "jsonl" else _group_block(r) for r in reports)
            out.write_lines(t.encode() for t in text)
            out.close()


def _require_groups(wanted: Iterable[str], found: set[str]) -> None:
    """An InputError for a ``--group`` not among the groups found."""
    missing = [g for g in wanted if g not in found]
    if missing:
        names = ", ".join(repr(g) for g in missing)
        raise InputError(f"group {names} is not in the dump; run without --group to list them")


def _only(reports: list[GroupReport], wanted: tuple[str, ...]) -> list[GroupReport]:
    """The reports of the ``--group`` groups (all without one)."""
    if not wanted:
        return reports
    _require_groups(wanted, {r.group for r in reports})
    return [r for r in reports if r.group in wanted]


def _html_report(
    paths: tuple[str, ...],
    wanted: tuple[str, ...],
    as_of: str | None,
    window: int,
    output: Path | None,
) -> None:
    from codegen.forensics.report import render_html, require_plotting  # --format html only

    require_plotting()  # before the work: a missing extra is said at once
    point = parse_as_of(as_of) if as_of is not None else None
    dirs = discover(list(paths))
    lags = lag_reports(dirs, None, point, window)
    groups = group_reports(dirs, None, point)
    if wanted:
        _require_groups(wanted, {g.group for g in lags} | {g.group for g in groups})
        lags = [g for g in lags if g.group in wanted]
        groups = [g for g in groups if g.group in wanted]
    names = ", ".join(Path(p).name for p in paths)
    emit(render_html(groups, lags, f"Consumer groups of {names}"), output)


def _in_flight(batches: list[InFlightBatch]) -> str:
    if not batches:
        return "no in-flight record"
    parts = [
        f"{b.first_offset}-{b.last_offset} "
        f"{DELIVERY_STATES.get(b.delivery_state, b.delivery_state)} x{b.delivery_count}"
        for b in batches
    ]
    return "in flight: " + ", ".join(parts)


def render_lag_table(reports: list[GroupLag]) -> str:
    """One line per group, one per partition under it."""
    out: list[str] = []
    for g in reports:
        out.append(f"{group_cell(g.group)}  {g.status or 'no status'}  (now {_time(g.now)})")
        for p in g.partitions:
            last = p.history.newest()
            end = "-" if p.log_end_offset is None else str(p.log_end_offset)
            lag = "-" if p.lag is None else str(p.lag)
            deleted = "" if p.live else "  offset deleted"
            source = f" from {p.log_end_source}" if p.log_end_source else ""
            out.append(
                f"  {p.topic}-{p.partition}  {p.status or '-':<5}  committed {last.offset} "
                f"at {_time(last.commit_timestamp)}  log end {end}{source}  lag {lag}  "
                f"{plural(len(p.history), 'commit')}{deleted}  ({p.reason})"
            )
        for sp in g.share_partitions:
            end = "-" if sp.log_end_offset is None else str(sp.log_end_offset)
            source = f" from {sp.log_end_source}" if sp.log_end_source else ""
            lag = "-" if sp.lag is None else str(sp.lag)
            out.append(
                f"  {sp.state.topic_label}-{sp.state.partition}  share  start offset "
                f"{sp.state.start_offset}  log end {end}{source}  lag {lag}  "
                f"{_in_flight(sp.state.in_flight)}"
            )
    return "\n".join(out)


@click.command("lag", cls=GuardedCommand)
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option(
    "--group",
    "groups",
    metavar="G",
    multiple=True,
    help="Only this group (repeatable: only these groups).",
)
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

    Exit status: 0, or 2 when PATH holds no __consumer_offsets (the error says what it holds).

    \b
    Examples:
      python -m codegen lag /var/kafka-logs
      python -m codegen lag broker-1/kafka-logs broker-2/kafka-logs --group my-app
      python -m codegen lag /var/kafka-logs --group my-app --window 5 --format jsonl
      python -m codegen lag /var/kafka-logs --format html --output report.html
    """
    if fmt == "html":
        _html_report(paths, groups, as_of, window, output)
        return
    out = LineOutput(output)
    try:
        point = parse_as_of(as_of) if as_of is not None else None
        one = groups[0] if len(groups) == 1 else None
        chunks: Iterable[list[GroupLag]] = lag_chunks(
            list(paths), one, point, window, min_commits=min_commits
        )
        if len(groups) > 1:  # a few groups: all found before a line is written
            chunks = [_chunks_of(chunks, groups)]
        for chunk in chunks:
            if fmt == "jsonl":
                out.write_parted_lines(_lag_json_parts(chunk))
            elif chunk:
                out.write_lines([render_lag_table(chunk).encode()])
        if not out.lines:
            out.write_lines([b"" if fmt == "jsonl" else _no_groups(paths).encode()])
    finally:  # an --output file written so far is closed on an error too
        out.close()


def _chunks_of(chunks: Iterable[list[GroupLag]], wanted: tuple[str, ...]) -> list[GroupLag]:
    """The groups of ``wanted`` among the chunks'; a group named that is in none is an
    InputError."""
    kept = [g for chunk in chunks for g in chunk if g.group in wanted]
    _require_groups(wanted, {g.group for g in kept})
    return kept


_JSON_COMMITS: Final = 1 << 16
"""Commits encoded at a time: text of bounded size, in few bulk steps."""


def lag_json_lines(reports: list[GroupLag]) -> Iterator[bytes]:
    """One compact JSON line per group (UTF-8, no newline), as :func:`jsonl` writes
    ``GroupLag.to_json()``; the groups are printed a few hundred thousand commits at a time,
    their commits from their columns (:func:`codegen.forensics.lag_json.group_lines`)."""
    for parts in _lag_json_parts(reports):
        yield b"".join(parts)


def _lag_json_parts(reports: list[GroupLag]) -> Iterator[list[bytes]]:
    """:func:`lag_json_lines`' lines, each in its parts (:meth:`LineOutput.write_parted_lines`
    writes them without joining)."""
    batch: list[GroupLag] = []
    size = 0
    for n, g in enumerate(reports):
        batch.append(g)
        size += sum(p.history.stop - p.history.start for p in g.partitions)
        if size >= _JSON_COMMITS or n == len(reports) - 1:
            with gc_paused():  # the lines' parts: many small objects, no cycles
                lines = group_lines(batch)
            yield from lines
            batch, size = [], 0
