"""A downgrade verdict: its checks, the records that block, and how it reads as JSON.

``downgrade-check`` (:mod:`codegen.forensics.downgrade`) fills a :class:`DowngradeReport`; the
replay through a release's own loaders (:mod:`codegen.forensics.replay`) adds its answers
beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Final

from codegen.dumps.coordinator import CONSUMER_OFFSETS
from codegen.naming import camel_case
from codegen.slotted import Slotted, field

__all__ = [
    "BLOCKED",
    "BLOCKED_VERDICT",
    "NOT_CHECKED",
    "PARTLY_CHECKED",
    "PASSED",
    "SAFE",
    "SAFE_AS_FAR_AS_CHECKED",
    "Blocker",
    "Check",
    "DowngradeReport",
]

PASSED: Final = "passed"
BLOCKED: Final = "blocked"
NOT_CHECKED: Final = "not checked"
PARTLY_CHECKED: Final = "partly checked"

SAFE: Final = "SAFE"
SAFE_AS_FAR_AS_CHECKED: Final = "SAFE AS FAR AS CHECKED"
BLOCKED_VERDICT: Final = "BLOCKED"


@dataclass(frozen=True, slots=True)
class Blocker:
    """A record the target release cannot load, or skips."""

    rule: str
    """``unknown-type``, ``value-version``, ``record-layout``, ``control-batch``, ``no-key`` (the
    loader fails on it), ``group-conversion``, ``share-group`` (a live group the release would
    lose) or ``ignored`` (skipped, not blocking)."""
    partition: int
    offset: int
    record_type: int
    name: str
    value_version: int
    """-1 for a tombstone."""
    group: str | None
    reason: str
    topic: str = CONSUMER_OFFSETS
    count: int = 1
    """Records of this kind in the partition the rule applies to (a load failure names the
    first; the loader never reads past it)."""
    fails_load: bool = False
    """The release's loader fails on this record (the first such record of its partition, or
    one after it): the partition does not load in full."""

    def to_json(self) -> dict[str, Any]:
        """The fields under their JSON names, as ``camel_keys(asdict(self))`` has them (a
        report lists thousands: ``asdict`` copies every value)."""
        return {name: getattr(self, attribute) for attribute, name in _BLOCKER_NAMES}


_BLOCKER_NAMES: Final = tuple((f.name, camel_case(f.name)) for f in fields(Blocker))


class Check(Slotted):
    """One part of the verdict: what was checked, its result, what blocks and what to do."""

    name: str
    status: str
    """``passed``, ``blocked``, ``not checked`` or ``partly checked``."""
    summary: str
    findings: list[str] = field(default_factory=list)
    """What blocks (a line each)."""
    steps: list[str] = field(default_factory=list)
    """What to do, in order."""

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.name,
            "status": self.status,
            "summary": self.summary,
            "findings": self.findings,
            "steps": self.steps,
        }


class DowngradeReport(Slotted):
    target: str
    """The release judged against (its line, or the patch release asked for)."""
    live_records: int = 0
    """Live ``__consumer_offsets`` records judged."""
    blockers: list[Blocker] = field(default_factory=list)
    """Records of the coordinator topics that block."""
    ignored: list[Blocker] = field(default_factory=list)
    segment_errors: list[str] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    mode: str = "unknown"
    """``KRaft`` (``__cluster_metadata`` or a version 1 ``meta.properties`` in the input),
    ``ZooKeeper`` (a version 0 ``meta.properties``) or ``unknown``."""
    inputs: list[str] = field(default_factory=list)
    group_coordinator: str = ""
    """The group coordinator judged (``the old (Scala) group coordinator ...``)."""
    first_failure: str | None = None
    """What the release fails on first when it starts (metadata, then coordinators)."""

    @property
    def blocked(self) -> bool:
        return bool(self.blockers) or any(c.status == BLOCKED for c in self.checks)

    @property
    def complete(self) -> bool:
        """Every check was made in full."""
        return all(c.status in (PASSED, BLOCKED) for c in self.checks)

    @property
    def safe(self) -> bool:
        """SAFE: nothing blocks and every check was made."""
        return not self.blocked and self.complete

    @property
    def verdict(self) -> str:
        if self.blocked:
            return BLOCKED_VERDICT
        return SAFE if self.complete else SAFE_AS_FAR_AS_CHECKED

    def steps(self) -> list[str]:
        """What to do, in KIP-848's order (the checks are kept in that order)."""
        return [s for c in self.checks for s in c.steps]

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "verdict": self.verdict,
            "safe": self.safe,
            "mode": self.mode,
            "inputs": self.inputs,
            "groupCoordinator": self.group_coordinator,
            "firstFailure": self.first_failure,
            "checks": [c.to_json() for c in self.checks],
            "steps": self.steps(),
            "liveRecords": self.live_records,
            "blockers": [b.to_json() for b in self.blockers],
            "ignored": [b.to_json() for b in self.ignored],
            "segmentErrors": self.segment_errors,
        }
