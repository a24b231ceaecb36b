"""``python -m codegen downgrade-check`` and ``python -m codegen groups``."""

from __future__ import annotations

import datetime as _dt
import json
import sys
from pathlib import Path

import click

from codegen.forensics.downgrade import DowngradeReport, DumpInputError, check_downgrade
from codegen.forensics.groups import GroupEvent, GroupReport, group_reports, parse_as_of
from codegen.forensics.lag import DEFAULT_WINDOW, GroupLag, lag_reports
from codegen.forensics.releases import UnknownReleaseError
from codegen.text import plural

__all__ = [
    "downgrade_check_command",
    "groups_command",
    "lag_command",
    "render_groups_table",
    "render_lag_table",
    "render_table",
]

EXIT_SAFE = 0
EXIT_BLOCKED = 1
EXIT_BAD_INPUT = 2

_COLUMNS = ("rule", "partition", "offset", "record", "version", "group", "reason")


def render_table(report: DowngradeReport) -> str:
    """The report as a plain-text table, then a one-line verdict."""
    rows = [
        (
            b.rule,
            str(b.partition),
            str(b.offset),
            f"{b.name} ({b.record_type})",
            str(b.value_version),
            b.group if b.group is not None else "-",
            b.reason,
        )
        for b in [*report.blockers, *report.ignored]
    ]
    lines: list[str] = []
    if rows:
        widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(_COLUMNS[:-1])]
        for cells in [_COLUMNS, *rows]:
            padded = (v.ljust(w) for v, w in zip(cells[:-1], widths, strict=True))
            lines.append("  ".join(padded) + "  " + cells[-1])
    for err in report.segment_errors:
        lines.append(f"warning: {err}")
    verdict = "SAFE" if report.safe else "BLOCKED"
    lines.append(
        f"{verdict}: Kafka {report.target}, {plural(report.live_records, 'live record')}, "
        f"{len(report.blockers)} blocking, {len(report.ignored)} skipped"
    )
    return "\n".join(lines)


