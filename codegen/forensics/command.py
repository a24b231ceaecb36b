"""``python -m codegen downgrade-check``: can a Kafka release's group coordinator load a dump?"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from codegen.forensics.downgrade import DowngradeReport, DumpInputError, check_downgrade
from codegen.forensics.releases import UnknownReleaseError

__all__ = ["downgrade_check_command", "render_table"]

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
        f"{verdict}: Kafka {report.target}, {report.live_records} live record(s), "
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
