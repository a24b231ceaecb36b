"""codegen.slotted: record classes written out by hand behave as the ``@dataclass(slots=True)``
(and ``frozen=True``) classes they replace, and every one keeps its fields in order."""

from __future__ import annotations

import dataclasses
import importlib
import pickle
import pkgutil
from typing import Any

import pytest

import codegen
from codegen.dumps.consumer_protocol import DecodedAssignment, DecodedSubscription
from codegen.dumps.views.compacted import GroupMember, GroupState
from codegen.dumps.views.cut import AsOf
from codegen.slotted import FrozenSlotted, Slotted


def _subclasses(cls: type[Slotted]) -> list[type[Slotted]]:
    out: list[type[Slotted]] = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


def _all_record_classes() -> list[type[Slotted]]:
    for info in pkgutil.walk_packages(codegen.__path__, "codegen."):
        if not info.name.startswith(("codegen.dumps", "codegen.forensics")):
            continue
        if info.name.startswith("codegen.forensics.replay"):
            continue  # needs the replay extras
        importlib.import_module(info.name)
    return [c for c in _subclasses(Slotted) if c is not FrozenSlotted]


def test_fields_are_the_slots_in_order() -> None:
    # repr, equality and the engine's JSON of slotted objects (dump --compacted's groups) read
    # the fields in __slots__ order: every slot annotated, in the order annotated
    classes = _all_record_classes()
    assert len(classes) >= 40
    for cls in classes:
        # a subclass's fields: its base's, then its own (as a dataclass subclass's)
        base = next(b for b in cls.__mro__[1:] if issubclass(b, Slotted))
        assert cls._fields == base._fields + tuple(cls.__dict__["__slots__"]), cls
        assert "__dict__" not in dir(cls), cls
    assert (
        DecodedSubscription._fields
        == DecodedAssignment._fields
        == (
            "raw",
            "version",
            "message",
            "read_version",
            "error",
            "note",
        )
    )


@dataclasses.dataclass(frozen=True, slots=True)
class _AsOf:  # the dataclass AsOf was
    offset: int | None = None
    timestamp_ms: int | None = None


@dataclasses.dataclass(slots=True)
class _GroupState:  # and GroupState
    group: str
    type: str
    state: str = "Empty"
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    generation: int | None = None
    epoch: int | None = None
    members: dict[str, Any] = dataclasses.field(default_factory=dict)
    record_offset: int = -1


@pytest.mark.parametrize(
    ("args", "other"),
    [((), ()), ((5,), (5,)), ((5, 7), (5, 8)), ((None, 3), (3, None)), ((float("nan"),), (1,))],
)
def test_frozen_as_the_dataclass(args: tuple[Any, ...], other: tuple[Any, ...]) -> None:
    a, b, old_a, old_b = AsOf(*args), AsOf(*other), _AsOf(*args), _AsOf(*other)
    assert repr(a) == repr(old_a).replace("_AsOf", "AsOf")
    assert (a == b) == (old_a == old_b)
    assert (a == a) == (old_a == old_a)  # nan: identity first, as a tuple's
    assert hash(a) == hash(old_a)
    assert a != old_a  # another class
    copy, old_copy = pickle.loads(pickle.dumps(a)), pickle.loads(pickle.dumps(old_a))
    assert repr(copy) == repr(a)
    assert (copy == a) == (old_copy == old_a)
    for obj in (a, old_a, copy):
        with pytest.raises(
            dataclasses.FrozenInstanceError, match="cannot assign to field 'offset'"
        ):
            obj.offset = 9  # type: ignore[misc]
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'offset'"):
            del obj.offset  # type: ignore[misc]
    with pytest.raises(AttributeError):
        a.nope = 1  # type: ignore[attr-defined]
    assert a == AsOf(*args) or args == (float("nan"),)  # unchanged by the refused writes


def test_every_frozen_class_refuses_writes() -> None:
    frozen = [c for c in _all_record_classes() if issubclass(c, FrozenSlotted)]
    assert len(frozen) >= 15
    for cls in frozen:
        obj = object.__new__(cls)
        for name in cls._fields:
            object.__setattr__(obj, name, None)
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(obj, name, 1)


def test_mutable_as_the_dataclass() -> None:
    a, old = GroupState("g", "classic"), _GroupState("g", "classic")
    assert repr(a) == repr(old).replace("_GroupState", "GroupState")
    assert a.members is not GroupState("g", "classic").members  # a fresh dict each
    b = GroupState("g", "classic")
    assert a == b
    b.members["m"] = GroupMember("m")
    assert a != b
    a.members["m"] = GroupMember("m")
    assert a == b
    with pytest.raises(TypeError, match="unhashable"):
        hash(a)
    with pytest.raises(AttributeError):
        a.nope = 1  # type: ignore[attr-defined]
    assert repr(GroupMember("m", assignors=["range"])) == (
        "GroupMember(member_id='m', client_id='', client_host='', instance_id=None, "
        "rack_id=None, assignors=['range'], subscribed_topics=[], assignment={}, "
        "member_epoch=None)"
    )


def test_a_subclass_keeps_its_bases_fields() -> None:
    sub = DecodedSubscription(b"\x00\x01", 1, None, error="short")
    assert repr(sub) == (
        "DecodedSubscription(raw=b'\\x00\\x01', version=1, message=None, read_version=-1, "
        "error='short', note=None)"
    )
    assert sub == DecodedSubscription(b"\x00\x01", 1, None, error="short")
    assert sub != DecodedSubscription(b"\x00\x01", 1, None, error="other")
    assert sub != DecodedAssignment(b"\x00\x01", 1, None, error="short")  # another class
    assert pickle.loads(pickle.dumps(sub)) == sub
    assert sub.topics == [] and sub.user_data is None
