"""The consumer protocol payloads inside classic groups' ``GroupMetadataValue`` members.

A member of a group of protocol type ``consumer`` carries its subscription and assignment as
version-prefixed ``ConsumerProtocolSubscription``/``ConsumerProtocolAssignment`` bytes. Decoding
follows Kafka: the ``int16`` version, then the body read at that version (a version above the
newest known one is read as the newest: these specs are not flexible, so the layout is the same);
bytes after the body are ignored.

When that strict read fails, older versions are tried (some clients, such as sarama-cluster,
sent version 1 without the ``ownedPartitions`` array); a payload decoded that way carries a
``note``. When nothing works, the raw bytes are kept with the ``error``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Generic, TypeVar

from codegen.runtime import DecodeError
from codegen.slotted import Slotted
from generated.consumer_protocol_assignment import ConsumerProtocolAssignment
from generated.consumer_protocol_subscription import ConsumerProtocolSubscription
from generated.group_metadata_value import GroupMetadataValue

__all__ = [
    "ConsumerMember",
    "DecodedAssignment",
    "DecodedPayload",
    "DecodedSubscription",
    "PayloadCache",
    "decode_assignment",
    "decode_subscription",
    "group_members",
    "kafka_payload_json",
]

CONSUMER_PROTOCOL_TYPE: Final = "consumer"

_PAYLOADS_KEPT: Final = 1024
"""Distinct subscriptions (and as many assignments) a :class:`PayloadCache` keeps."""
_P = TypeVar("_P")
_M = TypeVar("_M", ConsumerProtocolSubscription, ConsumerProtocolAssignment)


class DecodedPayload(Slotted, Generic[_M]):
    """A member's subscription or assignment. ``message`` is None when the bytes did not decode
    (``error``)."""

    raw: bytes
    version: int
    message: _M | None
    read_version: int = -1
    """The version the body was read with (differs from ``version`` on a fallback)."""
    error: str | None = None
    note: str | None = None

    @property
    def user_data(self) -> bytes | None:
        return self.message.user_data if self.message is not None else None


class DecodedSubscription(DecodedPayload[ConsumerProtocolSubscription]):
    """A member's subscription."""

    @property
    def topics(self) -> list[str]:
        return list(self.message.topics) if self.message is not None else []

    @property
    def owned_partitions(self) -> dict[str, list[int]]:
        if self.message is None:
            return {}
        return {tp.topic: list(tp.partitions) for tp in self.message.owned_partitions}

    @property
    def generation_id(self) -> int:
        return self.message.generation_id if self.message is not None else -1

    @property
    def rack_id(self) -> str | None:
        return self.message.rack_id if self.message is not None else None


class DecodedAssignment(DecodedPayload[ConsumerProtocolAssignment]):
    """A member's assignment."""

    @property
    def partitions(self) -> dict[str, list[int]]:
        if self.message is None:
            return {}
        return {tp.topic: list(tp.partitions) for tp in self.message.assigned_partitions}


class ConsumerMember(Slotted):
    """One member of a classic consumer group with its decoded protocol payloads."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: DecodedSubscription
    assignment: DecodedAssignment


def _version(data: bytes) -> int:
    v = (data[0] << 8) | data[1]
    return v - 0x10000 if v & 0x8000 else v


def _strict(cls: Any, data: bytes) -> tuple[Any, int, int]:
    """Kafka's read: version, then the body at that version (the newest for newer versions)."""
    if len(data) < 2:
        raise ValueError(f"{len(data)} byte(s) are too few for the int16 version")
    version = _version(data)
    if version < 0:
        raise ValueError(f"negative version {version}")
    read_as = min(version, cls.HIGHEST_VERSION)
    obj, _ = cls._READERS[read_as](data, 2)
    return obj, version, read_as


