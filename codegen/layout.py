"""Per-version wire layouts: what the templates walk to emit straight-line codecs.

For one struct at one version, a layout is the list of steps that read or write it:
runs of fixed-width values (one ``struct.Struct`` call each, including the length prefix
of the variable-length field that follows), variable-length fields, nested structs and
the tagged-field section. Versions whose layouts are equal share one function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from codegen.ir import FIXED_TYPES, Field, FieldType, Message, Struct
from codegen.versions import VersionRange

# Non-flexible length prefixes: format letter and size.
_LENGTH_PREFIX = {"string": ("h", 2), "bytes": ("i", 4), "records": ("i", 4), "array": ("i", 4)}
# Steps that neither loop nor call another struct's reader.
_LEAF_STEPS = frozenset({"run", "string", "bytes", "records"})


@dataclass(frozen=True, slots=True)
class RunItem:
    """One value inside a fixed-width run."""

    field: Field
    role: str  # "value", "length" (prefix of the next step) or "marker" (nullable struct)
    fmt: str
    size: int

    @property
    def is_uuid(self) -> bool:
        return self.role == "value" and self.field.type.kind == "uuid"


@dataclass(frozen=True, slots=True)
class Step:
    """A fixed run (``kind == "run"``) or one variable-length, array or struct field."""

    kind: str  # run | string | bytes | records | array | struct
    field: Field | None = None
    items: tuple[RunItem, ...] = ()
    compact: bool = False
    nullable: bool = False
    length_in_run: bool = False  # the length prefix was read by the preceding run
    element: ElementLayout | None = None
    child: str = ""  # suffix of the nested struct's codec functions at this version

    @property
    def fmt(self) -> str:
        return "".join(i.fmt for i in self.items)

    @property
    def size(self) -> int:
        return sum(i.size for i in self.items)

    @property
    def struct_key(self) -> str:
        letters = {"16s": "u", "?": "z"}
        return "_S_" + "".join(letters.get(i.fmt, i.fmt) for i in self.items)


@dataclass(frozen=True, slots=True)
class ElementLayout:
    """How one array element is read and written."""

    type: FieldType
    compact: bool
    fmt: str  # struct format letter for fixed elements, "" otherwise
    size: int  # fixed size, or the minimum encoded size
    struct: Struct | None
    child: str = ""  # suffix of the element struct's codec functions

    @property
    def unpackers(self) -> str:
        """Module constant: unpack functions of fixed-element arrays, indexed by count."""
        return "_AU_" + {"?": "z", "16s": "u"}.get(self.fmt, self.fmt)

    @property
    def packers(self) -> str:
        return "_AP_" + {"?": "z", "16s": "u"}.get(self.fmt, self.fmt)


@dataclass(frozen=True, slots=True)
class TaggedLayout:
    """A tagged field at a version: its tag and how its value is read and written."""

    field: Field
    tag: int
    nullable: bool
    step: Step


@dataclass(frozen=True, slots=True)
class StructLayout:
    """One struct at one group of versions with the same wire layout."""

    struct: Struct
    versions: tuple[int, ...]
    flexible: bool
    steps: tuple[Step, ...]
    absent: tuple[Field, ...]  # not on the wire at these versions: default on read
    tagged: tuple[TaggedLayout, ...]
    known_tags_elsewhere: tuple[int, ...]  # tags of this struct not valid at these versions

    @property
    def version(self) -> int:
        return self.versions[0]

    @property
    def suffix(self) -> str:
        return f"{self.struct.name}_v{self.version}"


ChildLookup = Callable[[Struct, int], str]


def _element(ftype: FieldType, compact: bool, struct: Struct | None, child: str) -> ElementLayout:
    if ftype.kind in FIXED_TYPES:
        size, fmt = FIXED_TYPES[ftype.kind]
        return ElementLayout(ftype, compact, fmt, size, None)
    if ftype.kind == "struct":
        assert struct is not None
        return ElementLayout(ftype, compact, "", 1 if compact else 0, struct, child)
    size = 1 if compact else _LENGTH_PREFIX[ftype.kind][1]
    return ElementLayout(ftype, compact, "", size, None)


def _value_step(f: Field, version: int, compact: bool, child_of: ChildLookup) -> Step:
    """The step that reads or writes ``f`` on its own (never part of a run)."""
    kind = f.type.kind
    nullable = f.nullable_in(version)
    child = child_of(f.struct, version) if f.struct is not None else ""
    if kind in FIXED_TYPES:
        size, letter = FIXED_TYPES[kind]
        return Step("run", items=(RunItem(f, "value", letter, size),))
    if kind == "struct":
        return Step("struct", field=f, nullable=nullable, child=child)
    element = None
    if kind == "array":
        assert f.type.element is not None
        element = _element(f.type.element, compact, f.struct, child)
    return Step(kind, field=f, compact=compact, nullable=nullable, element=element, child=child)


def struct_layout(
    struct: Struct, version: int, message: Message, child_of: ChildLookup
) -> StructLayout:
    flexible = version in message.flexible_versions
    steps: list[Step] = []
    run: list[RunItem] = []
    absent: list[Field] = []

    def flush() -> None:
        if run:
            steps.append(Step("run", items=tuple(run)))
            run.clear()

    for f in struct.fields:
        if version not in f.mandatory_versions:
            if version not in f.tagged_versions:
                absent.append(f)
            continue
        kind = f.type.kind
        nullable = f.nullable_in(version)
        compact = f.flexible_in(version)
        if kind in FIXED_TYPES:
            size, letter = FIXED_TYPES[kind]
            run.append(RunItem(f, "value", letter, size))
            continue
        if kind == "struct":
            if nullable:
                run.append(RunItem(f, "marker", "b", 1))
            flush()
            steps.append(_value_step(f, version, compact, child_of))
            continue
        step = _value_step(f, version, compact, child_of)
        if not compact and not nullable:
            # The length prefix joins the run before it: one unpack call for both.
            letter, size = _LENGTH_PREFIX[kind]
            run.append(RunItem(f, "length", letter, size))
            step = replace(step, length_in_run=True)
        flush()
        steps.append(step)
    flush()
    tagged: list[TaggedLayout] = []
    elsewhere: list[int] = []
    for f in struct.tagged_fields():
        assert f.tag is not None
        if version not in f.tagged_versions:
            elsewhere.append(f.tag)
            continue
        step = _value_step(f, version, True, child_of)
        tagged.append(TaggedLayout(f, f.tag, f.nullable_in(version), step))
    return StructLayout(
        struct=struct,
        versions=(version,),
        flexible=flexible,
        steps=tuple(steps),
        absent=tuple(absent),
        tagged=tuple(tagged),
        known_tags_elsewhere=tuple(elsewhere),
    )


def _signature(layout: StructLayout) -> tuple[object, ...]:
    return (
        layout.flexible,
        layout.steps,
        layout.absent,
        layout.tagged,
        layout.known_tags_elsewhere,
    )


def _struct_versions(struct: Struct, message: Message) -> VersionRange:
    # Common structs are read at whatever version their parent field exists in.
    if struct.is_common:
        return message.valid_versions
    return message.valid_versions.intersect(struct.versions)


@dataclass(frozen=True, slots=True)
class MessageLayouts:
    """Every struct's layouts, and which layout each (struct, version) uses."""

    message: Message
    by_struct: dict[str, tuple[StructLayout, ...]]
    suffix_at: dict[tuple[str, int], str]

    def layouts(self, struct: Struct) -> tuple[StructLayout, ...]:
        return self.by_struct[struct.name]

    def inline_child(self, suffix: str) -> StructLayout | None:
        """The layout behind ``suffix`` when an array loop may read it inline, else None.

        Only leaf layouts (no arrays, no nested structs) are inlined: they are the bulk of
        large messages, and their locals and loop variables cannot clash with the parent's.
        """
        for groups in self.by_struct.values():
            for layout in groups:
                if layout.suffix == suffix:
                    steps = [*layout.steps, *(t.step for t in layout.tagged)]
                    leaf = all(step.kind in _LEAF_STEPS for step in steps)
                    return layout if leaf else None
        return None

    def readers(self, struct: Struct) -> list[tuple[int, str]]:
        """(version, function suffix) for every version of the struct."""
        return sorted(
            (v, suffix) for (name, v), suffix in self.suffix_at.items() if name == struct.name
        )


def message_layouts(message: Message) -> MessageLayouts:
    by_struct: dict[str, tuple[StructLayout, ...]] = {}
    suffix_at: dict[tuple[str, int], str] = {}

    def child_of(struct: Struct, version: int) -> str:
        key = (struct.name, version)
        if key not in suffix_at:
            build(struct)
        return suffix_at.get(key, f"{struct.name}_v{version}")

    def build(struct: Struct) -> None:
        if struct.name in by_struct:
            return
        by_struct[struct.name] = ()
        groups: list[StructLayout] = []
        index: dict[tuple[object, ...], int] = {}
        for v in _struct_versions(struct, message).versions():
            layout = struct_layout(struct, v, message, child_of)
            sig = _signature(layout)
            if sig in index:
                i = index[sig]
                groups[i] = replace(groups[i], versions=(*groups[i].versions, v))
            else:
                index[sig] = len(groups)
                groups.append(layout)
            suffix_at[(struct.name, v)] = groups[index[sig]].suffix
        by_struct[struct.name] = tuple(groups)

    for struct in message.structs:
        build(struct)
    return MessageLayouts(message, by_struct, suffix_at)
