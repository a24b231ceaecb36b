"""``python -m codegen downgrade-check``: its own module, so the command loads none of the
group and lag views."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from codegen.failures import GuardedCommand
from codegen.forensics.downgrade import DowngradeReport, check_downgrade
from codegen.forensics.output import group_cell, indented_json
from codegen.forensics.releases import DEFAULT, NEW, OLD
from codegen.text import plural

if TYPE_CHECKING:
    from codegen.forensics.replay.report import ClusterState, ReplayReport

__all__ = [
    "EXIT_BLOCKED",
    "EXIT_REPLAY_UNAVAILABLE",
    "EXIT_SAFE",
    "EXIT_SAFE_AS_FAR_AS_CHECKED",
    "downgrade_check_command",
    "exit_code",
    "render_replay",
    "render_table",
]

EXIT_SAFE = 0
EXIT_BLOCKED = 1
EXIT_SAFE_AS_FAR_AS_CHECKED = 3
EXIT_REPLAY_UNAVAILABLE = 4

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


def exit_code(report: DowngradeReport, replayed: ReplayReport | None = None) -> int:
    """The verdict's exit status; with a replay, the code's verdict wins where they differ."""
    if replayed is not None and not replayed.harness_errors:
        if not replayed.loads:
            return EXIT_BLOCKED
        return EXIT_SAFE if report.complete else EXIT_SAFE_AS_FAR_AS_CHECKED
    if report.blocked:
        return EXIT_BLOCKED
    return EXIT_SAFE if report.safe else EXIT_SAFE_AS_FAR_AS_CHECKED


def render_replay(replayed: ReplayReport) -> str:
    """The replay's answers: each partition's load, the model's answer beside the code's, what
    the release ends up with and what is lost, then the verdict."""
    lines = [
        f"replay through Kafka {replayed.release}'s own loaders ({replayed.group_coordinator}; "
        f"jars: {replayed.jars}; Java {replayed.java}; JVM start-up {replayed.jvm_startup_ms} ms, "
        f"replay {replayed.replay_ms} ms)"
    ]
    loads = ([replayed.metadata] if replayed.metadata is not None else []) + replayed.partitions
    for p in loads:
        where = f"{p.topic}-{p.partition}"
        if p.status == "loaded":
            lines.append(f"  {where}: loaded")
            continue
        then = {"empty": "; served as empty", "no": "; not served"}.get(p.served or "", "")
        if p.status == "partial":
            then = "; what was read before it is kept"
        at = f"{'' if p.file is None else Path(p.file).name}@{p.offset}"
        lines.append(f"  {where}: {p.status.upper()} at {at}: {p.exception}{then}")
        if p.known_bug is not None:
            lines.append(f"    known bug: {p.known_bug}")
    if replayed.metadata_version is not None:
        lines.append(f"  metadata.version of the image: {replayed.metadata_version}")
    for error in replayed.metadata_errors:
        lines.append(f"  metadata record refused (a broker counts it, a controller dies): {error}")
    for e in replayed.harness_errors:
        lines.append(f"  NOT REPLAYED: {e}")
    lines.append("  the model and Kafka's code:")
    for a in replayed.agreements:
        mark = "agree" if a.agree else "DISAGREE (the code is right)"
        lines.append(f"    {a.check}: model {a.model}; replay {a.replay}: {mark}")
    survives, current = replayed.survives, replayed.current
    lines.append(
        f"  what Kafka {replayed.release} ends up with: {_state_line(survives)}; the cluster "
        f"has {_state_line(current)}"
    )
    for g in sorted(survives.groups.values(), key=lambda g: g.group_id):
        lines.append(f"    {g.type} group {g.group_id!r}: {g.state}, {plural(g.members, 'member')}")
    lost = replayed.lost()
    if lost:
        lines.append("  lost:")
        lines.extend(f"    - {item}" for item in lost)
    disagree = sum(not a.agree for a in replayed.agreements)
    tail = (
        "; the model agrees on every check"
        if not disagree
        else f"; the model disagrees on {plural(disagree, 'check')}: the replay is the truth"
    )
    lines.append(f"REPLAY: {replayed.verdict}: Kafka {replayed.release}{tail}")
    return "\n".join(lines)


def _state_line(state: ClusterState) -> str:
    return (
        f"{plural(len(state.groups), 'group')}, {plural(len(state.offsets), 'committed offset')}, "
        f"{plural(len(state.transactions), 'transactional id')}, "
        f"{plural(len(state.share_states), 'share-partition state')}"
    )


@click.command("downgrade-check", cls=GuardedCommand)
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
    "--replay",
    is_flag=True,
    help="Also replay the logs through the release's own loaders in a JVM (see above).",
)
@click.option(
    "--kafka-jars",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="With --replay: a folder holding the release's jars (a Kafka distribution's libs/) "
    "instead of the cache and Maven Central.",
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
    paths: tuple[str, ...],
    to: str,
    group_coordinator: str,
    replay: bool,
    kafka_jars: Path | None,
    fmt: str,
) -> None:
    """Tell whether the brokers of Kafka VERSION can run a cluster's disks.

    PATH... are broker log dirs (one per broker), partition folders or segment files; globs
    are expanded. Checks, each passed, blocked (what blocks, what to do) or not checked (why):
    the group coordinator (__consumer_offsets), the transaction coordinator
    (__transaction_state), the share coordinator (__share_group_state), dynamic configs of
    resource types the release does not know (KIP-848's GROUP configs) and the finalized
    metadata.version and feature levels and every metadata record version
    (__cluster_metadata). Rules: docs/forensics.md.

    Each coordinator is judged as the release's own loader reads its topic at start-up: every
    record on disk in log order (tombstoned and overwritten ones too, until the log cleaner
    removes them), with what the release skips, what fails the load and what a failure costs.

    --replay also runs the logs through Kafka VERSION's own loaders in a JVM (Java 17 or later;
    the release's jars are fetched from Maven Central into the cache on first use, its path
    shown, or read from --kafka-jars): per check the model's answer and the code's, where each
    partition fails with Kafka's exception text, and what the release ends up with (groups,
    committed offsets, transactions, share states) beside what the cluster has, and what is
    lost. Where they disagree the code is right, and its verdict is the exit status.

    Exit status: 0 safe (every check made and passed), 1 blocked, 2 bad input, 3 safe as far as
    checked (nothing blocks, but a check could not be made in full: the verdict says why), 4 the
    replay could not run (no Java, jars not found: the message says what to do).

    \b
    Examples:
      python -m codegen downgrade-check /var/kafka-logs --to 3.9
      python -m codegen downgrade-check /var/kafka-logs --to 3.9 --group-coordinator new
      python -m codegen downgrade-check /var/kafka-logs --to 3.4.1
      python -m codegen downgrade-check /var/kafka-logs --to 3.9 --replay
      python -m codegen downgrade-check /var/kafka-logs --to 3.9.2 --replay \
        --kafka-jars /opt/kafka_2.13-3.9.2/libs
      python -m codegen downgrade-check 'images/broker-*/kafka-logs' --to 3.4
      python -m codegen downgrade-check /var/kafka-logs/__consumer_offsets-7 --to 2.1 --format json
    """
    report = check_downgrade(list(paths), to, group_coordinator)
    replayed = None
    if replay:
        # --replay only: the release loaders' harness and its jars
        from codegen.forensics.replay import ReplayUnavailableError, agreements
        from codegen.forensics.replay import replay as run_replay

        try:
            replayed = run_replay(
                list(paths),
                to,
                group_coordinator=group_coordinator,
                jars=kafka_jars,
                progress=lambda text: click.echo(f"downgrade-check: {text}", err=True),
            )
        except ReplayUnavailableError as exc:
            click.echo(f"downgrade-check --replay: {exc}", err=True)
            sys.exit(EXIT_REPLAY_UNAVAILABLE)
        replayed.agreements = agreements(report, replayed)
    code = exit_code(report, replayed)
    if fmt == "json":
        doc = report.to_json()
        if replayed is not None:
            doc["replay"] = replayed.to_json()
        doc["exitCode"] = code
        click.echo(indented_json(doc))
    else:
        click.echo(render_table(report))
        if replayed is not None:
            click.echo(render_replay(replayed))
    sys.exit(code)
