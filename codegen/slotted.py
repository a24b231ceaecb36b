"""Base classes for small record classes: each field is written once, as an annotation with its
default, and the class gets ``__slots__``, ``__init__``, ``repr``, equality and hash as
``@dataclass(slots=True)`` (and ``frozen=True``) would give it. Stdlib only. ``@dataclass``
builds each class's methods from source text as its module is imported (some 2-4 M
instructions a class; the views' commands load dozens of them); here the methods are shared
and only a small ``__init__`` is compiled, the first time a class makes an object."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import FrozenInstanceError
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, dataclass_transform

__all__ = ["FrozenSlotted", "Slotted", "SlottedBase", "field"]

_T = TypeVar("_T")


class _Factory:
    """A default made afresh for each object (:func:`field`)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], object]) -> None:
        self.make = make


def field(*, default_factory: Callable[[], _T]) -> _T:
    """A field's default made by ``default_factory()`` for each object, as a dataclass's
    ``field(default_factory=...)`` (a mutable default is not shared between objects)."""
    return _Factory(default_factory)  # type: ignore[return-value]


_MISSING: Any = object()
"""The default of a field with a factory: told apart from any value a caller passes."""


def _is_class_var(annotation: object) -> bool:
    # annotations are strings under ``from __future__ import annotations``
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


def _init_source(
    fields: tuple[str, ...], defaults: dict[str, object], frozen: bool
) -> tuple[str, dict[str, object]]:
    """The text of ``__init__`` for ``fields`` and the globals it reads (defaults, factories)."""
    params, lines, names = [], [], {"_MISSING": _MISSING}
    for name in fields:
        default = defaults.get(name, _MISSING)
        value = name
        if isinstance(default, _Factory):
            params.append(f"{name}=_MISSING")
            names[f"_make_{name}"] = default.make
            value = f"_make_{name}() if {name} is _MISSING else {name}"
        elif default is not _MISSING:
            params.append(f"{name}=_default_{name}")
            names[f"_default_{name}"] = default
        else:
            params.append(name)
        # a frozen class's own __setattr__ refuses writes: __init__ writes the slot directly
        lines.append(f"_set_{name}(self, {value})" if frozen else f"self.{name} = {value}")
    body = "\n    ".join(lines) or "pass"
    return f"def __init__(self, {', '.join(params)}):\n    {body}\n", names


def _lazy_init(cls: type[SlottedBase]) -> Callable[..., None]:
    """An ``__init__`` that compiles the class's real one at its first call (a view loads many
    record classes and makes objects of a few), puts it on the class and calls it."""

    def __init__(self: SlottedBase, *args: Any, **kwargs: Any) -> None:
        frozen = issubclass(cls, FrozenSlotted)
        source, names = _init_source(cls._fields, cls._defaults, frozen)
        if frozen:
            for name in cls._fields:
                names[f"_set_{name}"] = getattr(cls, name).__set__
        exec(compile(source, f"<{cls.__qualname__}.__init__>", "exec"), names)
        init: Any = names["__init__"]
        init.__qualname__ = f"{cls.__qualname__}.__init__"
        type.__setattr__(cls, "__init__", init)
        init(self, *args, **kwargs)

    return __init__


class _RecordType(type):
    """Makes a record class's ``__slots__`` from its annotations (its fields: a base's first),
    takes their defaults off the class body (a slot cannot share its name with a class
    attribute) and gives it an ``__init__`` over all its fields unless it writes its own."""

    def __new__(
        mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any
    ) -> _RecordType:
        annotations = namespace.get("__annotations__", {})
        own = tuple(n for n, a in annotations.items() if not _is_class_var(a))
        own_defaults = {n: namespace.pop(n) for n in own if n in namespace}
        namespace["__slots__"] = own
        cls = super().__new__(mcls, name, bases, namespace, **kwargs)
        if not own:
            return cls
        record: Any = cls
        fields = record._fields + own
        defaults = {**record._defaults, **own_defaults}
        has_default = [n in defaults for n in fields]
        if has_default != sorted(has_default):  # as __init__'s parameters must
            raise TypeError(f"{name}: a field without a default follows one with a default")
        record._fields, record._defaults = fields, defaults
        if "__init__" not in namespace:
            record.__init__ = _lazy_init(record)
        return cls


class SlottedBase(metaclass=_RecordType):
    """What :class:`Slotted` and :class:`FrozenSlotted` share: ``repr`` and ``==`` over the
    class's fields (its annotations, a base's first), as a dataclass's: ``Name(a=1, b='x')``,
    equal to an object of the same class whose fields are equal."""

    _fields: ClassVar[tuple[str, ...]] = ()
    _defaults: ClassVar[dict[str, object]] = {}

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, n) for n in self._fields)

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields)
        return f"{type(self).__qualname__}({fields})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, SlottedBase)  # for the type checker
        return self._values() == other._values()

    # no __hash__: a class defining __eq__ alone is unhashable (FrozenSlotted defines one)


# Two bases, not one derived from the other: the type checker refuses a frozen dataclass
# whose base is a dataclass that is not frozen.


@dataclass_transform(field_specifiers=(field,))  # the type checker sees a dataclass each
class Slotted(SlottedBase):
    """A record class with mutable fields; unhashable, as a dataclass with ``eq`` and without
    ``frozen``."""


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
class FrozenSlotted(SlottedBase):
    """A record class hashed by its fields, as a frozen dataclass: a field is written once, by
    ``__init__`` (or unpickling), and assigning or deleting it afterwards raises
    ``FrozenInstanceError`` (the type checker refuses it too)."""

    if not TYPE_CHECKING:  # a __setattr__ would let the type checker accept any attribute

        def __setattr__(self, name: str, value: Any) -> None:
            # a slot not yet set reads as missing: unpickling's writes pass, later ones do not
            if hasattr(self, name):
                raise FrozenInstanceError(f"cannot assign to field {name!r}")
            object.__setattr__(self, name, value)

        def __delattr__(self, name: str) -> None:
            raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __hash__(self) -> int:
        return hash(self._values())
