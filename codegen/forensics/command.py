"""``python -m codegen downgrade-check`` and ``python -m codegen groups``."""

from __future__ import annotations

import datetime as _dt
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Final

import click

from codegen.forensics.downgrade import DowngradeReport, DumpInputError, check_downgrade
from codegen.forensics.groups import GroupEvent, GroupReport, group_reports, parse_as_of
from codegen.forensics.inputs import InputError, discover
from codegen.forensics.lag import (
    DEFAULT_MIN_COMMITS,
    DEFAULT_WINDOW,
    GroupLag,
    commits_json,
    lag_chunks,
    lag_reports,
)
from codegen.forensics.releases import UnknownReleaseError
from codegen.forensics.shares import DELIVERY_STATES, InFlightBatch
from codegen.text import plural

__all__ = [
    "OUTPUT_OPTION",
    "downgrade_check_command",
    "emit",
    "groups_command",
    "lag_command",
    "lag_json_lines",
    "render_groups_table",
    "render_lag_table",
    "render_table",
]

EXIT_SAFE = 0
EXIT_BLOCKED = 1
EXIT_BAD_INPUT = 2
EXIT_SAFE_AS_FAR_AS_CHECKED = 3

_COLUMNS = ("rule", "where", "record", "version", "group", "reason")


def render_table(report: DowngradeReport) -> str:
    """The checks with their results, the blocking records, what to do, then the verdict."""
    lines: list[str] = []
    if report.checks:
        mode = (
            "mode unknown: no __cluster_metadata or meta.properties in the input"
            if report.mode == "unknown"
            else f"{report.mode} mode"
        )
        lines.append(
            f"downgrade to Kafka {report.target} ({mode}; read: {', '.join(report.inputs)})"
        )
        width = max(len(c.name) for c in report.checks)
        for c in report.checks:
            lines.append(f"  {c.name.ljust(width)}  {c.status.upper():<14}  {c.summary}")
            lines.extend(f"  {''.ljust(width)}  {'':<14}  - {f}" for f in c.findings)
    rows = [
        (
            b.rule,
            f"{b.topic}-{b.partition}@{b.offset}",
            f"{b.name} ({b.record_type})",
            str(b.value_version),
            _group_cell(b.group),
            b.reason,
        )
        for b in [*report.blockers, *report.ignored]
    ]
    if rows:
        lines.append("records:")
        widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(_COLUMNS[:-1])]
        for cells in [_COLUMNS, *rows]:
            padded = (v.ljust(w) for v, w in zip(cells[:-1], widths, strict=True))
            lines.append("  " + "  ".join(padded) + "  " + cells[-1])
    steps = report.steps()
    if steps:
        lines.append("what to do, in order (KIP-848: consumers first, then configs and features):")
        lines.extend(f"  {n}. {step}" for n, step in enumerate(steps, start=1))
    for err in report.segment_errors:
        lines.append(f"warning: {err}")
    not_made = [c.name for c in report.checks if c.status not in ("passed", "blocked")]
    scope = f"; not checked in full: {', '.join(not_made)}" if not_made else ""
    lines.append(
        f"{report.verdict}: Kafka {report.target}, "
        f"{plural(report.live_records, 'live __consumer_offsets record')}, "
        f"{plural(len(report.blockers), 'blocking record')}, {len(report.ignored)} skipped{scope}"
    )
    return "\n".join(lines)


def _group_cell(group: str | None) -> str:
    if group is None:
        return "-"
    return '"" (empty group id)' if group == "" else group


def exit_code(report: DowngradeReport) -> int:
    if report.blocked:
        return EXIT_BLOCKED
    return EXIT_SAFE if report.safe else EXIT_SAFE_AS_FAR_AS_CHECKED


