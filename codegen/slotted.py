"""Base classes for small record classes written out by hand (``__slots__`` and an explicit
``__init__``), with the ``repr``, equality and hash that ``@dataclass(slots=True)`` (and
``frozen=True``) would give them. Stdlib only. ``@dataclass`` builds each class's methods
from source text as its module is imported, some 2-4 M instructions a class; the views'
commands load dozens of them, and their start-up paid for it."""

from __future__ import annotations

import inspect
from dataclasses import FrozenInstanceError
from typing import Any, ClassVar

__all__ = ["FrozenSlotted", "Slotted"]


class Slotted:
    """``repr`` and ``==`` over the class's fields (its annotated slots, in the order
    annotated), as a dataclass's: ``Name(a=1, b='x')``, equal to an object of the same class
    whose fields are equal; unhashable, as a dataclass with ``eq`` and without ``frozen``."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        slots = cls.__dict__.get("__slots__", ())
        own = tuple(n for n in inspect.get_annotations(cls) if n in slots)
        cls._fields = cls._fields + own  # a base's fields first, as a dataclass subclass's

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, n) for n in self._fields)

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields)
        return f"{type(self).__qualname__}({fields})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Slotted)  # for the type checker
        return self._values() == other._values()

    # no __hash__: a class defining __eq__ alone is unhashable


class FrozenSlotted(Slotted):
    """A :class:`Slotted` hashed by its fields, as a frozen dataclass: a field is written once,
    by ``__init__`` (or unpickling), and assigning or deleting it afterwards raises
    ``FrozenInstanceError`` (its fields are ``Final`` for the type checker too)."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        # a slot not yet set reads as missing: __init__'s writes pass, later ones do not
        if hasattr(self, name):
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __hash__(self) -> int:
        return hash(self._values())
