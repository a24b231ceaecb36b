"""``python -m codegen tiered``: tiered storage from the disk (:mod:`codegen.tiered.report`)."""

from __future__ import annotations

import datetime as _dt
import html
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import click

from codegen.dumps.text_table import table_text
from codegen.failures import GuardedCommand
from codegen.forensics.inputs import InputError, parse_as_of
from codegen.forensics.output import OUTPUT_OPTION, emit, jsonl
from codegen.tiered.report import DEFAULT_STUCK_AFTER_MS, TieredReport, tiered_report

__all__ = [
    "EXIT_CLEAN",
    "EXIT_FINDINGS",
    "parse_duration",
    "render_html",
    "render_table",
    "tiered_command",
]

EXIT_CLEAN: Final = 0
EXIT_FINDINGS: Final = 1
_DURATION: Final = re.compile(r"^(\d+)(ms|s|m|h|d)?$")
_UNITS: Final = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration(text: str) -> int:
    """``90s``, ``10m``, ``2h``, ``1d`` or milliseconds, in milliseconds (an
    :class:`~codegen.forensics.inputs.InputError` otherwise)."""
    m = _DURATION.match(text.strip())
    if m is None:
        raise InputError(f"{text!r} is not a duration such as 500ms, 90s, 10m, 2h or 1d")
    return int(m.group(1)) * _UNITS[m.group(2) or "ms"]


