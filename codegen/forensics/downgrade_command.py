"""``python -m codegen downgrade-check``: its own module, so the command loads none of the
group and lag views."""

from __future__ import annotations

import json
import sys

import click

from codegen.forensics.downgrade import DowngradeReport, check_downgrade
from codegen.forensics.inputs import InputError
from codegen.forensics.output import EXIT_BAD_INPUT, group_cell
from codegen.forensics.releases import DEFAULT, NEW, OLD, UnknownReleaseError
from codegen.text import plural

__all__ = [
    "EXIT_BLOCKED",
    "EXIT_SAFE",
    "EXIT_SAFE_AS_FAR_AS_CHECKED",
    "downgrade_check_command",
    "exit_code",
    "render_table",
]

EXIT_SAFE = 0
EXIT_BLOCKED = 1
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
        if report.first_failure:
            lines.append(f"  first failure at start-up: {report.first_failure}")
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
            group_cell(b.group),
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
    help="Target Kafka release, from 0.11 to 4.4 (e.g. 2.1, 3.4, 4.0): a line is its first "
    "release (3.4 = 3.4.0); a patch release whose loading differs has its own table (3.4.1).",
)
@click.option(
    "--group-coordinator",
    type=click.Choice([DEFAULT, OLD, NEW]),
    default=DEFAULT,
    show_default=True,
    help="The group coordinator the release runs: its default (the old Scala one up to 3.9, "
    "the new one from 4.0), or old / new as configured (3.6-3.9: "
    "group.coordinator.new.enable or group.coordinator.rebalance.protocols with consumer; "
    "4.0: group.coordinator.new.enable=false).",
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
def downgrade_check_command(
    paths: tuple[str, ...], to: str, group_coordinator: str, fmt: str
) -> None:
    """Tell whether the brokers of Kafka VERSION can run a cluster's disks.

    PATH... are broker log dirs (one per broker), partition folders or segment files; globs
    are expanded. Checks, each passed, blocked (what blocks, what to do) or not checked (why):
    the group coordinator (__consumer_offsets), the transaction coordinator
    (__transaction_state), the share coordinator (__share_group_state), dynamic configs of
    resource types the release does not know (KIP-848's GROUP configs) and the finalized
    metadata.version and feature levels (__cluster_metadata). Only records live after
    compaction are judged. Rules: docs/forensics.md.

    Each coordinator is judged as the release's own loader reads its topic at start-up: every
    record on disk in log order (tombstoned and overwritten ones too, until the log cleaner
    removes them), with what the release skips, what fails the load and what a failure costs.

    Exit status: 0 safe (every check made and passed), 1 blocked, 2 bad input, 3 safe as far as
    checked (nothing blocks, but a check could not be made in full: the verdict says why).

    \b
    Examples:
      python -m codegen downgrade-check /var/kafka-logs --to 3.9
      python -m codegen downgrade-check /var/kafka-logs --to 3.9 --group-coordinator new
      python -m codegen downgrade-check /var/kafka-logs --to 3.4.1
      python -m codegen downgrade-check 'images/broker-*/kafka-logs' --to 3.4
      python -m codegen downgrade-check /var/kafka-logs/__consumer_offsets-7 --to 2.1 --format json
    """
    try:
        report = check_downgrade(list(paths), to, group_coordinator)
    except (UnknownReleaseError, InputError, ValueError) as exc:
        click.echo(f"downgrade-check: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if fmt == "json":
        doc = report.to_json()
        doc["exitCode"] = exit_code(report)
        click.echo(json.dumps(doc, indent=1))
    else:
        click.echo(render_table(report))
    sys.exit(exit_code(report))
