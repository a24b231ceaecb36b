"""Known Kafka bugs of the new group coordinator's replay: record orders a release's shard refuses.

The runtime replays a ``__consumer_offsets`` partition record by record into
``GroupMetadataManager``, which keeps each group's type and its members and refuses what does
not fit (an ``IllegalStateException`` fails the partition's load). Log compaction can leave
orders the writing broker never produced; some releases refuse them. :func:`replay_failure`
walks a partition's records as those ``replay`` methods do, keeping what they keep (each
group's type, a consumer group's members, their epochs and target assignment, its assignment
epoch), and names the first record the release would refuse, with the known issue behind it:

============  =====================================================  =========================
issue         what the shard refuses                                 releases (new coordinator)
============  =====================================================  =========================
KAFKA-20254   a streams group's record after offset commits made     4.1.0-4.1.2, 4.2.0; fixed
              the group a "simple" classic one (the classic group's  in 4.2.1 and 4.3.0
              tombstone was compacted away)
KAFKA-21117   a consumer group's record after a classic group's      3.7 on; open (PR #23514)
              (an online consumer-to-classic downgrade racing
              compaction)
KAFKA-21102   a member's tombstone after compaction removed the      3.6 on; open (PR #23530)
              tombstones of its assignment
KAFKA-17306   a tombstone for a group or member compaction already   3.6-3.9; fixed in 4.0.0
              removed
(no issue)    a consumer group's record after offset commits made    3.6-3.9; fixed in 4.0.0
              the group a "simple" classic one
============  =====================================================  =========================

The replay through the release's own code (:mod:`codegen.forensics.replay`) is the arbiter;
:func:`name_bug` names the issue behind the exception a replay fails with.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final

from codegen.slotted import FrozenSlotted, Slotted, field

__all__ = ["KNOWN_BUGS", "KnownBug", "ReplayFailure", "name_bug", "replay_failure"]


class KnownBug(FrozenSlotted):
    issue: str
    title: str
    signature: str
    """A regular expression over the exception text Kafka throws."""
    first: tuple[int, ...]
    """The first release with the bug (its new group coordinator)."""
    fixed: tuple[tuple[int, ...], ...] = ()
    """The releases that fixed it, one per line (4.2.1 fixes 4.2, 4.3.0 the rest)."""
    advice: str = ""

    def affects(self, version: tuple[int, ...]) -> bool:
        if version < self.first:
            return False
        for fix in self.fixed:
            if version >= fix and (len(self.fixed) == 1 or version[:2] == fix[:2]):
                return False
        return not (self.fixed and version >= max(self.fixed))

    def describe(self) -> str:
        fixed = ", ".join(".".join(map(str, f)) for f in self.fixed)
        since = ".".join(map(str, self.first))
        return (
            f"{self.issue} ({self.title}): affects the new group coordinator from {since}"
            + (f", fixed in {fixed}" if fixed else ", not fixed yet")
            + f"; what to do first: {self.advice}"
        )


KNOWN_BUGS: Final = (
    KnownBug(
        "KAFKA-20254",
        "offset commits replayed before a streams group's records make a simple classic group",
        r"Group \S* is not a streams group",
        (4, 1, 0),
        ((4, 2, 1), (4, 3, 0)),
        "downgrade to a release with the fix (4.2.1, 4.3.0 or later), or delete the streams "
        "group's committed offsets (kafka-streams-groups.sh --delete-offsets) and let the "
        "application commit again before downgrading",
    ),
    KnownBug(
        "KAFKA-21117",
        "an online consumer-to-classic downgrade raced compaction: consumer group records "
        "after the classic group's",
        r"Group \S* is not a consumer group",
        (3, 7, 0),
        (),
        "delete the group once it is empty (kafka-consumer-groups.sh --delete --group G) or let "
        "its members rejoin with one protocol until the cleaner has removed the other's records",
    ),
    KnownBug(
        "KAFKA-21102",
        "a member tombstone after compaction removed its sibling tombstones",
        r"Received a tombstone record to delete member",
        (3, 6, 0),
        (),
        "delete the group once it is empty, or downgrade before the log cleaner removes the "
        "member's assignment tombstones (raise delete.retention.ms on __consumer_offsets)",
    ),
    KnownBug(
        "KAFKA-17306",
        "a tombstone replayed for a group or member compaction already removed",
        r"Consumer group \S* not found|is not a member of group",
        (3, 6, 0),
        ((4, 0, 0),),
        "downgrade to 4.0.0 or later, or keep the old group coordinator (the 3.x default)",
    ),
)


def name_bug(exception: str, version: tuple[int, ...]) -> KnownBug | None:
    """The known issue behind a replay's exception in ``version``, if any."""
    for bug in KNOWN_BUGS:
        if re.search(bug.signature, exception) and bug.affects(version):
            return bug
    return None


class ReplayFailure(FrozenSlotted):
    """The record the release's shard refuses."""

    offset: int
    group: str
    name: str
    """The record's name (``ConsumerGroupMemberMetadata``)."""
    tombstone: bool
    error: str
    """The exception Kafka throws."""
    bug: KnownBug | None


