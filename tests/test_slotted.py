"""codegen.slotted: record classes whose fields are written once (an annotation with its default)
behave as the ``@dataclass(slots=True)`` (and ``frozen=True``) classes they replace, keep their
fields in order, and are checked by mypy as dataclasses."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pickle
import pkgutil
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

import codegen
from codegen.dumps.consumer_protocol import DecodedAssignment, DecodedSubscription
from codegen.dumps.views.compacted import GroupMember, GroupState
from codegen.dumps.views.cut import AsOf
from codegen.forensics.inputs import LogEnd
from codegen.slotted import _MISSING, FrozenSlotted, Slotted, SlottedBase, field


def _subclasses(cls: type[SlottedBase]) -> list[type[SlottedBase]]:
    out: list[type[SlottedBase]] = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


def _all_record_classes() -> list[type[SlottedBase]]:
    for info in pkgutil.walk_packages(codegen.__path__, "codegen."):
        if not info.name.startswith(("codegen.dumps", "codegen.forensics")):
            continue
        if info.name.startswith("codegen.forensics.replay"):
            continue  # needs the replay extras
        importlib.import_module(info.name)
    classes = _subclasses(SlottedBase)
    bases = (Slotted, FrozenSlotted)
    return [c for c in classes if c.__module__.startswith("codegen.") and c not in bases]


def test_fields_are_the_slots_in_order() -> None:
    # repr, equality and the engine's JSON of slotted objects (dump --compacted's groups) read
    # the fields in __slots__ order: a slot for every annotation, in the order annotated
    classes = _all_record_classes()
    assert len(classes) >= 40
    for cls in classes:
        assert cls.__dict__["__slots__"] == tuple(inspect.get_annotations(cls))
        # a subclass's fields: its base's, then its own (as a dataclass subclass's)
        base = next(b for b in cls.__mro__[1:] if issubclass(b, SlottedBase))
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
    objs: tuple[Any, ...] = (a, old_a, copy)  # mypy refuses the writes: test_mypy_...
    for obj in objs:
        with pytest.raises(
            dataclasses.FrozenInstanceError, match="cannot assign to field 'offset'"
        ):
            obj.offset = 9
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'offset'"):
            del obj.offset
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


class _Defaults(Slotted):
    name: str
    count: int = 0
    tags: list[str] = field(default_factory=list)
    """A docstring between fields is no field."""
    note: str | None = None
    kinds: ClassVar[tuple[str, ...]] = ("a",)


@dataclasses.dataclass(slots=True)
class _OldDefaults:  # the dataclass _Defaults would be
    name: str
    count: int = 0
    tags: list[str] = dataclasses.field(default_factory=list)
    note: str | None = None


def test_defaults_as_the_dataclass() -> None:
    assert _Defaults._fields == ("name", "count", "tags", "note") == _Defaults.__dict__["__slots__"]
    assert _Defaults.kinds == ("a",)  # a ClassVar stays on the class
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        (("n",), {}),
        (("n", 3), {"note": "x"}),
        ((), {"name": "n", "tags": []}),
    ]
    for args, kwargs in calls:
        a, old = _Defaults(*args, **kwargs), _OldDefaults(*args, **kwargs)
        assert repr(a) == repr(old).replace("_OldDefaults", "_Defaults")
    assert _Defaults("n").tags is not _Defaults("n").tags  # a fresh list each
    given: list[str] = []
    assert _Defaults("n", tags=given).tags is given
    init = _Defaults.__dict__["__init__"]
    assert init.__qualname__ == "_Defaults.__init__"
    assert str(inspect.signature(init)) == (
        "(self, name, count=0, tags=<default>, note=None)".replace("<default>", repr(_MISSING))
    )
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'name'"):
        _Defaults()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        _Defaults("n", nope=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="takes from 2 to 5 positional arguments"):
        _Defaults("n", 1, [], None, 5)  # type: ignore[call-arg]


def test_init_is_made_at_the_first_object() -> None:
    class Late(FrozenSlotted):
        a: int
        b: str = "b"

    assert "__init__" in Late.__dict__ and Late.__init__.__name__ == "__init__"
    first = Late.__dict__["__init__"]
    assert Late(1) == Late(1, "b") != Late(1, "c")
    made = Late.__dict__["__init__"]
    assert made is not first and str(inspect.signature(made)) == "(self, a, b='b')"
    assert Late(2).b == "b" and Late.__dict__["__init__"] is made  # made once

    class Sub(Late):  # no fields of its own: its base's __init__
        pass

    assert "__init__" not in Sub.__dict__ and Sub(3, "x") == Sub(3, "x") != Late(3, "x")


def test_a_field_without_a_default_after_one_with() -> None:
    with pytest.raises(TypeError, match="a field without a default follows one with a default"):

        class Wrong(Slotted):  # a dataclass refuses it too
            a: int = 0
            b: int  # type: ignore[misc]  # (mypy refuses it as well)

    with pytest.raises(TypeError, match="Later: a field without a default follows"):

        class Later(_Defaults):
            more: int  # type: ignore[misc]


def test_a_class_may_write_its_own_init() -> None:
    end = LogEnd([1, 2], [3, 4], "segments", "here", True)  # type: ignore[arg-type]
    assert end.times.dtype == np.int64 and end.ends.tolist() == [3, 4]
    assert LogEnd.__dict__["__slots__"] == ("times", "ends", "source", "where", "history")
    assert end != LogEnd(end.times, end.ends, "segments", "here", True)  # by identity


_CALLS = """
from codegen.dumps.views.cut import AsOf
from codegen.dumps.views.compacted import GroupMember
from tests.test_slotted import _Defaults

_Defaults("n", tags=["a"], note=None)
_Defaults("n", tags=None)
_Defaults(1)
GroupMember("m", assignors=None)
AsOf(5).offset = 6
"""


def test_mypy_checks_every_constructor_call(tmp_path: Path) -> None:
    # the bases carry typing.dataclass_transform: mypy reads each class as a dataclass
    api = pytest.importorskip("mypy.api")
    calls = tmp_path / "calls.py"
    calls.write_text(_CALLS)
    out, _, status = api.run(
        ["--strict", "--no-incremental", "--follow-imports=silent", str(calls)]
    )
    errors = [line.split(": error: ")[1] for line in out.splitlines() if ": error: " in line]
    assert status == 1 and errors == [
        'Argument "tags" to "_Defaults" has incompatible type "None"; expected "list[str]"'
        "  [arg-type]",
        'Argument 1 to "_Defaults" has incompatible type "int"; expected "str"  [arg-type]',
        'Argument "assignors" to "GroupMember" has incompatible type "None"; '
        'expected "list[str]"  [arg-type]',
        'Property "offset" defined in "AsOf" is read-only  [misc]',
    ], out
