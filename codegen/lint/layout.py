"""The byte layout of one version of a message: the lint's judgement of the wire.

A layout holds what decides the bytes: whether the version is flexible, the non-tagged fields
in order (kind, nullability, compact lengths, nested structs) and the tagged fields by tag,
with their default (an omitted tagged field reads as its default). Names are left out: two
versions whose layouts are compatible (:func:`difference` is None) read each other's bytes as
written, whatever their fields are called. Tags only one side has are compatible (readers skip
tags they do not know, KIP-482).

Layouts also have a text form (:func:`layout_text`, :func:`parse_layout`), which the lock file
keeps so that a version brought back can be compared with the layout it had.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from codegen.ir import Field, Message

_LENGTH_KINDS = frozenset({"string", "bytes", "array"})  # compact lengths in flexible versions
_SAME_BYTES = {"records": "bytes"}  # kinds written alike


@dataclass(frozen=True, slots=True)
class FieldLayout:
    kind: str
    element: str | None  # the element kind of an array
    nullable: bool
    compact: bool
    struct: StructLayout | None  # a struct's, or an array of structs' element's
    default: str | None = None  # tagged fields: what an omitted field reads as


@dataclass(frozen=True, slots=True)
class StructLayout:
    flexible: bool
    fields: tuple[FieldLayout, ...]
    tagged: tuple[tuple[int, FieldLayout], ...] = ()


def field_layout(f: Field, version: int, flexible: bool) -> FieldLayout:
    kind = _SAME_BYTES.get(f.type.kind, f.type.kind)
    element = None if f.type.element is None else f.type.element.kind
    sub = None if f.struct is None else struct_layout(f.struct.fields, version, flexible)
    return FieldLayout(
        kind=kind,
        element=None if element is None else _SAME_BYTES.get(element, element),
        nullable=version in f.nullable_versions,
        compact=kind in _LENGTH_KINDS and version in f.flexible_versions,
        struct=sub,
        default=repr(f.default) if version in f.tagged_versions else None,
    )


def struct_layout(fields: Iterable[Field], version: int, flexible: bool) -> StructLayout:
    """The layout of a struct's ``fields`` in ``version``."""
    present = [f for f in fields if version in f.versions]
    mandatory = tuple(
        field_layout(f, version, flexible) for f in present if version in f.mandatory_versions
    )
    tagged = tuple(
        sorted(
            (f.tag or 0, field_layout(f, version, flexible))
            for f in present
            if version in f.tagged_versions
        )
    )
    return StructLayout(flexible, mandatory, tagged)


def message_layout(message: Message, version: int) -> StructLayout:
    flexible = version in message.flexible_versions
    return struct_layout(message.root.fields, version, flexible)


# --------------------------------------------------------------------------- comparing


@dataclass(frozen=True, slots=True)
class Difference:
    """Where two layouts differ first: the steps to the struct or field (a non-tagged field by
    its place, a tagged one by ``"tag N"``) and what differs there."""

    path: tuple[int | str, ...]
    what: str

    def at(self, step: int | str) -> Difference:
        return Difference((step, *self.path), self.what)


def _field_difference(old: FieldLayout, new: FieldLayout) -> Difference | None:
    if (old.kind, old.element) != (new.kind, new.element) or (old.struct is None) != (
        new.struct is None
    ):
        return Difference((), f"was {_field_text(old)} and is {_field_text(new)}")
    if old.nullable != new.nullable:
        return Difference((), "is no longer nullable" if old.nullable else "became nullable")
    if old.compact != new.compact:
        return Difference(
            (), f"{'lost' if old.compact else 'took'} the compact (flexible) encoding"
        )
    if old.default != new.default:
        return Difference((), f"reads as {old.default} when omitted, and now as {new.default}")
    if old.struct is not None and new.struct is not None:
        return difference(old.struct, new.struct)
    return None


def difference(old: StructLayout, new: StructLayout) -> Difference | None:
    """Why bytes of ``old`` do not read as written with ``new`` (or back); None when they do.

    Tags only one side has are compatible; a tag both have must have the same layout.
    """
    if old.flexible != new.flexible:
        return Difference((), "is no longer flexible" if old.flexible else "became flexible")
    if len(old.fields) != len(new.fields):
        return Difference((), f"{len(old.fields)} non-tagged fields became {len(new.fields)}")
    for place, (a, b) in enumerate(zip(old.fields, new.fields, strict=True)):
        found = _field_difference(a, b)
        if found is not None:
            return found.at(place)
    new_tags = dict(new.tagged)
    for tag, was in old.tagged:
        now = new_tags.get(tag)
        if now is not None:
            found = _field_difference(was, now)
            if found is not None:
                return found.at(f"tag {tag}")
    return None


def describe(found: Difference, message: Message, version: int) -> str:
    """``found`` with the names ``message`` gives its fields in ``version``."""
    names: list[str] = []
    fields: Iterable[Field] = message.root.fields
    for step in found.path:
        present = [f for f in fields if version in f.versions]
        if isinstance(step, int):
            chosen = [f for f in present if version in f.mandatory_versions][step]
        else:
            tag = int(step.removeprefix("tag "))
            chosen = next(f for f in present if f.tag == tag and version in f.tagged_versions)
        names.append(chosen.name)
        fields = chosen.struct.fields if chosen.struct is not None else ()
    if not names:
        return found.what if found.what[:1].isdigit() else f"the version {found.what}"
    where = ".".join(names)
    if found.what[:1].isdigit():
        return f"in {where}, {found.what}"
    return f"field {where} {found.what}"


