"""The wire layout of one version of a struct, to compare versions across specs.

A layout holds what decides the bytes: field kinds, nullability, whether strings and
collections use the compact (flexible) form, nested structs, and the tagged fields by
tag. Names are left out: two layouts that are equal read the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from codegen.lint.model import LField, LStruct, SpecView


@dataclass(frozen=True, slots=True)
class FieldLayout:
    kind: str
    element: str | None
    nullable: bool
    compact: bool
    struct: StructLayout | None


@dataclass(frozen=True, slots=True)
class StructLayout:
    flexible: bool
    fields: tuple[FieldLayout, ...]
    # Tags are left out of equality: a reader skips tags it does not know, so they are
    # compared on their own (_layouts_tags_ok).
    tagged: tuple[tuple[int, FieldLayout], ...] = field(compare=False)


def _field_layout(lfield: LField, version: int, flexible: bool) -> FieldLayout:
    ftype = lfield.ir.type
    sub = None if lfield.struct is None else struct_layout(lfield.struct, version, flexible)
    return FieldLayout(
        kind=ftype.kind,
        element=None if ftype.element is None else ftype.element.kind,
        nullable=version in lfield.ir.nullable_versions,
        compact=version in lfield.ir.flexible_versions,
        struct=sub,
    )


def struct_layout(struct: LStruct, version: int, flexible: bool) -> StructLayout:
    fields = tuple(
        _field_layout(f, version, flexible)
        for f in struct.fields
        if version in f.ir.mandatory_versions
    )
    tagged = tuple(
        sorted(
            (f.ir.tag or 0, _field_layout(f, version, flexible))
            for f in struct.fields
            if version in f.ir.tagged_versions
        )
    )
    return StructLayout(flexible, fields, tagged)


def message_layout(view: SpecView, version: int) -> StructLayout:
    flexible = version in view.message.flexible_versions
    return struct_layout(view.root, version, flexible)


def mandatory_names(view: SpecView, version: int) -> list[str]:
    return [f.name for f in view.root.fields if version in f.ir.mandatory_versions]


def _tags_compatible(written: StructLayout, reader: StructLayout) -> bool:
    known = dict(reader.tagged)
    return all(known.get(tag, layout) == layout for tag, layout in written.tagged)


def unreadable_reason(
    writer: SpecView, version: int, reader: SpecView, as_version: int
) -> str | None:
    """Why ``reader`` parsing ``writer``'s bytes of ``version`` as ``as_version`` fails.

    None when it works: the non-tagged layouts are equal and every tag the reader knows
    has the type the writer used (tags the reader does not know are kept as unknown).
    """
    written = message_layout(writer, version)
    read = message_layout(reader, as_version)
    if written.flexible != read.flexible:
        if written.flexible:
            return "the writer's version is flexible and the reader's is not"
        return "the writer's version is not flexible and the reader's is"
    if written.fields != read.fields:
        return "the non-tagged fields differ"
    if not _layouts_tags_ok(written, read):
        return "a tagged field has another type in the reader's spec"
    return None


def _layouts_tags_ok(written: StructLayout, read: StructLayout) -> bool:
    if not _tags_compatible(written, read):
        return False
    for w, r in zip(written.fields, read.fields, strict=True):
        if w.struct is None or r.struct is None:
            continue
        if not _layouts_tags_ok(w.struct, r.struct):
            return False
    return True


def _plain(layout: StructLayout) -> StructLayout:
    fields = tuple(
        FieldLayout(
            f.kind, f.element, f.nullable, False, None if f.struct is None else _plain(f.struct)
        )
        for f in layout.fields
    )
    return StructLayout(False, fields, ())


def same_fields(a: StructLayout, b: StructLayout) -> bool:
    """The same non-tagged fields, whether or not either version is flexible."""
    return _plain(a) == _plain(b)


def same_wire(a: StructLayout, b: StructLayout) -> bool:
    """Equal non-tagged layouts and compatible tags (used for keys, which have no tags)."""
    return a.flexible == b.flexible and a.fields == b.fields and _layouts_tags_ok(a, b)