def _time(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    moment = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _age(ms: int | None) -> str:
    if ms is None:
        return "-"
    seconds = ms / 1000
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _text(value: Any) -> str:
    return "-" if value is None else str(value)


def _offsets(first: int | None, last: int | None) -> str:
    return "-" if first is None else f"{first}..{_text(last)}"


def _last_change(g: dict[str, Any]) -> int | None:
    times = [g[k] for k in ("copyFinishedMs", "deleteStartedMs", "deleteFinishedMs")]
    return max((t for t in times if t is not None), default=None)


def _objects(g: dict[str, Any]) -> str:
    """What the remote storage holds of a segment: ``complete``, ``none``, or the files there
    and, after ``missing``, those a complete copy has besides."""
    if not g["files"]:
        return "none"
    if not g["missingFiles"]:
        return "complete"
    return f"{' '.join(g['files'])}; missing {' '.join(g['missingFiles'])}"


def render_table(report: TieredReport) -> str:
    """The findings first, then topics, partitions and each partition's segments."""
    s = report.sections
    out = [
        f"now {_time(report.now_ms)}" + (" (--as-of)" if report.as_of_ms is not None else ""),
        f"__remote_log_metadata partitions read: {report.metadata_partitions or 'none'}; "
        f"remote storage: {', '.join(report.remote_roots) or 'none'}",
    ]
    out += [f"note: {n}" for n in report.notes]
    findings = report.findings
    out.append(f"findings: {len(findings)}")
    out += [f"  {f}" for f in findings]
    out.append("")
    out.append(
        table_text(
            [
                "topic",
                "topic id",
                "partitions",
                "remote segments",
                "remote bytes",
                "stored bytes",
                "remote records",
                "local bytes",
                "local records",
                "offsets lost",
            ],
            [
                [
                    t["topic"],
                    _text(t["topicId"]),
                    str(t["partitions"]),
                    str(t["remoteSegments"]),
                    str(t["remoteBytes"]),
                    str(t["remoteStoredBytes"]),
                    _text(t["remoteRecords"]),
                    str(t["localBytes"]),
                    str(t["localRecords"]),
                    str(t["offsetsLost"]),
                ]
                for t in s.topics.to_pylist()
            ],
            title="topics: remote versus local",
        )
    )
    out.append(
        table_text(
            [
                "partition",
                "log start",
                "remote",
                "local start",
                "log end",
                "holes",
                "unfinished uploads",
                "hanging deletions",
                "epochs differ",
                "deletion",
            ],
            [
                [
                    f"{p['topic']}-{p['partition']}",
                    _text(p["logStartOffset"]),
                    _offsets(p["remoteLogStartOffset"], p["remoteEndOffset"])
                    if p["remoteEndOffset"] is not None and p["remoteEndOffset"] >= 0
                    else "-",
                    _text(p["localLogStartOffset"]),
                    _text(p["logEndOffset"]),
                    ", ".join(f"{h['firstOffset']}..{h['lastOffset']}" for h in p["holes"]) or "-",
                    str(p["unfinishedUploads"]),
                    str(p["hangingDeletions"]),
                    str(p["epochMismatches"]),
                    _text(p["partitionDeleteState"]),
                ]
                for p in s.partitions.to_pylist()
            ],
            title="partitions: log start, remote range, local start, log end",
        )
    )
    out.append(
        table_text(
            [
                "partition",
                "segment",
                "offsets",
                "status",
                "copy started",
                "last change",
                "age",
                "bytes",
                "records",
                "objects",
            ],
            [
                [
                    f"{g['topic']}-{g['partition']}",
                    g["segmentId"],
                    _offsets(g["startOffset"], g["endOffset"]),
                    g["status"],
                    _time(g["copyStartedMs"]),
                    _time(_last_change(g)),
                    _age(g["ageMs"]),
                    _text(g["sizeBytes"]),
                    _text(g["records"]),
                    _objects(g),
                ]
                for g in s.segments.to_pylist()
            ],
            title="remote segments",
        )
    )
    differing = [e for e in s.epochs.to_pylist() if e["status"] != "agrees"]
    if differing:
        out.append(
            table_text(
                ["partition", "segment", "epoch", "from offset", "checkpoint says", "status"],
                [
                    [
                        f"{e['topic']}-{e['partition']}",
                        e["segmentId"],
                        str(e["epoch"]),
                        str(e["offset"]),
                        _text(e["checkpointEpoch"]),
                        e["status"],
                    ]
                    for e in differing
                ],
                title="leader epochs of remote segments against the checkpoint",
            )
        )
    else:
        out.append(
            f"leader epochs: {s.epochs.num_rows} of live segments, all as the checkpoints say"
        )
    return "\n".join(out)


# ---------------------------------------------------------------------------------- HTML

_COLOURS: Final = {
    "remote": "#4c78a8",
    "local": "#54a24b",
    "hole": "#e45756",
    "unfinished": "#f58518",
}


def _bar(p: dict[str, Any], segments: list[dict[str, Any]], width: int = 760) -> str:
    """One partition's offsets as a bar: remote segments, the local log, holes, and the
    unfinished uploads above it."""
    start = p["logStartOffset"]
    end = p["logEndOffset"]
    if start is None or end is None or end <= start:
        return "<svg width='0' height='0'></svg>"
    span = max(end - start, 1)

    def x(offset: int) -> float:
        share: float = (offset - start) / span
        return round(share * width, 1)

    parts = []
    for g in segments:
        if g["startOffset"] is None or g["endOffset"] is None:
            continue
        unfinished = g["status"] in ("copying", "upload-stuck", "upload-abandoned")
        live = g["status"] in ("remote", "no-metadata")
        if not (unfinished or live):
            continue
        colour = _COLOURS["unfinished" if unfinished else "remote"]
        y, h = (2, 8) if unfinished else (12, 20)
        left, right = x(g["startOffset"]), x(g["endOffset"] + 1)
        parts.append(
            f"<rect x='{left}' y='{y}' width='{max(right - left - 1, 1)}' height='{h}' "
            f"fill='{colour}'><title>{html.escape(g['segmentId'])} {g['startOffset']}.."
            f"{g['endOffset']} {g['status']}</title></rect>"
        )
    local = p["localLogStartOffset"]
    if local is not None and end > local:
        parts.append(
            f"<rect x='{x(local)}' y='34' width='{max(x(end) - x(local), 1)}' height='10' "
            f"fill='{_COLOURS['local']}'><title>local {local}..{end - 1}</title></rect>"
        )
    for hole in p["holes"]:
        left, right = x(hole["firstOffset"]), x(hole["lastOffset"] + 1)
        parts.append(
            f"<rect x='{left}' y='12' width='{max(right - left, 1)}' height='32' "
            f"fill='{_COLOURS['hole']}'><title>lost {hole['firstOffset']}..{hole['lastOffset']}"
            f": {html.escape(hole['reason'])}</title></rect>"
        )
    return (
        f"<svg width='{width}' height='46' role='img' aria-label='offsets {start} to {end}'>"
        + "".join(parts)
        + "</svg>"
    )


def _html_table(head: Sequence[str], rows: list[list[Any]], empty: str) -> str:
    if not rows:
        return f"<p>{html.escape(empty)}</p>"
    top = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{c if str(c).startswith('<svg') else html.escape(str(c))}</td>"
                         for c in r) + "</tr>"
        for r in rows
    )  # fmt: skip
    return f"<table><tr>{top}</tr>{body}</table>"


