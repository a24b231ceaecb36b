"""``python -m codegen transactions``: the transactions of a cluster's disks."""

from __future__ import annotations

import html
import sys
from pathlib import Path

import click

from codegen.dumps.coordinator import CONSUMER_OFFSETS
from codegen.dumps.views.transactions import DEFAULT_MAX_TIMEOUT_MS, FIND_HANGING, RULES
from codegen.failures import EXIT_BAD_INPUT, GuardedCommand
from codegen.forensics.inputs import parse_as_of
from codegen.forensics.output import OUTPUT_OPTION, emit, jsonl
from codegen.forensics.partition_transactions import OpenTransaction
from codegen.forensics.transactions import (
    TransactionReport,
    transaction_report,
)
from codegen.gc_pause import gc_paused
from codegen.text import utc_text

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_HANGING",
    "EXIT_NONE_HANGING",
    "render_transactions_html",
    "render_transactions_table",
    "transactions_command",
]

EXIT_NONE_HANGING = 0
EXIT_HANGING = 1


def _time(ms: int | None) -> str:
    return "-" if ms is None else utc_text(ms, none="-")


def _ms(ms: int | None) -> str:
    return "-" if ms is None else f"{ms} ms"


def _open_head(t: OpenTransaction) -> str:
    return (
        f"  {t.topic}-{t.partition}  producer {t.producer_id} epoch {t.producer_epoch}  "
        f"first offset {t.first_offset}  open {_ms(t.age_ms)}  last write {_ms(t.idle_ms)} ago  "
        f"transactional id {t.transactional_id or '-'}"
    )


def _pending(t: OpenTransaction) -> list[str]:
    if t.topic != CONSUMER_OFFSETS:
        return []
    commits = ", ".join(
        f"{c.group} {c.topic}-{c.partition} at {c.offset}" for c in t.pending_commits
    )
    return [
        f"    keeps pending the offsets of groups: {', '.join(t.pending_groups) or 'none found'}"
        f" ({commits or 'no offset commit read'}): consumers asking for stable offsets get "
        "UNSTABLE_OFFSET_COMMIT until it ends"
    ]


def render_transactions_table(report: TransactionReport) -> str:
    """Hanging transactions first (with the command that ends each), then the open ones that
    do not hang (what comes next, and when), then partitions (the data partitions, then
    ``__consumer_offsets``), then transactional ids with their transactions and fencing."""
    out: list[str] = [f"now {_time(report.now)}; coordinator: {report.coordinator or 'not given'}"]
    if report.rule != FIND_HANGING:
        out.append(f"rule: {report.rule} (looser than kafka-transactions find-hanging)")
    out.extend(f"note: {n}" for n in report.notes)
    hanging = report.hanging
    out.append(f"hanging transactions: {len(hanging)}")
    for t in hanging:
        groups = ", ".join(f"{g.group} (at {g.committed_offset})" for g in t.blocked_groups)
        out.append(_open_head(t))
        out.append(f"    why: {t.reason}")
        out.extend(_pending(t))
        if t.topic != CONSUMER_OFFSETS:
            out.append(f"    blocks read_committed groups: {groups or 'none found'}")
        command = t.abort_command
        out.append(f"    abort it: {command}" if command else f"    {t.outlook}")
    waiting = [t for t in report.open if not t.hanging]
    out.append(f"open transactions not hanging: {len(waiting)}")
    for t in waiting:
        out.append(_open_head(t))
        out.append(f"    {t.outlook}")
        out.extend(_pending(t))
    out.append("partitions:")
    for p in [*report.partitions, *report.offset_partitions]:
        out.append(
            f"  {p.topic}-{p.partition}  log end {p.log_end_offset}  LSO {p.last_stable_offset}  "
            f"gap {p.gap}  open {len(p.open)}  committed {p.committed}  "
            f"aborted {len(p.aborted_from_markers)} (markers) / {len(p.aborted_from_index)} "
            "(.txnindex)"
        )
        for t in p.open:
            state = "HANGING" if t.hanging else "open"
            out.append(
                f"    {state:<7} producer {t.producer_id} epoch {t.producer_epoch}  first offset "
                f"{t.first_offset}  age {_ms(t.age_ms)}  {t.transactional_id or ''}".rstrip()
            )
        for a in p.aborted_from_markers:
            out.append(
                f"    aborted producer {a.producer_id}  {a.first_offset}..{a.last_offset}  "
                f"LSO then {a.last_stable_offset}"
            )
        out.extend(f"    .txnindex: {problem}" for problem in p.index_problems)
        if p.snapshot is not None:
            out.append(f"    producers in {Path(p.snapshot).name}: {len(p.producers)}")
            for e in p.producers:
                txn = e["currentTxnFirstOffset"]
                out.append(
                    f"      producer {e['producerId']} epoch {e['producerEpoch']}  last sequence "
                    f"{e['lastSequence']}  last timestamp {_time(e['lastTimestamp'])}  "
                    f"coordinator epoch {e['coordinatorEpoch']}"
                    + (f"  open transaction from {txn}" if txn >= 0 else "")
                )
    out.append("transactional ids:")
    for tid in report.transactional_ids:
        last = tid.changes[-1] if tid.changes else None
        state = "deleted" if tid.deleted_at is not None else (last.state if last else "-")
        out.append(
            f"  {tid.transactional_id}  {state}  producer "
            f"{last.producer_id if last else '-'} epoch {last.producer_epoch if last else '-'}  "
            f"timeout {_ms(last.timeout_ms if last else None)}  "
            f"(__transaction_state-{tid.coordinator_partition})"
        )
        for c in tid.changes:
            if c.change:
                out.append(
                    f"    {c.change} at {_time(c.timestamp)}: producer {c.producer_id} epoch "
                    f"{c.producer_epoch} ({c.state})"
                )
        for x in tid.transactions:
            parts = ", ".join(f"{t}-{p}" for t, p in x.partitions)
            out.append(
                f"    {x.outcome:<19} from {_time(x.start_timestamp)}  took "
                f"{_ms(x.duration_ms)}  producer {x.producer_id} epoch {x.producer_epoch}  "
                f"[{parts}]"
            )
    for err in report.errors:
        out.append(f"warning: {err}")
    return "\n".join(out)