def _untagged(layout: StructLayout) -> StructLayout:
    """The layout without tagged fields, nested structs included."""

    def plain(f: FieldLayout) -> FieldLayout:
        sub = None if f.struct is None else _untagged(f.struct)
        return FieldLayout(f.kind, f.element, f.nullable, f.compact, sub)

    return StructLayout(layout.flexible, tuple(plain(f) for f in layout.fields))


def unreadable_reason(
    writer: Message, version: int, reader: Message, as_version: int
) -> str | None:
    """Why ``reader`` parsing ``writer``'s bytes of ``version`` as ``as_version`` fails.

    None when it works: the non-tagged layouts are equal and every tag the reader knows
    has the layout the writer used (tags the reader does not know are kept as unknown).
    """
    written = message_layout(writer, version)
    read = message_layout(reader, as_version)
    if written.flexible != read.flexible:
        if written.flexible:
            return "the writer's version is flexible and the reader's is not"
        return "the writer's version is not flexible and the reader's is"
    if _untagged(written) != _untagged(read):
        return "the non-tagged fields differ"
    if difference(written, read) is not None:
        return "a tagged field has another type in the reader's spec"
    return None


def same_fields(a: StructLayout, b: StructLayout) -> bool:
    """The same non-tagged fields, whether or not either version is flexible."""

    def plain(layout: StructLayout) -> StructLayout:
        fields = tuple(
            FieldLayout(
                f.kind, f.element, f.nullable, False, None if f.struct is None else plain(f.struct)
            )
            for f in layout.fields
        )
        return StructLayout(False, fields)

    return plain(a) == plain(b)


def same_wire(a: StructLayout, b: StructLayout) -> bool:
    """Compatible layouts (used for keys, which have no tags)."""
    return difference(a, b) is None


# --------------------------------------------------------------------------- text form


def _field_text(f: FieldLayout) -> str:
    if f.kind == "array":
        body = "[]" + (_struct_text(f.struct) if f.struct is not None else str(f.element))
    elif f.struct is not None:
        body = _struct_text(f.struct)
    else:
        body = f.kind
    text = ("compact " if f.compact else "") + body + ("?" if f.nullable else "")
    return text if f.default is None else f"{text} = {json.dumps(f.default)}"


def _struct_text(s: StructLayout) -> str:
    fields = ", ".join(_field_text(f) for f in s.fields)
    tags = ", ".join(f"{tag}: {_field_text(f)}" for tag, f in s.tagged)
    return "{" + fields + (f"; {tags}" if tags else "") + "}"


def layout_text(layout: StructLayout) -> str:
    """``flexible {int32, compact string?, []{int32}; 0: int32 = "-1"}``."""
    return ("flexible " if layout.flexible else "") + _struct_text(layout)


class LayoutTextError(ValueError):
    """Text that is not a layout."""


class _Parser:
    def __init__(self, text: str, flexible: bool) -> None:
        self.text, self.pos, self.flexible = text, 0, flexible

    def error(self, what: str) -> LayoutTextError:
        return LayoutTextError(f"{what} at character {self.pos} of {self.text!r}")

    def take(self, token: str) -> bool:
        if self.text.startswith(token, self.pos):
            self.pos += len(token)
            return True
        return False

    def expect(self, token: str) -> None:
        if not self.take(token):
            raise self.error(f"expected {token!r}")

    def word(self) -> str:
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum()):
            self.pos += 1
        if start == self.pos:
            raise self.error("expected a type")
        return self.text[start : self.pos]

    def field(self) -> FieldLayout:
        compact = self.take("compact ")
        element: str | None = None
        struct: StructLayout | None = None
        if self.take("[]"):
            kind = "array"
            if self.text.startswith("{", self.pos):
                element, struct = "struct", self.struct()
            else:
                element = self.word()
        elif self.text.startswith("{", self.pos):
            kind, struct = "struct", self.struct()
        else:
            kind = self.word()
        nullable = self.take("?")
        default: str | None = None
        if self.take(" = "):
            try:
                value, end = json.JSONDecoder().raw_decode(self.text, self.pos)
            except json.JSONDecodeError:
                raise self.error("expected a default") from None
            default, self.pos = str(value), end
        return FieldLayout(kind, element, nullable, compact, struct, default)

    def struct(self) -> StructLayout:
        self.expect("{")
        fields: list[FieldLayout] = []
        tagged: list[tuple[int, FieldLayout]] = []
        if not self.text.startswith(("}", ";"), self.pos):
            fields.append(self.field())
            while self.take(", "):
                fields.append(self.field())
        if self.take("; "):
            while True:
                tag = self.word()
                if not tag.isdigit():
                    raise self.error("expected a tag number")
                self.expect(": ")
                tagged.append((int(tag), self.field()))
                if not self.take(", "):
                    break
        self.expect("}")
        return StructLayout(self.flexible, tuple(fields), tuple(tagged))


def parse_layout(text: str) -> StructLayout:
    """The layout of :func:`layout_text`; LayoutTextError when the text is not one."""
    flexible = text.startswith("flexible ")
    parser = _Parser(text, flexible)
    parser.pos = len("flexible ") if flexible else 0
    layout = parser.struct()
    if parser.pos != len(text):
        raise parser.error("unexpected text")
    return layout