def render_html(report: TieredReport, title: str) -> str:
    """The report as one self-contained page: findings, then per partition a bar of its
    offsets (remote segments, local log, holes, unfinished uploads), then the tables."""
    s = report.sections
    segments = s.segments.to_pylist()
    findings = "".join(f"<li>{html.escape(f)}</li>" for f in report.findings)
    partitions = _html_table(
        ["partition", "offsets", "log start", "local start", "remote end", "log end", "lost"],
        [
            [
                f"{p['topic']}-{p['partition']}",
                _bar(p, [g for g in segments if (g["topic"], g["topicId"], g["partition"])
                         == (p["topic"], p["topicId"], p["partition"])]),
                _text(p["logStartOffset"]), _text(p["localLogStartOffset"]),
                _text(p["remoteEndOffset"]), _text(p["logEndOffset"]), p["offsetsLost"],
            ]
            for p in s.partitions.to_pylist()
        ],
        "No partition in the input.",
    )  # fmt: skip
    topics = _html_table(
        ["topic", "remote segments", "remote bytes", "stored bytes", "remote records",
         "local bytes", "local records"],
        [
            [t["topic"], t["remoteSegments"], t["remoteBytes"], t["remoteStoredBytes"],
             _text(t["remoteRecords"]), t["localBytes"], t["localRecords"]]
            for t in s.topics.to_pylist()
        ],
        "No topic in the input.",
    )  # fmt: skip
    segment_table = _html_table(
        ["partition", "segment", "offsets", "status", "copy started", "last change", "age",
         "objects"],
        [
            [f"{g['topic']}-{g['partition']}", g["segmentId"],
             _offsets(g["startOffset"], g["endOffset"]), g["status"], _time(g["copyStartedMs"]),
             _time(_last_change(g)), _age(g["ageMs"]), _objects(g)]
            for g in segments
        ],
        "No remote segment.",
    )  # fmt: skip
    legend = " ".join(
        f"<span style='color:{c}'>&#9632;</span> {html.escape(n)}" for n, c in _COLOURS.items()
    )
    notes = "".join(f"<p>{html.escape(n)}</p>" for n in report.notes)
    style = (
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:middle}"
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{style}</style></head><body><h1>{html.escape(title)}</h1>"
        f"<p>Now: {_time(report.now_ms)}</p>{notes}"
        f"<h2>Findings ({len(report.findings)})</h2><ul>{findings or '<li>none</li>'}</ul>"
        f"<h2>Partitions</h2><p>{legend}</p>{partitions}"
        f"<h2>Topics: remote versus local</h2>{topics}"
        f"<h2>Remote segments</h2>{segment_table}</body></html>\n"
    )


@click.command("tiered", cls=GuardedCommand)
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option(
    "--as-of",
    "as_of",
    metavar="TIME",
    help="Read the disks as they were at this ISO-8601 time (UTC unless a zone is given): "
    "later metadata records and local batches are left out, and ages are taken at this time. "
    "Default: the newest time read.",
)
@click.option(
    "--stuck-after",
    "stuck_after",
    metavar="DURATION",
    default=f"{DEFAULT_STUCK_AFTER_MS // 60_000}m",
    show_default=True,
    help="An upload or a deletion unfinished for longer is stuck or hanging (500ms, 90s, 10m, "
    "2h, 1d).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "jsonl", "html"]),
    default="table",
    show_default=True,
    help="table: findings, topics, partitions, segments; jsonl: one JSON object per topic, "
    "partition, segment, event, epoch check and finding (kind says which); html: the report "
    "as one self-contained page with a bar of each partition's offsets.",
)
@OUTPUT_OPTION
def tiered_command(
    paths: tuple[str, ...], as_of: str | None, stuck_after: str, fmt: str, output: Path | None
) -> None:
    """Tiered storage from the disk: remote segments and their states, uploads that never
    finished, deletions that hang, holes, and bytes and records remote versus local.

    PATH... are broker log dirs (their __remote_log_metadata-N and data partition folders),
    partition folders, and the remote storage (Kafka's LocalTieredStorage layout: its folder
    or a <topic>-<partition>-<topic id> folder), on disk or in object storage, and globs. Per
    partition: the remote segments and their states over time (copy started and finished,
    delete started and finished, the partition's deletion), uploads that never finished (stuck,
    or abandoned: the broker copied the offsets again) and deletions that hang, each with its
    age and the objects left; the log start, remote range, local log start and log end (what
    the broker answers to ListOffsets earliest, latest-tiered, earliest-local and latest), a
    hole where no live remote segment covers offsets below the local log start (the offsets
    lost); remote segments' leader epochs against the partition's leader-epoch-checkpoint. Per
    topic: bytes and records remote versus local. Rules: docs/forensics.md, "Tiered storage".

    Exit status: 0 nothing found, 1 findings (a hole, an upload stuck or abandoned, a deletion
    hanging, objects missing or of no metadata record, a leader epoch that differs), 2 bad
    input (the error says what was expected and what was found).

    \b
    Examples:
      python -m codegen tiered /var/kafka/logs /var/kafka/remote
      python -m codegen tiered 'images/broker-*/logs' s3://bucket/tiered --format jsonl
      python -m codegen tiered /var/kafka/logs/orders-3 /var/kafka/remote --stuck-after 2m
      python -m codegen tiered /var/kafka/logs /var/kafka/remote --as-of 2024-05-01T12:00:00Z
      python -m codegen tiered /var/kafka/logs /var/kafka/remote --format html -o tiered.html
    """
    point = parse_as_of(as_of) if as_of is not None else None
    if point is not None and point.timestamp_ms is None:
        raise InputError("--as-of takes a time for tiered storage, not a log offset")
    report = tiered_report(
        list(paths), None if point is None else point.timestamp_ms, parse_duration(stuck_after)
    )
    if fmt == "jsonl":
        text = jsonl(report.lines())
    elif fmt == "html":
        names = ", ".join(Path(p).name for p in paths)
        text = render_html(report, f"Tiered storage of {names}")
    else:
        text = render_table(report)
    emit(text, output)
    sys.exit(EXIT_FINDINGS if report.findings else EXIT_CLEAN)