def _cells(values: list[object]) -> str:
    return "".join(f"<td>{html.escape(str(v))}</td>" for v in values)


def _table(head: list[str], rows: list[list[object]], empty: str) -> str:
    if not rows:
        return f"<p>{html.escape(empty)}</p>"
    top = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join(f"<tr>{_cells(r)}</tr>" for r in rows)
    return f"<table><tr>{top}</tr>{body}</table>"


def render_transactions_html(report: TransactionReport, title: str) -> str:
    """The report as one self-contained page: the answer (hanging transactions) first, then
    every open transaction with its producer, offsets and what comes next."""
    hanging = _table(
        [
            "partition",
            "producer",
            "epoch",
            "first offset",
            "open",
            "last write",
            "transactional id",
            "why",
            "blocked or pending groups",
            "abort",
        ],
        [
            [
                f"{t.topic}-{t.partition}",
                t.producer_id,
                t.producer_epoch,
                t.first_offset,
                _ms(t.age_ms),
                f"{_ms(t.idle_ms)} ago",
                t.transactional_id or "-",
                t.reason,
                ", ".join(t.pending_groups or [g.group for g in t.blocked_groups]) or "none found",
                t.abort_command or t.outlook,
            ]
            for t in report.hanging
        ],
        "No hanging transaction.",
    )
    waiting = _table(
        [
            "partition",
            "producer",
            "epoch",
            "first offset",
            "last offset",
            "open",
            "last write",
            "transactional id",
            "what comes next",
            "times out at",
            "pending groups",
        ],
        [
            [
                f"{t.topic}-{t.partition}",
                t.producer_id,
                t.producer_epoch,
                t.first_offset,
                t.last_offset,
                _ms(t.age_ms),
                f"{_ms(t.idle_ms)} ago",
                t.transactional_id or "-",
                t.outlook,
                _time(t.times_out_at),
                ", ".join(t.pending_groups) or "-",
            ]
            for t in report.open
            if not t.hanging
        ],
        "No other open transaction.",
    )
    partitions = _table(
        ["partition", "log end", "LSO", "gap", "open", "committed", "aborted", ".txnindex"],
        [
            [
                f"{p.topic}-{p.partition}",
                p.log_end_offset,
                p.last_stable_offset,
                p.gap,
                len(p.open),
                p.committed,
                len(p.aborted_from_markers),
                "; ".join(p.index_problems) or "agrees",
            ]
            for p in [*report.partitions, *report.offset_partitions]
        ],
        "No data partition in the input.",
    )
    ids = _table(
        ["transactional id", "state", "producer", "epoch", "timeout", "transactions", "fencing"],
        [
            [
                t.transactional_id,
                "deleted" if t.deleted_at is not None else (t.changes[-1].state),
                t.changes[-1].producer_id,
                t.changes[-1].producer_epoch,
                _ms(t.changes[-1].timeout_ms),
                ", ".join(f"{x.outcome} ({_ms(x.duration_ms)})" for x in t.transactions),
                ", ".join(f"{c.change} to epoch {c.producer_epoch}" for c in t.changes if c.change),
            ]
            for t in report.transactional_ids
            if t.changes
        ],
        "No __transaction_state in the input.",
    )
    notes = "".join(f"<p>{html.escape(n)}</p>" for n in report.notes)
    style = (
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left}"
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{style}</style></head><body><h1>{html.escape(title)}</h1>"
        f"<p>Now: {_time(report.now)}</p>{notes}"
        f"<h2>Hanging transactions ({len(report.hanging)})</h2>{hanging}"
        f"<h2>Open transactions not hanging ({len(report.open) - len(report.hanging)})</h2>"
        f"{waiting}<h2>Partitions</h2>{partitions}<h2>Transactional ids</h2>{ids}</body></html>\n"
    )


