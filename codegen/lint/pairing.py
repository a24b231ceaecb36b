"""Which old field is which new field.

Kafka's checker pairs fields only by position and never compares names, so a rename passes
and a tagged field added in the middle is compared with an unrelated field. Here fields are
paired by name, then by tag, then by layout, never by position alone:

* **per existing version** (:func:`correspond`): when the two layouts of a version are
  compatible, the bytes decide: the fields in the same place of the layout (the same slot
  among the non-tagged fields, the same tag) are the same field, whatever their names.
  Otherwise fields pair by name, tagged fields by tag (with the same layout), and what is left
  by layout: the longest run of equal field layouts between the fields paired by name;
* **over the whole spec** (:func:`pair_fields`): by name, then tagged fields by tag when the
  type is the same, then fields that the versions pair by layout (a renamed field). What is
  left is old-only (removed) or new-only (added).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from codegen.lint.layout import FieldLayout, difference, field_layout, struct_layout
from codegen.lint.model import LField, LStruct
from codegen.versions import VersionRange


class Domain(enum.Enum):
    OLD_ONLY = "old-only"
    BOTH = "both"
    NEW_ONLY = "new-only"


class PairedBy(enum.Enum):
    NAME = "name"
    TAG = "tag"
    LAYOUT = "layout"
    NOTHING = "nothing"


@dataclass(frozen=True, slots=True)
class FieldPair:
    old: LField | None
    new: LField | None
    paired_by: PairedBy

    @property
    def domain(self) -> Domain:
        if self.old is None:
            return Domain.NEW_ONLY
        if self.new is None:
            return Domain.OLD_ONLY
        return Domain.BOTH


def effective_range(versions: VersionRange, scope: VersionRange) -> VersionRange:
    """The versions of ``versions`` that exist in ``scope``; the same rule for old and new."""
    return versions.intersect(scope)


# --------------------------------------------------------------------------- per version


@dataclass(frozen=True, slots=True)
class VersionPairs:
    """The fields of one struct in one existing version, old paired with new."""

    version: int
    same_bytes: bool  # the struct's layouts of this version are compatible
    pairs: tuple[tuple[LField, LField], ...]
    by_place: bool  # paired by their place in the layout (same_bytes), not by name

    def partner_of_old(self, old: LField) -> LField | None:
        return next((n for o, n in self.pairs if o is old), None)

    def partner_of_new(self, new: LField) -> LField | None:
        return next((o for o, n in self.pairs if n is new), None)


def _present(struct: LStruct, version: int) -> tuple[list[LField], dict[int, LField]]:
    mandatory = [f for f in struct.fields if version in f.ir.mandatory_versions]
    tagged = {f.ir.tag or 0: f for f in struct.fields if version in f.ir.tagged_versions}
    return mandatory, tagged


def _longest_common(
    old: Sequence[LField], new: Sequence[LField], layout: dict[int, FieldLayout]
) -> list[tuple[LField, LField]]:
    """The longest run (in order) of old and new fields with equal layouts."""
    rows, cols = len(old), len(new)
    table = [[0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(rows - 1, -1, -1):
        for j in range(cols - 1, -1, -1):
            if layout[id(old[i])] == layout[id(new[j])]:
                table[i][j] = table[i + 1][j + 1] + 1
            else:
                table[i][j] = max(table[i + 1][j], table[i][j + 1])
    pairs: list[tuple[LField, LField]] = []
    i = j = 0
    while i < rows and j < cols:
        if layout[id(old[i])] == layout[id(new[j])]:
            pairs.append((old[i], new[j]))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _segments(
    old: list[LField], new: list[LField], anchors: list[tuple[LField, LField]]
) -> list[tuple[list[LField], list[LField]]]:
    """The stretches of old and new fields between fields paired by name (in order)."""
    old_place = {id(f): i for i, f in enumerate(old)}
    new_place = {id(f): i for i, f in enumerate(new)}
    new_places = [new_place[id(n)] for _, n in anchors]
    if new_places != sorted(new_places):  # reordered: one stretch
        return [(old, new)]
    result: list[tuple[list[LField], list[LField]]] = []
    old_start = new_start = 0
    for o, n in anchors:
        old_end, new_end = old_place[id(o)], new_place[id(n)]
        result.append((old[old_start:old_end], new[new_start:new_end]))
        old_start, new_start = old_end + 1, new_end + 1
    result.append((old[old_start:], new[new_start:]))
    return result


def correspond(
    old: LStruct, new: LStruct, version: int, old_flexible: bool, new_flexible: bool
) -> VersionPairs:
    """The old and new fields of ``version`` that are the same field (see the module)."""
    old_mandatory, old_tagged = _present(old, version)
    new_mandatory, new_tagged = _present(new, version)
    old_layout = struct_layout((f.ir for f in old.fields), version, old_flexible)
    new_layout = struct_layout((f.ir for f in new.fields), version, new_flexible)
    if difference(old_layout, new_layout) is None:
        pairs = list(zip(old_mandatory, new_mandatory, strict=True))
        pairs += [(old_tagged[t], new_tagged[t]) for t in sorted(old_tagged.keys() & new_tagged)]
        return VersionPairs(version, True, tuple(pairs), True)
    old_all = [*old_mandatory, *old_tagged.values()]
    by_name = {f.name: f for f in [*new_mandatory, *new_tagged.values()]}
    named = [(o, by_name[o.name]) for o in old_all if o.name in by_name]
    taken = {id(f) for pair in named for f in pair}
    tagged = [
        (old_tagged[t], new_tagged[t])
        for t in sorted(old_tagged.keys() & new_tagged)
        if id(old_tagged[t]) not in taken
        and id(new_tagged[t]) not in taken
        and field_layout(old_tagged[t].ir, version, old_flexible)
        == field_layout(new_tagged[t].ir, version, new_flexible)
    ]
    mandatory = {id(f) for f in (*old_mandatory, *new_mandatory)}
    anchors = [(o, n) for o, n in named if id(o) in mandatory and id(n) in mandatory]
    layout = {id(f): field_layout(f.ir, version, old_flexible) for f in old_mandatory}
    layout |= {id(f): field_layout(f.ir, version, new_flexible) for f in new_mandatory}
    by_layout: list[tuple[LField, LField]] = []
    for old_part, new_part in _segments(old_mandatory, new_mandatory, anchors):
        free_old = [f for f in old_part if id(f) not in taken]
        free_new = [f for f in new_part if id(f) not in taken]
        by_layout += _longest_common(free_old, free_new, layout)
    return VersionPairs(version, False, (*named, *tagged, *by_layout), False)


# --------------------------------------------------------------------------- whole spec


def pair_fields(
    old: LStruct, new: LStruct, versions: Sequence[VersionPairs] = ()
) -> list[FieldPair]:
    """Pairs in new-spec order, then the old-only fields in old-spec order.

    ``versions`` (from :func:`correspond`) add the fields that existing versions pair by
    layout and that neither name nor tag pairs.
    """
    new_by_name = {f.name: f for f in new.fields}
    partner: dict[int, tuple[LField, PairedBy]] = {}  # new index -> (old field, how)
    taken_old: set[int] = set()

    for f in old.fields:
        match = new_by_name.get(f.name)
        if match is not None:
            partner[match.index] = (f, PairedBy.NAME)
            taken_old.add(f.index)

    new_by_tag = {f.ir.tag: f for f in new.fields if f.ir.is_tagged and f.index not in partner}
    for f in old.fields:
        if f.index in taken_old or not f.ir.is_tagged:
            continue
        match = new_by_tag.get(f.ir.tag)
        # A tag on a field of another type is a reused tag, not a renamed field.
        if (
            match is not None
            and match.index not in partner
            and match.ir.type.spec_text == f.ir.type.spec_text
        ):
            partner[match.index] = (f, PairedBy.TAG)
            taken_old.add(f.index)

    for version in versions:
        for o, n in version.pairs:
            if o.index not in taken_old and n.index not in partner:
                partner[n.index] = (o, PairedBy.LAYOUT)
                taken_old.add(o.index)

    pairs: list[FieldPair] = []
    for f in new.fields:
        if f.index in partner:
            old_field, how = partner[f.index]
            pairs.append(FieldPair(old_field, f, how))
        else:
            pairs.append(FieldPair(None, f, PairedBy.NOTHING))
    pairs.extend(
        FieldPair(f, None, PairedBy.NOTHING) for f in old.fields if f.index not in taken_old
    )
    return pairs