def _decode(cls: Any, data: bytes) -> tuple[Any, int, int, str | None, str | None]:
    """(message or None, version, read version, error, note)."""
    try:
        obj, version, read_as = _strict(cls, data)
        return obj, version, read_as, None, None
    except ValueError as exc:  # a DecodeError, or _strict's own: no version to read
        error = str(exc) or type(exc).__name__
    version = _version(data) if len(data) >= 2 else -1
    for lower in range(min(version, cls.HIGHEST_VERSION) - 1, cls.LOWEST_VERSION - 1, -1):
        try:
            obj, _ = cls._READERS[lower](data, 2)
        except DecodeError:
            continue
        note = f"version {version} bytes only decode as version {lower} ({error})"
        return obj, version, lower, None, note
    return None, version, -1, error, None


def decode_subscription(data: bytes) -> DecodedSubscription:
    """Decode version-prefixed ``ConsumerProtocolSubscription`` bytes; never raises."""
    obj, version, read_as, error, note = _decode(ConsumerProtocolSubscription, data)
    return DecodedSubscription(data, version, obj, read_as, error, note)


def decode_assignment(data: bytes) -> DecodedAssignment:
    """Decode version-prefixed ``ConsumerProtocolAssignment`` bytes; never raises."""
    obj, version, read_as, error, note = _decode(ConsumerProtocolAssignment, data)
    return DecodedAssignment(data, version, obj, read_as, error, note)


class PayloadCache:
    """Subscriptions and assignments decoded once per distinct bytes: a group's records repeat
    its members' payloads from one generation to the next. The decoded payloads are shared by
    every member whose bytes they are, so nothing changes them once decoded. Bounded: each kind
    is emptied when it holds ``kept`` payloads."""

    def __init__(self, kept: int = _PAYLOADS_KEPT) -> None:
        self._kept = kept
        self._subscriptions: dict[bytes, DecodedSubscription] = {}
        self._assignments: dict[bytes, DecodedAssignment] = {}

    def subscription(self, data: bytes) -> DecodedSubscription:
        """:func:`decode_subscription` of ``data``."""
        return self._decoded(self._subscriptions, data, decode_subscription)

    def assignment(self, data: bytes) -> DecodedAssignment:
        """:func:`decode_assignment` of ``data``."""
        return self._decoded(self._assignments, data, decode_assignment)

    def _decoded(self, kept: dict[bytes, _P], data: bytes, decode: Callable[[bytes], _P]) -> _P:
        found = kept.get(data)
        if found is None:
            if len(kept) >= self._kept:
                kept.clear()
            found = kept[data] = decode(data)
        return found

    def members(self, value: GroupMetadataValue) -> list[ConsumerMember] | None:
        """Members with decoded payloads when the group's protocol type is ``consumer``, their
        payloads decoded through this cache."""
        if value.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        subscriptions, assignments = self._subscriptions, self._assignments
        out = []
        for m in value.members:
            raw = m.subscription
            subscription = subscriptions.get(raw)
            if subscription is None:
                subscription = self._decoded(subscriptions, raw, decode_subscription)
            raw = m.assignment
            assignment = assignments.get(raw)
            if assignment is None:
                assignment = self._decoded(assignments, raw, decode_assignment)
            out.append(
                ConsumerMember(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout,
                    m.session_timeout,
                    subscription,
                    assignment,
                )
            )
        return out


def group_members(
    value: GroupMetadataValue, payloads: PayloadCache | None = None
) -> list[ConsumerMember] | None:
    """Members with decoded payloads when the group's protocol type is ``consumer``; through
    ``payloads`` (shared, unchanged decoded payloads) when given."""
    return (PayloadCache() if payloads is None else payloads).members(value)


def kafka_payload_json(data: bytes, assignment: bool) -> dict[str, Any] | None:
    """The JSON Kafka's offsets decoder puts in place of the bytes, or None if it keeps them.

    Strict, as in ``DumpLogSegments``: no fallback to older versions.
    """
    cls: Any = ConsumerProtocolAssignment if assignment else ConsumerProtocolSubscription
    try:
        obj, _, read_as = _strict(cls, data)
    except ValueError:  # a DecodeError, or _strict's own: no version to read
        return None
    result: dict[str, Any] = obj.to_json(read_as)
    return result