@click.command("transactions", cls=GuardedCommand)
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--transactional-id", "transactional_id", metavar="ID", help="Only this id.")
@click.option(
    "--as-of",
    "as_of",
    metavar="TIME|OFFSET",
    help="Read the disks as they were at this ISO-8601 time (UTC unless a zone is given), or "
    "at this __consumer_offsets offset (digits; every other partition as of the newest batch "
    "time it keeps): later batches and records are left out, and ages are taken at that time. "
    "Default: the newest batch time read.",
)
@click.option(
    "--max-timeout-ms",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_TIMEOUT_MS,
    show_default=True,
    help="The maximum transaction timeout (the brokers' transaction.max.timeout.ms; "
    "kafka-transactions find-hanging's --max-transaction-timeout): an open transaction hangs "
    "once its producer's last write is older than this and the coordinator does not list it.",
)
@click.option(
    "--rule",
    type=click.Choice(RULES),
    default=FIND_HANGING,
    show_default=True,
    help="find-hanging: Kafka's rule (KIP-664), above. loose: also flag an open transaction "
    "older than its timeout (from its first batch) or one the coordinator does not list, "
    "however young: looser than Kafka, it flags transactions the coordinator still ends on "
    "its own; abort commands are still given only where find-hanging lists one.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "jsonl", "html"]),
    default="table",
    show_default=True,
    help="table: hanging transactions, partitions, transactional ids; jsonl: one JSON object "
    "per transactional id, partition and hanging transaction (kind says which); html: the "
    "report as one self-contained page.",
)
@OUTPUT_OPTION
def transactions_command(
    paths: tuple[str, ...],
    transactional_id: str | None,
    as_of: str | None,
    max_timeout_ms: int,
    rule: str,
    fmt: str,
    output: Path | None,
) -> None:
    """Transactions from the disk: open and hanging transactions, stuck last stable offsets,
    producer state and aborted ranges.

    PATH... are broker log dirs (one per broker), partition folders or segments, and globs.
    From __transaction_state: each transactional id's states over time, producer id and epoch
    changes (fencing), partitions, timeout, and each transaction's duration and outcome. From
    the data partitions: open transactions (producer id, epoch, first offset, age), the last
    stable offset (LSO) they imply, the log end and the gap; aborted ranges from the ABORT
    markers checked against the .txnindex files; producers from the newest .snapshot. From
    __consumer_offsets: open transactional offset commits and the groups whose offsets they
    keep pending. An open transaction hangs by kafka-transactions find-hanging's rule
    (KIP-664): its producer's last write is older than --max-timeout-ms and the coordinator
    does not list it; each comes with the read_committed groups it blocks and the command that
    aborts it, and every other open transaction says when it would time out. Rules:
    docs/forensics.md.

    Exit status: 0 no hanging transaction, 1 hanging transaction(s) found, 2 bad input (the
    error says what was expected and what was found).

    \b
    Examples:
      python -m codegen transactions /var/kafka-logs
      python -m codegen transactions 'images/broker-*/kafka-logs' --format jsonl
      python -m codegen transactions /var/kafka-logs --transactional-id payments-1
      python -m codegen transactions /var/kafka-logs --as-of 2024-05-01T12:00:00Z
      python -m codegen transactions /var/kafka-logs --format html --output txns.html
    """
    with gc_paused():  # the report's objects make no cycles (see transaction_report)
        point = None if as_of is None else parse_as_of(as_of)
        report = transaction_report(list(paths), transactional_id, point, max_timeout_ms, rule)
        if fmt == "jsonl":
            text = jsonl(report.lines())
        elif fmt == "html":
            names = ", ".join(Path(p).name for p in paths)
            text = render_transactions_html(report, f"Transactions of {names}")
        else:
            text = render_transactions_table(report)
    emit(text, output)
    sys.exit(EXIT_HANGING if report.hanging else EXIT_NONE_HANGING)
