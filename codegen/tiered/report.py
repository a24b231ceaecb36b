"""The tiered-storage report of a cluster's disks and remote storage: the facts read
(:mod:`codegen.tiered.inputs`), the view over them (:mod:`codegen.dumps.views.tiered`), the
moment it is taken at and what it finds.

    from codegen.tiered.report import tiered_report

    report = tiered_report(["/var/kafka/logs", "/var/kafka/remote"])
    report.sections.partitions      # a pyarrow Table: one row per partition
    report.findings                 # what is wrong, one sentence each
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc

from codegen.dumps.storage import StoragePath
from codegen.dumps.views.tiered import DEFAULT_STUCK_AFTER_MS, report
from codegen.dumps.views.tiered_facts import metadata_facts
from codegen.dumps.views.tiered_schemas import FACT_SCHEMA, HANGING, UNFINISHED, TieredSections
from codegen.tiered.inputs import (
    TieredInputs,
    concat_facts,
    find_inputs,
    local_facts,
    metadata_rows,
    remote_facts,
    with_topic_ids,
)

__all__ = ["DEFAULT_STUCK_AFTER_MS", "TieredReport", "facts_of", "tiered_report"]

PROBLEM_STATUSES: Final = frozenset(
    {"upload-stuck", "upload-abandoned", "delete-hanging", "objects-missing", "orphan-objects"}
)
"""The segment states the report counts as findings (``copying`` and ``deleting`` are work in
progress)."""


@dataclass(slots=True)
class TieredReport:
    """The view's tables, when they were taken, and what the input held."""

    sections: TieredSections
    now_ms: int
    as_of_ms: int | None
    stuck_after_ms: int
    metadata_partitions: list[int]
    remote_roots: list[str]
    notes: list[str] = field(default_factory=list)

    @property
    def findings(self) -> list[str]:
        """What is wrong, one sentence each: holes, uploads that never finished, deletions that
        hang, objects missing or left behind, leader epochs that differ."""
        out: list[str] = []
        for p in self.sections.partitions.to_pylist():
            label = f"{p['topic']}-{p['partition']}"
            for h in p["holes"]:
                out.append(
                    f"{label}: offsets {h['firstOffset']}..{h['lastOffset']} are lost "
                    f"({h['reason']})"
                )
            if p["epochMismatches"]:
                out.append(
                    f"{label}: {p['epochMismatches']} leader epoch(s) of remote segments differ "
                    "from the partition's checkpoint"
                )
            out.extend(f"{label}: {n}" for n in p["notes"] if "deletion is" in n)
        for s in self.sections.segments.to_pylist():
            if s["status"] in PROBLEM_STATUSES:
                label = f"{s['topic']}-{s['partition']}"
                what = {
                    "upload-stuck": "upload never finished",
                    "upload-abandoned": "upload abandoned",
                    "delete-hanging": "deletion hangs",
                    "objects-missing": "objects missing",
                    "orphan-objects": "objects of no metadata record",
                }[s["status"]]
                age = "" if s["ageMs"] is None else f" for {s['ageMs']} ms"
                files = ", ".join(s["files"]) or "none"
                out.append(
                    f"{label}: segment {s['segmentId']} ({s['startOffset']}..{s['endOffset']}): "
                    f"{what}{age}; objects left: {files}" + (f" ({s['note']})" if s["note"] else "")
                )
        return out

    def lines(self) -> Iterator[dict[str, Any]]:
        """The jsonl documents: one per topic, partition, segment, event and epoch check
        (``kind`` says which), then one per finding."""
        yield {
            "kind": "report",
            "nowMs": self.now_ms,
            "asOfMs": self.as_of_ms,
            "stuckAfterMs": self.stuck_after_ms,
            "metadataPartitions": self.metadata_partitions,
            "remoteStorage": self.remote_roots,
            "notes": self.notes,
        }
        for kind, table in (
            ("topic", self.sections.topics),
            ("partition", self.sections.partitions),
            ("segment", self.sections.segments),
            ("event", self.sections.events),
            ("epoch", self.sections.epochs),
        ):
            for row in table.to_pylist():
                yield {"kind": kind, **row}
        for finding in self.findings:
            yield {"kind": "finding", "finding": finding}

    @property
    def unfinished(self) -> list[dict[str, Any]]:
        return [s for s in self.sections.segments.to_pylist() if s["status"] in UNFINISHED]

    @property
    def hanging(self) -> list[dict[str, Any]]:
        return [s for s in self.sections.segments.to_pylist() if s["status"] in HANGING]


def facts_of(inputs: TieredInputs, as_of_ms: int | None = None) -> pa.Table:
    """Every fact of the inputs (:data:`codegen.dumps.views.tiered_schemas.FACT_SCHEMA`); with
    ``as_of_ms``, of the moment: the metadata and local batches up to it, and the remote files
    of the segments the metadata named by then (or never)."""
    rows = metadata_rows(inputs)
    events = metadata_facts(rows) if rows.num_rows else FACT_SCHEMA.empty_table()
    files = remote_facts(inputs)
    if as_of_ms is not None and events.num_rows:
        first_seen: dict[str, int] = {}
        for segment, when in zip(
            events.column("segmentId").to_pylist(),
            events.column("recordTimeMs").to_pylist(),
            strict=True,
        ):
            if segment is not None and when is not None:
                first_seen[segment] = min(first_seen.get(segment, when), when)
        later = {s for s, when in first_seen.items() if when > as_of_ms}
        files = files.filter(
            pa.array([s not in later for s in files.column("segmentId").to_pylist()])
        )
        events = events.filter(
            pc.less_equal(pc.fill_null(events.column("recordTimeMs"), 0), as_of_ms)
        )
    return with_topic_ids(concat_facts([events, files, local_facts(inputs, as_of_ms)]))


def _newest(facts: pa.Table) -> int:
    times = [
        t
        for name in ("timeMs", "recordTimeMs")
        for t in facts.column(name).to_pylist()
        if t is not None and t >= 0
    ]
    return max(times, default=-1)


def tiered_report(
    paths: Sequence[str | StoragePath],
    as_of_ms: int | None = None,
    stuck_after_ms: int = DEFAULT_STUCK_AFTER_MS,
) -> TieredReport:
    """The report of ``paths`` (broker log dirs, partition folders, remote storages; globs and
    object storage URLs), as of ``as_of_ms`` (epoch ms; default: the newest time read)."""
    inputs = find_inputs(list(paths))
    facts = facts_of(inputs, as_of_ms)
    now = as_of_ms if as_of_ms is not None else _newest(facts)
    has_metadata = bool(inputs.metadata_partitions)
    sections = report(
        facts,
        now,
        stuck_after_ms,
        has_metadata=has_metadata,
        has_listing=bool(inputs.remote_roots),
        past=as_of_ms is not None,
    )
    notes: list[str] = []
    if not has_metadata:
        notes.append(
            "no __remote_log_metadata partition was given: segment states are unknown; the "
            "remote files are read as they are"
        )
    if not inputs.remote_roots:
        notes.append(
            "no remote storage was given: objects are not checked, remote records not counted"
        )
    if as_of_ms is not None:
        notes.append(
            "--as-of: metadata records and local batches written later are left out; the remote "
            "storage's files and the local segments deleted since are as they are now"
        )
    return TieredReport(
        sections,
        now,
        as_of_ms,
        stuck_after_ms,
        sorted(inputs.metadata_partitions),
        [str(r) for r in inputs.remote_roots],
        notes,
    )