class _Group(Slotted):
    type: str
    """``classic``, ``simple`` (a classic group offset commits made), ``consumer``,
    ``streams`` or ``share``."""
    members: dict[str, int] = field(default_factory=dict)
    """Member id -> member epoch (-1 after its assignment's tombstone)."""
    target: set[str] = field(default_factory=set)
    assignment_epoch: int = -1


_KINDS: Final = (
    ("ConsumerGroup", "consumer"),
    ("StreamsGroup", "streams"),
    ("ShareGroup", "share"),
)


def replay_failure(
    records: Iterable[tuple[int, str, Any, Any]],
    version: tuple[int, ...],
    known: frozenset[str] | None = None,
) -> ReplayFailure | None:
    """The first record of a partition the new group coordinator of ``version`` refuses.

    ``records``: (offset, record name, decoded key, decoded value or None for a tombstone) of
    every record of the partition in log order (offset commits included: one that finds no
    group makes a simple classic group); ``known``: the record names the release's serde
    knows (the others it skips)."""
    groups: dict[str, _Group] = {}
    before_4_0 = version < (4, 0, 0)
    streams_fixed = not KNOWN_BUGS[0].affects(version) and version >= (4, 1, 0)

    def fail(
        offset: int, name: str, gid: str, tomb: bool, error: str, known: bool = True
    ) -> ReplayFailure:
        bug = name_bug(error, version) if known else None
        return ReplayFailure(offset, gid, name, tomb, error, bug)

    for offset, name, key, value in records:
        if known is not None and name not in known:
            continue
        gid = str(getattr(key, "group_id", None) or getattr(key, "group", "") or "")
        tomb = value is None
        if name == "OffsetCommit":
            if not tomb and gid not in groups:
                groups[gid] = _Group("simple")
            continue
        if name == "GroupMetadata":
            if tomb:
                groups.pop(gid, None)
            else:
                protocol_type = getattr(value, "protocol_type", "") or ""
                simple = not protocol_type and not getattr(value, "members", None)
                groups[gid] = _Group("simple" if simple else "classic")
            continue
        kind = next((k for prefix, k in _KINDS if name.startswith(prefix)), None)
        if kind is None:
            continue
        group = groups.get(gid)
        if group is None:
            if tomb:
                if before_4_0 and kind == "consumer":
                    return fail(offset, name, gid, tomb, f"Consumer group {gid} not found.")
                continue
            group = groups[gid] = _Group(kind)
        elif group.type != kind:
            replaces = group.type == "simple" and (
                (kind == "consumer" and not before_4_0) or (kind == "streams" and streams_fixed)
            )
            if not replaces:
                dot = "." if before_4_0 or kind != "consumer" else ""
                error = f"Group {gid} is not a {kind} group{dot}"
                # A simple group in the way of a consumer group before 4.0 is no known issue.
                named = not (group.type == "simple" and kind == "consumer")
                return fail(offset, name, gid, tomb, error, named)
            group = groups[gid] = _Group(kind)
        if kind != "consumer":
            continue
        member = str(getattr(key, "member_id", "") or "")
        short = name.removeprefix("ConsumerGroup")
        if short == "MemberMetadata":
            if not tomb:
                group.members.setdefault(member, 0)
                continue
            if member not in group.members:
                if before_4_0:
                    return fail(offset, name, gid, tomb, f"Member {member} is not a member of "
                                f"group {gid}.")  # fmt: skip
                continue
            if group.members[member] != -1:
                return fail(offset, name, gid, tomb, f"Received a tombstone record to delete "
                            f"member {member} but did not receive "
                            "ConsumerGroupCurrentMemberAssignmentValue tombstone.")  # fmt: skip
            if member in group.target:
                return fail(offset, name, gid, tomb, f"Received a tombstone record to delete "
                            f"member {member} but did not receive "
                            "ConsumerGroupTargetAssignmentMetadataValue tombstone.")  # fmt: skip
            del group.members[member]
        elif short == "CurrentMemberAssignment":
            if not tomb:
                group.members[member] = int(getattr(value, "member_epoch", 0))
            elif member in group.members:
                group.members[member] = -1
        elif short == "TargetAssignmentMember":
            (group.target.discard if tomb else group.target.add)(member)
        elif short == "TargetAssignmentMetadata":
            group.assignment_epoch = -1 if tomb else int(getattr(value, "assignment_epoch", 0))
        elif short == "Metadata" and tomb:
            if group.members:
                return fail(offset, name, gid, tomb, f"Received a tombstone record to delete "
                            f"group {gid} but the group still has {len(group.members)} "
                            "members.")  # fmt: skip
            if group.target:
                return fail(offset, name, gid, tomb, f"Received a tombstone record to delete "
                            f"group {gid} but the target assignment still has "
                            f"{len(group.target)} members.")  # fmt: skip
            if group.assignment_epoch != -1:
                return fail(offset, name, gid, tomb, f"Received a tombstone record to delete "
                            f"group {gid} but did not receive "
                            "ConsumerGroupTargetAssignmentMetadataValue tombstone.")  # fmt: skip
            del groups[gid]
    return None