@click.command("downgrade-check")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
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
    help="table: each check with its result, the blocking records, what to do, the verdict; "
    "json: one object.",
)
def downgrade_check_command(paths: tuple[str, ...], to: str, fmt: str) -> None:
    """Tell whether the brokers of Kafka VERSION can run a cluster's disks.

    PATH... are broker log dirs (one per broker), partition folders or segment files; globs
    are expanded. Checks, each passed, blocked (what blocks, what to do) or not checked (why):
    the group coordinator (__consumer_offsets), the transaction coordinator
    (__transaction_state), the share coordinator (__share_group_state), dynamic configs of
    resource types the release does not know (KIP-848's GROUP configs) and the finalized
    metadata.version and feature levels (__cluster_metadata). Only records live after
    compaction are judged. Rules: docs/forensics.md.

    Exit status: 0 safe (every check made and passed), 1 blocked, 2 bad input, 3 safe as far as
    checked (nothing blocks, but a check could not be made in full: the verdict says why).

    \b
    Examples:
      python -m codegen downgrade-check /var/kafka-logs --to 3.9
      python -m codegen downgrade-check 'images/broker-*/kafka-logs' --to 3.4
      python -m codegen downgrade-check /var/kafka-logs/__consumer_offsets-7 --to 2.1 --format json
    """
    try:
        report = check_downgrade(list(paths), to)
    except (UnknownReleaseError, InputError) as exc:
        click.echo(f"downgrade-check: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if fmt == "json":
        doc = report.to_json()
        doc["exitCode"] = exit_code(report)
        click.echo(json.dumps(doc, indent=1))
    else:
        click.echo(render_table(report))
    sys.exit(exit_code(report))


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
    return "\n".join(map(_group_block, reports))


def _group_block(r: GroupReport) -> str:
    """A group's block of :func:`render_groups_table`."""
    out: list[str] = []
    gen = f"generation {r.generation}" if r.type == "classic" else f"epoch {r.epoch}"
    kind = r.type or "deleted"
    out.append(
        f"{_group_cell(r.group)}  (partition {r.partition}, {kind}, {r.state}, "
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


OUTPUT_OPTION = click.option(
    "--output",
    "-o",
    "output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report to FILE instead of standard output.",
)


def jsonl(docs: Iterable[Any]) -> str:
    """Compact JSON lines, UTF-8 text as the dump's jsonl (orjson; the standard encoder for
    what orjson refuses: integers past 64 bits, lone surrogates)."""
    return "\n".join(map(_json_line, docs))


def _json_line(doc: Any) -> str:
    import orjson  # the dumps extra; the lint's hook runs this CLI without it

    try:
        return orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def emit(text: str, output: Path | None) -> None:
    """``text`` to standard output, or to ``output`` (``--output``), ending with a newline."""
    if output is None:
        click.echo(text, nl=not text.endswith("\n"))
    else:
        output.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")


def emit_lines(texts: Iterable[str], output: Path | None) -> None:
    """Each of ``texts`` and a newline, to standard output or to ``output``, as they come: a
    large report is never held as one string."""
    if output is None:
        for text in texts:
            click.echo(text)
        return
    with output.open("w", encoding="utf-8") as out:
        for text in texts:
            out.write(text + "\n")


def _no_groups(paths: tuple[str, ...]) -> str:
    return (
        f"no group in {', '.join(paths)}: its __consumer_offsets partitions hold no group "
        "record and no committed offset"
    )


@click.command("groups")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
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
@OUTPUT_OPTION
def groups_command(
    paths: tuple[str, ...], group: str | None, as_of: str | None, fmt: str, output: Path | None
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
        _html_report(paths, group, as_of, DEFAULT_WINDOW, output, "groups")
        return
    try:
        point = parse_as_of(as_of) if as_of is not None else None
        reports = group_reports(list(paths), group, point)
    except ValueError as exc:  # InputError and a bad --as-of are both ValueErrors
        click.echo(f"groups: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if not reports:
        emit("" if fmt == "jsonl" else _no_groups(paths), output)
    elif fmt == "jsonl":  # a group at a time: a large report is never one string
        emit_lines((_json_line(r.to_json()) for r in reports), output)
    else:
        emit_lines(map(_group_block, reports), output)


def _html_report(
    paths: tuple[str, ...],
    group: str | None,
    as_of: str | None,
    window: int,
    output: Path | None,
    command: str,
) -> None:
    from codegen.forensics.report import ReportUnavailableError, render_html

    try:
        point = parse_as_of(as_of) if as_of is not None else None
        dirs = discover(list(paths))
        lags = lag_reports(dirs, None, point, window)
        groups = group_reports(dirs, None, point)
        if group is not None:
            lags = [g for g in lags if g.group == group]
            groups = [g for g in groups if g.group == group]
            if not lags and not groups:
                raise DumpInputError(
                    f"group {group!r} is not in the dump; run without --group to list them"
                )
        names = ", ".join(Path(p).name for p in paths)
        emit(render_html(groups, lags, f"Consumer groups of {names}"), output)
    except (ValueError, ReportUnavailableError) as exc:
        click.echo(f"{command}: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)


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
        out.append(f"{_group_cell(g.group)}  {g.status or 'no status'}  (now {_time(g.now)})")
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


@click.command("lag")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
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
    group: str | None,
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
        _html_report(paths, group, as_of, window, output, "lag")
        return
    out = _LazyOutput(output)
    try:
        point = parse_as_of(as_of) if as_of is not None else None
        chunks = lag_chunks(list(paths), group, point, window, min_commits=min_commits)
        for chunk in chunks:
            if fmt == "jsonl":
                out.write_lines(lag_json_lines(chunk))
            elif chunk:
                out.write_lines([render_lag_table(chunk).encode()])
    except ValueError as exc:
        out.close()
        click.echo(f"lag: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if not out.lines:
        out.write_lines([b"" if fmt == "jsonl" else _no_groups(paths).encode()])
    out.close()


_JSON_COMMITS: Final = 1 << 16
"""Commits encoded at a time: text of bounded size, in few bulk steps."""


def lag_json_lines(reports: list[GroupLag]) -> Iterator[bytes]:
    """One compact JSON line per group (UTF-8, no newline), as :func:`jsonl` writes
    ``GroupLag.to_json()``; the commits are encoded from their columns, a few hundred
    thousand at a time (:func:`codegen.forensics.lag.commits_json`)."""
    import orjson

    batch: list[GroupLag] = []
    size = 0
    for n, g in enumerate(reports):
        batch.append(g)
        size += sum(len(p.history) for p in g.partitions)
        if size >= _JSON_COMMITS or n == len(reports) - 1:
            arrays = iter(commits_json([p for b in batch for p in b.partitions]))
            for b in batch:
                texts = [orjson.Fragment(next(arrays)) for _ in b.partitions]
                try:
                    yield orjson.dumps(b.to_json(texts))
                except TypeError:  # what orjson refuses: integers past 64 bits, lone surrogates
                    yield _json_line(b.to_json()).encode()
            batch, size = [], 0


class _LazyOutput:
    """Standard output, or ``--output`` opened at the first line (nothing written on an error
    before it): lines written as they come, each ending with a newline."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.lines = 0
        self._file: BinaryIO | None = None

    def write_lines(self, lines: Iterable[bytes]) -> None:
        if self._file is None:
            if self.path is None:
                self._file = sys.stdout.buffer
            else:
                self._file = self.path.open("wb")
        out: BinaryIO = self._file
        for line in lines:
            out.write(line)
            out.write(b"\n")
            self.lines += 1

    def close(self) -> None:
        if self._file is None:
            return
        if self.path is None:
            self._file.flush()
        else:
            self._file.close()
