"""``python -m codegen groups``: each group of a dump at a point in time, and its timeline
(:mod:`codegen.forensics.groups`), as a table, JSON lines or the HTML report."""

from __future__ import annotations

from pathlib import Path

import click

from codegen.failures import GuardedCommand
from codegen.forensics.groups import GroupEvent, GroupReport, group_reports
from codegen.forensics.inputs import parse_as_of
from codegen.forensics.output import (
    GROUP_OPTION,
    OUTPUT_OPTION,
    LineOutput,
    ReadErrors,
    emit,
    group_cell,
    no_groups,
    require_groups,
    time_cell,
)
from codegen.forensics.shares import in_flight_text
from codegen.gc_pause import gc_paused
from codegen.text import plural

__all__ = ["groups_command", "render_groups_table"]


def _format_event(e: GroupEvent) -> str:
    detail = " ".join(f"{k}={v}" for k, v in e.detail.items())
    return f"    {e.offset:>8}  {time_cell(e.timestamp)}  {e.kind:<19} {detail}".rstrip()


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
            f"{sp.leader_epoch}  {in_flight_text(sp.in_flight)}"
        )
    out.append("  timeline:")
    out.extend(_format_event(e) for e in r.events)
    return "\n".join(out)


@click.command("groups", cls=GuardedCommand)
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@GROUP_OPTION
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

    Exit status: 0; 1 when some of the input could not be read (a batch not read, a record
    that did not decode: each is said on stderr as dump says it, and the answer is that of
    what was read); 1 also for --format html without
    the report extra (said before any work); 2 when PATH holds no __consumer_offsets (the error
    says what it holds).

    \b
    Examples:
      python -m codegen groups /var/kafka-logs
      python -m codegen groups /var/kafka-logs/__consumer_offsets-7 --group my-app --as-of 1200
      python -m codegen groups 'images/broker-*/kafka-logs' --format jsonl
      python -m codegen groups /var/kafka-logs --as-of 2024-05-01T12:00:00Z --format jsonl
      python -m codegen groups /var/kafka-logs --format html --output report.html
    """
    if fmt == "html":
        from codegen.forensics.burrow import DEFAULT_WINDOW  # --format html only
        from codegen.forensics.report import html_report

        html_report(paths, groups, as_of, DEFAULT_WINDOW, output)
        return
    point = parse_as_of(as_of) if as_of is not None else None
    one = groups[0] if len(groups) == 1 else None
    damage = ReadErrors()
    # The replay's objects, the reports and their lines' parts: many objects, no cycles; the
    # collector paused from the replay to the last line (a collection between them walked them
    # all: about 20 ms at 1 M records).
    with gc_paused():
        found = group_reports(list(paths), one, point, damage.errors)
        damage.write_new()
        reports = _only(found, groups)
        if not reports:
            emit("" if fmt == "jsonl" else no_groups(paths), output)
        else:  # a group at a time: a large report is never one string
            out = LineOutput(output)
            if fmt == "jsonl":
                from codegen.forensics.groups_json import group_lines  # jsonl only

                out.write_lines(group_lines(reports))
            else:
                out.write_lines(_group_block(r).encode() for r in reports)
            out.close()
    damage.finish()


def _only(reports: list[GroupReport], wanted: tuple[str, ...]) -> list[GroupReport]:
    """The reports of the ``--group`` groups (all without one)."""
    if not wanted:
        return reports
    require_groups(wanted, {r.group for r in reports})
    return [r for r in reports if r.group in wanted]