@click.command("downgrade-check")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--to",
    "to",
    required=True,
    metavar="VERSION",
    help="Target Kafka release, from 0.11 to 4.4 (e.g. 2.1, 3.4, 4.0; 3.4.1 counts as 3.4).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="table: one row per blocking or skipped record, then the verdict; json: one object.",
)
def downgrade_check_command(path: Path, to: str, fmt: str) -> None:
    """Tell whether the group coordinator of Kafka VERSION can load a __consumer_offsets dump.

    PATH is a __consumer_offsets-N folder, a broker's log folder holding such folders, or a
    segment file. Only records live after compaction are judged (last value per key, not
    tombstoned, transactional commits once committed). Rules (docs/forensics.md): unknown
    record types before KIP-915 (3.5), value versions newer than the release reads and not
    readable as a flexible version, consumer/share/streams groups the release does not know
    (convert or delete them first, KIP-848).

    Exit status: 0 safe, 1 blocked, 2 bad input.

    \b
    Examples:
      python -m codegen downgrade-check /var/kafka-logs --to 3.9
      python -m codegen downgrade-check /var/kafka-logs/__consumer_offsets-7 --to 2.1 --format json
    """
    try:
        report = check_downgrade(path, to)
    except UnknownReleaseError as exc:
        click.echo(f"downgrade-check: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except DumpInputError as exc:
        click.echo(f"downgrade-check: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if fmt == "json":
        click.echo(json.dumps(report.to_json(), indent=1))
    else:
        click.echo(render_table(report))
    sys.exit(EXIT_SAFE if report.safe else EXIT_BLOCKED)


def _format_event(e: GroupEvent) -> str:
    detail = " ".join(f"{k}={v}" for k, v in e.detail.items())
    return f"    {e.offset:>8}  {_time(e.timestamp)}  {e.kind:<19} {detail}".rstrip()


def _time(ms: int) -> str:
    if ms < 0:
        return "-".ljust(24)
    moment = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def render_groups_table(reports: list[GroupReport]) -> str:
    """One block per group: its state, members, assignors and timeline."""
    out: list[str] = []
    for r in reports:
        gen = f"generation {r.generation}" if r.type == "classic" else f"epoch {r.epoch}"
        kind = r.type or "deleted"
        out.append(
            f"{r.group}  (partition {r.partition}, {kind}, {r.state}, "
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
            switch = (
                f"; cooperative switch: {inv.cooperative_switch}" if inv.cooperative_switch else ""
            )
            out.append(
                f"  assignors: chosen {inv.chosen or '-'} (over time: "
                f"{', '.join(inv.chosen_over_time) or '-'}){switch}: {inv.why}"
            )
        out.append("  timeline:")
        out.extend(_format_event(e) for e in r.events)
    return "\n".join(out)


@click.command("groups")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--group", "group", metavar="G", help="Only this group.")
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
def groups_command(path: Path, group: str | None, as_of: str | None, fmt: str) -> None:
    """Each group of a __consumer_offsets dump at a point in time, and its timeline.

    Type (classic, consumer, share, streams), state, protocol or assignor, generation or
    epoch, members, the assignor inventory (KIP-726) and the timeline: rebalances, members
    joining and leaving, protocol conversions, assignor changes, offset deletions, group
    deletion, and consumer-protocol member epochs with per-partition assignment epochs
    (KAFKA-19779). PATH is as for downgrade-check. See docs/forensics.md.

    \b
    Examples:
      python -m codegen groups /var/kafka-logs
      python -m codegen groups /var/kafka-logs/__consumer_offsets-7 --group my-app --as-of 1200
      python -m codegen groups /var/kafka-logs --as-of 2024-05-01T12:00:00Z --format jsonl
      python -m codegen groups /var/kafka-logs --format html > report.html
    """
    if fmt == "html":
        _html_report(path, group, as_of, DEFAULT_WINDOW)
        return
    try:
        point = parse_as_of(as_of) if as_of is not None else None
        reports = group_reports(path, group, point)
    except ValueError as exc:  # DumpInputError and a bad --as-of are both ValueErrors
        click.echo(f"groups: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if fmt == "jsonl":
        for r in reports:
            click.echo(json.dumps(r.to_json(), separators=(",", ":")))
    else:
        click.echo(render_groups_table(reports))


def _html_report(path: Path, group: str | None, as_of: str | None, window: int) -> None:
    from codegen.forensics.report import ReportUnavailableError, render_html

    try:
        point = parse_as_of(as_of) if as_of is not None else None
        lags = lag_reports(path, None, point, window)
        groups = group_reports(path, None, point)
        if group is not None:
            lags = [g for g in lags if g.group == group]
            groups = [g for g in groups if g.group == group]
            if not lags and not groups:
                raise DumpInputError(
                    f"group {group!r} is not in the dump; run without --group to list them"
                )
        click.echo(render_html(groups, lags, f"Consumer groups of {path.name}"), nl=False)
    except (ValueError, ReportUnavailableError) as exc:
        click.echo(f"{exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)


def render_lag_table(reports: list[GroupLag]) -> str:
    """One line per group, one per partition under it."""
    out: list[str] = []
    for g in reports:
        out.append(f"{g.group}  {g.status or 'no status'}  (now {_time(g.now)})")
        for p in g.partitions:
            last = p.commits[-1]
            end = "-" if p.log_end_offset is None else str(p.log_end_offset)
            lag = "-" if p.lag is None else str(p.lag)
            deleted = "" if p.live else "  offset deleted"
            out.append(
                f"  {p.topic}-{p.partition}  {p.status or '-':<5}  committed {last.offset} "
                f"at {_time(last.commit_timestamp)}  log end {end}  lag {lag}  "
                f"{plural(len(p.commits), 'commit')}{deleted}  ({p.reason})"
            )
    return "\n".join(out)


@click.command("lag")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--group", "group", metavar="G", help="Only this group.")
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
    "--format",
    "fmt",
    type=click.Choice(["table", "jsonl", "html"]),
    default="table",
    show_default=True,
    help="table: a line per group and partition; jsonl: one JSON object per group with every "
    "commit; html: the report (groups, offsets and lag with plots) as one self-contained file.",
)
def lag_command(path: Path, group: str | None, as_of: str | None, window: int, fmt: str) -> None:
    """Committed offsets over time, lag and a Burrow-like status (OK, WARN, ERR, STOP, STALL).

    Lag is taken against the log end offsets read from the data topics' segments in the same
    log folder (PATH itself, or the folder holding the __consumer_offsets-N folder given). The
    status rules are in docs/forensics.md.

    \b
    Examples:
      python -m codegen lag /var/kafka-logs
      python -m codegen lag /var/kafka-logs --group my-app --window 5 --format jsonl
      python -m codegen lag /var/kafka-logs --format html > report.html
    """
    if fmt == "html":
        _html_report(path, group, as_of, window)
        return
    try:
        point = parse_as_of(as_of) if as_of is not None else None
        reports = lag_reports(path, group, point, window)
    except ValueError as exc:
        click.echo(f"lag: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if fmt == "jsonl":
        for r in reports:
            click.echo(json.dumps(r.to_json(), separators=(",", ":")))
    else:
        click.echo(render_lag_table(reports))
